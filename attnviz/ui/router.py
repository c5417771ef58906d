"""The app's pages, in teaching order, and the router that app.py runs (`run`).

Importable (tests read PAGES from here); running it draws Streamlit's navigation (st.navigation
over st.Page's) and the shared sidebar, then the chosen page. Page files live in the
repository's `pages/` folder. Before anything else on every run it sets the session's language
(ui.language), drops URL values no widget can take (ui.urlstate) and marks the run's start for
the heavy-work lines (ui.worklist).

Pages read what the sidebar chose through `context()`: ui.context.read_context, which only reads
the widgets' state and never reruns the script. Each page's `main` starts with `ensure_router`,
the one place a page may rerun (a first request for a sub-page on a fresh server).

The tab icon is a file shipped with the app: a Material icon name would make every browser
fetch it from fonts.gstatic.com, and the app makes no outside request. It is handed to
Streamlit as a data: URL read once per server (`favicon_url`).
"""

from __future__ import annotations

import base64
import functools
import runpy
from pathlib import Path

import streamlit as st

from attnviz.i18n import N_, _, language

from .context import Context, read_context

FAVICON = "assets/favicon.png"  # relative to the app's folder
APP_ROOT = Path(__file__).resolve().parents[2]  # the folder of app.py and pages/
HANDED_OVER = "attnviz_handed_over"  # session state: a page run alone handed over to app.py
PAGES_KEY = "attnviz_pages"  # session state: the session's st.Page objects (`navigation`)
SIDEBAR_SET = "attnviz_sidebar_set"  # session state: the sidebar's starting state was sent
PHONE_AGENTS = ("Mobile", "Android", "iPhone")  # User-Agent tokens of a phone's browser


@functools.lru_cache(maxsize=4)
def favicon_url(root: Path) -> str | None:
    """The tab icon as a data: URL (read once per server), or None where the file is missing."""
    icon = root / FAVICON
    if not icon.is_file():
        return None
    return "data:image/png;base64," + base64.b64encode(icon.read_bytes()).decode("ascii")


def is_phone(headers) -> bool:
    """Whether the request's headers (a mapping such as st.context.headers) come from a phone's
    browser: the Client Hint `Sec-CH-UA-Mobile: ?1`, or a User-Agent naming "Mobile",
    "Android" or "iPhone". Header names are matched whatever their case."""
    lower = {str(k).lower(): str(v) for k, v in dict(headers or {}).items()}
    if lower.get("sec-ch-ua-mobile", "").strip() == "?1":
        return True
    agent = lower.get("user-agent", "")
    return any(token in agent for token in PHONE_AGENTS)


def initial_sidebar_state(headers) -> str:
    """The sidebar's starting state for st.set_page_config: "collapsed" on a phone (turned to
    landscape its window is wider than the 768 px past which Streamlit opens the sidebar,
    which would cover a third of the screen), "auto" elsewhere (Streamlit's own rule)."""
    return "collapsed" if is_phone(headers) else "auto"


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
    ("pages/ablation.py", N_("Switch it off and see"), ":material/power_settings_new:", EXPLORE),
    ("pages/compare.py", N_("Compare two sentences"), ":material/difference:", EXPLORE),
    ("pages/corpus_heads.py", N_("Heads across many sentences"), ":material/scatter_plot:",
     EXPLORE),
    ("pages/similarity.py", N_("Why are two sentences similar?"), ":material/compare_arrows:",
     EXPLORE),
    ("pages/families.py", N_("Decoders, encoder-decoders, images"), ":material/hub:", BEYOND),
]
DEFAULT_PAGE = "pages/layer_heads.py"  # served at "/"
DEFAULT_ALIAS = "layer_heads"  # a hidden page at /layer_heads showing the default page


def run(root: Path) -> None:
    """Page config, navigation over the PAGES found under `root`, the sidebar, the page."""
    from .language import adopt_wanted, use_session_language
    from .worklist import script_run

    adopt_wanted()  # a language asked for in the run before (a class's phone)
    use_session_language()  # before any text: titles below are in the session's language
    st.session_state[HANDED_OVER] = False
    with script_run():  # this run's heavy-work lease, if it takes one, is given back at its end
        _page(root)


def _page(root: Path) -> None:
    from . import recorder, urlstate
    from .sidebar import sidebar

    nav = navigation(root)
    # Before any widget; after the navigation, so that a rerun stays on the page the URL
    # names, and after the language, so that options from a link in another language read in
    # this one.
    urlstate.sanitize()
    sidebar(student=students_lesson(nav.url_path))
    with recorder.recording(nav.title):  # what the page shows, for "Download this view"
        nav.run()
    recorder.offer_download()


def students_lesson(page_path: str) -> bool:
    """Whether this run draws the lesson of a student in a class (ui.classroom, imported
    only when the link names a class)."""
    from .sidebar import CLASS_PARAM

    if page_path != "lesson" or st.query_params.get(CLASS_PARAM) is None:
        return False
    from .classroom import a_students_page

    return a_students_page()


def navigation(root: Path):
    """The page's config and style, and st.navigation over the PAGES found under `root`
    (drawn in the sidebar); returns the page the URL names."""
    from . import style

    st.set_page_config(page_title=_("attnviz: see self-attention"),
                       page_icon=favicon_url(root), layout="wide")
    # The sidebar's starting state, sent once per session (a browser tab's page load): sent on
    # every run it would close the sidebar again after the reader opened it.
    if not st.session_state.get(SIDEBAR_SET):
        st.session_state[SIDEBAR_SET] = True
        st.set_page_config(initial_sidebar_state=initial_sidebar_state(st.context.headers))
    style.apply("phone")  # constant CSS: charts and tables fit a 390 px phone (ui.style)
    # The session's st.Page objects, made on its first run in each language and reused by
    # its later runs (st.navigation marks the page it runs on the object, so sessions do not
    # share them).
    key = f"{PAGES_KEY}:{language()}:{root}"
    if key not in st.session_state:
        st.session_state[key] = _sections(root)
    # Every page listed (expanded): a collapsed menu hides pages behind "View N more", a
    # button Streamlit labels in English whatever the page's language.
    return st.navigation(st.session_state[key], expanded=True)


def _sections(root: Path) -> dict[str, list]:
    """{section title: [st.Page]} for the PAGES found under `root`, titles translated."""
    sections: dict[str, list] = {}
    default = None
    for path, title, icon, section in PAGES:
        if (root / path).exists():
            # The default page is served at "/" yet reserves a pathname of its own; Streamlit's
            # client does not open it there ("Page not found"), so it reserves an unused one
            # and /layer_heads becomes a hidden page that runs the same file (its URL's
            # settings apply: switch_page cannot carry parameters bound to widgets).
            extra = dict(default=True, url_path="start") if path == DEFAULT_PAGE else {}
            page = st.Page(root / path, title=_(title), icon=icon, **extra)
            sections.setdefault(_(section), []).append(page)
            default = page if path == DEFAULT_PAGE else default
    if default is not None:  # /layer_heads, the default page's own name, shows that page too
        page_file = str(root / DEFAULT_PAGE)
        sections[next(iter(sections))].append(st.Page(
            lambda: runpy.run_path(page_file), title=default.title, url_path=DEFAULT_ALIAS,
            visibility="hidden"))
    return sections


def ensure_router() -> None:
    """Make sure the page runs inside app.py's router (and so has the shared sidebar),
    whatever URL came first; a no-op inside the router's run and in a fragment's rerun.

    Until a first st.navigation has run in a server process (and at every run of Streamlit's
    AppTest), a `pages/` folder beside app.py puts Streamlit in its pages/ folder mode: a
    request for a sub-page such as /positions runs that page file alone, without app.py. Such
    a run, before the page reads anything, leaves that mode (st.navigation) and runs the script
    again (st.rerun): the new run goes through app.py, which resolves the same page by its URL.
    A page that still runs alone after that (a script that is itself the app) goes on without
    the router rather than run again. This handover is the one rerun that pages cause, and
    only the pages/ folder mode causes it: with the page files in a folder of another name it
    never happens."""
    from .worklist import in_script_run

    if in_script_run() or st.session_state.get(HANDED_OVER):
        return
    st.session_state[HANDED_OVER] = True
    navigation(APP_ROOT)
    st.rerun()


def context() -> Context:
    """What a page reads: the sentence, model and device chosen in the sidebar
    (ui.context.read_context). Reading it never reruns the script; a page calls
    `ensure_router` first, as the first line of its `main`."""
    return read_context()
