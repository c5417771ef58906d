"""How much context does BERT use? The encoder run with truncated windows, compared with full.

The lecture notes' truncated self-attention (for speech): a query attends only within a range,
    w_ij = softmax_j(q^i · k^j / sqrt(d_k))  over the keys j with |i - j| <= w only.
`context_sweep` runs the encoder with window_mask(n, w) for w = 1..n-1 and compares each
token's final vector with its vector under full attention (cosine). The windowed attention
itself is `attnviz.engine.windowed_attention`; its cost is measured in `analysis.cost`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from attnviz.analysis.common import cosine, first_repeated_pair
from attnviz.engine.attention import window_mask


@dataclass
class ContextSweep:
    """Final vectors of the encoder under windows w, compared with full attention.

    cosine[k, i] = cos(h_w[i], h_full[i]) for window windows[k] (h = last hidden state);
    pair_cosine[k] = cos(h_w[a], h_w[b]) for the token pair (a, b), e.g. the two "saw"s.
    """

    windows: np.ndarray  # [W]
    cosine: np.ndarray  # [W, n]
    mean_cosine: np.ndarray  # [W]
    pair: tuple[int, int] | None
    pair_cosine: np.ndarray | None  # [W]
    full_pair_cosine: float | None
    tokens: list[str] = field(default_factory=list)


@torch.inference_mode()
def context_sweep(
    model,
    ids: Sequence[int],
    segments: Sequence[int] | None = None,
    windows: Sequence[int] | None = None,
    pair: tuple[int, int] | None = None,
    positions: str = "learned",
    progress: Callable[[float, str], None] | None = None,
) -> ContextSweep:
    """Run the encoder with window_mask(n, w) for each w (default 1 .. n - 1, then n - 1 = full)."""
    ids = list(ids)
    n = len(ids)
    segments = [0] * n if segments is None else list(segments)
    windows = list(range(1, max(n, 2))) if windows is None else [int(w) for w in windows]
    x, _ = model.embed(ids, segments, positions)
    full = model.encode(x, None, record=False).hidden_states[-1]  # [n, hidden]
    tokens = model.tokens_of(ids)
    if pair is None:
        pair = first_repeated_pair(tokens)
    full = full.cpu().numpy()
    cos, pair_cos = [], []
    for k, w in enumerate(windows):
        h = model.encode(x, window_mask(n, w, x.device), record=False).hidden_states[-1]
        h = h.cpu().numpy()
        cos.append(cosine(h, full))
        if pair is not None:
            pair_cos.append(float(cosine(h[pair[0]], h[pair[1]])))
        if progress:
            progress((k + 1) / len(windows), f"window w = {w}")
    cosines = np.stack(cos)
    full_pair = float(cosine(full[pair[0]], full[pair[1]])) if pair is not None else None
    return ContextSweep(
        windows=np.asarray(windows), cosine=cosines, mean_cosine=cosines.mean(axis=1), pair=pair,
        pair_cosine=np.asarray(pair_cos) if pair is not None else None,
        full_pair_cosine=full_pair, tokens=tokens,
    )


def sweep_windows(n: int, max_points: int = 40) -> list[int]:
    """Windows for the context sweep: every w in 1..n-1 when few, else 1..24 then geometric."""
    top = max(1, n - 1)  # w = n - 1 lets every token see every other: full attention
    if top <= max_points:
        return list(range(1, top + 1))
    head = list(range(1, 25))
    tail = np.unique(np.geomspace(25, top, max_points - len(head)).round().astype(int))
    return head + [int(w) for w in tail if w > 24]
