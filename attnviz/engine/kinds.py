"""What the model families are, known without importing them (they import torch): the four
kinds of model and the model types the engine reads. The model picker lists kinds from these
without importing torch (ui.model_picker); `engine.families` is the registry
itself, and a test pins `MODEL_TYPES` equal to it (adding a family adds a line here)."""

from __future__ import annotations

ENCODER, DECODER, ENCODER_DECODER, VISION = "encoder", "decoder", "encoder-decoder", "vision"
KINDS = (ENCODER, DECODER, ENCODER_DECODER, VISION)

# config.model_type -> (title, kind), in the order messages list them (families.ORDER)
MODEL_TYPES: dict[str, tuple[str, str]] = {
    "bert": ("BERT", ENCODER),
    "roberta": ("RoBERTa", ENCODER),
    "distilbert": ("DistilBERT", ENCODER),
    "gpt2": ("GPT-2", DECODER),
    "vit": ("ViT", VISION),
    "bart": ("BART", ENCODER_DECODER),
    "llama": ("Llama", DECODER),
    "mistral": ("Mistral", DECODER),
    "qwen2": ("Qwen2", DECODER),
    "qwen3": ("Qwen3", DECODER),
    "gemma2": ("Gemma 2", DECODER),
    "gemma3_text": ("Gemma 3", DECODER),
}


def types_of_kind(kind: str) -> tuple[str, ...]:
    """The model types of one kind ('decoder' -> ('gpt2',))."""
    return tuple(t for t, (_title, k) in MODEL_TYPES.items() if k == kind)
