"""The only Streamlit-aware code besides pages/: cached loaders, the shared sidebar, helpers."""

from .state import (
    DEFAULT_TEXT,
    Context,
    cached_figure,
    cached_model,
    cached_trace,
    context,
    download_arrays,
    ensure_router,
    require_text,
    show_figure,
    sidebar,
    trace_or_message,
)

__all__ = [
    "DEFAULT_TEXT", "Context", "cached_figure", "cached_model", "cached_trace", "context",
    "download_arrays", "ensure_router", "require_text", "show_figure", "sidebar",
    "trace_or_message",
]
