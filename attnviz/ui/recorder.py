""""Download this view (HTML)": the page's view (the blocks it rendered), written on click.

Every page is described in attnviz.views: a page reads its widgets, calls its view's
functions with their values and draws the blocks they return (attnviz.views.blocks: Heading,
Markdown, Tex, Code, Figure, Table, Metric, Numbers, and plotly Figures) with `ui.render`
(attnviz.ui.render); it draws nothing else but widgets. The blocks handed to ui.render, in
order, are the page's view: ui.render adds each to the view here (`record`; a figure through
ui.show_figure's `record_figure`, numbers through ui.download_arrays' and ui.download_csv's
`note_numbers`: made only when the file is). Widgets and the sidebar are not part of it.
Then `offer_download` puts one button in the sidebar; its file is the same blocks written by
attnviz.export.html, built when clicked.

The router wraps each page's run in `recording(title)`: the recording lives in this thread
while the page runs (`active`), and in this session's state (for the button and for
fragments). A page's `@ui.fragment` (Streamlit's st.fragment) that reruns alone replaces its
own part of the recorded view, so the file shows what is on screen.

A figure is kept as the figure object itself (figures are read-only once drawn, like every
figure of the figure cache) and written as JSON only when a file is made. What one session's
view may hold is bounded (settings().view_max_mb, counting the figures' data and the tables'
cells): every session keeps its last page until it leaves, so a class of long pastes must not
hold a copy each of hundreds of MB. Past the limit a figure or table is left out of the file,
which says so.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import streamlit as st

from ..export import html as export
from ..i18n import _
from ..settings import settings as app_settings
from .language import use_session_language
from .worklist import script_run

STATE_KEY = "attnviz_view"  # this session's Recorded (the last full run, fragments spliced)
_LOCAL = threading.local()  # the recording of the page running in this thread, if any
# A figure's properties that hold its data (counted against the limit)
_DATA = ("x", "y", "z", "text", "hovertext", "customdata", "source")
_SIZES: dict[int, tuple[weakref.ref, int]] = {}  # id(figure): (the figure, its data's bytes)
_SIZES_LOCK = threading.Lock()


def limit_bytes() -> int:
    """What one session's recorded view may hold (settings().view_max_mb), in bytes."""
    return int(app_settings().view_max_mb * 2**20)


@dataclass(frozen=True, eq=False)
class FigureRef:
    """A figure as a page drew it, with its chart config; `size`: the bytes of its data."""

    figure: object
    config: dict
    size: int

    def block(self) -> export.Figure:
        """The export's Figure block: the figure's JSON, made now. Every figure drawn in the
        app carries Streamlit's theme template, left out of the file."""
        return export.Figure(export.figure_spec(self.figure), dict(self.config),
                             app_template=True)


def nbytes(value) -> int:
    """About how many bytes `value` (an array, a list, text, a number) holds: a long list is
    measured on a sample of its items."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, list | tuple):
        if len(value) > 64:
            sample = value[::len(value) // 64][:64]
            return int(sum(nbytes(v) for v in sample) * len(value) / len(sample))
        return sum(nbytes(v) for v in value)
    return 0 if value is None else 8


def figure_size(fig) -> int:
    """The bytes of a plotly Figure's data arrays (its traces' coordinates and texts),
    measured once per figure object: a figure of the figure cache is the same object on every
    rerun of every session, and is read-only."""
    with _SIZES_LOCK:
        found = _SIZES.get(id(fig))
    if found is not None and found[0]() is fig:
        return found[1]
    size = sum(nbytes(trace[name]) for trace in fig.data for name in _props(type(trace)))
    key = id(fig)

    def forget(ref, key=key) -> None:
        with _SIZES_LOCK:
            if _SIZES.get(key, (None,))[0] is ref:
                del _SIZES[key]

    with _SIZES_LOCK:
        _SIZES[key] = (weakref.ref(fig, forget), size)
    return size


@functools.cache
def _props(kind: type) -> tuple[str, ...]:
    """The data properties a trace type has (of _DATA)."""
    empty = kind()
    return tuple(name for name in _DATA if name in empty)


def size_of(block) -> int:
    """The bytes a block holds that count against the limit (figures and tables)."""
    if isinstance(block, FigureRef):
        return block.size
    if isinstance(block, export.Figure):
        return len(block.spec)
    if isinstance(block, export.Table):
        return sum(nbytes(v) for v in block.columns.values())
    return 0


@dataclass
class Recorded:
    """A page's blocks in order, each tagged with the fragment that drew it (None: the page)."""

    title: str
    entries: list[tuple[str | None, object]] = field(default_factory=list)
    settings: dict = field(default_factory=dict)
    tag: str | None = None  # the fragment running now
    limit: int = field(default_factory=limit_bytes)
    fragments: set[str] = field(default_factory=set)  # the fragments the page's run drew

    def held(self, besides: str | None = None) -> int:
        """Bytes of figures and tables held now (`besides`: not counting that fragment's)."""
        return sum(size_of(b) for t, b in self.entries if besides is None or t != besides)

    def add(self, block, at: int | None = None) -> None:
        """Add a block at the end (or at index `at`); past the limit a caption instead."""
        size = size_of(block)
        if size and self.held() + size > self.limit:
            block = export.Markdown(_(
                "*A figure or table of this view was left out of the file: the view passed the "
                "server's limit of {mb} MB per session (ATTNVIZ_VIEW_MAX_MB).*").format(
                    mb=round(self.limit / 2**20)), "caption")
        entry = (self.tag, block)
        if at is None:
            self.entries.append(entry)
        else:
            self.entries.insert(at, entry)

    def view(self) -> export.View:
        """The export's view (figures' JSON made now). A page's own title (a level-1 heading
        first) is the view's title, so the file shows it once."""
        blocks = [b.block() if isinstance(b, FigureRef) else b for _, b in list(self.entries)]
        title = self.title
        if blocks and isinstance(blocks[0], export.Heading) and blocks[0].level <= 1:
            title = blocks.pop(0).text
        return export.View(title, blocks, dict(self.settings))

    def splice(self, tag: str, new: list) -> None:
        """Replace the blocks `tag` drew before with `new` (where they were, else at the end)."""
        at = [i for i, (t, _) in enumerate(self.entries) if t == tag]
        rest = [e for e in self.entries if e[0] != tag]
        pos = at[0] if at else len(rest)
        self.entries = rest[:pos] + [(tag, b) for b in new] + rest[pos:]


@contextmanager
def _into(rec: Recorded) -> Iterator[Recorded]:
    """Blocks recorded in this thread while the body runs go to `rec`."""
    previous = getattr(_LOCAL, "recorded", None)
    _LOCAL.recorded = rec
    try:
        yield rec
    finally:
        _LOCAL.recorded = previous


@contextmanager
def recording(title: str) -> Iterator[Recorded]:
    """Record the page that runs inside (the router's `nav.run()`); kept in session state."""
    rec = Recorded(title)
    st.session_state[STATE_KEY] = rec
    with _into(rec):
        yield rec
    rec.settings = view_settings()


def active() -> Recorded | None:
    """The recording of the page running in this thread (None outside a recorded run)."""
    return getattr(_LOCAL, "recorded", None)


def record(block) -> None:
    """Add one block (attnviz.export.html) to the view of the page running in this thread."""
    rec = active()
    if rec is not None:
        rec.add(block)


def record_figure(fig, config: dict | None = None) -> None:
    """Add a plotly Figure the page draws (with its chart config) to the page's view."""
    rec = active()
    if rec is not None:
        rec.add(FigureRef(fig, dict(config or {}), figure_size(fig)))


def note_numbers(label: str, make: Callable[[], dict], file_name: str, kind: str) -> None:
    """A page offers numbers: include them in its HTML view (made when the file is)."""
    record(export.Numbers(label, make, file_name, kind))


def fragment(func: Callable) -> Callable:
    """st.fragment that keeps the recorded view current when it reruns alone, in the
    session's language."""
    tag = f"{func.__code__.co_filename}:{func.__qualname__}"  # a page's script is __main__

    @functools.wraps(func)
    def body(*args, **kwargs):
        rec = active()
        if rec is not None:  # inside the page's full run: tag what the fragment draws
            rec.fragments.add(tag)
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
    view is replaced by what it draws now, within what the rest of the view leaves of the
    limit. A fragment that was not part of the recorded page's run (a page run without the
    router) leaves the recorded view as it is."""
    use_session_language()
    with script_run():
        saved = st.session_state.get(STATE_KEY)
        if not isinstance(saved, Recorded) or tag not in saved.fragments:
            return func(*args, **kwargs)
        part = Recorded(saved.title, limit=saved.limit - saved.held(besides=tag))
        with _into(part):
            out = func(*args, **kwargs)
        saved.splice(tag, [b for _, b in part.entries])
        saved.settings = view_settings()
        return out


def view_settings() -> dict:
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
