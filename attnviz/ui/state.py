"""Shared app state: the sentence, the model and the device, chosen once in the sidebar.

app.py draws the sidebar on every rerun (so it is the same on every page) and pages read
the result with `context()`. The sentence and layer/head choices live in the URL
(`bind="query-params"`), so a link reproduces what the class sees.

Caching: one model per (folder, device) per server (`st.cache_resource`); one Trace per
(model, text, options), also as a shared resource (read-only arrays, no per-rerun copy).
"""

from __future__ import annotations

import io
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from attnviz.engine import Model, ModelError, Trace, load_model

from .trace_cache import SHARED as SHARED_TRACES

DEFAULT_TEXT = "I saw a saw"
MAX_CHARS = 20_000  # more text than 512 tokens can hold; longer input is cut with a warning

# The modebar: PNG by default, and a second button for SVG (bertviz #33: users want images).
PLOT_CONFIG = {
    "displaylogo": False,
    "toImageButtonOptions": {"format": "png", "scale": 2},
    "modeBarButtonsToAdd": ["toImage"],
}


@dataclass
class Context:
    """What every page needs: the model, the sentence(s) and the device in use."""

    model: Model | None
    text: str
    text_pair: str | None
    error: str | None = None

    def trace(self, **options) -> Trace:
        """The (cached) trace of the current sentence under the given engine options."""
        return cached_trace(self.model, self.model.key, self.text, self.text_pair, **options)


@st.cache_resource(show_spinner=False, max_entries=4)
def cached_model(folder: str | None, device: str) -> Model:
    """One model per server: loaded once, shared by every session (read-only).

    After loading, every object alive (torch, transformers, plotly, the model) is moved out of
    the garbage collector's sight (gc.freeze, once per process): they live as long as the
    server, and a full collection no longer walks them while holding the GIL that all sessions
    share.
    """
    import gc

    global _FROZEN
    model = load_model(folder or None, device=device)
    if not _FROZEN:
        _FROZEN = True
        gc.collect()
        gc.freeze()
    return model


_FROZEN = False


def cached_trace(
    model: Model,
    model_key: str,
    text: str,
    text_pair: str | None = None,
    positions: str = "learned",
    window: int | None = None,
    causal: bool = False,
    seed: int = 0,
) -> Trace:
    """A shared, read-only Trace: identical requests from any session reuse the work.

    Kept in a server-wide cache bounded by bytes (see attnviz.ui.trace_cache).
    """
    key = (model_key, text, text_pair, positions, window, causal, seed)
    return SHARED_TRACES.get(key, lambda: model.trace(
        text, text_pair, positions=positions, window=window, causal=causal, seed=seed))


_FIGURES: OrderedDict[tuple, go.Figure] = OrderedDict()
_FIGURES_LOCK = threading.Lock()
MAX_FIGURES = 256


def cached_figure(key: tuple, build: Callable[[], go.Figure]) -> go.Figure:
    """A figure built once per server for a key of plain values (model key, text, layer...).

    Building a 12-panel Plotly figure costs more than drawing it; a class typing the same
    sentence and flipping through layers shares the work. Figures are treated as read-only.
    """
    with _FIGURES_LOCK:
        if key in _FIGURES:
            _FIGURES.move_to_end(key)
            return _FIGURES[key]
    fig = build()
    with _FIGURES_LOCK:
        _FIGURES[key] = fig
        while len(_FIGURES) > MAX_FIGURES:
            _FIGURES.popitem(last=False)
    return fig


def clear_caches() -> None:
    """Forget every shared trace and figure (tests use it to make a session recompute)."""
    SHARED_TRACES.clear()
    with _FIGURES_LOCK:
        _FIGURES.clear()


def _clean(text: str | None) -> str:
    return (text or "").replace("\x00", "")


def sidebar() -> Context:
    """Draw the shared sidebar (sentence, second sentence, model folder, device)."""
    with st.sidebar:
        st.text_area(
            "Sentence", value=DEFAULT_TEXT, key="text", bind="query-params", height=80,
            max_chars=MAX_CHARS, help="Any text; long inputs are cut at the model's 512 tokens.",
        )
        st.text_input(
            "Second sentence (optional)", value="", key="pair", bind="query-params",
            max_chars=MAX_CHARS, help="Encoded as BERT does: [CLS] A [SEP] B [SEP].",
        )
        with st.expander("Model and device"):
            st.text_input(
                "Local BERT checkpoint folder", value="", key="model_dir",
                placeholder="empty = bundled all-MiniLM-L6-v2",
                help="A folder with config.json, weights and tokenizer. Nothing is downloaded.",
            )
            devices = ["auto", "cpu"] + (["cuda"] if _cuda() else [])
            st.selectbox("Device", devices, key="device")
    ctx = context()
    if ctx.model is not None:
        st.sidebar.caption(
            f"{ctx.model.name}: {ctx.model.n_layers} layers x {ctx.model.n_heads} heads, "
            f"hidden {ctx.model.hidden}, on **{ctx.model.device.type.upper()}**"
        )
    if ctx.error:
        st.sidebar.error(ctx.error)
    return ctx


def ensure_router() -> None:
    """Make sure app.py's router (and so the shared sidebar) runs, whatever URL came first.

    On a freshly started server, Streamlit treats a first request for a sub-page such as
    /positions in its legacy multipage mode (a `pages/` folder exists and `st.navigation` has
    not run yet) and runs that page file alone, without app.py. Leave that mode and rerun:
    the rerun goes through app.py, which resolves the same page by its URL.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a Streamlit without the legacy mode
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()


def allowed_model_roots() -> list[Path]:
    """Folders under which the app may open a checkpoint (never anything outside them).

    ATTNVIZ_MODEL_ROOTS (paths joined by os.pathsep) sets them, e.g. on a class server;
    by default: the user's home (which holds the Hugging Face cache) and the working folder.
    """
    env = os.environ.get("ATTNVIZ_MODEL_ROOTS")
    roots = env.split(os.pathsep) if env else [str(Path.home()), os.getcwd()]
    return [Path(r).expanduser().resolve() for r in roots if r.strip()]


def check_allowed_folder(folder: str) -> None:
    """Refuse, with one message that says nothing about what exists, a folder outside the roots."""
    roots = allowed_model_roots()
    try:
        path = Path(folder).expanduser().resolve()  # symlinks resolved: no escaping the roots
    except (OSError, RuntimeError, ValueError):
        path = None
    if path is None or "://" in folder or not any(path.is_relative_to(r) for r in roots):
        raise ModelError(
            "only checkpoint folders inside the allowed folders can be opened "
            f"({', '.join(str(r) for r in roots)}; set ATTNVIZ_MODEL_ROOTS to change them)"
        )


def context() -> Context:
    """The sentence, model and device chosen in the sidebar, read from the widgets' state."""
    ensure_router()
    folder = _clean(st.session_state.get("model_dir")).strip() or None
    device = st.session_state.get("device", "auto")
    model, error = None, None
    if folder:
        try:
            check_allowed_folder(folder)
            with st.spinner("Loading the model (once per server)..."):
                model = cached_model(folder, device)
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
    return Context(model, text, pair, error)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def require_text(ctx: Context) -> bool:
    """Show a friendly message and return False when there is nothing to encode."""
    if ctx.model is None:
        st.error(ctx.error or "No model is loaded.")
        return False
    if not ctx.text.strip():
        st.info("Type a sentence in the sidebar to begin, e.g. *I saw a saw*.")
        return False
    return True


def show_figure(fig: go.Figure, key: str | None = None, **kwargs):
    """Draw a Plotly figure: PNG from the chart toolbar (camera icon), SVG on a click below.

    The SVG is rendered on the server by kaleido only when asked for (it needs a Chrome or
    Chromium on the server; without one the button is not offered).
    """
    event = st.plotly_chart(fig, config=PLOT_CONFIG, key=key, **kwargs)
    if key is not None and _svg_export_available():
        name = _file_stem(fig, key)
        st.download_button(
            "SVG", data=lambda: fig.to_image(format="svg"), file_name=f"{name}.svg",
            mime="image/svg+xml", key=f"svg_{key}", type="tertiary",
            icon=":material/download:", help="Download this figure as SVG (vector)",
        )
    return event


def _file_stem(fig: go.Figure, key: str) -> str:
    title = fig.layout.title.text or key
    stem = "".join(c if c.isalnum() else "_" for c in title.lower()).strip("_")
    return "attnviz_" + ("_".join(filter(None, stem.split("_")))[:60] or key)


@st.cache_resource(show_spinner=False)
def _svg_export_available() -> bool:
    import os
    import shutil

    return bool(os.environ.get("BROWSER_PATH") or any(
        shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome")))


def npz_bytes(arrays: dict) -> bytes:
    """Named arrays (and token lists) as the bytes of one compressed .npz file."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def _unpinned(value, max_copy: int = 16 * 2**20):
    """A small slice of a big array (one head of a cached trace) is copied, so the session's
    download does not keep the whole trace alive after the cache lets it go. Pass a function
    to download_arrays for big slices (it can fetch the trace again when clicked)."""
    if isinstance(value, np.ndarray) and value.base is not None and value.nbytes <= max_copy:
        return value.copy()
    return value


def download_arrays(label: str, arrays: dict | Callable[[], dict], file_name: str,
                    key: str | None = None) -> None:
    """Offer named arrays (and token lists) as one .npz download, made when it is clicked.

    `arrays` may be a function returning the dict, for numbers a page does not otherwise
    compute or for big slices of a cached trace (fetch it in the function). Nothing is
    compressed on a rerun: a class of 30 rerunning pages paid for every page's .npz on every
    click before.
    """
    if callable(arrays):
        make = arrays
    else:
        kept = {k: _unpinned(v) for k, v in arrays.items()}
        make = lambda: kept  # noqa: E731
    st.download_button(label, lambda: npz_bytes(make()), file_name=file_name,
                       mime="application/octet-stream", key=key, on_click="ignore")


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
