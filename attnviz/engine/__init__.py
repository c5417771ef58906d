"""The attnviz engine: attention, masks, positions, the BERT encoder and its Trace."""

from .attention import (
    AttentionBuffers,
    Windowed,
    attention,
    band_to_dense,
    build_mask,
    causal_mask,
    full_mask,
    window_mask,
    windowed_attention,
)
from .bert import Encoded, Model
from .load import (
    ModelError,
    allowed_model_roots,
    bundled_model_dir,
    check_allowed_folder,
    check_model_dir,
    load_model,
    pick_device,
)
from .positions import POSITION_MODES, position_vectors, sinusoidal
from .request import TraceRequest
from .trace import ARRAY_FIELDS, Trace, token_labels

__all__ = [
    "ARRAY_FIELDS", "POSITION_MODES", "AttentionBuffers", "Encoded", "Model", "ModelError",
    "Trace", "TraceRequest", "Windowed", "allowed_model_roots", "attention", "band_to_dense",
    "build_mask", "bundled_model_dir", "causal_mask", "check_allowed_folder", "check_model_dir",
    "full_mask", "load_model", "pick_device", "position_vectors", "sinusoidal", "token_labels",
    "window_mask", "windowed_attention",
]
