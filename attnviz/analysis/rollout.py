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

from collections.abc import Callable

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


def streamed_rollout(layer_weights: Callable[[int], np.ndarray], upto: int,
                     progress: Callable[[float, str], None] | None = None) -> np.ndarray:
    """R_upto = Â_upto ... Â_0 [n, n] (float64) from one layer's weights [heads, n, n] at a
    time (`layer_weights(l)`, e.g. Trace.layer_weights of a long input whose trace does not
    hold every weight): rollout(weights)[upto] with one layer and R held, never
    [layers, heads, n, n]. `progress(fraction, message)` is told after each layer."""
    r = None
    for layer in range(upto + 1):
        a = np.asarray(layer_weights(layer)).mean(axis=0, dtype=np.float64)  # [n, n]
        a[np.diag_indices_from(a)] += 1.0  # mean_h W_l,h + I: Â_l before its rows' division
        a /= a.sum(axis=-1, keepdims=True)  # (no float64 copy of every head's weights made)
        r = a if r is None else a @ r  # the newest layer multiplies from the left
        if progress is not None:
            progress((layer + 1) / (upto + 1), f"{layer + 1} / {upto + 1}")
    if r is None:
        raise ValueError("upto must be a layer (0 or more)")
    return r
