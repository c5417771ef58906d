"""The attnviz engine: attention, masks, positions, the BERT encoder and its Trace."""

from .attention import attention, build_mask, causal_mask, full_mask, window_mask
from .bert import Encoded, Model, check_options
from .load import ModelError, bundled_model_dir, check_model_dir, load_model, pick_device
from .positions import POSITION_MODES, position_vectors, sinusoidal
from .trace import ARRAY_FIELDS, Trace, token_labels

__all__ = [
    "ARRAY_FIELDS", "POSITION_MODES", "Encoded", "Model", "ModelError", "Trace", "attention",
    "build_mask", "bundled_model_dir", "causal_mask", "check_model_dir", "check_options",
    "full_mask", "load_model", "pick_device", "position_vectors", "sinusoidal", "token_labels",
    "window_mask",
]
