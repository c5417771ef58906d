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

Today's decoders use windows too, causal ones (`sliding_mask`): Mistral (Jiang et al. 2023)
lets query i see the last W keys, j <= i and i - j < W, in every layer; Gemma 2 alternates a
sliding layer with a full (causal) one, Gemma 3 has five sliding layers to one full. Through
the layers the reach grows (`reach_formula`): after l sliding layers query i may depend on the
inputs i - l (W - 1) .. i; after any full layer, on every input up to i. And most heads put a
large share of their weight on the first token (an *attention sink*, Xiao et al. 2023,
"Efficient Streaming Language Models with Attention Sinks"): `first_token_share`; a window
that keeps that first token visible (`streaming_mask`) changes the next-word distribution
less than one that drops it (`kl_divergence`, `top_words`), measured on the page.
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
from attnviz.analysis.receptive import require_bidirectional
from attnviz.engine.attention import build_mask, causal_mask, window_mask
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
    For a bidirectional encoder only (receptive.require_bidirectional): a decoder's windows
    are causal ones (`sliding_mask`, `streaming_next_word`).
    """
    require_bidirectional(model, "context sweeps with windows of ±w")
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


# ------------------------------------------------------------------ today's decoders
SLIDING, FULL = "sliding", "full"
LAYER_PATTERNS: dict[str, tuple[str, ...]] = {  # each family's layers, repeated from layer 0
    "mistral": (SLIDING,),  # every layer slides (Mistral 7B)
    "gemma2": (SLIDING, FULL),  # transformers' Gemma2Config: even layers slide, odd are full
    "gemma3": (SLIDING,) * 5 + (FULL,),  # Gemma3TextConfig: every sixth layer is full
}


def sliding_mask(n: int, size: int, device: torch.device | str | None = None) -> torch.Tensor:
    """[n, n] bool, a causal sliding window of `size` keys (Mistral's, Gemma's local layers):
    query i sees key j when j <= i and i - j < size. It is the engine's window and causal
    masks together: build_mask(n, window=size - 1, causal=True)."""
    if size < 1:
        raise ValueError(f"a sliding window holds at least 1 key; got {size}")
    return build_mask(n, window=size - 1, causal=True, device=device)


def streaming_mask(n: int, size: int, sinks: int = 0,
                   device: torch.device | str | None = None) -> torch.Tensor:
    """sliding_mask, plus the first `sinks` keys visible to every query after them
    (StreamingLLM's window with its attention sinks kept; causal still)."""
    mask = sliding_mask(n, size, device)
    if sinks:
        mask[:, :sinks] = True
        mask &= causal_mask(n, device)
    return mask


STREAM_SINKS = (0, 1, 4)  # first tokens kept visible: none, one, StreamingLLM's four


@torch.inference_mode()
def streaming_next_word(model, ids, size: int,
                        sinks: Sequence[int] = STREAM_SINKS) -> dict:
    """The last token's next-word distribution (softmax of model.next_token_logits of its
    last-layer vector, float64) with full causal attention ("full") and, for each s in
    `sinks`, with every layer masked to the last `size` keys plus the first s
    (streaming_mask). Positions stay those of the whole text (StreamingLLM also renumbers
    them inside its cache; not here). {"full": p, s: p ...}, each [vocabulary]."""
    ids = list(ids)
    n = len(ids)
    x, places = model.embed(ids, [0] * n, "learned")
    places = torch.as_tensor(np.asarray(places), device=x.device)

    def distribution(mask) -> np.ndarray:
        last = model.encode(x, mask, record=False, positions=places).hidden_states[-1][-1]
        return torch.softmax(model.next_token_logits(last).double(), -1).cpu().numpy()

    out = {"full": distribution(None)}
    for s in sinks:
        out[s] = distribution(streaming_mask(n, size, s, x.device))
    return out


def layer_types(pattern: str, layers: int) -> list[str]:
    """SLIDING or FULL for each of `layers` layers of a family's pattern (LAYER_PATTERNS)."""
    p = LAYER_PATTERNS[pattern]
    return [p[i % len(p)] for i in range(layers)]


def layer_masks(n: int, size: int, types: Sequence[str]) -> list[torch.Tensor]:
    """One [n, n] bool mask per layer: sliding_mask for SLIDING, the causal mask for FULL."""
    return [sliding_mask(n, size) if t == SLIDING else causal_mask(n) for t in types]


def composed_reach(masks: Sequence[torch.Tensor]) -> np.ndarray:
    """Which inputs can reach each token after each layer: R_0 = I, R_l = (M_l R_{l-1} > 0)
    (boolean matrix product: token i at layer l reads j at layer l - 1 where M_l[i, j]; the
    residual path is the diagonal, which every causal mask holds). [layers + 1, n, n] bool."""
    n = masks[0].shape[0] if masks else 0
    reach = [torch.eye(n, dtype=torch.bool)]
    for m in masks:
        reach.append((m.to(torch.float32) @ reach[-1].to(torch.float32)) > 0)
    return torch.stack(reach).numpy()


def reach_formula(query: int, size: int, types: Sequence[str]) -> np.ndarray:
    """The first input query i may depend on after each layer, [layers + 1]: i before any
    layer; after l layers, max(0, i - s_l (W - 1)) with s_l sliding layers so far, or 0 once
    a full layer has passed."""
    out, first, full = [query], query, False
    for t in types:
        full = full or t == FULL
        first = 0 if full else max(0, first - (size - 1))
        out.append(first)
    return np.asarray(out)


def span(layers: int, size: int) -> int:
    """How far back the last of `layers` sliding layers of `size` keys reaches: layers (W - 1)
    tokens (Mistral 7B: 32 layers, W = 4,096: 131,040)."""
    return layers * (size - 1)


def first_token_share(weights: np.ndarray) -> np.ndarray:
    """Each head's mean weight on the first token, over the queries after it:

        share[l, h] = mean_{i >= 1} alpha'_{l,h}[i, 0]

    weights: [layers, heads, n, n]. Returns [layers, heads] (float64); query 0 sees only
    itself under a causal mask and is left out."""
    w = np.asarray(weights)
    return w[:, :, 1:, 0].astype(np.float64).mean(axis=-1)


def even_share(n: int) -> float:
    """The first token's mean share if every causal row spread its weight evenly: the mean of
    1 / (i + 1) over the queries i = 1 .. n - 1."""
    return float(np.mean(1.0 / np.arange(2, n + 1))) if n > 1 else 1.0


def kl_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """KL(p || q) = sum_j p_j ln(p_j / q_j) in nats (float64; 0 ln 0 = 0)."""
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    keep = p > 0
    return float((p[keep] * (np.log(p[keep]) - np.log(q[keep]))).sum())


def top_words(p: np.ndarray, k: int = 5) -> list[tuple[int, float]]:
    """The k most likely ids of a distribution and their probabilities, most likely first."""
    p = np.asarray(p, dtype=np.float64)
    ids = np.argsort(-p, kind="stable")[:k]
    return [(int(i), float(p[i])) for i in ids]
