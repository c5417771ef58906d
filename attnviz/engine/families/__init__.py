"""One module per model family, found by name: adding a family is adding one file here.

Each module defines a subclass of engine.model.Model whose `model_types` lists the
config.model_type values it reads; `family_for(model_type)` picks it.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..model import Model


def _discover() -> dict[str, type[Model]]:
    found: dict[str, type[Model]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if (isinstance(obj, type) and issubclass(obj, Model) and obj.model_types
                    and obj.__module__ == module.__name__):
                for t in obj.model_types:
                    found[t] = obj
    return found


FAMILIES: dict[str, type[Model]] = _discover()
ORDER = ("bert", "roberta", "distilbert", "gpt2", "vit", "bart", "llama", "mistral", "qwen2",
         "qwen3", "gemma2", "gemma3_text")  # how messages list them


def supported_types() -> tuple[str, ...]:
    """Every model_type the engine reads, in a stable order."""
    first = [t for t in ORDER if t in FAMILIES]
    return tuple(first + sorted(set(FAMILIES) - set(first)))


def supported_titles() -> str:
    """'BERT, RoBERTa, DistilBERT, GPT-2, ViT and BART': for messages."""
    titles = list(dict.fromkeys(FAMILIES[t].title for t in supported_types()))
    return ", ".join(titles[:-1]) + f" and {titles[-1]}" if len(titles) > 1 else titles[0]


def family_for(model_type: str) -> type[Model]:
    """The family class for a config.model_type; a plain ValueError naming what is supported."""
    if model_type not in FAMILIES:
        raise ValueError(f"model type {model_type!r} is not supported (supported: "
                         f"{', '.join(supported_types())}, i.e. {supported_titles()})")
    return FAMILIES[model_type]
