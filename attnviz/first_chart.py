"""What app.py does first on a fresh server, before it imports attnviz.ui (and so torch): while
the model still loads, send a chart no one sees, so that the browser fetches and compiles
Plotly's script meanwhile.

Streamlit's browser code fetches a chart's script (Plotly's, 4.7 MB) only when the page's
first chart arrives, then compiles it: ~2 s on this project's 2-core machine from the request
to the first heatmap drawn, for a bare app with one 6 x 6 heatmap. On a fresh server the
first chart used to arrive only once the model had loaded (and before that, once the page's
script had imported torch, which the preload thread was importing too), so the two waits
added up. With this chart first the browser compiles Plotly's script while the server loads
the model (benchmarks/bench_first_visit.py, README "First visit").

Only while scripts/run_app.py's preload thread runs and no model is loaded yet: otherwise
(the model ready, plain `streamlit run`, the tests' AppTest) nothing is sent;
ATTNVIZ_FIRST_CHART=0 sends it never (the benchmark's "no first chart" server). Standard library
only at import; Streamlit is imported when a chart is sent (the server has it loaded already).
"""

from __future__ import annotations

import os
import sys
import threading

PRELOAD_THREAD = "attnviz-preload"  # scripts/run_app.py names its preload thread so

# A chart drawn but not seen: no trace shown, 10 px tall (plotly's least), no toolbar.
HIDDEN_CHART = {"data": [{"type": "heatmap", "z": [[0]], "visible": False,
                          "showscale": False, "hoverinfo": "skip"}],
                "layout": {"height": 10, "margin": {"l": 0, "r": 0, "t": 0, "b": 0},
                           "xaxis": {"visible": False}, "yaxis": {"visible": False}}}


def model_loading() -> bool:
    """The preload thread runs and no model is in the cache registry yet (ui.cache, looked up
    without importing it: importing it imports torch)."""
    if os.environ.get("ATTNVIZ_FIRST_CHART") == "0":
        return False
    cache = sys.modules.get("attnviz.ui.cache")  # may be half imported (by the preload)
    models = getattr(cache, "CACHES", {}).get("models")
    if models is not None and len(models) > 0:  # every rerun once loaded: no thread scan
        return False
    return any(t.name == PRELOAD_THREAD and t.is_alive() for t in threading.enumerate())


def send_hidden_chart():
    """While the model loads, the hidden chart in a slot of its own (returned: router.run
    empties it once the page is drawn); otherwise None. A failure here never stops the page."""
    try:
        if not model_loading():
            return None
        import streamlit as st

        slot = st.empty()
        slot.plotly_chart(HIDDEN_CHART, config={"staticPlot": True, "displayModeBar": False},
                          key="attnviz_first_chart")
    except Exception:  # noqa: BLE001 - a hint to the browser: the page goes on without it
        return None
    return slot
