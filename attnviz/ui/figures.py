"""Drawing figures on a page: cached per server, with PNG (chart toolbar) and SVG downloads,
and each figure's key numbers as text beside it (plotting.summary) for keyboard and screen
reader users.

The PNG is drawn by the student's browser. The SVG is drawn on the server by kaleido, whose
headless Chromium (about 1 GB, a dozen processes) is started once per server and kept
(`render_svg`): the server draws one SVG at a time (others wait in line up to
settings().export_wait_s seconds, then get an error), and keeps each figure's SVG bytes in the
"exports" cache, keyed by a digest of the figure's JSON, so a repeated click, by anyone, costs a
digest instead of a drawing.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import threading
from collections.abc import Callable, Hashable

import pandas  # imported whole before any chart is drawn (see below)
import plotly.graph_objects as go
import streamlit as st

from ..export.html import FIGURE_CONFIG
from ..i18n import _, language
from ..plotting.summary import Summary, Table, describe, plain, summarise
from ..settings import settings
from . import live_chart, recorder
from .cache import cached
from .per_figure import PerFigure
from .text import literal
from .worklist import run_state

log = logging.getLogger(__name__)
_EXPORT_SLOT = threading.BoundedSemaphore(1)  # one server-side browser at a time


class ExportBusy(RuntimeError):
    """The server is drawing other SVGs; the caller waited settings().export_wait_s seconds."""

# The modebar: PNG by default, and a second button for SVG (bertviz #33: users want images).
# Shown while the pointer is on the chart (a tap on a phone); the HTML export's too.
PLOT_CONFIG = FIGURE_CONFIG


# plotly looks pandas up in sys.modules without importing it (plotly's get_module): while one
# session's thread is still importing pandas, another session's chart would find a partially
# initialised module ("module 'pandas' has no attribute 'Series'", seen under load). This
# module's import statement above finishes the import, under Python's import lock, before any
# page can call show_figure.


def cached_figure(key: Hashable, build: Callable[[], go.Figure]) -> go.Figure:
    """A figure built once per server for a key of plain values (a trace's key, a layer...).

    Building a 12-panel Plotly figure costs more than drawing it; a class typing the same
    sentence and flipping through layers shares the work. Figures are treated as read-only.
    The session's language is part of the key: titles and axis labels are translated when the
    figure is built, so a Chinese session never gets an English session's figure.
    """
    return cached("figures", (language(), key), build)


def show_figure(fig: go.Figure, key: str | None = None,
                summary: Summary | str | pandas.DataFrame | bool | None = None,
                in_place: bool = True, **kwargs):
    """Draw a Plotly figure: PNG from the chart toolbar (camera icon), SVG on a click below,
    and its key numbers as text under it (`show_numbers`).

    `summary`: None (default) reads the numbers out of the figure (plotting.summary); a
    Summary, a DataFrame or a Markdown string shows the page's own instead; False shows none
    (a figure whose numbers the page already shows as text). The SVG is rendered on the
    server by kaleido only when asked for, once per figure and one at a time (`svg_bytes`); it
    needs a Chrome or Chromium on the server, without one the button is not offered.

    A figure with a key is drawn by ui.live_chart (`in_place`, the default): the chart stays
    mounted and is redrawn with Plotly.react when a later run draws another figure under the
    same key, and a rerun that draws the same cached figure sends the JSON made the first time
    instead of serialising the figure again (st.plotly_chart copies and serialises every
    figure on every rerun). Clicks reach `on_select` with `selection_mode="points"` (read them
    with ui.clicked_points). Other selection modes, a figure without a key, `in_place=False`,
    or a Streamlit without v2 components: st.plotly_chart.
    """
    if summary is None or summary is True:  # read from the figure: its text now, its
        alt = figure_alt(fig)  # tables only when a reader opens them (show_numbers)
        summary = functools.partial(figure_summary, fig)
    else:
        alt = summary.text if isinstance(summary, Summary) else _title_of(fig)
    on_select = kwargs.get("on_select") if kwargs.get("selection_mode") == "points" else None
    clicks = on_select is not None and callable(on_select) and set(kwargs) == {
        "on_select", "selection_mode"}
    if (in_place and key is not None and (not kwargs or clicks)
            and live_chart.available()):
        config = {**PLOT_CONFIG, "responsive": True, "showSendToCloud": False,
                  "toImageButtonOptions": {**PLOT_CONFIG["toImageButtonOptions"],
                                           "filename": file_stem(fig, key)}}
        live_chart.live_chart(fig, key, config, alt, on_select=on_select)
        event = None
    else:
        event = st.plotly_chart(fig, config=PLOT_CONFIG, key=key, alt=alt or None, **kwargs)
    recorder.record_figure(fig, PLOT_CONFIG)  # in the page's HTML view (ui.render: once)
    if key is not None and svg_export_available():
        st.download_button(
            "SVG", data=lambda: svg_bytes(fig), file_name=f"{file_stem(fig, key)}.svg",
            mime="image/svg+xml", key=f"svg_{key}", type="tertiary",
            icon=":material/download:",
            help=_("Download this figure as SVG (vector). The server's first SVG takes a few "
                   "seconds (it starts a renderer); later ones are quick."),
        )
    if summary is not False:
        show_numbers(summary, key, name=_title_of(fig))
    return event


SUMMARY_FAILURES: list[str] = []  # figures whose numbers could not be read (tests: empty)


_SUMMARIES, _ALTS, _TITLES = PerFigure(), PerFigure(), PerFigure()


def figure_summary(fig: go.Figure) -> Summary:
    """The figure's summary, read once per figure object (PerFigure)."""
    return _SUMMARIES.get(fig, _summarise)


def figure_alt(fig: go.Figure) -> str:
    """The chart's accessible name, read once per figure object (PerFigure):
    summarise(fig).text without making its tables (plotting.summary.describe), for an
    expander that is nearly always closed. A figure it cannot read gets its title."""
    return _ALTS.get(fig, _describe)


def _describe(fig: go.Figure) -> str:
    try:
        return describe(fig)
    except Exception as e:  # noqa: BLE001 - the chart matters more than its text
        return _unread(fig, e, "accessible name")


def _summarise(fig: go.Figure) -> Summary:
    """plotting.summary.summarise(fig); a figure it cannot read gets its title only (logged
    and recorded in SUMMARY_FAILURES) instead of taking the page down."""
    try:
        return summarise(fig)
    except Exception as e:  # noqa: BLE001 - the chart matters more than its text
        return Summary(_unread(fig, e, "summary"))


def _unread(fig: go.Figure, error: Exception, what: str) -> str:
    """A figure that plotting.summary could not read: logged, recorded in SUMMARY_FAILURES
    (the tests want it empty); its title stands in."""
    title = _title_of(fig)
    SUMMARY_FAILURES.append(f"{title!r}: {type(error).__name__}: {error}")
    log.warning("no %s for figure %r", what, title, exc_info=True)
    return title


def numbers_key(key: str | None, name: str = "") -> str:
    """The user key of a figure's "Numbers in this figure" expander: `numbers_<key>` for a
    figure with a key; else one made from its title (`name`), numbered when this script run
    (ui.worklist.run_state) already gave one of that title out, so it stays the same from
    rerun to rerun."""
    if key is not None:
        return f"numbers_{key}"
    taken = run_state().setdefault("numbers_keys", set())
    base = "numbers_t" + hashlib.blake2s(name.encode(), digest_size=6).hexdigest()
    n, found = 1, base
    while found in taken:
        n += 1
        found = f"{base}_{n}"
    taken.add(found)
    return found


def show_numbers(summary: Summary | str | pandas.DataFrame | Callable[[], Summary],
                 key: str | None = None, name: str = "") -> None:
    """A collapsed "Numbers in this figure" expander (a keyboard-reachable <details>) holding
    the summary's sentence and its tables as HTML tables (st.table: read cell by cell by a
    screen reader, with the first column as row headers).

    Its contents are made only while it is open: opening it reruns the page (or the fragment
    it is in), which then draws them. A closed expander costs a label, not tables encoded and
    sent on every rerun by every student (they doubled a light rerun). `key`: the figure's key;
    without one, `name` (its title) names the expander (`numbers_key`). `summary` may be a
    function that makes it: called only while the expander is open."""
    box = st.expander(_("Numbers in this figure"), icon=":material/table_view:",
                      key=numbers_key(key, name), on_change="rerun")
    if not box.open:
        return
    if callable(summary):
        summary = summary()
    with box:
        if isinstance(summary, str):
            st.markdown(summary)
        elif isinstance(summary, pandas.DataFrame):
            st.table(summary)
        else:
            if summary.text:
                st.caption(literal(summary.text))
            for table in summary.tables:
                if table.title:
                    st.markdown(f"**{literal(table.title)}**")
                if table.rows:
                    st.table(table_frame(table))
                if table.note:
                    st.caption(literal(table.note))


def table_frame(table: Table) -> pandas.DataFrame:
    """A summary table as a DataFrame whose index is its first column (row headers)."""
    columns = list(zip(*table.rows, strict=True)) or [()] * len(table.columns)
    return pandas.DataFrame(  # column by column: half the time of rows, then set_index
        {name: list(values) for name, values in zip(table.columns[1:], columns[1:],
                                                      strict=True)},
        index=pandas.Index(columns[0], name=table.columns[0]))


def _title_of(fig: go.Figure) -> str:
    return plain(title_text(fig))


def title_text(fig: go.Figure) -> str | None:
    """The figure's title (fig.layout.title.text), read once per figure object (PerFigure)."""
    return _TITLES.get(fig, lambda f: f.layout.title.text)


def svg_bytes(fig: go.Figure, render: Callable[[go.Figure], bytes] | None = None) -> bytes:
    """The figure as SVG: from the exports cache when this figure (same JSON) was drawn before,
    else drawn by `render` (kaleido) while holding the server's one export slot. Concurrent
    requests for one figure draw it once; others wait settings().export_wait_s at most
    (ExportBusy)."""
    render = render or render_svg
    digest = hashlib.sha256(fig.to_json().encode()).hexdigest()
    wait_s = settings().export_wait_s

    def draw() -> bytes:
        if not _EXPORT_SLOT.acquire(timeout=wait_s):
            raise ExportBusy(f"the server is drawing other SVGs; try again in a moment "
                             f"(waited {wait_s:.0f} s)")
        try:
            return bytes(render(fig))
        finally:
            _EXPORT_SLOT.release()

    return cached("exports", ("svg", digest), draw)


def file_stem(fig: go.Figure, key: str) -> str:
    """'attnviz_<figure title as letters, digits and underscores>' for a download's name."""
    title = title_text(fig) or key
    stem = "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_")
    return "attnviz_" + ("_".join(filter(None, stem.split("_")))[:60] or key)


SVG_WIDTH = 1000  # px: about a full-width chart in the app's wide layout
SVG_HEIGHT = 450  # px: Plotly's usual height, for a figure that sets none


def render_svg(fig: go.Figure) -> bytes:
    """The figure as SVG in its on-screen shape: its own height (and width when it sets one,
    else a full-width chart's), not kaleido's default 700 x 500. The renderer (a headless
    Chrome) is started once per server and kept: started per export, each would wait for it."""
    _start_renderer()
    return fig.to_image(format="svg", width=fig.layout.width or SVG_WIDTH,
                        height=fig.layout.height or SVG_HEIGHT)


_renderer_lock = threading.Lock()


def _start_renderer() -> None:
    with _renderer_lock:
        if not getattr(_start_renderer, "started", False):
            import kaleido

            kaleido.start_sync_server(silence_warnings=True)
            _start_renderer.started = True


@functools.cache
def svg_export_available() -> bool:
    """kaleido needs a Chrome or Chromium on the server."""
    return bool(os.environ.get("BROWSER_PATH") or any(
        shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome")))
