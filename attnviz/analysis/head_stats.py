"""Head statistics after Clark et al. 2019, "What Does BERT Look At? An Analysis of BERT's
Attention" (clarkkev/attention-analysis), for one sentence.

For a head's weights W [query i, key j] (rows sum to 1) over n tokens, each statistic is a
mean over queries. Two conventions are offered, and pages say which one they show:

"attnviz" (the default):
    entropy   = (1/n) sum_i  -sum_j W_ij ln W_ij          (nats; 0 = one key, ln n = uniform)
    on [CLS]  = (1/n) sum_i  sum_{j: token j = [CLS]} W_ij
    on [SEP]  = (1/n) sum_i  sum_{j: token j = [SEP]} W_ij
    on punct. = (1/n) sum_i  sum_{j: token j is punctuation} W_ij
    self      = (1/n) sum_i  W_ii
    previous  = 1/(n-1) sum_{i>=1}  W_{i,i-1}            (the queries that have a previous token)
    next      = 1/(n-1) sum_{i<=n-2} W_{i,i+1}           (the queries that have a next token)
  Punctuation: every character of the token (without WordPiece's '##') is in a Unicode
  punctuation category (P*): '.', ',', '?', '"', '«' ...

"clark" (the authors' notebook, number for number):
    previous  = (1/n) sum_{i>=1}  W_{i,i-1}              (divided by n: the first query counts 0)
    next      = (1/n) sum_{i<=n-2} W_{i,i+1}
    punct.    : only the tokens "." and ","
    entropy   : of the smoothed rows W' = 0.9999 W + 0.0001 / n (their guard against ln 0)
  The other statistics are the same in both.

Each comes out as a [layers, heads] array (any leading axes of the weights are kept).
`trace_head_stats(t)` gives them for a trace that does not hold its weights (a long decoder
input): from what its forward pass took of every head's weights, or streamed a layer at a time.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from attnviz.analysis.common import entropy
from attnviz.i18n import N_

STATS = {  # names in English; pages show them through attnviz.i18n
    "entropy": N_("mean row entropy (nats)"),
    "cls": N_("weight on [CLS]"),
    "sep": N_("weight on [SEP]"),
    "punct": N_("weight on punctuation"),
    "self": N_("weight on itself"),
    "prev": N_("weight on the previous token"),
    "next": N_("weight on the next token"),
}

# The start and separator tokens: BERT's [CLS]/[SEP], RoBERTa's and BART's <s>/</s> (the same
# roles). GPT-2 adds neither, so its two columns are 0 by construction.
CLS_TOKENS = frozenset({"[CLS]", "<s>"})
SEP_TOKENS = frozenset({"[SEP]", "</s>"})

CONVENTIONS = {
    "attnviz": N_("previous/next averaged over the n-1 queries that have one; punctuation = "
                  "any Unicode punctuation mark; entropy of the rows as they are"),
    "clark": N_("Clark et al.'s code: previous/next divided by n; punctuation = only '.' and "
                "','; entropy of the rows smoothed as 0.9999 W + 0.0001/n"),
}
CLARK_PUNCTUATION = frozenset({".", ","})
CLARK_SMOOTHING = 1e-4


def _check(conventions: str) -> None:
    if conventions not in CONVENTIONS:
        raise ValueError(f"conventions must be one of {tuple(CONVENTIONS)}; got {conventions!r}")


def is_punctuation(token: str, conventions: str = "attnviz") -> bool:
    """"attnviz": every character of the token (without '##') is Unicode punctuation;
    "clark": the token is "." or ","."""
    _check(conventions)
    if conventions == "clark":
        return token in CLARK_PUNCTUATION
    t = token[2:] if token.startswith("##") and len(token) > 2 else token
    return bool(t) and all(unicodedata.category(c).startswith("P") for c in t)


def row_entropy(weights: np.ndarray, smoothing: float = 0.0) -> np.ndarray:
    """Mean over queries of -sum_j W'_ij ln W'_ij with W' = (1 - s) W + s / n (0 ln 0 = 0):
    [..., n, n] -> [...]."""
    w = np.asarray(weights, dtype=np.float64)
    if smoothing:
        w = (1.0 - smoothing) * w + smoothing / w.shape[-1]
    return entropy(w).mean(axis=-1)


def share_on(weights: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Mean over queries of the weight on the keys where `keys` [n] is True: -> [...]."""
    w = np.asarray(weights, dtype=np.float64)
    return (w * np.asarray(keys, dtype=bool)).sum(axis=-1).mean(axis=-1)


def offset_share(weights: np.ndarray, offset: int, over: str = "present") -> np.ndarray:
    """Mean of W_{i, i+offset}: over the queries where i+offset is a position (over="present",
    n - |offset| of them) or over all n queries (over="all", Clark's): -> [...]."""
    w = np.asarray(weights, dtype=np.float64)
    n = w.shape[-1]
    if n - abs(offset) <= 0:
        return np.zeros(w.shape[:-2])
    diag = np.diagonal(w, offset=offset, axis1=-2, axis2=-1)  # [..., n - |offset|]
    return diag.sum(axis=-1) / (n if over == "all" else n - abs(offset))


def head_stats(weights: np.ndarray, tokens: list[str],
               conventions: str = "attnviz") -> dict[str, np.ndarray]:
    """All statistics of STATS for weights [layers, heads, n, n]: {name: [layers, heads]}."""
    _check(conventions)
    clark = conventions == "clark"
    over = "all" if clark else "present"
    return {
        "entropy": row_entropy(weights, CLARK_SMOOTHING if clark else 0.0),
        "cls": share_on(weights, np.array([t in CLS_TOKENS for t in tokens])),
        "sep": share_on(weights, np.array([t in SEP_TOKENS for t in tokens])),
        "punct": share_on(weights, np.array([is_punctuation(t, conventions) for t in tokens])),
        "self": offset_share(weights, 0),
        "prev": offset_share(weights, -1, over),
        "next": offset_share(weights, 1, over),
    }


def trace_head_stats(t, conventions: str = "attnviz") -> dict[str, np.ndarray]:
    """head_stats of a trace, {name: [layers, heads]}, whether or not it holds its weights:

    - held weights (Trace.weights): head_stats of them, a layer at a time (its float64 copies
      are one layer's, not the whole trace's);
    - a long decoder input (no weights held): from Trace.weight_summary, what the forward pass
      took of every head's weights (the weight on itself, on the previous and the next token,
      each row's entropy, the weight each key receives: a share on a set of keys is the sum of
      what they receive, over n);
    - otherwise, or for what the summary does not have (Clark's entropy of smoothed rows):
      streamed, one layer's weights computed again at a time (Trace.layer_weights) and read a
      head at a time, so no more than one layer's [heads, n, n] is in memory.
    """
    _check(conventions)
    if t.weights is not None:
        layers = [head_stats(t.weights[layer][None], list(t.tokens), conventions)
                  for layer in range(t.n_layers)]
        return {name: np.concatenate([one[name] for one in layers]) for name in STATS}
    summary = getattr(t, "weight_summary", None)
    if summary is None:
        return streamed_head_stats(t, conventions)
    clark = conventions == "clark"
    n = t.n_tokens
    received = np.asarray(summary["received"], dtype=np.float64)  # [layers, heads, n]

    def share(keys) -> np.ndarray:
        return received[..., np.asarray(keys, dtype=bool)].sum(axis=-1) / n

    def along(name: str) -> np.ndarray:  # a diagonal's mean over its queries
        if n < 2:
            return np.zeros(received.shape[:-1])
        return summary[name].astype(np.float64).sum(axis=-1) / (n if clark else n - 1)

    stats = {
        "entropy": (streamed_head_stats(t, conventions, ("entropy",))["entropy"] if clark else
                    summary["entropy"].astype(np.float64).mean(axis=-1)),
        "cls": share([tok in CLS_TOKENS for tok in t.tokens]),
        "sep": share([tok in SEP_TOKENS for tok in t.tokens]),
        "punct": share([is_punctuation(tok, conventions) for tok in t.tokens]),
        "self": summary["self"].astype(np.float64).sum(axis=-1) / n,
        "prev": along("previous"),
        "next": along("next"),
    }
    return stats


def streamed_head_stats(t, conventions: str = "attnviz",
                        names: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """head_stats computed a layer at a time from Trace.layer_weights (held, or computed again
    from the kept queries and keys) and a head at a time within it: {name: [layers, heads]}
    for `names` (default all of STATS)."""
    _check(conventions)
    names = tuple(STATS) if names is None else names
    out = {name: np.zeros((t.n_layers, t.n_heads)) for name in names}
    tokens = list(t.tokens)
    for layer in range(t.n_layers):
        weights = t.layer_weights(layer)  # [heads, n, n]
        for head in range(t.n_heads):
            one = head_stats(weights[head][None, None], tokens, conventions)
            for name in names:
                out[name][layer, head] = one[name][0, 0]
        del weights
    return out


def first_token_share(t) -> np.ndarray:
    """Each head's mean weight on the first token over the queries after it,
    mean_{i >= 1} W_i0 ([layers, heads], float64; 0 for a one-token input): from the held
    weights, or from what the forward pass took of them (Trace.weight_summary), or streamed a
    layer at a time (Trace.layer_weights)."""
    if t.n_tokens < 2:
        return np.zeros((t.n_layers, t.n_heads))
    if t.weights is not None:
        return t.weights[:, :, 1:, 0].astype(np.float64).mean(axis=-1)
    summary = getattr(t, "weight_summary", None)
    if summary is not None:
        return summary["first"][:, :, 1:].astype(np.float64).mean(axis=-1)
    return np.stack([t.layer_weights(layer)[:, 1:, 0].astype(np.float64).mean(axis=-1)
                     for layer in range(t.n_layers)])


def stats_rows(stats: dict[str, np.ndarray]) -> list[dict]:
    """One row per head, {'layer', 'head', <stat>: value, ...}, for a sortable table."""
    n_layers, n_heads = next(iter(stats.values())).shape
    return [
        {"layer": layer, "head": head, **{k: float(v[layer, head]) for k, v in stats.items()}}
        for layer in range(n_layers) for head in range(n_heads)
    ]
