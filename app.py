"""attnviz: the router. One shared sidebar (sentence, model, device), then the chosen page.

Run with `make run` (or `streamlit run app.py`). The page list is attnviz.ui.router.PAGES.
On a fresh server the first lines send a hidden chart before attnviz.ui (and torch) is
imported: see attnviz/first_chart.py.
"""

from pathlib import Path

from attnviz.first_chart import send_hidden_chart

hint = send_hidden_chart()

from attnviz.ui import router  # noqa: E402 - after the hint: this import waits for torch

router.run(Path(__file__).parent, hint)
