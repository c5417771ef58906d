"""Qwen2 and Qwen2.5 (Qwen Team 2024): the Llama decoder (engine/families/llama.py) with biases
on the query, key and value projections (none on W_O), grouped keys and values, and rotary
positions. Sliding windows as transformers reads the config: only with use_sliding_window, and
then in the layers config.layer_types marks "sliding_attention" (by default those from
max_window_layers on).
"""

from __future__ import annotations

from .llama import Llama


class Qwen2(Llama):
    model_types = ("qwen2",)
    title = "Qwen2"
    windows = "types"

    @classmethod
    def biases(cls, config) -> tuple[bool, bool, bool]:
        return True, False, False
