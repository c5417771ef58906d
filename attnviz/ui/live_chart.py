"""A Plotly chart that stays on the page from rerun to rerun and is redrawn in place.

Streamlit's own chart (st.plotly_chart) gives every new figure a new element id (the id hashes
the figure), so the browser unmounts the old chart and mounts a new one. `live_chart` draws a
figure through a Streamlit v2 component (`st.components.v2.component`) kept under a fixed
key: the element stays mounted, a new figure arrives as bytes (the figure's JSON, parsed once)
and is drawn with `Plotly.react`, which updates the existing plot.

Plotly.js is the copy the installed `plotly` package ships (`plotly.offline.get_plotlyjs()`,
package_data/plotly.min.js): nothing is fetched from elsewhere. It is a file the app serves
(Streamlit's static file serving, `server.enableStaticServing`: the app's `static/` folder at
`app/static/`), written there once per server under a name made of its content's hash
(`plotly_file`), so a browser fetches it once, keeps it in its cache (with the code it
compiled from it), and no session's websocket ever carries its 4.8 MB. Every chart's payload
names the file (`plotly_url`); the page's first chart runs it as a script of the page, and
every chart of the page waits for that copy. Where
the file cannot be served (static serving off, the folder not writable) figures are drawn by
st.plotly_chart instead (`available`).

The chart looks and behaves like the app's other charts: the same hover, the same toolbar with
its PNG download, the theme's fonts and colours (from the CSS variables Streamlit gives its
components), light or dark. Its toolbar adds an SVG download, drawn in the browser as the PNG
is, and a full-screen button. On a dark page its diverging scales with a white middle are
their dark versions (`for_theme`). Its config (the toolbar, the PNG's file name) goes to
Plotly.react with every draw.

The browser's side lives in components/live_chart/ (live_chart.js, phone_layout.js,
live_chart.css), read once at import. The chart is laid out for its frame's width, and again
whenever that width changes (a phone turned, a sidebar opened), one layout pass at a time, the
last for the frame's width when it ends; its element says which width it was last laid out for
(`data-laid-out-width`) and which payload it shows (`data-drawn`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import sys
import tempfile
from pathlib import Path

import plotly.graph_objects as go

from ..i18n import _
from ..plotting.common import for_dark_background
from .components import read
from .per_figure import PerFigure, figure_json
from .phone_layout import JS as PHONE_JS

NAME = "attnviz_live_chart"
STATIC = "static"  # the app's folder Streamlit serves at app/static/ (server.enableStaticServing)
APP_ROOT = Path(__file__).resolve().parents[2]  # the folder of app.py (ui.router's APP_ROOT)

# The component's module: the phone layout's functions (a plain script), then the chart's
# code, which uses them (components/live_chart/). Its CSS: full screen keeps the background.
JS = PHONE_JS + read("live_chart", "live_chart.js")
CSS = read("live_chart", "live_chart.css")


@functools.cache
def plotly_js() -> bytes:
    """The installed plotly package's plotly.js (package_data/plotly.min.js), as UTF-8."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode()


def plotly_name(script: bytes) -> str:
    """The static file's name for `script`: plotly-<12 hex digits of its SHA-256>.min.js (a
    new plotly gives a new name, so a browser's cached copy is never a stale one)."""
    return f"plotly-{hashlib.sha256(script).hexdigest()[:12]}.min.js"


@functools.cache
def plotly_file(root: Path = APP_ROOT) -> Path | None:
    """The app's static copy of plotly_js() (`root`/static/plotly_name), written there when it
    is missing or differs (to a temporary name, then renamed: a reader never sees half a file),
    copies of other plotly versions removed; None where the folder cannot be written."""
    script = plotly_js()
    folder = root / STATIC
    path = folder / plotly_name(script)
    try:
        if path.is_file() and path.stat().st_size == len(script) and \
                path.read_bytes() == script:
            return path
        folder.mkdir(exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".plotly-", delete=False) as f:
            f.write(script)
        Path(f.name).chmod(0o644)
        os.replace(f.name, path)
        for old in folder.glob("plotly-*.min.js"):
            if old != path:
                old.unlink(missing_ok=True)
        return path
    except OSError:
        return None


def plotly_url() -> str | None:
    """The path the browser fetches plotly.js from (under server.baseUrlPath), or None where
    this server does not serve it (static serving off, no file)."""
    import streamlit as st

    if not st.get_option("server.enableStaticServing"):
        return None
    path = plotly_file()
    if path is None:
        return None
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return "/" + "/".join(p for p in (base, "app", STATIC, path.name) if p)


@functools.cache
def _component():
    """The chart as a st.components.v2 component; None where this Streamlit has none."""
    import streamlit as st

    v2 = getattr(st.components, "v2", None)
    if v2 is None or not hasattr(v2, "component"):
        return None
    # Not isolated in a shadow root: Plotly puts its modebar and hover styles in the
    # document's head, which a shadow root would not see.
    return v2.component(NAME, js=JS, css=CSS, isolate_styles=False)


def available() -> bool:
    """Whether figures can be drawn in place here (v2 components, plotly.js served)."""
    try:
        return _component() is not None and plotly_url() is not None
    except Exception:  # noqa: BLE001 - an older or newer Streamlit: st.plotly_chart instead
        return False


def payload(fig: go.Figure, config: dict, alt: str | None, plotly: str,
            select: bool = False) -> bytes:
    """What the browser gets: the figure's JSON (as st.plotly_chart sends it:
    plotly.io.to_json without validation), the chart's config, its text alternative, what
    to say (as text) if the chart cannot be drawn, where plotly.js is (`plotly`, a URL path)
    and whether a click is sent back (`select`), as one line of JSON in UTF-8."""
    spec, n_panels = figure_json(fig)
    failed = _("This chart could not be drawn here. Reload the page to try again; its numbers "
               "stay under \"Numbers in this figure\".")
    words = {"svg": _("Download as SVG (vector)"), "fullscreen": _("Fullscreen")}
    head = json.dumps({"config": config, "alt": alt or "", "failed": failed, "words": words,
                       "select": bool(select), "wide": n_panels >= 3, "plotly": plotly},
                      ensure_ascii=False)
    return b"".join([head[:-1].encode(), b', "figure": ', spec, b"}"])


_DARK = PerFigure(256)  # a figure -> its copy for a dark background (None: the same)


def for_theme(fig: go.Figure, dark: bool) -> go.Figure:
    """`fig` as the page's theme shows it: on a dark page, its scales that are white or
    light at 0 (plotting.common.DARK_SCALES: diverging with a white middle, sequential with
    a light low end) made for a dark background (plotting.common.for_dark_background), the
    copy made once per figure object."""
    if not dark:
        return fig
    copy = _DARK.get(fig, lambda f: None if (d := for_dark_background(f)) is f else d)
    return fig if copy is None else copy


def dark_theme() -> bool:
    """Whether the session's page is in the dark theme (st.context.theme)."""
    import streamlit as st

    try:
        return st.context.theme.type == "dark"
    except AttributeError:  # a Streamlit without st.context.theme: the light theme's scales
        return False


def live_chart(fig: go.Figure, key: str, config: dict, alt: str | None = None,
               on_select=None) -> None:
    """Draw `fig` under `key`, redrawn in place when a later run draws another figure there,
    its diverging scales made for the page's theme (`for_theme`). With `on_select` (a
    callback), a click on a point calls it, as st.plotly_chart's on_select does;
    `clicked_points(key)` reads the points inside it."""
    from streamlit.errors import StreamlitAPIException

    fig = for_theme(fig, dark_theme())
    events = {"on_select_change": on_select} if on_select is not None else {}
    data = payload(fig, config, alt, plotly_url() or "", select=on_select is not None)
    try:
        _component()(key=f"live_{key}", data=data, **events)
    except StreamlitAPIException:
        # Some Streamlit versions keep registered components per runtime (a server started
        # again in the same process, e.g. a test harness): register it again, once.
        _component.cache_clear()
        _component()(key=f"live_{key}", data=data, **events)


# A clicked point's fields as the pages read them: coordinates (a number or a category's
# text) and indices (whole numbers from 0).
COORDINATES = ("x", "y", "z")
INDICES = ("curve_number", "point_number", "point_index")
MAX_POINTS = 16  # a click selects one point; a few more are kept, never a client's list
MAX_TEXT = 400  # a category's text on an axis (a mosaic cell's name) is far shorter


def _coordinate(value):
    """A finite number or a short text as it is; anything else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value if math.isfinite(value) else None
    if isinstance(value, str) and len(value) <= MAX_TEXT:
        return value
    return None


def index_in(value, size: int) -> int | None:
    """`value` as an index of range(size): a whole number (an int, or a float with nothing
    after the point) from 0 to size - 1; anything else (NaN, text, a list, a dict) None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value != int(value) or not 0 <= value < size:
        return None
    return int(value)


def selected_row(state, size: int) -> int | None:
    """The first row of a table's selection state (st.dataframe's `on_select`) as an index of
    range(size); None when none is selected or the state has another shape (what a client
    sent is not trusted)."""
    try:
        rows = state["selection"]["rows"]
    except (KeyError, TypeError, IndexError, AttributeError):
        return None
    if not isinstance(rows, list | tuple) or not rows:
        return None
    return index_in(rows[0], size)


def points_of(event) -> list[dict]:
    """The points of a click event as the pages read them, whatever a client sent: only a
    dict with a list of dicts under "points" has any; of each point, x, y and z when a finite
    number or a short text, curve_number, point_number and point_index when a whole number
    from 0 (every other field, and every other value, left out); at most MAX_POINTS."""
    if not isinstance(event, dict):
        return []
    points = event.get("points")
    if not isinstance(points, list):
        return []
    out = []
    for point in points[:MAX_POINTS]:
        if not isinstance(point, dict):
            continue
        clean = {k: v for k in COORDINATES if (v := _coordinate(point.get(k))) is not None}
        clean |= {k: v for k in INDICES
                  if (v := index_in(point.get(k), sys.maxsize)) is not None}
        out.append(clean)
    return out


def clicked_points(key: str) -> list[dict]:
    """The points of the last click on the chart drawn under `key` (its on_select callback
    reads them here): from a live chart's "select" event or st.plotly_chart's selection,
    checked by `points_of` (a field of another shape is left out)."""
    import streamlit as st

    live = st.session_state.get(f"live_{key}")
    if live is not None:
        return points_of(live.get("select") if hasattr(live, "get") else None)
    chart = st.session_state.get(key)
    if chart is None:
        return []
    return points_of(chart.get("selection") if hasattr(chart, "get") else None)


def clicked_cell(key: str, rows: int, cols: int) -> tuple[int, int] | None:
    """(row, column) of the first point clicked on the chart under `key` whose y is a row of
    range(rows) and x a column of range(cols) (a heatmap's cell on numeric axes); None when
    no such point was clicked."""
    for point in clicked_points(key):
        row, col = index_in(point.get("y"), rows), index_in(point.get("x"), cols)
        if row is not None and col is not None:
            return row, col
    return None


def spec_of(data: bytes) -> tuple[str, dict] | None:
    """(figure JSON, config) from a live chart's payload (for the view recorder)."""
    try:
        found = json.loads(data)
        return json.dumps(found["figure"]), dict(found.get("config") or {})
    except (ValueError, KeyError, TypeError):
        return None
