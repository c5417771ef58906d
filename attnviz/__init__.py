"""attnviz: see self-attention, from the lecture's formulas to the heads of real transformers.

    import attnviz
    model = attnviz.load_model()                          # the bundled all-MiniLM-L6-v2
    t = model.trace("I saw a saw")                        # every intermediate
    t = model.trace(attnviz.TraceRequest("I saw a saw", window=1))   # the same, as a request
    t.weights                                             # rows = queries, cols = keys

    gpt2 = attnviz.load_model("gpt2")                     # a Hub id from your HF cache, offline
    attnviz.head_view(t)                                  # a notebook view; .save("view.html")
"""

from .engine import (
    ARRAY_FIELDS,
    DECODER_FIELDS,
    ImageInput,
    Model,
    ModelError,
    Trace,
    TraceRequest,
    attention,
    cached_models,
    load_model,
)

__version__ = "0.1.0"
__all__ = ["ARRAY_FIELDS", "DECODER_FIELDS", "ImageInput", "Model", "ModelError", "Trace",
           "TraceRequest", "View", "attention", "cached_models", "head_view", "load_model",
           "model_view"]


def __getattr__(name: str):
    """head_view, model_view and View load Plotly only when first used."""
    if name in ("View", "head_view", "model_view"):
        from . import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'attnviz' has no attribute {name!r}")
