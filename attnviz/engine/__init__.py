"""The attnviz engine: attention, masks, positions, one forward pass per model family
(BERT, RoBERTa, DistilBERT, GPT-2, ViT, BART: engine/families/) and the Trace it records."""

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
from .families import FAMILIES, family_for, supported_titles, supported_types
from .hub import CachedModel, cached_models, hub_cache_dir, resolve_hub_id
from .images import ImageInput, demo_image
from .load import (
    ModelError,
    allowed_model_roots,
    bundled_model_dir,
    check_allowed_folder,
    check_model_dir,
    load_model,
    locate_model,
    pick_device,
)
from .model import DECODER, ENCODER, ENCODER_DECODER, VISION, Encoded, Model
from .positions import POSITION_MODES, position_vectors, sinusoidal
from .request import TraceRequest
from .tokens import display_token
from .trace import ARRAY_FIELDS, DECODER_FIELDS, EXTRA_FIELDS, Trace, token_labels
from .weights import Limits

__all__ = [
    "ARRAY_FIELDS", "DECODER", "DECODER_FIELDS", "ENCODER", "ENCODER_DECODER", "EXTRA_FIELDS",
    "FAMILIES", "POSITION_MODES", "VISION", "AttentionBuffers", "CachedModel", "Encoded",
    "ImageInput", "Limits", "Model", "ModelError", "Trace", "TraceRequest", "Windowed",
    "allowed_model_roots", "attention", "band_to_dense", "build_mask", "bundled_model_dir",
    "cached_models", "causal_mask", "check_allowed_folder", "check_model_dir", "demo_image",
    "display_token", "family_for", "full_mask", "hub_cache_dir", "load_model", "locate_model",
    "pick_device", "position_vectors", "resolve_hub_id", "sinusoidal", "supported_titles",
    "supported_types", "token_labels", "window_mask", "windowed_attention",
]
