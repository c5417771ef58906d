"""Attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

Each layer's attention is averaged over heads, the residual connection is modelled by adding
the identity, and rows are renormalised:

    Â_l = (mean_h W_l,h + I) / 2          (rows of W sum to 1, so rows of Â_l sum to 1)

Rollout multiplies these through the layers, the first layer rightmost:

    R_l = Â_l Â_{l-1} ... Â_0,     R_l[i, j] = how much of input token j flows into
                                   position i after layer l, under this linear model.

It ignores the values, the feed-forward blocks and LayerNorm: a better summary of where
information can flow than raw attention, still not an explanation of the prediction.
"""

from __future__ import annotations

import numpy as np


def residual_attention(weights: np.ndarray) -> np.ndarray:
    """Â_l for every layer: [layers, heads, n, n] -> [layers, n, n], rows sum to 1."""
    w = np.asarray(weights, dtype=np.float64).mean(axis=1)  # [L, n, n]
    a = w + np.eye(w.shape[-1])[None]  # [L, n, n]
    return a / a.sum(axis=-1, keepdims=True)


def rollout(weights: np.ndarray) -> np.ndarray:
    """R_l = Â_l ... Â_0 for every layer l: [layers, heads, n, n] -> [layers, n, n] (float64)."""
    a = residual_attention(weights)  # [L, n, n]
    out = np.empty_like(a)
    r = np.eye(a.shape[-1])
    for layer in range(a.shape[0]):
        r = a[layer] @ r  # the newest layer multiplies from the left
        out[layer] = r
    return out
