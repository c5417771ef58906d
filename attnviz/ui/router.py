"""The app's pages, in teaching order, and the router that app.py runs (`run`).

Importable (tests read PAGES from here); running it draws Streamlit's navigation and the
shared sidebar, then the chosen page. Page files live in the repository's `pages/` folder.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

# (file, title, icon, section), in teaching order.
PAGES: list[tuple[str, str, str, str]] = [
    ("pages/lesson.py", "I saw a saw: the lesson", ":material/school:", "Learn"),
    ("pages/step_by_step.py", "Self-attention step by step", ":material/calculate:", "Learn"),
    ("pages/positions.py", "Positional encoding", ":material/pin_drop:", "Learn"),
    ("pages/windows.py", "Windows and receptive fields", ":material/width:", "Learn"),
    ("pages/images.py", "Images: attention vs convolution", ":material/image:", "Learn"),
    ("pages/layer_heads.py", "Heads of one layer", ":material/grid_view:", "Explore BERT"),
    ("pages/explore.py", "All heads, token lines", ":material/explore:", "Explore BERT"),
    ("pages/inside_score.py", "Inside one score", ":material/biotech:", "Explore BERT"),
    ("pages/head_stats.py", "Head statistics, rollout and flow", ":material/bar_chart:",
     "Explore BERT"),
    ("pages/value_norms.py", "Weights vs value norms", ":material/straighten:", "Explore BERT"),
    ("pages/compare.py", "Compare two sentences", ":material/difference:", "Explore BERT"),
    ("pages/corpus_heads.py", "Heads across many sentences", ":material/scatter_plot:",
     "Explore BERT"),
    ("pages/similarity.py", "Why are two sentences similar?", ":material/compare_arrows:",
     "Explore BERT"),
    ("pages/families.py", "Decoders, encoder-decoders, images", ":material/hub:", "Beyond BERT"),
]
DEFAULT_PAGE = "pages/layer_heads.py"  # served at "/"


def run(root: Path) -> None:
    """Page config, navigation over the PAGES found under `root`, the sidebar, the page."""
    from . import recorder
    from .sidebar import sidebar

    st.set_page_config(page_title="attnviz: see self-attention",
                       page_icon=":material/visibility:", layout="wide")
    sections: dict[str, list] = {}
    for path, title, icon, section in PAGES:
        if (root / path).exists():
            page = st.Page(path, title=title, icon=icon, default=(path == DEFAULT_PAGE))
            sections.setdefault(section, []).append(page)
    nav = st.navigation(sections)
    sidebar()
    with recorder.recording(nav.title):  # what the page shows, for "Download this view"
        nav.run()
    recorder.offer_download()


def ensure_router() -> None:
    """Make sure app.py's router (and so the shared sidebar) runs, whatever URL came first.

    On a freshly started server, Streamlit treats a first request for a sub-page such as
    /positions in its legacy multipage mode (a `pages/` folder exists and `st.navigation` has
    not run yet) and runs that page file alone, without app.py. Leave that mode and rerun:
    the rerun goes through app.py, which resolves the same page by its URL.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a Streamlit without the legacy mode
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()
