"""Qwen3 (Qwen Team 2025): the Llama decoder (engine/families/llama.py) with an RMSNorm on each
head's query and key (q_norm, k_norm, over head_dim) before the rotation, so a score
q·k / sqrt(d) stays in a bounded range; no q/k/v biases (attention_bias). Sliding windows as
Qwen2's (use_sliding_window, layer_types).
"""

from __future__ import annotations

from .llama import Llama


class Qwen3(Llama):
    model_types = ("qwen3",)
    title = "Qwen3"
    windows = "types"
    qk_norm = True
