"""Scaled dot-product self-attention, written the way the lecture notes write it.

    scores  S = Q K^T                      (raw similarities q^i . k^j)
    weights W = softmax(S / sqrt(d_k))      (each row sums to 1)
    outputs Y = W V                         (b^i = sum_j w_ij v^j)

Convention used everywhere in attnviz: rows = queries (who looks), columns = keys
(who is looked at). A mask is a boolean [query, key] matrix, True where attending is
allowed; a masked weight is exactly 0 because its score becomes -inf before the softmax.

`attention` is the one function every layer calls (engine.model); `capped_attention` adds
Gemma 2's soft cap on the scaled scores (one named step, `soft_cap`); truncated
attention whose cost grows with n·w instead of n² is `windowed_attention`, beside it.

Vaswani et al. 2017, "Attention Is All You Need", eq. (1); windows: Beltagy et al. 2020
(Longformer, arXiv:2004.05150).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


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
    scores = scores_of(queries, keys)  # [..., n_q, n_k]
    logits = scores * scale
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(logits, dim=-1)  # [..., n_q, n_k]
    outputs = weights @ values  # [..., n_q, d_v]
    return outputs, weights, scores


def soft_cap(logits: torch.Tensor, cap: float) -> torch.Tensor:
    """Gemma 2's soft-capping: cap · tanh(logits / cap), near the identity for small logits,
    never beyond ±cap (Gemma Team 2024, "Gemma 2", section 2)."""
    return cap * torch.tanh(logits / cap)


def capped_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor | None,
    scale: float,
    cap: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`attention` with one more step: the scaled scores soft-capped before the softmax.

    weights = softmax(soft_cap(scores * scale, cap)) where the mask allows; returns
    (outputs, weights, scores) with scores = Q K^T unscaled, as `attention`.
    """
    scores = scores_of(queries, keys)  # [..., n_q, n_k]
    logits = soft_cap(scores * scale, cap)
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(logits, dim=-1)
    return weights @ values, weights, scores


# What `attention_rows` keeps of each head's weights W [n, n] (one value per query row i, or per
# key j for "received"), before the weights are dropped.
ROW_SUMMARY = {
    "first": "W_i0: the weight on the first token",
    "self": "W_ii: the weight on itself",
    "previous": "W_i,i-1 (0 for i = 0)",
    "next": "W_i,i+1 (0 for i = n - 1)",
    "entropy": "-sum_j W_ij ln W_ij (nats)",
    "received": "sum_i W_ij: the weight key j receives from all queries (float64)",
}


def row_blocks(mask: torch.Tensor, block: int) -> list[tuple[int, int, int, int, int, int]]:
    """For `attention_rows`: each block of `block` query rows of mask [n, n] as (r, hi, lo, top,
    a, b): rows r .. hi - 1 may see only keys lo .. top - 1 (the union of their rows), and all
    of them every key a .. b - 1 (a = b where that is not known: each row's keys are not one
    interval, as they are in causal, window and sliding-window masks)."""
    n = mask.shape[-1]
    idx = torch.arange(n, device=mask.device)
    first = torch.where(mask, idx, n).amin(-1)  # [n] each row's first allowed key
    last = torch.where(mask, idx, -1).amax(-1)  # [n] and its last
    interval = bool((mask.sum(-1) == last - first + 1).all())
    out = []
    for r in range(0, mask.shape[0], block):
        hi = min(mask.shape[0], r + block)
        lo, top = int(first[r:hi].min()), int(last[r:hi].max()) + 1
        a, b = (int(first[r:hi].max()), int(last[r:hi].min()) + 1) if interval else (lo, lo)
        out.append((r, hi, lo, top, a, max(a, b)))
    return out


def attention_rows(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    scale: float,
    block: int,
    cap: float | None = None,
    blocks: list | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """`attention` (`capped_attention` where `cap` is set) for a long input, `block` query rows
    at a time, never forming the [n, n] weights of a head: each block of rows meets only the
    keys that its rows' mask allows (causal rows r .. r + B - 1 stop at key r + B - 1), and
    its weights are summarised (ROW_SUMMARY) before they are dropped.

    queries [..., n, d], keys and values broadcastable to them ([..., n, d]); mask [n, n],
    True = may attend (`blocks`: row_blocks(mask, block), when already made). Per block, as
    `attention`: S = Q K^T, logits = S · scale (soft-capped), masked; weights =
    softmax(logits), outputs = weights @ V. Returns (outputs [..., n, d_v], {name: [..., n]}).
    """
    n, d = queries.shape[-2], queries.shape[-1]
    lead = torch.broadcast_shapes(queries.shape[:-2], keys.shape[:-2])
    # Query heads that read one key/value head (keys [..., 1, n, d] under queries [..., P, n,
    # d]) are met as one matrix of P x rows: one product per key/value head, no copied keys.
    per = queries.shape[-3] if (queries.dim() == keys.dim() >= 3 and keys.shape[-3] == 1) else 1
    kv_lead = (*lead[:-1], 1) if per > 1 else lead
    k = keys.expand(*kv_lead, n, d).reshape(-1, n, d)  # [g, n, d]
    v = values.expand(*kv_lead, n, values.shape[-1]).reshape(-1, n, values.shape[-1])
    q = queries.expand(*lead, n, d).reshape(k.shape[0], per, n, d)  # [g, P, n, d]
    g, dev = k.shape[0], queries.device
    out = q.new_empty(g, per, n, v.shape[-1])
    summary = {name: q.new_zeros(g, per, n) for name in ROW_SUMMARY}
    summary["received"] = summary["received"].double()
    masked = torch.finfo(q.dtype).min  # exp(min - lse) = 0: a masked weight is exactly 0
    ones, zero = q.new_ones(1, block), q.new_zeros(())
    offsets = torch.tensor([0, -1, 1], device=dev)  # self, previous, next
    for r, hi, lo, top, a, b in blocks or row_blocks(mask, block):
        rows = hi - r
        q_b = q[:, :, r:hi].reshape(g, per * rows, d)
        logits = torch.baddbmm(zero, q_b, k[:, lo:top].transpose(-1, -2), beta=0, alpha=scale)
        logits = logits.view(g, per, rows, top - lo)  # S · scale for keys lo .. top - 1
        if cap is not None:
            logits = soft_cap(logits, cap)
        for c0, c1 in ((lo, a), (b, top)) if a < b else ((lo, top),):  # keys all rows see: as is
            if c1 > c0:
                logits[..., c0 - lo:c1 - lo].masked_fill_(~mask[r:hi, c0:c1], masked)
        top_l = logits.amax(dim=-1, keepdim=True)  # m_i = max_j l_ij
        weights = torch.softmax(logits, dim=-1)
        out[:, :, r:hi] = torch.bmm(weights.view(g, per * rows, top - lo),
                                    v[:, lo:top]).view(g, per, rows, -1)
        # entropy: ln W_ij = l_ij - m_i - ln Z_i, and 1/Z_i = W at the max (the row's largest
        # weight), so -sum_j W_ij ln W_ij = -ln(max_j W_ij) + sum_j W_ij (m_i - l_ij): two sums
        # of terms >= 0 (a masked key: W = 0)
        gap = torch.sub(top_l, logits, out=logits)  # m_i - l_ij, in place of the logits
        summary["entropy"][..., r:hi] = (torch.linalg.vecdot(weights, gap)
                                         - weights.amax(dim=-1).log())
        summary["received"][..., lo:top] += (ones[:, :rows] @ weights).squeeze(-2)
        if lo == 0:
            summary["first"][..., r:hi] = weights[..., 0]
        cols = torch.arange(r, hi, device=dev)[:, None] + offsets  # [rows, 3]: i, i - 1, i + 1
        got = weights.gather(-1, (cols - lo).clamp(0, top - lo - 1).expand(
            *weights.shape[:-1], 3))
        got = torch.where((cols >= lo) & (cols < top), got, 0.0)
        for i, name in enumerate(("self", "previous", "next")):
            summary[name][..., r:hi] = got[..., i]
    shape = (*lead, n)
    return (out.reshape(*shape, out.shape[-1]),
            {name: value.reshape(shape) for name, value in summary.items()})


def scores_of(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """S = Q K^T: every query's dot product with every key, [..., n_q, n_k] (unscaled)."""
    return torch.matmul(queries, keys.transpose(-1, -2))


def full_mask(n: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Every token may attend to every token: an all-True [n, n] matrix."""
    return torch.ones(n, n, dtype=torch.bool, device=device)


def window_mask(n: int, window: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Truncated attention: token i attends to j only when |i - j| <= window (window >= 0)."""
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


# --------------------------------------------------------------------------- windowed
@dataclass
class Windowed:
    """Windowed attention results. Band layout: band[..., i, o] belongs to key j = i - w + o."""

    outputs: torch.Tensor  # [..., n, d_v]
    weights: torch.Tensor | None  # [..., n, 2w + 1]  0 where the key is masked or absent
    scores: torch.Tensor | None  # [..., n, 2w + 1]  raw q·k, NaN where no key exists
    window: int


def default_block(window: int) -> int:
    """Rows per query block: B = max(w, 16), so a block meets B + 2w <= 3 max(w, 16) keys."""
    return max(int(window), 16)


def windowed_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    window: int,
    *,
    causal: bool = False,
    scale: float | None = None,
    block: int | None = None,
    return_band: bool = True,
) -> Windowed:
    """Attention restricted to |i - j| <= window (and j <= i if causal), never forming [n, n].

    The same numbers as `attention(q, k, v, build_mask(n, window, causal))`, at a cost that
    grows with n·w: queries are cut into blocks of B rows, and block b only meets the B + 2w
    keys that can fall in its rows' windows (keys gathered with `Tensor.unfold` of the
    zero-padded sequence, Longformer's "sliding chunks"). queries/keys/values: [..., n, d].
    With nb = ceil(n / B) blocks:
        S_b = Q_b K_b^T        [..., nb, B, B + 2w]   K_b = keys b·B - w .. b·B + B + w - 1
        W_b = softmax(S_b / sqrt(d_k), masked to the window),  Y_b = W_b V_b.
    """
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    n, d = queries.shape[-2], queries.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    w = int(window)
    B = int(block or default_block(w))
    nb = -(-n // B)
    n_pad = nb * B
    span = B + 2 * w  # keys a block of queries can see
    lead = queries.shape[:-2]
    q_b = F.pad(queries, (0, 0, 0, n_pad - n)).reshape(*lead, nb, B, d)  # [..., nb, B, d]
    k_p = F.pad(keys, (0, 0, w, n_pad - n + w))  # [..., n_pad + 2w, d]
    v_p = F.pad(values, (0, 0, w, n_pad - n + w))
    k_b = k_p.unfold(-2, span, B)  # [..., nb, d, span]  (a view: unfold puts the window last)
    v_b = v_p.unfold(-2, span, B).transpose(-1, -2)  # [..., nb, span, d_v]
    scores = q_b @ k_b  # [..., nb, B, span]
    # Which (query, key) pairs lie inside the window: j - i = c - w - r, same for every block.
    dev = queries.device
    rel = torch.arange(span, device=dev) - w - torch.arange(B, device=dev)[:, None]  # [B, span]
    inside = rel.abs() <= w
    if causal:
        inside = inside & (rel <= 0)
    # Which keys exist (not padding): depends on (block, column) only, j = b·B - w + c.
    j = (torch.arange(nb, device=dev) * B)[:, None] - w + torch.arange(span, device=dev)
    exists = ((j >= 0) & (j < n))[:, None, :]  # [nb, 1, span]
    logits = scores * scale  # [..., nb, B, span]
    logits.masked_fill_(~inside, float("-inf")).masked_fill_(~exists, float("-inf"))
    weights = torch.softmax(logits, dim=-1)  # [..., nb, B, span]
    out = (weights @ v_b).reshape(*lead, n_pad, values.shape[-1])[..., :n, :]  # [..., n, d_v]
    if not return_band:
        return Windowed(out, None, None, w)
    # Diagonal strip of each block: row r's keys r .. r + 2w are j = i - w .. i + w.
    idx = torch.arange(B, device=dev)[:, None] + torch.arange(2 * w + 1, device=dev)  # [B, 2w+1]
    idx = idx.expand(*weights.shape[:-1], 2 * w + 1)
    band_w = weights.gather(-1, idx).reshape(*lead, n_pad, 2 * w + 1)[..., :n, :]
    band_s = scores.masked_fill(~exists, float("nan")).gather(-1, idx)
    band_s = band_s.reshape(*lead, n_pad, 2 * w + 1)[..., :n, :]
    return Windowed(out, band_w, band_s, w)


def band_to_dense(band: torch.Tensor, window: int, fill: float = 0.0) -> torch.Tensor:
    """[..., n, 2w + 1] band -> [..., n, n] matrix (dense[i, i - w + o] = band[i, o]).

    Only for pictures and tests of short inputs: it is exactly the n² object the windowed
    computation avoids.
    """
    n, w = band.shape[-2], int(window)
    dense = band.new_full((*band.shape[:-1], n + 2 * w), fill)  # column c is key c - w
    col = torch.arange(n, device=band.device)[:, None] + torch.arange(2 * w + 1, device=band.device)
    dense.scatter_(-1, col.expand_as(band), band)
    return dense[..., w : w + n]
