"""Reading the Plotly figures a page sent, in AppTest (shared by the page tests)."""

import base64
import json

import numpy as np


def decode(z) -> np.ndarray:
    """Plotly JSON sends numpy arrays as base64 {dtype, bdata[, shape]}; lists stay lists."""
    if isinstance(z, dict):
        arr = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        if "shape" not in z:  # 1-D arrays come without a shape
            return arr
        return arr.reshape([int(s) for s in str(z["shape"]).split(",")])
    return np.asarray(z, dtype=float)


def figures(at) -> list[dict]:
    """Every chart's figure JSON, in page order."""
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def figures_by_key(at) -> dict[str, dict]:
    """Figure JSON by widget key (the chart id ends with its key)."""
    return {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec)
            for c in at.get("plotly_chart")}


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
