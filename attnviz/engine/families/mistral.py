"""Mistral (Jiang et al. 2023, "Mistral 7B"): the Llama decoder (engine/families/llama.py) with
a sliding window in every layer. With window W (config.sliding_window), query i attends to keys
i - W + 1 .. i only; information from further back reaches it through the layers below, up to
L·(W - 1) tokens after L layers. A config without a window (sliding_window null) is Llama.
"""

from __future__ import annotations

from .llama import Llama


class Mistral(Llama):
    model_types = ("mistral",)
    title = "Mistral"
    windows = "all"
