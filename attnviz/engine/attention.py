"""Scaled dot-product self-attention, written the way the seeds write it.

    scores  S = Q K^T                      (raw similarities q^i . k^j)
    weights W = softmax(S / sqrt(d_k))      (each row sums to 1)
    outputs Y = W V                         (b^i = sum_j w_ij v^j)

Convention used everywhere in attnviz: rows = queries (who looks), columns = keys
(who is looked at). A mask is a boolean [query, key] matrix, True where attending is
allowed; a masked weight is exactly 0 because its score becomes -inf before the softmax.

Vaswani et al. 2017, "Attention Is All You Need", eq. (1).
"""

from __future__ import annotations

import math

import torch


def attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Return (outputs, weights, scores) for queries/keys/values of shape [..., n, d].

    scores = Q K^T (unscaled), weights = softmax(scores * scale) with scale = 1/sqrt(d_k),
    outputs = weights @ V. `mask` is broadcastable to [..., n, n], True = may attend.
    """
    if scale is None:
        scale = 1.0 / math.sqrt(queries.shape[-1])
    scores = queries @ keys.transpose(-1, -2)  # [..., n_q, n_k]
    logits = scores * scale
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(logits, dim=-1)  # [..., n_q, n_k]
    outputs = weights @ values  # [..., n_q, d_v]
    return outputs, weights, scores


def full_mask(n: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Every token may attend to every token: an all-True [n, n] matrix."""
    return torch.ones(n, n, dtype=torch.bool, device=device)


def window_mask(n: int, window: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Truncated attention: token i attends to j only when |i - j| <= window."""
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    idx = torch.arange(n, device=device)
    return (idx[:, None] - idx[None, :]).abs() <= window


def causal_mask(n: int, device: torch.device | str | None = None) -> torch.Tensor:
    """A decoder's mask: token i attends to itself and earlier tokens (j <= i)."""
    idx = torch.arange(n, device=device)
    return idx[None, :] <= idx[:, None]


def build_mask(
    n: int,
    window: int | None = None,
    causal: bool = False,
    device: torch.device | str | None = None,
) -> torch.Tensor | None:
    """Combine a window and/or causal mask; None means full attention (nothing masked)."""
    mask = None
    if window is not None:
        mask = window_mask(n, window, device)
    if causal:
        c = causal_mask(n, device)
        mask = c if mask is None else mask & c
    return mask
