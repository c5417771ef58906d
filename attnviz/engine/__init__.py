"""The attnviz engine: attention, masks, positions (rotary ones: engine.rope), one forward pass
per model family (BERT, RoBERTa, DistilBERT, GPT-2, ViT, BART, and today's decoders: Llama,
Mistral, Qwen2, Qwen3, Gemma 2 and 3, in engine/families/) and the Trace it records.

Each name loads its module when first used: `from attnviz.engine import Trace, TraceRequest`
imports NumPy only, `load_model` or `Model` import torch. The modules that need no model
(request, trace, kinds, folders, hub, tokens) never import torch themselves, so the app's
pages and sidebar import without it: torch comes with the first model loaded.

`attnviz.engine.attention` is the module engine/attention.py, as for every submodule; the
function every layer calls is in it:

    from attnviz.engine.attention import attention
"""

from __future__ import annotations

import importlib

_MODULES: dict[str, tuple[str, ...]] = {
    "attention": ("Windowed", "band_to_dense", "build_mask", "capped_attention",
                  "causal_mask", "full_mask", "soft_cap", "window_mask", "windowed_attention"),
    "families": ("FAMILIES", "family_for", "supported_titles", "supported_types"),
    "folders": ("ModelError", "allowed_model_roots", "bundled_model_dir",
                "check_allowed_folder", "locate_model"),
    "hub": ("CachedModel", "cached_models", "hub_cache_dir", "resolve_hub_id"),
    "images": ("ImageInput", "demo_image"),
    "kinds": ("DECODER", "ENCODER", "ENCODER_DECODER", "VISION"),
    "load": ("check_model_dir", "load_model", "pick_device"),
    "model": ("Encoded", "Model"),
    "positions": ("position_vectors", "sinusoidal"),
    "request": ("Ablation", "POSITION_MODES", "Patch", "TraceRequest"),
    "tokens": ("display_token",),
    "trace": ("ARRAY_FIELDS", "DECODER_FIELDS", "EXTRA_FIELDS", "Trace", "token_labels"),
    "weights": ("Limits",),
}
_WHERE = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_WHERE)


def __getattr__(name: str):
    if name in _WHERE:
        value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
        globals()[name] = value  # found once: later lookups skip this function
        return value
    if name in _MODULES:  # a submodule by its name (importing it binds it here)
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
