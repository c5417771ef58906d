"""`python -m attnviz ...`: see attnviz.cli."""

import sys

from .cli import main

sys.exit(main())
