""""Download this view (HTML)": what a page showed, recorded while it ran, written on click.

The router wraps each page's run in `recording(title)`. For the length of that run, the
session's own ScriptRunContext passes every message it sends to the browser through the
recording first: of the elements in the page's main area, headings, Markdown, captions,
alerts, TeX, code, tables and Plotly charts (st.plotly_chart's and ui.live_chart's) become
blocks of an attnviz.export.html.View, in the order the page drew them (widgets and the
sidebar are left out). `ui.download_arrays` and `ui.download_csv` add the page's numbers
through `note_numbers` (made only when the HTML is). Then `offer_download` puts one button
in the sidebar; its file is built when clicked.

Nothing is global: the wrapper sits on this session's context only and is removed when the run
ends; the recording lives in this thread (while the page runs) and in this session's state
(for the button and for fragments). A page's `@ui.fragment` (Streamlit's st.fragment) that
reruns alone replaces its own part of the recorded view, so the file shows what is on screen.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from ..export import html as export
from ..i18n import _
from . import live_chart

STATE_KEY = "attnviz_view"  # this session's Recorded (the last full run, fragments spliced)
# What one session's recorded view may hold (figures' JSON and tables' bytes): every session
# keeps its last page until it leaves, so a class of long pastes must not hold a copy each of
# hundreds of MB. Past the limit a figure is left out of the file, which says so.
MAX_BYTES = int(float(os.environ.get("ATTNVIZ_VIEW_MAX_MB", "24")) * 2**20)
_LOCAL = threading.local()  # the recording of the page running in this thread, if any
_ALERTS = {1: "error", 2: "warning", 3: "info", 4: "success"}


@dataclass
class Recorded:
    """A page's blocks in order, each tagged with the fragment that drew it (None: the page)."""

    title: str
    entries: list[tuple[str | None, object]] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    tag: str | None = None  # the fragment running now
    limit: int = MAX_BYTES

    def held(self) -> int:
        """Bytes of figures' JSON and tables' Arrow data held now."""
        return sum(size_of(b) for _, b in self.entries)

    def add(self, block) -> None:
        size = size_of(block)
        if size and self.held() + size > self.limit:
            block = export.Markdown(_(
                "*A figure or table of this view was left out of the file: the view passed the "
                "server's limit of {mb} MB per session (ATTNVIZ_VIEW_MAX_MB).*").format(
                    mb=round(self.limit / 2**20)), "caption")
        self.entries.append((self.tag, block))

    def view(self) -> export.View:
        """The export's view; tables are decoded from their Arrow bytes only now."""
        blocks = [table_of(b.data) if isinstance(b, ArrowTable) else
                  figure_of(b.data) if isinstance(b, LiveFigure) else b
                  for _, b in list(self.entries)]
        blocks = [b for b in blocks if b is not None]
        return export.View(self.title, blocks, dict(self.settings))


    def splice(self, tag: str, new: list) -> None:
        """Replace the blocks `tag` drew before with `new` (where they were, else at the end)."""
        at = [i for i, (t, _) in enumerate(self.entries) if t == tag]
        rest = [e for e in self.entries if e[0] != tag]
        pos = at[0] if at else len(rest)
        self.entries = rest[:pos] + [(tag, b) for b in new] + rest[pos:]


@dataclass(frozen=True)
class ArrowTable:
    """A table as Streamlit sent it (Arrow IPC bytes), decoded when a file is made."""

    data: bytes


@dataclass(frozen=True)
class LiveFigure:
    """A chart drawn in place (ui.live_chart) as its payload bytes, decoded when a file is
    made: parsing a 512-token head's 1.5 MB at every rerun would cost more than drawing it."""

    data: bytes


def figure_of(data: bytes) -> export.Figure | None:
    found = live_chart.spec_of(data)
    return export.Figure(found[0], found[1], app_template=True) if found else None


def size_of(block) -> int:
    if isinstance(block, export.Figure):
        return len(block.spec)
    if isinstance(block, ArrowTable | LiveFigure):
        return len(block.data)
    return 0


def blocks_of(msg) -> list:
    """The blocks one ForwardMsg adds to the page's main area ([] for anything else)."""
    if msg.WhichOneof("type") != "delta" or msg.delta.WhichOneof("type") != "new_element":
        return []
    path = list(msg.metadata.delta_path)
    if not path or path[0] != 0:  # 0: the main area; 1: the sidebar
        return []
    el = msg.delta.new_element
    kind = el.WhichOneof("type")
    if kind == "heading":
        tag = el.heading.tag or "h2"
        level = int(tag[1]) + 1 if tag[1:].isdigit() else 3  # the view's title is <h1>
        return [export.Heading(el.heading.body, level)]
    if kind == "markdown":
        m = el.markdown
        t = type(m).Type
        if m.element_type == t.LATEX:
            return [export.Tex(m.body.strip().removeprefix("$$").removesuffix("$$").strip())]
        if m.element_type == t.CODE:
            return [export.Code(m.body)]
        if m.element_type == t.DIVIDER:
            return []
        return [export.Markdown(m.body, "caption" if m.element_type == t.CAPTION else "")]
    if kind == "alert":
        return [export.Markdown(el.alert.body, _ALERTS.get(el.alert.format, "info"))]
    if kind == "code":
        return [export.Code(el.code.code_text)]
    if kind == "text":
        return [export.Code(el.text.body)]
    if kind == "metric":
        return [export.Table({el.metric.label: [el.metric.body]})]
    if kind == "plotly_chart":
        config = json.loads(el.plotly_chart.config) if el.plotly_chart.config else {}
        return [export.Figure(el.plotly_chart.spec, config,
                              app_template=True)]  # every figure has the app theme
    if kind == "bidi_component" and el.bidi_component.component_name == live_chart.NAME:
        return [LiveFigure(el.bidi_component.bytes)] if el.bidi_component.bytes else []
    if kind in ("dataframe", "table"):
        data = getattr(el, kind).arrow_data.data
        return [ArrowTable(data)] if data else []
    return []


def table_of(arrow_bytes: bytes) -> export.Table:
    """A table Streamlit sent (Arrow IPC bytes) as columns (its index left out)."""
    import pyarrow as pa

    table = pa.ipc.open_stream(arrow_bytes).read_all()
    meta = json.loads((table.schema.metadata or {}).get(b"pandas", b"{}"))
    index = {c for c in meta.get("index_columns", []) if isinstance(c, str)}
    return export.Table({n: table.column(n).to_pylist() for n in table.column_names
                         if n not in index and not n.startswith("__index_level_")})


@contextmanager
def _capturing(rec: Recorded) -> Iterator[Recorded]:
    """Record the blocks this session's context sends while the body runs (this thread)."""
    ctx = get_script_run_ctx()
    previous = getattr(_LOCAL, "recorded", None)
    _LOCAL.recorded = rec
    original = None
    if ctx is not None and "enqueue" not in vars(ctx):
        original = ctx.enqueue

        def enqueue(msg) -> None:
            current = getattr(_LOCAL, "recorded", None)
            if current is not None:
                try:
                    for block in blocks_of(msg):
                        current.add(block)
                except Exception:  # noqa: BLE001 - recording never breaks the page
                    pass
            original(msg)

        ctx.enqueue = enqueue  # this session's context only
    try:
        yield rec
    finally:
        _LOCAL.recorded = previous
        if original is not None:
            del ctx.enqueue


@contextmanager
def recording(title: str) -> Iterator[Recorded]:
    """Record the page that runs inside (the router's `nav.run()`); kept in session state."""
    rec = Recorded(title)
    st.session_state[STATE_KEY] = rec
    with _capturing(rec):
        yield rec
    rec.settings = settings()


def active() -> Recorded | None:
    """The recording of the page running in this thread (None outside a recorded run)."""
    return getattr(_LOCAL, "recorded", None)


def record(block) -> None:
    """Add one block (attnviz.export.html) to the view of the page running in this thread."""
    rec = active()
    if rec is not None:
        rec.add(block)


def note_numbers(label: str, make: Callable[[], dict], file_name: str, kind: str) -> None:
    """A page offers numbers: include them in its HTML view (made when the file is)."""
    rec = active()
    if rec is not None:
        rec.add(export.Numbers(label, make, file_name, kind))


def fragment(func: Callable) -> Callable:
    """st.fragment that keeps the recorded view current when it reruns alone, in the
    session's language."""
    tag = f"{func.__module__}.{func.__qualname__}"

    @functools.wraps(func)
    def body(*args, **kwargs):
        rec = active()
        if rec is not None:  # inside the page's full run: tag what the fragment draws
            before, rec.tag = rec.tag, tag
            try:
                return func(*args, **kwargs)
            finally:
                rec.tag = before
        return run_alone(tag, func, *args, **kwargs)

    return st.fragment(body)


def run_alone(tag: str, func: Callable, *args, **kwargs):
    """A fragment that reruns alone (a widget in it changed). app.py's router did not run in
    this thread, so the session's language is set here (else its text falls back to English,
    seen on a Chinese page's layer change), and it is a script run of its own: a long trace's
    lease it takes is given back at its end (ui.worklist.script_run). Its part of the recorded
    view is replaced by what it draws now."""
    from .sidebar import use_session_language
    from .worklist import script_run

    use_session_language()
    with script_run():
        saved = st.session_state.get(STATE_KEY)
        if not isinstance(saved, Recorded):
            return func(*args, **kwargs)
        part = Recorded(saved.title)
        with _capturing(part):
            out = func(*args, **kwargs)
        saved.splice(tag, [b for _, b in part.entries])
        saved.settings = settings()
        return out


def settings() -> dict:
    """The view's state as the URL holds it (sentence first), for the file's settings line."""
    params = st.query_params.to_dict()
    out = {_("sentence"): st.session_state.get("text", params.get("text", ""))}
    pair = st.session_state.get("pair", params.get("pair", ""))
    if pair:
        out[_("second sentence")] = pair
    out.update({k: v for k, v in params.items() if k not in ("text", "pair")})
    return out


def file_name(title: str) -> str:
    return "attnviz_" + export.slug(title).replace("-", "_") + ".html"


def html_of(rec: Recorded) -> str:
    """The self-contained HTML file of a recorded view."""
    return export.page_html(rec.view())


def offer_download(rec: Recorded | None = None) -> None:
    """The sidebar's "Download this view (HTML)" for the view just recorded (built on click)."""
    rec = rec if rec is not None else st.session_state.get(STATE_KEY)
    if not isinstance(rec, Recorded):
        return
    st.sidebar.download_button(
        _("Download this view (HTML)"), data=lambda: html_of(rec),
        file_name=file_name(rec.title), mime="text/html", key="view_html", on_click="ignore",
        icon=":material/download:",
        help=_("This page as one HTML file: its figures (with hover), text and numbers. Opens "
               "from disk with no server and no network."))
