"""What positional encoding does: numbers for self-attention with and without positions.

The lecture notes: "No position information in self-attention". Each position i gets a vector e^i,
hand-crafted (the sinusoids of Vaswani et al. 2017, "Attention Is All You Need", section 3.5)
or learned from data (BERT, Devlin et al. 2019), and the layer sees e^i + a^i. This module
measures what that changes, always from the engine's own `positions=` option:

- order is invisible without positions: for a permutation P of the tokens,
  SelfAttention(P A) = P SelfAttention(A) (permutation equivariance), so the outputs of a
  shuffled sentence are the same vectors, shuffled the same way;
- two copies of a word ("I saw a saw", the lecture's example) get identical vectors in every layer
  without positions, and different ones with them (cosine similarity per layer);
- how far each head's weights move when the positions change: the mean Jensen-Shannon
  divergence between the weight rows of two modes (a divergence, not a distance: its square
  root is a metric);
- what the encodings themselves look like (dot products, cosines, a 2-D PCA);
- rotary positions (RoPE, Su et al. 2021, engine.rope): a 2-D pair turned by its position, the
  score of one query and one key at every pair of places (m, n), which depends on m - n only,
  and each pair's frequency and wavelength for a checkpoint's rope_theta; in a causal model
  without positions two copies of a word still differ (Haviv et al. 2022), measured.

Tensors/arrays in, numbers out; no Streamlit.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attnviz.analysis.common import cosine, cosine_per_layer, entropy, special_mask
from attnviz.engine.positions import POSITION_MODES, sinusoid_scale, sinusoidal
from attnviz.engine.request import TraceRequest
from attnviz.engine.rope import cos_sin, rotate, wavelengths
from attnviz.engine.trace import Trace


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


def shuffled_request(
    model, request: TraceRequest, *, seed: int = 0, keep_special: bool = True,
) -> tuple[np.ndarray, TraceRequest]:
    """The request for the same sentence with its tokens shuffled by `shuffle_order`: token ids
    (and segments) permuted, the options kept. Returns (perm [n], that request)."""
    if request.ids is None:
        ids, segments, _ = model.tokenize(request.text, request.pair)
    else:
        ids, segments = list(request.ids), list(request.segments)
    fixed = special_mask(model.tokens_of(ids)) if keep_special else None
    perm = shuffle_order(len(ids), seed, fixed)
    shuffled = TraceRequest(ids=tuple(ids[k] for k in perm),
                            segments=tuple(segments[k] for k in perm), **request.options())
    return perm, shuffled


def shuffled_run(
    model, text: str, text_pair: str | None = None, *, seed: int = 0, keep_special: bool = True,
    positions: str = "none",
) -> tuple[np.ndarray, Trace]:
    """Shuffle the sentence's tokens (`shuffled_request`) and run the engine on them.

    Returns (perm [n], the shuffled sentence's Trace).
    """
    perm, shuffled = shuffled_request(model, TraceRequest(text, text_pair, positions=positions),
                                      seed=seed, keep_special=keep_special)
    return perm, model.trace(shuffled)


# ------------------------------------------------------------------------ 2. two saws
def fallback_pair(n: int) -> tuple[int, int]:
    """When no word repeats: the first and last word ([CLS] w1 ... wk [SEP]), else the ends."""
    return (1, n - 2) if n >= 4 else (0, max(0, n - 1))


# ----------------------------------------------------------------- 3. the encodings
def sinusoidal_table(n: int, d: int) -> np.ndarray:
    """The engine's hand-crafted encoding, [n, d]: PE[p, 2i] = sin(p / 10000^(2i/d)),
    PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    return sinusoidal(n, d).numpy()


def sinusoid_scaling(model, ids, segments=None) -> dict:
    """Why the engine scales the sinusoids: what each kind of e^i leaves of the word.

    Per token i, with x_i(e) = word[t_i] + segment[s_i] + e^i and the embedding LayerNorm,
        kept_i(e) = cos(LayerNorm(x_i(e)), LayerNorm(x_i(0)))
    is how much the layer's input still points like the word alone (1 = e changes nothing).
    Returns {"scale": c, "word_norm": [n] ||word + segment||, "learned_norm": mean ||learned||,
    "raw_norm": sqrt(d/2) (every row of PE), and "kept_raw", "kept_scaled", "kept_learned":
    [n] kept_i for PE, c·PE (the engine's "sinusoidal" mode) and the learned vectors}.
    """
    ids = list(ids)
    n = len(ids)
    segments = [0] * n if segments is None else list(segments)
    learned = model.position_embeddings.detach().cpu().double()  # [max_pos, d]
    d = learned.shape[1]
    c = sinusoid_scale(learned)
    word = (model.word_embeddings[torch.as_tensor(ids)].detach().cpu().double()
            + model.segment_embeddings[torch.as_tensor(segments)].detach().cpu().double())
    ln_w, ln_b = model.emb_ln_w.detach().cpu().double(), model.emb_ln_b.detach().cpu().double()

    def norm(x):
        return torch.nn.functional.layer_norm(x, (d,), ln_w, ln_b, model.eps)

    pe = sinusoidal(n, d).double()  # [n, d]
    base = norm(word)
    kept = {name: torch.nn.functional.cosine_similarity(norm(word + e), base, dim=-1).numpy()
            for name, e in (("raw", pe), ("scaled", c * pe), ("learned", learned[:n]))}
    return {"scale": c, "word_norm": word.norm(dim=-1).numpy(),
            "learned_norm": float(learned.norm(dim=-1).mean()), "raw_norm": float(np.sqrt(d / 2)),
            **{f"kept_{k}": v for k, v in kept.items()}}


def dot_products(pe: np.ndarray) -> np.ndarray:
    """Position-to-position dot products e^p . e^q, [n, n] (float64)."""
    x = np.asarray(pe, dtype=np.float64)
    return x @ x.T


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
    js = entropy(0.5 * (p + q)) - 0.5 * (entropy(p) + entropy(q))  # nats
    return np.clip(js / np.log(2.0), 0.0, 1.0)


def head_divergence(weights_a: np.ndarray, weights_b: np.ndarray) -> np.ndarray:
    """Per-head divergence: mean over query rows of JS(W_a[i, :], W_b[i, :]).

    weights_* are [layers, heads, n, n] softmax weights; returns [layers, heads] in bits.
    """
    a, b = np.asarray(weights_a), np.asarray(weights_b)
    # one layer at a time keeps the float64 temporaries small for 512-token inputs
    return np.stack([js_divergence(a[li], b[li]).mean(axis=-1) for li in range(a.shape[0])])


def mode_divergences(traces: dict[str, Trace],
                     reference: str = "learned") -> dict[str, np.ndarray]:
    """head_divergence between the reference mode's weights and every mode's (itself: all 0)."""
    ref = traces[reference].weights
    return {mode: head_divergence(ref, t.weights) for mode, t in traces.items()}


def final_cosines(traces: dict[str, Trace], reference: str = "learned") -> dict[str, np.ndarray]:
    """Per mode, cos(final vector of token i, the reference mode's final vector of i): [n]."""
    ref = traces[reference].hidden_states[-1]  # [n, hidden]
    return {mode: cosine(ref, t.hidden_states[-1]) for mode, t in traces.items()}


# ------------------------------------------------------------------ toy vectors (seeds)
def toy_self_attention(words: list[str], d: int = 4, seed: int = 0) -> dict[str, dict]:
    """One self-attention layer on toy vectors, as in the lecture notes, without and with positions.

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


# ------------------------------------------------------------------ 5. rotary positions
TOY_THETA = math.pi / 4  # the toy pair's angle per position: 45 degrees


def rotated_pair(vector, places, theta: float = TOY_THETA) -> np.ndarray:
    """A 2-D vector turned by m·θ at each place m (engine.rope's cos_sin and rotate, one pair):

        x'(m) = [[cos mθ, -sin mθ], [sin mθ, cos mθ]] x.

    Returns [len(places), 2] (float64; the angles are float32, as the engine computes them)."""
    places = torch.as_tensor(np.asarray(places), dtype=torch.int64)
    x = torch.as_tensor(np.asarray(vector, dtype=np.float64)).reshape(1, 2)
    cos, sin = cos_sin(places, torch.tensor([theta], dtype=torch.float64), dtype=torch.float64)
    return rotate(x.expand(len(places), 2), cos, sin).numpy()


def rotary_scores(query, key, n: int, inv_freq: torch.Tensor) -> np.ndarray:
    """S[m, p] = RoPE(q, m) · RoPE(k, p): one query vector placed at m and one key vector
    placed at p, for every m, p in 0..n-1 ([n, n], float64 products of float32 angles).

    Su et al.: the product keeps only cos and sin of (m - p)θ_i, so S is constant along each
    diagonal m - p = const (up to the float32 rounding of the angles)."""
    places = torch.arange(n)
    cos, sin = cos_sin(places, inv_freq, dtype=torch.float64)  # [n, d]
    q = torch.as_tensor(np.asarray(query, dtype=np.float64)).expand(n, -1)  # [n, d]
    k = torch.as_tensor(np.asarray(key, dtype=np.float64)).expand(n, -1)
    return (rotate(q, cos, sin) @ rotate(k, cos, sin).T).numpy()


def by_distance(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """A [n, n] matrix S[m, p] read along its diagonals: (distances m - p from -(n-1) to n-1,
    the mean of each diagonal, the largest spread max - min within any one diagonal)."""
    s = np.asarray(scores, dtype=np.float64)
    n = s.shape[0]
    dist = np.arange(-(n - 1), n)
    diagonals = [np.diagonal(s, offset=-int(d)) for d in dist]  # offset -d: rows m = p + d
    spread = max(float(x.max() - x.min()) for x in diagonals)
    return dist, np.array([x.mean() for x in diagonals]), spread


def toy_query_key(d: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One seeded query and one key vector of d dimensions (float64), standing for two words."""
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, d, generator=gen, dtype=torch.float64)
    return q.numpy(), k.numpy()


def rope_spectrum(inv_freq: torch.Tensor) -> dict:
    """Each pair's angle per token θ_i (a model's, e.g. engine.rope.frequencies(d, base) =
    base^(-2i/d)) and its wavelength 2π/θ_i in tokens (engine.rope.wavelengths), i = 0 ..
    d/2 - 1: {"theta", "wavelength"} (float64)."""
    inv = torch.as_tensor(inv_freq)
    return {"theta": inv.double().numpy(), "wavelength": wavelengths(inv).numpy()}


def causal_twins(with_rope: Trace, without: Trace, a: int, b: int) -> dict:
    """Two copies of a word (a < b) in a causal model with and without rotary positions:
    {"with", "without": [layers + 1] cos(h_a, h_b) per layer (0 = embeddings),
     "without_max_diff": max |h_a - h_b| over the layers after the embeddings, without}.

    Without positions the copies enter as the same vector (layer 0: cosine 1), but b sees
    the words up to b and a only those up to a: in a causal model the copies differ after
    the first layer all the same (Haviv et al. 2022)."""
    hid = np.asarray(without.hidden_states, dtype=np.float64)
    return {"with": cosine_per_layer(with_rope.hidden_states, a, b),
            "without": cosine_per_layer(hid, a, b),
            "without_max_diff": float(np.abs(hid[1:, a] - hid[1:, b]).max())}


__all__ = [
    "POSITION_MODES", "TOY_THETA", "by_distance", "causal_twins", "dot_products",
    "fallback_pair", "final_cosines", "head_divergence",
    "js_divergence", "learned_table", "mode_divergences", "pca", "permuted_differences",
    "shuffle_order", "shuffled_request", "shuffled_run", "sinusoid_scaling", "sinusoidal_table",
    "rope_spectrum", "rotary_scores", "rotated_pair", "toy_query_key", "toy_self_attention",
]
