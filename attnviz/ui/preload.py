"""The model loaded while the server starts, so that the first visitor does not wait for it.

Without this, a fresh server imports torch and transformers and loads the model on the first
request, and its first visitor waits for all of it. `preload()` does that work in a
background thread of the server process (started by scripts/run_app.py as soon as Streamlit
listens): it loads the bundled model into the cache registry under the very key the
sidebar's default asks for (`context.cached_model(None, "auto")`), computes the default
sentence's trace, and imports the plotting code. A page that arrives before it is done waits
on the registry's key (the "Loading the model" spinner) and gets the same model: each key is
computed once, whoever asks.
"""

from __future__ import annotations

import sys
import time

PRELOAD_DEVICE = "auto"  # the sidebar's default device (sidebar.py)
STATE: dict[str, float | str | None] = {"started": None, "done": None, "error": None}


def preload() -> None:
    """Load the bundled model (and the default sentence's trace) into the cache registry."""
    STATE["started"] = time.time()
    try:
        from attnviz.ui.context import DEFAULT_TEXT, adapted_request, cached_model, cached_trace

        model = cached_model(None, PRELOAD_DEVICE)
        request, _ = adapted_request(model, DEFAULT_TEXT, None)
        cached_trace(model, request)
        import plotly.graph_objects  # noqa: F401

        import attnviz.plotting  # noqa: F401 - the figures' modules, imported once here
    except Exception as e:  # the first page then loads (and reports) it as before
        STATE["error"] = f"{type(e).__name__}: {e}"
        print(f"attnviz: preload failed ({STATE['error']}); the first page will load the "
              "model", file=sys.stderr, flush=True)
    finally:
        STATE["done"] = time.time()
