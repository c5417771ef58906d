"""Head statistics after Clark et al. 2019, "What Does BERT Look At? An Analysis of BERT's
Attention" (clarkkev/attention-analysis), for one sentence.

For a head's weights W [query i, key j] (rows sum to 1) over n tokens, each statistic is a
mean over queries:

    entropy   = (1/n) sum_i  -sum_j W_ij ln W_ij          (nats; 0 = one key, ln n = uniform)
    on [CLS]  = (1/n) sum_i  sum_{j: token j = [CLS]} W_ij
    on [SEP]  = (1/n) sum_i  sum_{j: token j = [SEP]} W_ij
    on punct. = (1/n) sum_i  sum_{j: token j is punctuation} W_ij
    self      = (1/n) sum_i  W_ii
    previous  = 1/(n-1) sum_{i>=1}  W_{i,i-1}            (queries that have a previous token)
    next      = 1/(n-1) sum_{i<=n-2} W_{i,i+1}           (queries that have a next token)

Each comes out as a [layers, heads] array. Punctuation: every character of the token is in a
Unicode punctuation category (P*), as '.', ',', '?', '"'; WordPiece's '##' prefix is ignored.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from attnviz.analysis.common import entropy

STATS = {
    "entropy": "mean row entropy (nats)",
    "cls": "weight on [CLS]",
    "sep": "weight on [SEP]",
    "punct": "weight on punctuation",
    "self": "weight on itself",
    "prev": "weight on the previous token",
    "next": "weight on the next token",
}


def is_punctuation(token: str) -> bool:
    """True when every character of the token (without '##') is Unicode punctuation."""
    t = token[2:] if token.startswith("##") and len(token) > 2 else token
    return bool(t) and all(unicodedata.category(c).startswith("P") for c in t)


def row_entropy(weights: np.ndarray) -> np.ndarray:
    """Mean over queries of -sum_j W_ij ln W_ij (0 ln 0 = 0): [..., n, n] -> [...]."""
    return entropy(weights).mean(axis=-1)


def share_on(weights: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Mean over queries of the weight on the keys where `keys` [n] is True: -> [...]."""
    w = np.asarray(weights, dtype=np.float64)
    return (w * np.asarray(keys, dtype=bool)).sum(axis=-1).mean(axis=-1)


def offset_share(weights: np.ndarray, offset: int) -> np.ndarray:
    """Mean of W_{i, i+offset} over the queries where i+offset is a position: -> [...]."""
    w = np.asarray(weights, dtype=np.float64)
    n = w.shape[-1]
    if n - abs(offset) <= 0:
        return np.zeros(w.shape[:-2])
    return np.diagonal(w, offset=offset, axis1=-2, axis2=-1).mean(axis=-1)


def head_stats(weights: np.ndarray, tokens: list[str]) -> dict[str, np.ndarray]:
    """All statistics of STATS for weights [layers, heads, n, n]: {name: [layers, heads]}."""
    return {
        "entropy": row_entropy(weights),
        "cls": share_on(weights, np.array([t == "[CLS]" for t in tokens])),
        "sep": share_on(weights, np.array([t == "[SEP]" for t in tokens])),
        "punct": share_on(weights, np.array([is_punctuation(t) for t in tokens])),
        "self": offset_share(weights, 0),
        "prev": offset_share(weights, -1),
        "next": offset_share(weights, 1),
    }


def stats_rows(stats: dict[str, np.ndarray]) -> list[dict]:
    """One row per head, {'layer', 'head', <stat>: value, ...}, for a sortable table."""
    n_layers, n_heads = next(iter(stats.values())).shape
    return [
        {"layer": layer, "head": head, **{k: float(v[layer, head]) for k, v in stats.items()}}
        for layer in range(n_layers) for head in range(n_heads)
    ]
