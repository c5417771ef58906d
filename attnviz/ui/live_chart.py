"""A Plotly chart that stays on the page from rerun to rerun and is redrawn in place.

Streamlit's own chart (st.plotly_chart) gives every new figure a new element id (the id hashes
the figure), so the browser unmounts the old chart and mounts a new one. `live_chart` draws a
figure through a Streamlit v2 component (`st.components.v2.component`) kept under a fixed
key: the element stays mounted, a new figure arrives as bytes (the figure's JSON, parsed once)
and is drawn with `Plotly.react`, which updates the existing plot.

Plotly.js is the copy the installed `plotly` package ships (`plotly.offline.get_plotlyjs()`,
package_data/plotly.min.js): nothing is fetched from elsewhere. It comes to the page once per
session, after the first chart's payload (`payload`); the browser runs it once and keeps it for
the page, and every chart of the page waits for that copy. A page that has none (reloaded on the
same session) says so to the server (the component's "missing" trigger), which sends it again.

The chart looks and behaves like the app's other charts: the same hover, the same toolbar with
its PNG download, the theme's fonts and colours (from the CSS variables Streamlit gives its
components), light or dark. Its toolbar adds an SVG download, drawn in the browser as the PNG
is, and a full-screen button. Its config (the toolbar, the PNG's file name) goes to
Plotly.react with every draw.

The browser's side lives in components/live_chart/ (live_chart.js, phone_layout.js,
live_chart.css), read once at import. The chart is laid out for its frame's width, and again
whenever that width changes (a phone turned, a sidebar opened), one layout pass at a time, the
last for the frame's width when it ends; its element says which width it was last laid out for
(`data-laid-out-width`) and which payload it shows (`data-drawn`).
"""

from __future__ import annotations

import functools
import json

import plotly.graph_objects as go

from ..i18n import _
from .components import read
from .per_figure import figure_json
from .phone_layout import JS as PHONE_JS

NAME = "attnviz_live_chart"
SENT = "attnviz_plotly_js_sent"  # session state: this session's page was sent plotly.js

# The component's module: the phone layout's functions (a plain script), then the chart's
# code, which uses them (components/live_chart/). Its CSS: full screen keeps the background.
JS = PHONE_JS + read("live_chart", "live_chart.js")
CSS = read("live_chart", "live_chart.css")


@functools.cache
def plotly_js() -> bytes:
    """The installed plotly package's plotly.js (package_data/plotly.min.js), as UTF-8."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode()


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
    """Whether figures can be drawn in place here (v2 components and plotly's plotly.js)."""
    try:
        return _component() is not None and bool(plotly_js())
    except Exception:  # noqa: BLE001 - an older or newer Streamlit: st.plotly_chart instead
        return False


def payload(fig: go.Figure, config: dict, alt: str | None,
            script: bytes | None = None, select: bool = False) -> bytes:
    """What the browser gets: the figure's JSON (as st.plotly_chart sends it:
    plotly.io.to_json without validation), the chart's config, its text alternative, what
    to say (as text) if the chart cannot be drawn and whether a click is sent back (`select`),
    as one line of JSON in UTF-8; then, when `script` is given (plotly.js), a newline and the
    script."""
    spec, n_panels = figure_json(fig)
    failed = _("This chart could not be drawn here. Reload the page to try again; its numbers "
               "stay under \"Numbers in this figure\".")
    words = {"svg": _("Download as SVG (vector)"), "fullscreen": _("Fullscreen")}
    head = json.dumps({"config": config, "alt": alt or "", "failed": failed, "words": words,
                       "select": bool(select), "wide": n_panels >= 3}, ensure_ascii=False)
    parts = [head[:-1].encode(), b', "figure": ', spec, b"}"]
    if script is not None:
        parts += [b"\n", script]
    return b"".join(parts)


def _send_again() -> None:
    """The page has no plotly.js (its loader asked): the next loader sends it."""
    import streamlit as st

    st.session_state[SENT] = False


def live_chart(fig: go.Figure, key: str, config: dict, alt: str | None = None,
               on_select=None) -> None:
    """Draw `fig` under `key`, redrawn in place when a later run draws another figure there.
    The session's first chart drawn in place (or the first after its page asked) brings
    plotly.js with it. With `on_select` (a callback), a click on a point calls it, as
    st.plotly_chart's on_select does; `clicked_points(key)` reads the points inside it."""
    import streamlit as st
    from streamlit.errors import StreamlitAPIException

    send = not st.session_state.get(SENT, False)
    events = {"on_select_change": on_select} if on_select is not None else {}
    data = payload(fig, config, alt, plotly_js() if send else None, select=on_select is not None)
    try:
        _component()(key=f"live_{key}", data=data, on_missing_change=_send_again, **events)
    except StreamlitAPIException:
        # Some Streamlit versions keep registered components per runtime (a server started
        # again in the same process, e.g. a test harness): register it again, once.
        _component.cache_clear()
        _component()(key=f"live_{key}", data=data, on_missing_change=_send_again, **events)
    st.session_state[SENT] = True


def clicked_points(key: str) -> list[dict]:
    """The points of the last click on the chart drawn under `key` (its on_select callback
    reads them here): from a live chart's "select" event or st.plotly_chart's selection."""
    import streamlit as st

    live = st.session_state.get(f"live_{key}")
    if live is not None:
        event = live.get("select") if hasattr(live, "get") else None
        return list((event or {}).get("points") or [])
    chart = st.session_state.get(key)
    if chart is None:
        return []
    selection = chart.get("selection") if hasattr(chart, "get") else None
    return list((selection or {}).get("points") or [])


def spec_of(data: bytes) -> tuple[str, dict] | None:
    """(figure JSON, config) from a live chart's payload (for the view recorder)."""
    try:
        found = json.loads(data.split(b"\n", 1)[0])
        return json.dumps(found["figure"]), dict(found.get("config") or {})
    except (ValueError, KeyError, TypeError):
        return None
