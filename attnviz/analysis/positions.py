"""What positional encoding does: numbers for self-attention with and without positions.

Seed 003: "No position information in self-attention". Each position i gets a vector e^i,
hand-crafted (the sinusoids of Vaswani et al. 2017, "Attention Is All You Need", section 3.5)
or learned from data (BERT, Devlin et al. 2019), and the layer sees e^i + a^i. This module
measures what that changes, always from the engine's own `positions=` option:

- order is invisible without positions: for a permutation P of the tokens,
  SelfAttention(P A) = P SelfAttention(A) (permutation equivariance), so the outputs of a
  shuffled sentence are the same vectors, shuffled the same way;
- two copies of a word ("I saw a saw", seed 004) get identical vectors in every layer
  without positions, and different ones with them (cosine similarity per layer);
- how far each head's weights move when the positions change: the mean Jensen-Shannon
  divergence between the weight rows of two modes;
- what the encodings themselves look like (dot products, cosines, a 2-D PCA).

Tensors/arrays in, numbers out; no Streamlit.
"""

from __future__ import annotations

import numpy as np
import torch

from attnviz.engine.positions import POSITION_MODES, sinusoidal
from attnviz.engine.trace import Trace

SPECIAL_TOKENS = frozenset({"[CLS]", "[SEP]", "[PAD]", "<s>", "</s>", "<pad>"})


# ------------------------------------------------------------------ 1. shuffling the words
def shuffle_order(n: int, seed: int = 0, fixed: np.ndarray | None = None) -> np.ndarray:
    """A permutation `perm` of range(n): the shuffled sentence has token perm[i] at position i.

    Positions where `fixed` is True (e.g. [CLS] and [SEP]) stay in place; the others are
    shuffled with a seeded generator. When at least two tokens can move, the result is never
    the identity (a shuffle that changes nothing would teach nothing).
    """
    fixed = np.zeros(n, dtype=bool) if fixed is None else np.asarray(fixed, dtype=bool)
    movable = np.flatnonzero(~fixed)  # [m]
    perm = np.arange(n)
    if len(movable) < 2:
        return perm
    order = np.random.default_rng(seed).permutation(len(movable))
    if (order == np.arange(len(movable))).all():
        order = np.roll(order, 1)
    perm[movable] = movable[order]
    return perm


def special_mask(tokens: list[str]) -> np.ndarray:
    """True where a token is a special marker ([CLS], [SEP], ...)."""
    return np.array([t in SPECIAL_TOKENS for t in tokens], dtype=bool)


def permuted_differences(original: Trace, shuffled: Trace, perm: np.ndarray) -> dict:
    """How far the shuffled run is from the original run, shuffled the same way.

    With Y = the original run and Y' = the run on the shuffled tokens (token perm[i] at i),
    equivariance says Y'[i] = Y[perm[i]] and W'[i, j] = W[perm[i], perm[j]]. Returns
    {"hidden_states": [layers + 1] max |Y' - P Y| per layer (0 = embeddings),
     "weights": [layers] max |W' - P W P^T| over heads}.
    """
    perm = np.asarray(perm)
    a = original.hidden_states.astype(np.float64)  # [L+1, n, hidden]
    b = shuffled.hidden_states.astype(np.float64)
    hid = np.abs(b - a[:, perm]).max(axis=(1, 2))  # [L+1]
    w = np.array([  # one layer at a time: no [L, H, n, n] float64 temporaries at 512 tokens
        np.abs(shuffled.weights[li] - original.weights[li][:, perm][:, :, perm]).max()
        for li in range(original.weights.shape[0])
    ], dtype=np.float64)  # [L]
    return {"hidden_states": hid, "weights": w}


def shuffled_run(
    model, text: str, text_pair: str | None = None, *, seed: int = 0, keep_special: bool = True,
    positions: str = "none",
) -> tuple[np.ndarray, Trace]:
    """Tokenize, shuffle the token ids (and their segments) with `shuffle_order`, and run the
    engine on the shuffled ids: `model.trace_ids(ids[perm], segments[perm], positions=...)`.

    Returns (perm [n], the shuffled sentence's Trace).
    """
    ids, segments, _ = model.tokenize(text, text_pair)
    fixed = special_mask(model.tokens_of(ids)) if keep_special else None
    perm = shuffle_order(len(ids), seed, fixed)
    trace = model.trace_ids([ids[k] for k in perm], [segments[k] for k in perm],
                            positions=positions, text=text, text_pair=text_pair)
    return perm, trace


# ------------------------------------------------------------------------ 2. two saws
def repeated_tokens(tokens: list[str], skip_special: bool = True) -> dict[str, list[int]]:
    """Each token that occurs more than once, with its positions (in sentence order)."""
    where: dict[str, list[int]] = {}
    for i, tok in enumerate(tokens):
        if skip_special and tok in SPECIAL_TOKENS:
            continue
        where.setdefault(tok, []).append(i)
    return {tok: pos for tok, pos in where.items() if len(pos) > 1}


def default_pair(tokens: list[str]) -> tuple[int, int] | None:
    """The first two positions of the first repeated word ("saw" #2 and #4), or None."""
    rep = repeated_tokens(tokens)
    if not rep:
        return None
    first = min(rep.values(), key=lambda p: p[0])
    return first[0], first[1]


def fallback_pair(n: int) -> tuple[int, int]:
    """When no word repeats: the first and last word ([CLS] w1 ... wk [SEP]), else the ends."""
    return (1, n - 2) if n >= 4 else (0, max(0, n - 1))


def cosine_per_layer(hidden_states: np.ndarray, i: int, j: int) -> np.ndarray:
    """cos(x_i, x_j) = x_i . x_j / (|x_i| |x_j|) in each layer; [layers + 1] (0 = embeddings)."""
    h = np.asarray(hidden_states, dtype=np.float64)  # [L+1, n, hidden]
    a, b = h[:, i], h[:, j]  # [L+1, hidden]
    return (a * b).sum(-1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1))


# ----------------------------------------------------------------- 3. the encodings
def sinusoidal_table(n: int, d: int) -> np.ndarray:
    """The engine's hand-crafted encoding, [n, d]: PE[p, 2i] = sin(p / 10000^(2i/d)),
    PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    return sinusoidal(n, d).numpy()


def dot_products(pe: np.ndarray) -> np.ndarray:
    """Position-to-position dot products e^p . e^q, [n, n] (float64)."""
    x = np.asarray(pe, dtype=np.float64)
    return x @ x.T


def cosine_matrix(x: np.ndarray) -> np.ndarray:
    """cos(e^p, e^q) for every pair of rows, [n, n] (float64)."""
    x = np.asarray(x, dtype=np.float64)
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    return unit @ unit.T


def pca(x: np.ndarray, k: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Principal components by SVD of the centred rows: X - mean = U S V^T.

    Returns (coords [n, k] = (X - mean) V_k, explained variance ratio [k] = S_k^2 / sum S^2).
    The sign of each component is fixed so that its largest-magnitude loading is positive.
    """
    x = np.asarray(x, dtype=np.float64)
    xc = x - x.mean(axis=0, keepdims=True)  # [n, d]
    _, s, vt = np.linalg.svd(xc, full_matrices=False)  # vt: [min(n, d), d]
    comps = vt[:k]  # [k, d]
    signs = np.sign(comps[np.arange(len(comps)), np.abs(comps).argmax(axis=1)])
    comps = comps * signs[:, None]
    var = s**2
    return xc @ comps.T, var[:k] / var.sum()


def learned_table(model, n: int) -> np.ndarray:
    """The checkpoint's first n learned position embeddings, [n, hidden]."""
    return model.position_embeddings[:n].detach().to("cpu").numpy()


# ------------------------------------------------------- 4. how much each mode changes
def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence of distributions along the last axis, in bits (in [0, 1]).

    JS(p, q) = 1/2 KL(p || m) + 1/2 KL(q || m),  m = (p + q) / 2,
    KL(p || m) = sum_j p_j log2(p_j / m_j), with 0 log 0 = 0. Computed in float64 as the
    equal entropy form JS = H(m) - (H(p) + H(q)) / 2, H(x) = -sum_j x_j log2 x_j, which is
    exactly 0 when p == q.
    """
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    js = _entropy(0.5 * (p + q)) - 0.5 * (_entropy(p) + _entropy(q))  # nats
    return np.clip(js / np.log(2.0), 0.0, 1.0)


def _entropy(x: np.ndarray) -> np.ndarray:
    """H(x) = -sum_j x_j ln x_j along the last axis, with 0 ln 0 = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.where(x > 0, x * np.log(x), 0.0).sum(-1)


def head_distance(weights_a: np.ndarray, weights_b: np.ndarray) -> np.ndarray:
    """Per-head distance: mean over query rows of JS(W_a[i, :], W_b[i, :]).

    weights_* are [layers, heads, n, n] softmax weights; returns [layers, heads] in bits.
    """
    a, b = np.asarray(weights_a), np.asarray(weights_b)
    # one layer at a time keeps the float64 temporaries small for 512-token inputs
    return np.stack([js_divergence(a[li], b[li]).mean(axis=-1) for li in range(a.shape[0])])


def mode_distances(traces: dict[str, Trace], reference: str = "learned") -> dict[str, np.ndarray]:
    """head_distance between the reference mode's weights and every mode's (itself: all 0)."""
    ref = traces[reference].weights
    return {mode: head_distance(ref, t.weights) for mode, t in traces.items()}


def final_cosines(traces: dict[str, Trace], reference: str = "learned") -> dict[str, np.ndarray]:
    """Per mode, cos(final vector of token i, the reference mode's final vector of i): [n]."""
    ref = np.asarray(traces[reference].hidden_states[-1], dtype=np.float64)  # [n, hidden]
    out = {}
    for mode, t in traces.items():
        x = np.asarray(t.hidden_states[-1], dtype=np.float64)
        out[mode] = (ref * x).sum(-1) / (np.linalg.norm(ref, axis=-1) * np.linalg.norm(x, axis=-1))
    return out


# ------------------------------------------------------------------ toy vectors (seeds)
def toy_self_attention(words: list[str], d: int = 4, seed: int = 0) -> dict[str, dict]:
    """One self-attention layer on toy vectors, as in seed 003, without and with positions.

    Each distinct word gets one random vector a (so both "saw"s get the same a); W^q, W^k, W^v
    are random d x d. For "none": q^i = W^q a^i ...; for "sinusoidal": q^i = W^q (a^i + e^i).
    Returns {mode: {"inputs" [n, d], "weights" [n, n], "outputs" [n, d]}} (float64).
    """
    from attnviz.engine.attention import attention

    gen = torch.Generator().manual_seed(seed)
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    table = torch.randn(len(vocab), d, generator=gen, dtype=torch.float64)
    w_q, w_k, w_v = torch.randn(3, d, d, generator=gen, dtype=torch.float64)
    a = table[torch.tensor([vocab[w] for w in words])]  # [n, d]
    out = {}
    for mode in ("none", "sinusoidal"):
        x = a if mode == "none" else a + sinusoidal(len(words), d).double()
        y, w, _ = attention(x @ w_q.T, x @ w_k.T, x @ w_v.T)
        out[mode] = {"inputs": x.numpy(), "weights": w.numpy(), "outputs": y.numpy()}
    return out


__all__ = [
    "POSITION_MODES", "cosine_matrix", "cosine_per_layer", "default_pair", "dot_products",
    "fallback_pair", "final_cosines", "head_distance", "js_divergence", "learned_table",
    "mode_distances", "pca", "permuted_differences", "repeated_tokens", "shuffle_order",
    "shuffled_run", "sinusoidal_table", "special_mask", "toy_self_attention",
]
