"""Numbers that compare model families: how much weight falls on later tokens (zero in a
decoder), which source token each target token draws from (cross-attention), where a vision
transformer's [CLS] looks in the image. NumPy in, NumPy out, no Streamlit.

    later(W)   = (1/n) sum_i sum_{j > i} W_ij        per layer and head (rows = queries)
    source(i)  = argmax_j C_ij                        C: cross-attention [target, source]
    map(r, c)  = W[0, 1 + r*C + c]                    the [CLS] row over the patch grid
"""

from __future__ import annotations

import numpy as np


def later_weight(weights: np.ndarray) -> np.ndarray:
    """[..., n, n] weights -> [...]: the mean over queries i of the weight on keys j > i
    (0 for a causal model; for a bidirectional one, the share of attention that looks ahead)."""
    w = np.asarray(weights, dtype=np.float64)
    n = w.shape[-1]
    above = np.triu(np.ones((n, n), dtype=bool), 1)
    return (w * above).sum(axis=-1).mean(axis=-1)


def strongest_sources(cross: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cross-attention [m decoder tokens, n encoder tokens] -> (for each decoder token the
    encoder token it weighs most [m], that weight [m])."""
    c = np.asarray(cross, dtype=np.float64)
    idx = c.argmax(axis=-1)
    return idx, np.take_along_axis(c, idx[:, None], axis=-1)[:, 0]


def cls_patch_map(weights: np.ndarray, layer: int, head: int | None,
                  grid: tuple[int, int]) -> np.ndarray:
    """[layers, heads, 1 + R*C, 1 + R*C] ViT weights -> [R, C]: the weight [CLS] (row 0)
    puts on each patch, for one head or (head=None) the mean over heads."""
    w = np.asarray(weights[layer], dtype=np.float64)  # [H, n, n]
    row = w[:, 0, 1:].mean(axis=0) if head is None else w[head, 0, 1:]
    R, C = grid
    if row.shape[0] != R * C:
        raise ValueError(f"{row.shape[0]} patches do not form a {R} x {C} grid")
    return row.reshape(R, C)


def top_patches(grid_map: np.ndarray, k: int = 5) -> list[tuple[int, int, float]]:
    """The k patches (row, col, weight) with the largest weight, largest first."""
    flat = np.asarray(grid_map, dtype=np.float64).ravel()
    order = np.argsort(-flat, kind="stable")[:k]
    C = grid_map.shape[1]
    return [(int(i // C), int(i % C), float(flat[i])) for i in order]
