"""`streamlit run app.py`, with the model loaded while the server starts.

    python -m attnviz.ui.server [app.py] [streamlit run's flags]

Without this, a fresh server imports torch and transformers and loads the model on the first
request, and its first visitor waits for all of it. Here a background thread does that work as
soon as the process starts, in parallel with Streamlit's own start: it loads the bundled model
into the cache registry under the very key the sidebar's default asks for
(`context.cached_model(None, "auto")`), computes the default sentence's trace, and imports the
plotting code. A page that arrives before the thread is done waits on the registry's key (the
"Loading the model" spinner) and gets the same model: each key is computed once, whoever asks.

ATTNVIZ_PRELOAD=0 turns the preload off (the benchmark's "before"). Everything else is
`streamlit run`: the same flags, config file and signal handling.
"""

from __future__ import annotations

import os
import sys
import threading
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


def start_preload() -> threading.Thread | None:
    """Start `preload` in a daemon thread unless ATTNVIZ_PRELOAD=0."""
    if os.environ.get("ATTNVIZ_PRELOAD", "1") == "0":
        return None
    thread = threading.Thread(target=preload, name="attnviz-preload", daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> None:
    """Preload in the background, then `streamlit run` with argv (default app.py)."""
    from streamlit.web import cli

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        args.insert(0, "app.py")
    start_preload()
    cli.main(["run", *args], prog_name="streamlit")


if __name__ == "__main__":
    main()
