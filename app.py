"""attnviz: the router. One shared sidebar (sentence, model, device), then the chosen page.

Run with `make run` (or `streamlit run app.py`). The page list is attnviz.ui.router.PAGES.
"""

from pathlib import Path

from attnviz.ui import router

router.run(Path(__file__).parent)
