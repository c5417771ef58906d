"""What the exploration views show: special-token hiding, segment filters, inside one score.

Hiding [CLS] and [SEP] (a choice in bertviz and exBERT): drop their rows and columns from a
weight matrix W [query, key]. The remaining rows then sum to less than 1. With
`renormalise=True` each kept row is divided by its kept sum,

    W'_ij = W_ij / sum_{k kept} W_ik,

so it sums to 1 again (the share among the shown keys); without it the numbers stay the
model's own weights. Pages must say which one they show.

Segment filters for a sentence pair ([CLS] A [SEP] B [SEP], segments 0 and 1): keep the
(query, key) pairs whose segments are equal (within A, within B), the pairs whose query is in
A and key in B ("A->B": A reading B) or the reverse ("B->A"), or both directions ("across").

Word level (analysis.words): pieces merged into words before any other option, keys summed over
a word's pieces and queries averaged (Clark et al. 2019); indices then name each word's first
piece.

Inside one score (bertviz's neuron view, extended to the values): for query i of one head,

    p_j = q^i ∘ k^j   (elementwise),   s_j = sum(p_j) = q^i · k^j,   z_j = s_j / sqrt(d),
    w_j = softmax_j(z_j) over the keys i may attend,   o^i = sum_j w_j v^j.
"""

from __future__ import annotations

import numpy as np

from attnviz.analysis.common import special_mask
from attnviz.analysis.words import words_view
from attnviz.i18n import N_

SEGMENT_FILTERS = ("all", "within A", "within B", "A->B", "B->A", "across")
# What a page shows for each filter (looked up with _() where shown): the radio's labels
# (in English the filters themselves, so a URL reads ?ex_seg=A->B) and short names for shares.
FILTER_LABELS = {"all": N_("all"), "within A": N_("within A"), "within B": N_("within B"),
                 "A->B": N_("A->B"), "B->A": N_("B->A"), "across": N_("across")}
FILTER_NAMES = {"all": N_("all"), "within A": N_("within A"), "within B": N_("within B"),
                "A->B": N_("A → B"), "B->A": N_("B → A"), "across": N_("across")}


def hide_special(
    weights: np.ndarray, tokens: list[str], renormalise: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Drop special tokens' rows and columns from [..., n, n]; returns (matrix, kept positions).

    With renormalise, kept rows are rescaled to sum to 1 (rows with nothing left stay 0).
    """
    keep = np.flatnonzero(~special_mask(tokens))  # [m] original positions
    sub = np.asarray(weights)[..., keep[:, None], keep[None, :]]  # [..., m, m]
    if renormalise:
        total = sub.sum(axis=-1, keepdims=True)  # [..., m, 1]
        sub = np.divide(sub, total, out=np.zeros_like(sub), where=total > 0)
    return sub, keep


def segment_mask(segments: np.ndarray, which: str) -> np.ndarray:
    """Boolean [query, key] of the pairs a segment filter keeps.

    'all': every pair; 'within A': both in segment 0; 'within B': both in segment 1;
    'A->B': query in A, key in B; 'B->A': query in B, key in A; 'across': either of those.
    """
    s = np.asarray(segments)
    q, k = s[:, None], s[None, :]
    if which == "all":
        return np.ones((len(s), len(s)), dtype=bool)
    if which == "within A":
        return (q == 0) & (k == 0)
    if which == "within B":
        return (q == 1) & (k == 1)
    if which == "A->B":
        return (q == 0) & (k == 1)
    if which == "B->A":
        return (q == 1) & (k == 0)
    if which == "across":
        return q != k
    raise ValueError(f"segment filter must be one of {SEGMENT_FILTERS}; got {which!r}")


def filter_segments(weights: np.ndarray, segments: np.ndarray, which: str) -> np.ndarray:
    """Weights [..., n, n] with the pairs outside the filter set to 0 (not renormalised)."""
    return np.where(segment_mask(segments, which), weights, 0.0).astype(np.asarray(weights).dtype)


def segment_shares(weights: np.ndarray, segments: np.ndarray) -> dict[str, np.ndarray]:
    """Mean over queries of the weight each filter keeps, per head: {filter: [...]}.

    share_f = (1/n) sum_i sum_j W_ij [i, j kept by f]; 'within A' + 'within B' + 'across' = 1
    and 'across' = 'A->B' + 'B->A'.
    """
    w = np.asarray(weights, dtype=np.float64)
    return {f: (w * segment_mask(segments, f)).sum(axis=(-1, -2)) / w.shape[-1]
            for f in SEGMENT_FILTERS[1:]}


def inside_score(
    queries: np.ndarray,
    keys: np.ndarray,
    values: np.ndarray,
    query: int,
    scale: float,
    mask: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Every step from one query to its output, for one head; inputs [n, d], in float64.

    Returns q [d], keys [n, d], products q∘k [n, d], scores q·k [n], scaled [n],
    weights [n] (0 where the mask blocks a key), values [n, d], weighted w_j v^j [n, d]
    and output [d] = sum_j w_j v^j.
    """
    q = np.asarray(queries[query], dtype=np.float64)  # [d]
    k = np.asarray(keys, dtype=np.float64)  # [n, d]
    v = np.asarray(values, dtype=np.float64)  # [n, d]
    allowed = np.ones(len(k), dtype=bool) if mask is None else np.asarray(mask[query], bool)
    products = q[None, :] * k  # [n, d]
    scores = products.sum(axis=1)  # [n]
    scaled = scores * scale  # [n]
    z = np.where(allowed, scaled, -np.inf)
    e = np.exp(z - z[allowed].max())  # [n], 0 where blocked
    weights = e / e.sum()
    weighted = weights[:, None] * v  # [n, d]
    return dict(q=q, keys=k, products=products, scores=scores, scaled=scaled, weights=weights,
                values=v, weighted=weighted, output=weighted.sum(axis=0))


def shown_weights(
    weights: np.ndarray,
    tokens: list[str],
    segments: np.ndarray,
    hide: bool = False,
    renormalise: bool = False,
    segment_filter: str = "all",
    words: bool = False,
    pieces: list[str] | None = None,
) -> tuple[np.ndarray, list[str], np.ndarray]:
    """What a view draws for weights [..., n, n]: (matrix [..., m, m], tokens, indices [m]),
    the indices being the shown tokens' places in the sentence.

    With `words`, pieces are first merged into words (indices: each word's first piece), the
    words found in `pieces` (`Trace.word_pieces`: the tokenizer's strings with their markers)
    when given, else in `tokens`. Then
    the segment filter zeroes the pairs it drops; then, when `hide`, the [CLS]/[SEP] rows and
    columns go; `renormalise` rescales each remaining row to sum to 1 (only the shown keys
    count). With no option set, the model's weights come back untouched.
    """
    first = None
    if words:
        weights, tokens, first = words_view(weights, tokens, pieces)
        segments = np.asarray(segments)[first]
    w = weights if segment_filter == "all" else filter_segments(weights, segments, segment_filter)
    if hide:
        w, keep = hide_special(w, tokens, renormalise=renormalise)
    else:
        keep = np.arange(len(tokens))
        if renormalise and segment_filter != "all":
            total = w.sum(axis=-1, keepdims=True)
            w = np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    return w, [tokens[i] for i in keep], (keep if first is None else first[keep])


def mean_maps(weights: np.ndarray) -> dict[str, np.ndarray]:
    """The overview's margins for weights [L, H, n, n] (float32): the mean over each layer's
    heads "layers" [L, n, n], over each head's layers "heads" [H, n, n], over all "all" [n, n]."""
    w = np.asarray(weights, dtype=np.float32)
    return {"layers": w.mean(axis=1), "heads": w.mean(axis=0), "all": w.mean(axis=(0, 1))}
