"""Reading the Plotly figures a page sent, in AppTest (shared by the page tests)."""

import base64
import json

import numpy as np

from attnviz.ui import live_chart


def decode(z) -> np.ndarray:
    """Plotly JSON sends numpy arrays as base64 {dtype, bdata[, shape]}; lists stay lists."""
    if isinstance(z, dict):
        arr = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        if "shape" not in z:  # 1-D arrays come without a shape
            return arr
        return arr.reshape([int(s) for s in str(z["shape"]).split(",")])
    return np.asarray(z, dtype=float)


def charts(at) -> list[tuple[str, str]]:
    """Every chart the page drew, in page order, as (its key or "", its figure's JSON text):
    Streamlit's charts (st.plotly_chart) and the charts drawn in place (ui.live_chart, whose
    element key is "live_" + the figure's key)."""
    out: list[tuple[str, str]] = []

    def walk(node) -> None:
        children = getattr(node, "children", {}) or {}
        for i in sorted(children):
            child = children[i]
            kind = getattr(child, "type", None)
            if kind == "plotly_chart":
                out.append((child.proto.id.rsplit("-", 1)[-1], child.proto.spec))
            elif kind == "bidi_component" and child.proto.component_name == live_chart.NAME:
                key = child.proto.id.rsplit("-", 1)[-1].removeprefix("live_")
                out.append((key, live_chart.spec_of(child.proto.bytes)[0]))
            walk(child)

    walk(at.main)
    return out


def specs(at) -> list[str]:
    """Every chart's figure JSON text, in page order (both kinds, as `charts`)."""
    return [spec for _, spec in charts(at)]


def figures(at) -> list[dict]:
    """Every chart's figure JSON, in page order (both kinds, as `charts`)."""
    return [json.loads(spec) for spec in specs(at)]


def figures_by_key(at) -> dict[str, dict]:
    """Figure JSON by widget key (a chart's id ends with its key)."""
    return {key: json.loads(spec) for key, spec in charts(at)}


def tab_labels(at, prefix: str = "") -> list[str]:
    """The labels of the page's tabs (those starting with `prefix`)."""
    return [t.label for t in at.tabs if t.label.startswith(prefix)]


def figures_all_tabs(at, tab_key: str, labels: list[str] | None = None) -> dict[str, dict]:
    """Figure JSON by key from every tab of a lazy tab group (only the open tab computes):
    opens each tab in turn, then goes back to the tab that was open."""
    labels = labels or tab_labels(at)
    before = at.session_state[tab_key] if tab_key in at.session_state else labels[0]
    out: dict[str, dict] = {}
    for label in labels:
        at.session_state[tab_key] = label
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        out.update(figures_by_key(at))
    at.session_state[tab_key] = before
    at.run()
    return out
