"""attnviz: see self-attention, from the lecture's formulas to the heads of a pretrained BERT.

    import attnviz
    model = attnviz.load_model()                          # the bundled all-MiniLM-L6-v2
    t = model.trace("I saw a saw")                        # every intermediate
    t = model.trace(attnviz.TraceRequest("I saw a saw", window=1))   # the same, as a request
    t.weights                                             # rows = queries, cols = keys
"""

from .engine import ARRAY_FIELDS, Model, ModelError, Trace, TraceRequest, attention, load_model

__version__ = "0.1.0"
__all__ = ["ARRAY_FIELDS", "Model", "ModelError", "Trace", "TraceRequest", "attention",
           "load_model"]
