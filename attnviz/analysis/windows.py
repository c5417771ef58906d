"""How much context does BERT use? The encoder run with truncated windows, compared with full.

The lecture's truncated self-attention (for speech): a query attends only within a range,
    alpha'_{i,j} = softmax_j(q^i · k^j / sqrt(d_k))  over the keys j with |i - j| <= w only.
`context_sweep` runs the encoder with such a mask for w = 1..n-1 and compares each token's
final vector with its vector under full attention (cosine).

Two masks, because BERT's heads put much of their weight on [CLS] and [SEP] (a "sink"; see
`special_share`): a plain window also cuts most tokens off those two, and that alone moves
the vectors a lot. With keep_special=True the window still limits which words a token sees,
but every token may also attend to [CLS] and [SEP]:
    plain:              M[i, j] = |i - j| <= w
    [CLS]/[SEP] kept:   M[i, j] = |i - j| <= w  or  j is [CLS]/[SEP]
Either way the model was trained with full attention: a window is a mask it never saw.

The windowed attention itself is `attnviz.engine.windowed_attention`; its cost is measured
in `analysis.cost`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from attnviz.analysis.common import (
    cosine,
    first_repeated_pair,
    sequences_per_batch,
    special_mask,
)
from attnviz.engine.attention import window_mask
from attnviz.i18n import _


@dataclass
class ContextSweep:
    """Final vectors of the encoder under windows w, compared with full attention.

    cosine[k, i] = cos(h_w[i], h_full[i]) for window windows[k] (h = last hidden state);
    pair_cosine[k] = cos(h_w[a], h_w[b]) for the token pair (a, b), e.g. the two "saw"s.
    keep_special: whether [CLS]/[SEP] stayed visible to every token (`sweep_mask`).
    """

    windows: np.ndarray  # [W]
    cosine: np.ndarray  # [W, n]
    mean_cosine: np.ndarray  # [W]
    pair: tuple[int, int] | None
    pair_cosine: np.ndarray | None  # [W]
    full_pair_cosine: float | None
    tokens: list[str] = field(default_factory=list)
    keep_special: bool = False


def sweep_mask(n: int, window: int, visible: Sequence[bool] | np.ndarray | None = None,
               device: torch.device | str | None = None) -> torch.Tensor:
    """[n, n] bool, True = may attend: |i - j| <= window, or key j is marked in `visible`.

    visible: [n] bool (e.g. special_mask(tokens) for [CLS]/[SEP]); None = the plain window.
    """
    mask = window_mask(n, window, device)  # [n, n]
    if visible is not None:
        mask = mask | torch.as_tensor(np.asarray(visible, dtype=bool), device=mask.device)[None, :]
    return mask


MEMORY_PER_BATCH = 64 * 2**20  # bytes one batch of windows may hold while it is encoded


def windows_per_batch(model, n: int) -> int:
    """How many windows of an n-token sweep are encoded at once (no autograd: one layer's work
    alive at a time) within MEMORY_PER_BATCH: a short sentence's whole sweep is one batch."""
    return sequences_per_batch(model, n, MEMORY_PER_BATCH)


@torch.inference_mode()
def context_sweep(
    model,
    ids: Sequence[int],
    segments: Sequence[int] | None = None,
    windows: Sequence[int] | None = None,
    pair: tuple[int, int] | None = None,
    positions: str = "learned",
    progress: Callable[[float, str], None] | None = None,
    keep_special: bool = False,
) -> ContextSweep:
    """Run the encoder with sweep_mask(n, w) for each w (default 1 .. n - 1; n - 1 = full).

    keep_special=True keeps [CLS] and [SEP] visible to every token (`sweep_mask`). The windows
    are encoded in batches (`windows_per_batch`), each sequence of a batch on its own.
    """
    ids = list(ids)
    n = len(ids)
    segments = [0] * n if segments is None else list(segments)
    windows = list(range(1, max(n, 2))) if windows is None else [int(w) for w in windows]
    x, _extra = model.embed(ids, segments, positions)
    full = model.last_hidden(x)  # [n, hidden]
    tokens = model.tokens_of(ids)
    visible = special_mask(tokens) if keep_special else None
    if pair is None:
        pair = first_repeated_pair(tokens)
    full = full.cpu().numpy()
    cos, pair_cos = [], []
    size = windows_per_batch(model, n)
    for start in range(0, len(windows), size):
        part = windows[start:start + size]  # encoded as one batch, a mask per window
        masks = torch.stack([sweep_mask(n, w, visible, x.device) for w in part])[:, None]
        hs = model.last_hidden(x.expand(len(part), *x.shape),
                               masks).cpu().numpy()  # [b, n, hidden]
        for h in hs:
            cos.append(cosine(h, full))
            if pair is not None:
                pair_cos.append(float(cosine(h[pair[0]], h[pair[1]])))
        if progress:
            progress((start + len(part)) / len(windows),
                     _("window w = {w}").format(w=part[-1]))
    cosines = np.stack(cos)
    full_pair = float(cosine(full[pair[0]], full[pair[1]])) if pair is not None else None
    return ContextSweep(
        windows=np.asarray(windows), cosine=cosines, mean_cosine=cosines.mean(axis=1), pair=pair,
        pair_cosine=np.asarray(pair_cos) if pair is not None else None,
        full_pair_cosine=full_pair, tokens=tokens, keep_special=keep_special,
    )


def special_share(weights: np.ndarray, tokens: Sequence[str]) -> np.ndarray:
    """Per layer, the mean share of attention weight that lands on [CLS] and [SEP]:

        share_l = mean over heads h and queries i of  sum_{j in [CLS], [SEP]} alpha'_l,h[i, j]

    weights: [layers, heads, n, n] (rows = queries). Returns [layers]. Spread evenly, the
    share would be (number of special tokens) / n.
    """
    sp = special_mask(list(tokens))  # [n]
    w = np.asarray(weights)
    return w[..., sp].sum(axis=-1, dtype=np.float64).mean(axis=(1, 2))  # [layers]


def sweep_windows(n: int, max_points: int = 40) -> list[int]:
    """Windows for the context sweep: every w in 1..n-1 when few, else 1..24 then geometric."""
    top = max(1, n - 1)  # w = n - 1 lets every token see every other: full attention
    if top <= max_points:
        return list(range(1, top + 1))
    head = list(range(1, 25))
    tail = np.unique(np.geomspace(25, top, max_points - len(head)).round().astype(int))
    return head + [int(w) for w in tail if w > 24]
