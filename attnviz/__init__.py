"""attnviz: see self-attention, from the seeds' formulas to the heads of a pretrained BERT.

    import attnviz
    model = attnviz.load_model()          # the bundled all-MiniLM-L6-v2
    t = model.trace("I saw a saw")        # every intermediate, rows = queries, cols = keys
"""

from .engine import ARRAY_FIELDS, Model, ModelError, Trace, attention, load_model

__version__ = "0.1.0"
__all__ = ["ARRAY_FIELDS", "Model", "ModelError", "Trace", "attention", "load_model"]
