"""The only Streamlit-aware code besides pages/, one module per job:

    router      the page list and the navigation app.py runs; context(), what pages read
    sidebar     the shared sidebar
    language    the session's language (the sidebar's switch, the link's `lang`)
    context     the Context pages read (model + TraceRequest), its models and traces
    cache       the one cache registry (models, traces, results, figures, taggers)
    worklist    heavy work taking turns (the server's lines), each script run's own state
    progress    long work with a progress bar, computed once per server
    figures     drawing a figure with its PNG/SVG downloads; the figure cache
    live_chart  a chart kept on the page and redrawn in place (Plotly.react) from run to run
    downloads   a page's numbers as .npz or .csv, made on click
    lesson      the lesson's trained taggers; lesson_steps: each step's view
    recorder    what a page shows, recorded for "Download this view (HTML)"; fragment()
    render      drawing a view's blocks (attnviz.views) on the page, recorded as drawn
    text        literal(): typed text shown as typed in Markdown
    choices     a layer or head chosen by one click (a row of buttons), bound to the URL
    model_picker  the sidebar's list of cached models
"""

from .cache import cached, clear_caches
from .context import (
    DEFAULT_TEXT,
    Context,
    bert_like,
    cached_model,
    cached_trace,
    needs_every_weight,
    require_bert_like,
    require_text,
    trace_or_message,
)
from .downloads import download_arrays, download_csv
from .figures import cached_figure, show_figure
from .live_chart import clicked_points
from .progress import with_progress
from .recorder import fragment
from .render import render
from .router import context, ensure_router
from .sidebar import sidebar

__all__ = [
    "DEFAULT_TEXT", "Context", "bert_like", "cached", "cached_figure", "cached_model",
    "cached_trace", "clear_caches", "clicked_points", "context", "download_arrays", "download_csv",
    "ensure_router", "fragment", "needs_every_weight", "render", "require_bert_like",
    "require_text", "show_figure", "sidebar", "trace_or_message", "with_progress",
]
