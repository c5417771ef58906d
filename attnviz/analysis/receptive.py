"""Receptive fields across depth: full attention, a window of ±w, causal, and a 1-D CNN.

The lecture's slogan: "CNN is self-attention that can only attend in a receptive field;
self-attention is a CNN with a learnable receptive field". It cites Cordonnier, Loukas & Jaggi
2020 ("On the Relationship between Self-Attention and Convolutional Layers", arXiv:1911.03584),
whose result is narrower: a multi-head self-attention layer with N_h heads and a relative
positional encoding can express any convolution of kernel sqrt(N_h) x sqrt(N_h) (Theorem 1).
One windowed head is not a convolution: it mixes the values of one projection with scalar
weights, y_i = sum_j alpha'_{i,j} W v_j, where a convolution applies its own matrix per offset.
What this module compares is where information can come from.

The receptive field of output token t at depth l is the set of input positions j that can
change h_l[t]. Two ways to compute it from the models themselves:

- gradients:    g_l[j] = || d (r · h_l[t]) / d x_j ||   (r a fixed random unit vector)
  through `engine.Model.encode(x, mask)` with x.requires_grad_(), or through a stack of
  Conv1d layers of kernel 2w + 1. A masked weight is exactly 0 and so is its gradient, so
  g_l[j] = 0 exactly outside the field; inside, its size shows how much j matters. Both
  models' gradients depend on the input (the CNN's through GELU'); what does not depend on
  the content is the CNN's mixing weights, its kernels, where attention computes its
  weights alpha' from the sentence.
- reachability: P_l = (A_l + I) P_{l-1} > 0 with A_l[i, j] = [some head's weight
  alpha'_{i,j} > 0], P_0 = I; field = row t of P_l (the residual adds I).

Analytic fields (what the tests check them against):
    full:   l >= 1: every j         window w / conv of kernel 2w + 1:  |j - t| <= l·w
    causal: l >= 1: j <= t          depth 0: j = t only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnviz.analysis.seeding import seeded
from attnviz.engine.attention import build_mask

KINDS = ("full", "window", "causal", "conv")


def analytic_field(kind: str, n: int, depth: int, token: int, window: int = 1) -> np.ndarray:
    """[depth + 1, n] bool: which inputs can reach output `token` after l layers."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
    j = np.arange(n)[None, :]  # [1, n]
    layer = np.arange(depth + 1)[:, None]  # [depth + 1, 1]
    if kind in ("window", "conv"):
        return np.abs(j - token) <= layer * window
    if kind == "causal":
        return np.where(layer == 0, j == token, j <= token)
    return np.where(layer == 0, j == token, True)


def _direction(size: int, seed: int, dtype, device) -> torch.Tensor:
    g = torch.Generator(device="cpu").manual_seed(seed)
    r = torch.randn(size, generator=g, dtype=torch.float64)
    return (r / r.norm()).to(dtype=dtype, device=device)


def attention_field(
    model,
    x: torch.Tensor,
    token: int,
    window: int | None = None,
    causal: bool = False,
    seed: int = 0,
) -> np.ndarray:
    """[layers + 1, n] gradient norms || d(r · h_l[token]) / d x_j || through the encoder."""
    n = x.shape[0]
    x = x.detach().clone().requires_grad_(True)  # [n, hidden]
    mask = build_mask(n, window, causal, x.device)
    with torch.enable_grad():
        enc = model.encode(x, mask, record=False)
        r = _direction(x.shape[1], seed, x.dtype, x.device)
        rows = []
        for h in enc.hidden_states:  # depth 0 (the input itself), 1, ..., layers
            (g,) = torch.autograd.grad(h[token] @ r, x, retain_graph=True)
            rows.append(g.norm(dim=-1))  # [n]
    return torch.stack(rows).detach().cpu().numpy().astype(np.float64)


def conv_stack(depth: int, window: int, channels: int = 8, seed: int = 0,
               activation: bool = True) -> torch.nn.Module:
    """depth x (Conv1d(kernel 2w + 1, zero padding w) + GELU), random weights, float64.

    activation=False puts Identity in place of GELU: a linear stack, whose gradients are the
    same for every input.
    """
    layers: list[torch.nn.Module] = []
    with seeded(seed):  # the random kernels: atomic under concurrent sessions
        for _ in range(depth):
            layers += [torch.nn.Conv1d(channels, channels, 2 * window + 1, padding=window),
                       torch.nn.GELU() if activation else torch.nn.Identity()]
    return torch.nn.Sequential(*layers).double()


def conv_field(n: int, depth: int, window: int, token: int, channels: int = 8,
               seed: int = 0, input_seed: int | None = None,
               activation: bool = True) -> np.ndarray:
    """[depth + 1, n] gradient norms through a stack of l convolutions of kernel 2w + 1.

    The kernels come from `seed`, the random input x [1, channels, n] from `input_seed`
    (default seed + 1), r from `seed`.
    """
    net = conv_stack(depth, window, channels, seed, activation)
    g = torch.Generator(device="cpu").manual_seed(seed + 1 if input_seed is None else input_seed)
    x = torch.randn(1, channels, n, generator=g, dtype=torch.float64).requires_grad_(True)
    r = _direction(channels, seed, torch.float64, "cpu")
    rows, h, hs = [], x, [x]
    with torch.enable_grad():
        for conv, act in zip(net[0::2], net[1::2], strict=True):
            h = act(conv(h))  # [1, channels, n]
            hs.append(h)
        for out in hs:
            (grad,) = torch.autograd.grad(out[0, :, token] @ r, x, retain_graph=True)
            rows.append(grad[0].norm(dim=0))  # [n]
    return torch.stack(rows).detach().numpy()


def reachability(weights: np.ndarray, token: int) -> np.ndarray:
    """[layers + 1, n] bool from attention weights [layers, heads, n, n] (nonzero = a path)."""
    L, n = weights.shape[0], weights.shape[-1]
    P = np.eye(n, dtype=bool)  # P_0 = I
    rows = [P[token].copy()]
    for layer in range(L):
        A = (np.asarray(weights[layer]) > 0).any(axis=0) | np.eye(n, dtype=bool)  # residual
        P = (A.astype(np.int64) @ P.astype(np.int64)) > 0
        rows.append(P[token].copy())
    return np.stack(rows)


def field_extent(field: np.ndarray) -> np.ndarray:
    """[depth + 1, 2] leftmost and rightmost position with a nonzero entry per depth row."""
    out = np.full((field.shape[0], 2), -1, dtype=np.int64)
    for layer, row in enumerate(np.asarray(field) != 0):
        nz = np.flatnonzero(row)
        if nz.size:
            out[layer] = nz[0], nz[-1]
    return out


def require_bidirectional(model, what: str) -> None:
    """ValueError naming `what` unless the model's attention can see both ways (an encoder:
    model.capabilities["bidirectional"])."""
    caps = getattr(model, "capabilities", {}) or {}
    if not caps.get("bidirectional", True):
        raise ValueError(f"{what} are written for a bidirectional encoder; "
                         f"{getattr(model, 'name', 'this model')} is a decoder whose every "
                         "token sees only the tokens before it (a causal mask, always on)")


def all_fields(
    model, ids: Sequence[int], segments: Sequence[int] | None, token: int, window: int,
    positions: str = "learned",
) -> dict[str, np.ndarray]:
    """Gradient fields for full / window / causal attention (the model) and the conv stack.

    For a bidirectional encoder only: a decoder intersects every mask with its causal one, so
    its "full" and "window" fields would be causal fields under those names (ValueError)."""
    require_bidirectional(model, "receptive fields of full and windowed attention")
    ids = list(ids)
    segments = [0] * len(ids) if segments is None else list(segments)
    with torch.no_grad():
        x, _ = model.embed(ids, segments, positions)
    n, depth = len(ids), model.n_layers
    return {
        "full": attention_field(model, x, token),
        "window": attention_field(model, x, token, window=window),
        "causal": attention_field(model, x, token, causal=True),
        "conv": conv_field(n, depth, window, token),
    }
