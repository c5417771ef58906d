"""Drawing figures on a page: cached per server, with PNG and SVG downloads from the chart's
toolbar (drawn by the student's browser), and each figure's key numbers as text beside it
(plotting.summary) for keyboard and screen reader users.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections import deque
from collections.abc import Callable, Hashable

import pandas  # imported whole before any chart is drawn (see below)
import plotly.graph_objects as go
import streamlit as st

from ..export.html import FIGURE_CONFIG
from ..i18n import _, language
from ..plotting.summary import Summary, Table, describe, plain, summarise
from . import live_chart, recorder
from .cache import cached
from .per_figure import PerFigure
from .text import literal
from .worklist import run_state

log = logging.getLogger(__name__)

# The modebar: PNG from the camera, shown while the pointer is on the chart (a tap on a
# phone); the HTML export's too. A chart drawn in place adds an SVG button (ui.live_chart).
PLOT_CONFIG = FIGURE_CONFIG


# plotly looks pandas up in sys.modules without importing it (plotly's get_module): while one
# session's thread is still importing pandas, another session's chart would find a partially
# initialised module ("module 'pandas' has no attribute 'Series'"). This
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
    """Draw a Plotly figure, with PNG and SVG downloads in its toolbar, and its key numbers as
    text under it (`show_numbers`).

    `summary`: None (default) reads the numbers out of the figure (plotting.summary); a
    Summary, a DataFrame or a Markdown string shows the page's own instead; False shows none
    (a figure whose numbers the page already shows as text).

    A figure with a key is drawn by ui.live_chart (`in_place`, the default): the chart stays
    mounted and is redrawn with Plotly.react when a later run draws another figure under the
    same key, and a rerun that draws the same cached figure sends the JSON made the first time
    instead of serialising the figure again (st.plotly_chart copies and serialises every
    figure on every rerun). Clicks reach `on_select` with `selection_mode="points"` (read them
    with ui.clicked_points). Other selection modes, a figure without a key, `in_place=False`,
    or a Streamlit without v2 components: st.plotly_chart (its toolbar has the PNG only).
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
    if summary is not False:
        show_numbers(summary, key, name=_title_of(fig))
    return event


SUMMARY_FAILURES: deque[str] = deque(maxlen=100)  # the last figures not read (tests: none)


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
    sent on every rerun by every student. `key`: the figure's key; without one, `name` (its
    title) names the expander (`numbers_key`). `summary` may be a function that makes it:
    called only while the expander is open."""
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


def file_stem(fig: go.Figure, key: str) -> str:
    """'attnviz_<figure title as letters, digits and underscores>' for a download's name."""
    title = title_text(fig) or key
    stem = "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_")
    return "attnviz_" + ("_".join(filter(None, stem.split("_")))[:60] or key)
