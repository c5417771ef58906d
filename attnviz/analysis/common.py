"""The small formulas every analysis shares, written once: cosine, entropy, softmax rows,
special tokens and repeated tokens. NumPy in, NumPy out (float64), no Streamlit.

    cos(a, b)   = a . b / (|a| |b|)
    H(p)        = -sum_j p_j ln p_j          (nats, 0 ln 0 = 0; 0 = one-hot, ln n = uniform)
    softmax(z)_j = e^(z_j - max z) / sum_k e^(z_k - max z)

Token labels ('saw #2', 'saw #4': one per position, so repeated words stay distinct) are the
engine's `attnviz.engine.token_labels`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# Tokens a tokenizer adds around or between sentences, and padding (BERT's and RoBERTa's).
SPECIAL_TOKENS = frozenset({"[CLS]", "[SEP]", "[PAD]", "<s>", "</s>", "<pad>"})


def cosine(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    """cos(a, b) = a . b / (|a| |b|) along `axis`, in float64 (broadcasts)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return (a * b).sum(axis) / (np.linalg.norm(a, axis=axis) * np.linalg.norm(b, axis=axis))


def cosine_per_layer(hidden_states: np.ndarray, i: int, j: int) -> np.ndarray:
    """cos(h_i, h_j) after each layer: hidden_states [layers + 1, n, hidden] -> [layers + 1]
    (index 0 = the embeddings)."""
    h = np.asarray(hidden_states)
    return cosine(h[:, i], h[:, j])


def cosine_matrix(x: np.ndarray) -> np.ndarray:
    """cos(x_p, x_q) for every pair of rows of x [n, d]: [n, n] (float64)."""
    x = np.asarray(x, dtype=np.float64)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit @ unit.T


def entropy(p: np.ndarray) -> np.ndarray:
    """H(p) = -sum_j p_j ln p_j along the last axis, in nats, with 0 ln 0 = 0."""
    p = np.asarray(p, dtype=np.float64)
    logs = np.log(p, out=np.zeros_like(p), where=p > 0)
    return -(p * logs).sum(axis=-1)


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    """softmax along the last axis (the max is subtracted first: same result, no overflow)."""
    z = np.asarray(logits)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def sequences_per_batch(model, n: int, budget: int, layers: int = 1) -> int:
    """How many n-token sequences a batched encoder pass may hold within `budget` bytes: per
    sequence and per layer kept alive (1 without autograd; every layer for a backward pass),
    its scores and weights [H, n, n] (and the softmax's work copy) and ~20 float32 vectors per
    token. At least 1."""
    per_sequence = 4 * layers * (3 * model.n_heads * n * n + 20 * n * model.hidden)
    return max(1, budget // per_sequence)


def special_mask(tokens: Sequence[str]) -> np.ndarray:
    """Boolean [tokens]: True where the token is one of SPECIAL_TOKENS ([CLS], [SEP], ...)."""
    return np.array([t in SPECIAL_TOKENS for t in tokens], dtype=bool)


def repeated_tokens(tokens: Sequence[str], skip_special: bool = True) -> dict[str, list[int]]:
    """Each token that occurs more than once, with its positions, in order of first occurrence."""
    where: dict[str, list[int]] = {}
    for i, tok in enumerate(tokens):
        if skip_special and tok in SPECIAL_TOKENS:
            continue
        where.setdefault(tok, []).append(i)
    return {tok: pos for tok, pos in where.items() if len(pos) > 1}


def first_repeated_pair(tokens: Sequence[str]) -> tuple[int, int] | None:
    """The first two positions of the first repeated token ('saw' #2 and #4), or None."""
    rep = repeated_tokens(tokens)
    if not rep:
        return None
    first = next(iter(rep.values()))
    return first[0], first[1]


FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 2^-23: the spacing of float32 numbers near 1


def rounding_tolerance(*arrays: np.ndarray, ulps: int = 32) -> float:
    """How far two float32 results of the same arithmetic may differ when only the order of
    the additions differs (another thread count, another machine): `ulps` units of float32
    rounding at the size of the largest value, ulps · eps32 · max |x|."""
    return ulps * FLOAT32_EPS * max(float(np.abs(np.asarray(a)).max()) for a in arrays)


def equal_up_to_rounding(a: np.ndarray, b: np.ndarray, ulps: int = 32) -> bool:
    """max |a - b| <= rounding_tolerance(a, b): the same numbers, up to float32 rounding."""
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max()) <= \
        rounding_tolerance(a, b, ulps=ulps)
