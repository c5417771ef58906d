"""What pages read: the model and the sidebar's sentence as a `Context`, and the traces and
models behind it, loaded or computed once per server from the cache registry.

    ctx = context()                      # the model + TraceRequest of the typed sentence
    t = ctx.trace(window=1)              # Model.trace(ctx.request.with_options(window=1)),
                                         # cached under (model.key, request)

One model per (folder, device), shared read-only by every session; one Trace per
`Trace.key` = (model key, TraceRequest). After the first model load every object alive
(torch, transformers, plotly, the model) is moved out of the garbage collector's sight
(gc.freeze, once per process): they live as long as the server, and a full collection no
longer walks them while holding the GIL that all sessions share.
"""

from __future__ import annotations

import gc
import threading
from dataclasses import dataclass

import streamlit as st

from attnviz.engine import (
    Model,
    ModelError,
    Trace,
    TraceRequest,
    check_allowed_folder,
    load_model,
)

from .cache import cached
from .router import ensure_router

DEFAULT_TEXT = "I saw a saw"
_FROZEN = threading.Event()


@dataclass(frozen=True)
class Context:
    """What every page needs: the model and the request for the sidebar's sentence(s)."""

    model: Model | None
    request: TraceRequest  # the typed text and pair, default options
    error: str | None = None

    @property
    def text(self) -> str:
        return self.request.text

    @property
    def text_pair(self) -> str | None:
        return self.request.pair

    def trace(self, **options) -> Trace:
        """The (cached) trace of the sidebar's sentence under these engine options."""
        return cached_trace(self.model, self.request.with_options(**options))


def cached_model(folder: str | None, device: str) -> Model:
    """The model in `folder` (None: the bundled one) on `device`, loaded once per server.

    `folder` must already be resolved (engine.check_allowed_folder) so that every spelling of
    one folder is one cache entry."""
    def load() -> Model:
        model = load_model(folder, device=device)
        if not _FROZEN.is_set():
            _FROZEN.set()
            gc.collect()
            gc.freeze()
        return model

    return cached("models", (folder, device), load, waiting=lambda: st.spinner(
        "Loading the model (once per server)..."))


def cached_trace(model: Model, request: TraceRequest) -> Trace:
    """A shared, read-only Trace: identical requests from any session reuse the work."""
    return cached("traces", (model.key, request), lambda: model.trace(request))


def _clean(text: str | None) -> str:
    return (text or "").replace("\x00", "")


def context() -> Context:
    """The sentence, model and device chosen in the sidebar, read from the widgets' state."""
    ensure_router()
    folder = _clean(st.session_state.get("model_dir")).strip() or None
    device = st.session_state.get("device", "auto")
    model, error = None, None
    if folder:
        try:
            resolved = str(check_allowed_folder(folder))
            with st.spinner("Loading the model (once per server)..."):
                model = cached_model(resolved, device)
        except ModelError as e:
            error = f"Model folder refused: {e}. Showing the bundled model instead."
        except Exception as e:  # never a traceback on the page
            error = f"Model folder refused ({type(e).__name__}). Showing the bundled model instead."
    if model is None:
        try:
            with st.spinner("Loading the model (once per server)..."):
                model = cached_model(None, device)
        except Exception as e:
            error = f"The bundled model could not be loaded: {e}"
    text = _clean(st.session_state.get("text", DEFAULT_TEXT))
    pair = _clean(st.session_state.get("pair")).strip() or None
    return Context(model, TraceRequest(text, pair), error)


def require_text(ctx: Context) -> bool:
    """Show a friendly message and return False when there is nothing to encode."""
    if ctx.model is None:
        st.error(ctx.error or "No model is loaded.")
        return False
    if not ctx.text.strip():
        st.info("Type a sentence in the sidebar to begin, e.g. *I saw a saw*.")
        return False
    return True


def trace_or_message(ctx: Context, **options) -> Trace | None:
    """The trace for the sidebar's sentence, or None after showing a clear message."""
    if not require_text(ctx):
        return None
    if ctx.error:
        st.warning(ctx.error)
    try:
        with st.spinner("Running the encoder..."):
            t = ctx.trace(**options)
    except ValueError as e:
        st.error(f"Cannot encode this input: {e}")
        return None
    if t.dropped:
        st.warning(
            f"The input is longer than the model's {ctx.model.max_positions} positions: "
            f"{t.dropped} tokens at the end were dropped."
        )
    return t
