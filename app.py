"""attnviz: the router. One shared sidebar (sentence, model, device), then the chosen page.

Run with `make run` (or `streamlit run app.py`). The page list is attnviz.ui.router.PAGES.
"""

from pathlib import Path

if __name__ == "__main__":  # Streamlit runs this file as __main__; a process that
    from attnviz.ui import router  # multiprocessing spawns imports it (not as __main__): no app

    router.run(Path(__file__).parent)
