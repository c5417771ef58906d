"""Rotary position embedding (RoPE): queries and keys turned by an angle that grows with position.

Su et al. 2021 (RoFormer, arXiv:2104.09864). Split a head's d dimensions into d/2 pairs. Pair i
of the vector at position m is turned by the angle m·θ_i, with θ_i = base^(-2i/d):

    [x'_a]   [cos mθ_i  -sin mθ_i] [x_a]
    [x'_b] = [sin mθ_i   cos mθ_i] [x_b]

Turning q (at m) and k (at n) and taking their dot product leaves cos and sin of (m - n)θ_i
only, so the score of two vectors depends on their distance, never on where they stand. No
position vector is added to the input: positions enter through q and k alone, before
`attention()` (engine.attention), which stays the same few lines.

Pairs are formed as transformers' Llama-shaped models form them: dimension j with j + d/2
("rotate half"), not neighbours 2i, 2i+1. The two conventions differ by a fixed permutation
of dimensions, so q·k is the same either way; the real checkpoints were trained with this one.

Angles are computed in float32, as transformers computes them, so a trace matches the
reference model to float rounding at every length (at position 2,048 a float32 angle differs
from a float64 one by about 1e-4 radians; both are "the" model, and the checkpoint runs in the
first).
"""

from __future__ import annotations

import math

import torch


def frequencies(head_dim: int, base: float = 10000.0) -> torch.Tensor:
    """θ_i = base^(-2i/d) for i = 0 .. d/2 - 1: each pair's angle per position (float32, [d/2])."""
    if head_dim % 2:
        raise ValueError(f"RoPE needs an even head dimension; got {head_dim}")
    exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
    return 1.0 / (base ** exponents)


def wavelengths(inv_freq: torch.Tensor) -> torch.Tensor:
    """2π/θ_i: how many tokens pair i takes to turn once all the way round ([d/2])."""
    return 2 * math.pi / inv_freq.double()


def cos_sin(positions: torch.Tensor, inv_freq: torch.Tensor, scaling: float = 1.0,
            dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of every position's angles, [n, d] (each pair's angle written twice).

    `scaling` multiplies both (YaRN's attention factor; 1 for plain RoPE).
    """
    angles = positions.float()[:, None] * inv_freq.float().to(positions.device)[None, :]
    angles = torch.cat([angles, angles], dim=-1)  # [n, d]: dimension j and j + d/2 share one
    return (angles.cos() * scaling).to(dtype), (angles.sin() * scaling).to(dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Turn each pair (x_j, x_{j+d/2}) of x [..., n, d] by its angle: x·cos + rotate_half(x)·sin."""
    half = x.shape[-1] // 2
    turned = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + turned * sin


def rope(x: torch.Tensor, positions: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """x [..., n, d] turned by positions [n]: plain RoPE of the given base, in one call."""
    cos, sin = cos_sin(positions, frequencies(x.shape[-1], base), dtype=x.dtype)
    return rotate(x, cos, sin)
