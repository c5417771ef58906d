"""The app's pages, in teaching order, and the router that app.py runs (`run`).

Importable (tests read PAGES from here); running it draws Streamlit's navigation and the
shared sidebar, then the chosen page. Page files live in the repository's `pages/` folder.
On a fresh server's first visits app.py has sent a hidden chart before importing this
(attnviz.first_chart); `run` empties its slot once the page is drawn.
Before anything else on every run it drops URL values no widget can take (ui.urlstate), marks
the run's start for the heavy-work line (ui.worklist), and, once per server, tunes malloc
(ui.malloc), keeps answers Streamlit and Plotly would make again on every rerun (ui.speedups)
and puts the app's caches into /_stcore/metrics (ui.cache.register_metrics).
The tab icon is a file shipped with the app: a Material icon name would make every browser
fetch it from fonts.gstatic.com, and the app makes no outside request. It is handed to
Streamlit as a data: URL read once per server (`favicon_url`): given the file's path,
Streamlit opens and registers the file again on every rerun (~4% of a class's GIL time).
"""

from __future__ import annotations

import base64
import functools
import runpy
from pathlib import Path

import streamlit as st

from attnviz import first_view
from attnviz.i18n import N_, _

FAVICON = "assets/favicon.png"  # relative to the app's folder


@functools.lru_cache(maxsize=4)
def favicon_url(root: Path) -> str | None:
    """The tab icon as a data: URL (read once per server), or None where the file is missing."""
    icon = root / FAVICON
    if not icon.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(icon.read_bytes()).decode("ascii")

# (file, title, icon, section), in teaching order. Titles and sections are English msgids,
# shown in the session's language (attnviz.i18n).
LEARN, EXPLORE, BEYOND = N_("Learn"), N_("Explore BERT"), N_("Beyond BERT")
PAGES: list[tuple[str, str, str, str]] = [
    ("pages/lesson.py", N_("I saw a saw: the lesson"), ":material/school:", LEARN),
    ("pages/step_by_step.py", N_("Self-attention step by step"), ":material/calculate:", LEARN),
    ("pages/positions.py", N_("Positional encoding"), ":material/pin_drop:", LEARN),
    ("pages/windows.py", N_("Windows and receptive fields"), ":material/width:", LEARN),
    ("pages/images.py", N_("Images: attention vs convolution"), ":material/image:", LEARN),
    ("pages/layer_heads.py", N_("Heads of one layer"), ":material/grid_view:", EXPLORE),
    ("pages/explore.py", N_("All heads, token lines"), ":material/explore:", EXPLORE),
    ("pages/inside_score.py", N_("Inside one score"), ":material/biotech:", EXPLORE),
    ("pages/head_stats.py", N_("Head statistics, rollout and flow"), ":material/bar_chart:",
     EXPLORE),
    ("pages/value_norms.py", N_("Weights vs value norms"), ":material/straighten:", EXPLORE),
    ("pages/compare.py", N_("Compare two sentences"), ":material/difference:", EXPLORE),
    ("pages/corpus_heads.py", N_("Heads across many sentences"), ":material/scatter_plot:",
     EXPLORE),
    ("pages/similarity.py", N_("Why are two sentences similar?"), ":material/compare_arrows:",
     EXPLORE),
    ("pages/families.py", N_("Decoders, encoder-decoders, images"), ":material/hub:", BEYOND),
]
DEFAULT_PAGE = "pages/layer_heads.py"  # served at "/"
DEFAULT_ALIAS = "layer_heads"  # a hidden page at /layer_heads showing the default page


def run(root: Path, hint=None) -> None:
    """Page config, navigation over the PAGES found under `root`, the sidebar, the page.
    `hint`: the slot of app.py's hidden first chart (attnviz.first_chart), emptied at the end
    however the run ends (drawn, stopped, rerun or failed)."""
    try:
        _run(root)
    finally:
        if hint is not None:
            hint.empty()
        first_view.FIRST_PAGE.set()  # a fresh server's preload may begin (its docstring)


def _run(root: Path) -> None:
    from . import urlstate
    from .sidebar import use_session_language
    from .worklist import script_run

    use_session_language()  # before any text: titles below are in the session's language
    urlstate.sanitize()  # after it: options from a link in another language read in this one
    with script_run():  # this run's heavy-work lease, if it takes one, is given back at its end
        _page(root)


def _page(root: Path) -> None:
    from . import malloc, recorder, speedups, style
    from .cache import register_metrics
    from .sidebar import sidebar

    malloc.tune()
    speedups.install()
    register_metrics()
    st.set_page_config(page_title=_("attnviz: see self-attention"),
                       page_icon=favicon_url(root), layout="wide")
    style.apply("phone")  # constant CSS: charts and tables fit a 390 px phone (ui.style)
    sections: dict[str, list] = {}
    default = None
    for path, title, icon, section in PAGES:
        if (root / path).exists():
            # The default page is served at "/" yet reserves a pathname of its own; Streamlit's
            # client does not open it there ("Page not found"), so it reserves an unused one
            # and /layer_heads becomes a hidden page that runs the same file (its URL's
            # settings apply: switch_page cannot carry parameters bound to widgets).
            extra = dict(default=True, url_path="start") if path == DEFAULT_PAGE else {}
            page = st.Page(path, title=_(title), icon=icon, **extra)
            sections.setdefault(_(section), []).append(page)
            default = page if path == DEFAULT_PAGE else default
    if default is not None:  # /layer_heads, the default page's own name, shows that page too
        page_file = str(root / DEFAULT_PAGE)
        sections[next(iter(sections))].append(st.Page(
            lambda: runpy.run_path(page_file), title=default.title, url_path=DEFAULT_ALIAS,
            visibility="hidden"))
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
