"""Self-attention step by step: the lecture's steps 1-3 and its matrix form as numbers.

Vaswani et al. 2017, "Attention Is All You Need", eq. (1); additive similarity from Bahdanau et
al. 2015 as the lecture draws it. Two sources of numbers, one computation:

- toy:  small float64 inputs and weights made from a seed (m, d_k, p from 2 to 8), rounded to one
        decimal so a class can redo every product on paper;
- real: one layer and head of the bundled BERT, its input vectors a^i = hidden_states[layer]
        and its slices W^q_h = layers[layer].w_q[h*d:(h+1)*d] (+ bias), checked against the Trace;
        or of a Llama-shaped decoder (Llama, SmolLM2, Mistral, Qwen2: `decoder_walkthrough`),
        where three things are new and the rest is the same math:
          causal mask   query i sees the keys j <= i only: alpha'_{i,j} = 0 for j > i
                        (softmax over the allowed keys; a sliding window masks more);
          RoPE          q^i and k^j turned by their positions before the scores (Su et al. 2021):
                        q^i = R(i) W^q a^i, k^j = R(j) W^k a^j, so q^i . k^j depends on i - j;
          GQA           query head h reads key/value head g = kv_heads[h], shared by its group
                        (Ainslie et al. 2023); Llama's projections have no biases.

Per token (column vectors, as Hung-yi Lee's self-attention lecture writes them):
    q^i = W^q a^i + b^q,   k^i = W^k a^i + b^k,   v^i = W^v a^i + b^v     (b = 0 in the toy)
    alpha_{i,j}  = q^i . k^j                                  similarity (score)
    alpha'_{i,j} = softmax_j(alpha_{i,j} / (T sqrt(d_k)))     weight, T = temperature (1 = real)
    b^i = sum_j alpha'_{i,j} v^j                              output
Matrix form, the lecture's column layout: I = (a^1 ... a^n) [m, n], Q = W^q I [d_k, n], K, V
likewise; A = K^T Q [n_key, n_query] (rows = keys: A[j, i] = alpha_{i,j}), A' = softmax of
each column of A, O = V A' = (b^1 ... b^n). attnviz's score and weight matrices have rows =
queries: they are A^T and A'^T (in PyTorch's row layout, Q K^T and softmax(Q K^T / sqrt(d_k))).
The notes on the lecture write C = Q^T K (rows = queries) and then B = V C, which read
literally sums over the wrong index; the consistent form is B = V C^T = V A'.
Arrays here use the row layout: inputs [n, m], queries [n, d_k], scores [n_query, n_key].
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.analysis.common import entropy, softmax_rows
from attnviz.engine.attention import attention
from attnviz.i18n import _

MIN_DIM, MAX_DIM = 2, 8  # toy sizes m, d_k, p
MAX_TOY_TOKENS = 8  # toy sentences are cut to this many words (matrices stay printable)
MAX_WORD = 16  # characters of a toy word shown on the axes
DEFAULT_WORDS = ["I", "saw", "a", "saw"]


@dataclass
class Walkthrough:
    """Every number of one single-head self-attention, in the row layout (one token per row)."""

    tokens: list[str]
    inputs: np.ndarray  # [n, m]    a^i as rows (the lecture's A is inputs.T, [m, n])
    w_q: np.ndarray  # [d_k, m]  W^q (the lecture notes: s x m; torch Linear layout [out, in])
    w_k: np.ndarray  # [d_k, m]
    w_v: np.ndarray  # [p, m]
    b_q: np.ndarray  # [d_k]     zero in the toy; BERT's Linear layers have biases
    b_k: np.ndarray  # [d_k]
    b_v: np.ndarray  # [p]
    queries: np.ndarray  # [n, d_k]  q^i
    keys: np.ndarray  # [n, d_k]
    values: np.ndarray  # [n, p]
    scores: np.ndarray  # [n, n]    alpha_{i,j} = q^i . k^j, rows = queries, columns = keys
    weights: np.ndarray  # [n, n]    softmax of each row of scores * scale
    outputs: np.ndarray  # [n, p]    b^i = sum_j weights[i, j] v^j
    scale: float  # 1 / sqrt(d_k)
    mode: str = "toy"
    layer: int | None = None
    head: int | None = None
    options: dict = field(default_factory=dict)
    mask: np.ndarray | None = None  # [n, n] bool, True = may attend (a decoder's); None: all
    queries_unrotated: np.ndarray | None = None  # [n, d_k] W^q a^i before RoPE (rotary only)
    keys_unrotated: np.ndarray | None = None  # [n, d_k]
    angles: np.ndarray | None = None  # [n, d_k / 2] position i times each pair's θ (radians)
    kv_head: int | None = None  # the key/value head this query head reads (a decoder's)
    kv_group: list[int] | None = None  # the query heads that read it
    biases: bool = True  # whether the projections have biases (Llama's have none)
    window: int | None = None  # the layer's sliding window W (query i sees i - W + 1 .. i)

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def m(self) -> int:
        return self.inputs.shape[1]

    @property
    def d_k(self) -> int:
        return self.queries.shape[1]

    @property
    def p(self) -> int:
        return self.values.shape[1]

    def arrays(self) -> dict[str, np.ndarray]:
        """The numbers of this walkthrough under their names, for a download."""
        names = ("inputs", "w_q", "w_k", "w_v", "b_q", "b_k", "b_v", "queries", "keys", "values",
                 "scores", "weights", "outputs", "mask", "queries_unrotated", "keys_unrotated",
                 "angles")
        out = {"tokens": np.array(self.tokens, dtype=str), "scale": np.float64(self.scale),
               **{k: getattr(self, k) for k in names if getattr(self, k) is not None}}
        if self.kv_head is not None:
            out["kv_head"] = np.int64(self.kv_head)
        return out

    def allowed(self, i: int) -> np.ndarray | None:
        """[n] bool: the keys query i may attend to (None: all)."""
        return None if self.mask is None else self.mask[i]

    @property
    def rotary(self) -> bool:
        return self.queries_unrotated is not None


# ----------------------------------------------------------------------------- toy numbers
def _rng(seed: int, name: str) -> np.random.Generator:
    """A generator fixed by (seed, name): the same word or matrix gets the same numbers."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(name.encode("utf-8"))])


def toy_matrix(name: str, rows: int, cols: int, seed: int) -> np.ndarray:
    """Uniform(-1, 1) entries rounded to one decimal, float64: [rows, cols]."""
    return np.round(_rng(seed, name).uniform(-1.0, 1.0, size=(rows, cols)), 1)


def toy_vector(word: str, m: int, seed: int) -> np.ndarray:
    """The toy input vector of a word: [m], one decimal. Equal words get equal vectors."""
    return np.round(_rng(seed, "word:" + word.lower()).uniform(-1.0, 1.0, size=m), 1)


def toy_words(text: str | None, max_tokens: int = MAX_TOY_TOKENS) -> tuple[list[str], int]:
    """The sentence's words (split on spaces), at most `max_tokens`; (words, how many cut).

    A word longer than MAX_WORD characters is shortened with '…' so the axes stay readable.
    """
    words = [w if len(w) <= MAX_WORD else w[:MAX_WORD - 1] + "…" for w in (text or "").split()]
    if not words:
        return list(DEFAULT_WORDS), 0
    return words[:max_tokens], max(0, len(words) - max_tokens)


def _check_dim(name: str, value: int) -> int:
    if not isinstance(value, (int, np.integer)) or not MIN_DIM <= value <= MAX_DIM:
        raise ValueError(f"{name} must be a whole number from {MIN_DIM} to {MAX_DIM}; "
                         f"got {value!r}")
    return int(value)


def toy_walkthrough(
    text: str | None = None, m: int = 4, d_k: int = 3, p: int | None = None, seed: int = 0
) -> Walkthrough:
    """Single-head self-attention on toy float64 numbers: a^i from the words, W from the seed."""
    m, d_k = _check_dim("m", m), _check_dim("d_k", d_k)
    p = d_k if p is None else _check_dim("p", p)
    words, cut = toy_words(text)
    inputs = np.stack([toy_vector(w, m, seed) for w in words])  # [n, m]
    w_q = toy_matrix("W^q", d_k, m, seed)  # [d_k, m]
    w_k = toy_matrix("W^k", d_k, m, seed)  # [d_k, m]
    w_v = toy_matrix("W^v", p, m, seed)  # [p, m]
    zeros = np.zeros
    return _walk(words, inputs, w_q, w_k, w_v, zeros(d_k), zeros(d_k), zeros(p), "toy",
                 options=dict(m=m, d_k=d_k, p=p, seed=seed, cut=cut))


def _walk(tokens, inputs, w_q, w_k, w_v, b_q, b_k, b_v, mode, **kw) -> Walkthrough:
    queries = project(inputs, w_q, b_q)  # [n, d_k]
    keys = project(inputs, w_k, b_k)  # [n, d_k]
    values = project(inputs, w_v, b_v)  # [n, p]
    outputs, weights, scores = attend(queries, keys, values)
    return Walkthrough(list(tokens), inputs, w_q, w_k, w_v, b_q, b_k, b_v, queries, keys, values,
                       scores, weights, outputs, 1.0 / math.sqrt(queries.shape[1]), mode, **kw)


def project(inputs: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """q^i = W a^i + b for every token at once: inputs [n, m], W [d, m] -> [n, d] (= (W A)^T)."""
    x = torch.as_tensor(np.asarray(inputs))
    as_x = lambda a: torch.as_tensor(np.asarray(a, dtype=x.numpy().dtype))  # noqa: E731
    return F.linear(x, as_x(w), None if b is None else as_x(b)).numpy()


def attend(
    queries: np.ndarray, keys: np.ndarray, values: np.ndarray, temperature: float = 1.0,
    mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The engine's attention: (outputs [n, p], weights [n, n], scores [n, n]).

    weights = softmax(Q K^T / (T sqrt(d_k))) row by row over the keys `mask` [n, n] allows
    (None: all); T = 1 is the Transformer's. Scores stay q^i . k^j everywhere (masked too).
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0; got {temperature!r}")
    q, k, v = (torch.as_tensor(np.asarray(a)) for a in (queries, keys, values))
    scale = 1.0 / (temperature * math.sqrt(q.shape[-1]))
    m = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
    outputs, weights, scores = attention(q, k, v, m, scale=scale)
    return outputs.numpy(), weights.numpy(), scores.numpy()


# ---------------------------------------------------------------------------- real numbers
def head_slices(model, layer: int, head: int) -> dict[str, np.ndarray]:
    """W^q_h, W^k_h, W^v_h [d, hidden] and biases [d] of one head: rows h*d:(h+1)*d."""
    if not 0 <= layer < model.n_layers or not 0 <= head < model.n_heads:
        raise ValueError(f"layer must be 0..{model.n_layers - 1} and head 0..{model.n_heads - 1}")
    lay, d, hid = model.layers[layer], model.head_dim, model.hidden
    rows = slice(head * d, (head + 1) * d)
    b = lay.qkv_b.detach().cpu()
    out = {"w_q": lay.w_q[rows], "w_k": lay.w_k[rows], "w_v": lay.w_v[rows],
           "b_q": b[rows], "b_k": b[hid:][rows], "b_v": b[2 * hid:][rows]}
    return {k: v.detach().cpu().numpy() for k, v in out.items()}


DECODER_FAMILIES = ("llama", "mistral", "qwen2")  # model_type: Llama's attention, unchanged


def decoder_refusal(model) -> str | None:
    """None when `decoder_walkthrough` takes this decoder; else what it lacks, in words.

    Llama, SmolLM2, TinyLlama, Mistral and Qwen2 attend as the lecture's steps plus a causal
    mask, RoPE and shared key/value heads. Qwen3 and Gemma norm each head's q and k first,
    Gemma also scales by another number and Gemma 2 soft-caps the scores: steps the page does
    not draw."""
    family = getattr(model, "family", None)
    if getattr(model, "kind", None) != "decoder" or not hasattr(model, "rotary"):
        return _("it is not a Llama-shaped decoder")
    if family not in DECODER_FAMILIES or getattr(model, "qk_norm", False) \
            or getattr(model, "logit_cap", None):
        return _("its heads norm q and k, or soft-cap the scores, before the softmax: steps "
                 "this page does not draw")
    if not math.isclose(model.attention_scale, 1.0 / math.sqrt(model.head_dim), rel_tol=1e-6):
        return _("it scales the scores by another number than 1/sqrt(d_k)")
    return None


def decoder_slices(model, layer: int, head: int) -> dict:
    """W^q_h [d, hidden] (rows h*d:(h+1)*d of q_proj), W^k_g and W^v_g of the key/value head
    g = kv_heads[h] it reads (rows g*d:(g+1)*d of k_proj and v_proj), and their biases (zero
    where the family has none, as Llama); plus g."""
    if not 0 <= layer < model.n_layers or not 0 <= head < model.n_heads:
        raise ValueError(f"layer must be 0..{model.n_layers - 1} and head 0..{model.n_heads - 1}")
    lay, d = model.layers[layer], model.head_dim
    g = head // (model.n_heads // model.n_kv_heads)  # the engine's grouping: [G, H/G] heads
    rq, rkv = slice(head * d, (head + 1) * d), slice(g * d, (g + 1) * d)
    cpu = lambda t: t.detach().cpu().float().numpy()  # noqa: E731
    zero = np.zeros(d, dtype=np.float32)
    out = {"w_q": cpu(lay.q_w[rq]), "w_k": cpu(lay.k_w[rkv]), "w_v": cpu(lay.v_w[rkv])}
    for name, b, rows in (("b_q", lay.q_b, rq), ("b_k", lay.k_b, rkv), ("b_v", lay.v_b, rkv)):
        out[name] = zero if b is None else cpu(b[rows])
    out["biases"] = lay.q_b is not None
    out["kv_head"] = g
    return out


def decoder_walkthrough(model, trace, layer: int, head: int) -> Walkthrough:
    """One head of a Llama-shaped decoder on the trace's sentence (float32, like the engine):
    a^i = trace.attention_inputs[layer] (RMSNorm of the layer's input), q^i = W^q_h a^i and
    k^j = W^k_g a^j turned by RoPE at their positions (engine.rope.rotate with the layer's
    angles), v^j = W^v_g a^j, then the lecture's steps under the layer's mask (causal, and
    its sliding window where it has one: Trace.mask_of)."""
    from attnviz.engine.rope import rotate

    reason = decoder_refusal(model)
    if reason:
        raise ValueError(reason)
    s = decoder_slices(model, layer, head)
    inputs = np.array(trace.attention_inputs[layer], dtype=np.float32)  # [n, hidden], a copy
    lay, d, g = model.layers[layer], model.head_dim, s["kv_head"]
    H, G, n = model.n_heads, model.n_kv_heads, inputs.shape[0]
    cpu = lambda t: None if t is None else t.detach().cpu().float()  # noqa: E731
    x = torch.as_tensor(inputs)

    def heads(w, b, count: int) -> torch.Tensor:
        """W_h a^i + b_h of every head at once: [count, n, d] (the engine's own products, so
        the numbers agree with the trace to the last bit, not only to rounding)."""
        return F.linear(x, cpu(w), cpu(b)).view(n, count, d).transpose(0, 1)

    q_all, k_all, v_all = heads(lay.q_w, lay.q_b, H), heads(lay.k_w, lay.k_b, G), \
        heads(lay.v_w, lay.v_b, G)  # [H, n, d], [G, n, d], [G, n, d]  before RoPE
    q0, k0 = q_all[head].numpy().copy(), k_all[g].numpy().copy()
    pos = np.asarray(trace.position_ids)
    angles = None
    if (pos >= 0).all():  # positions="none" leaves q and k unturned
        positions = torch.tensor(pos, dtype=torch.int64)  # a copy: the trace is read-only
        inv_freq, _factor = model.rotary[model.layer_types[layer]]
        cos, sin = model.rotations(positions)[model.layer_types[layer]]
        q_all, k_all = rotate(q_all, cos.cpu(), sin.cpu()), rotate(k_all, cos.cpu(), sin.cpu())
        angles = (positions.double()[:, None] * inv_freq.double().cpu()[None, :]).numpy()
    mask = np.asarray(trace.mask_of(layer), dtype=bool)
    # q . k and the softmax as the engine forms them: each key/value head with its group
    y, w, sc = attention(q_all.view(G, H // G, n, d), k_all[:, None], v_all[:, None],
                         torch.as_tensor(mask), 1.0 / math.sqrt(d))
    at = (head // (H // G), head % (H // G))
    q, k, values = q_all[head].numpy(), k_all[g].numpy(), v_all[g].numpy()
    outputs, weights, scores = y[at].numpy(), w[at].numpy(), sc[at].numpy()
    group = [h for h in range(model.n_heads)
             if h // (model.n_heads // model.n_kv_heads) == s["kv_head"]]
    return Walkthrough(list(trace.tokens), inputs, s["w_q"], s["w_k"], s["w_v"], s["b_q"],
                       s["b_k"], s["b_v"], q, k, values, scores, weights, outputs,
                       1.0 / math.sqrt(q.shape[1]), "real", layer=layer, head=head,
                       options=trace.request.options(), mask=mask,
                       queries_unrotated=q0 if angles is not None else None,
                       keys_unrotated=k0 if angles is not None else None, angles=angles,
                       kv_head=s["kv_head"], kv_group=group, biases=bool(s["biases"]),
                       window=(None if trace.layer_windows is None
                               or trace.layer_windows[layer] < 0
                               else int(trace.layer_windows[layer])))


def real_walkthrough(model, trace, layer: int, head: int) -> Walkthrough:
    """The walkthrough of one head on the trace's sentence (float32, like the engine): a BERT
    head, or a decoder with rotary positions (`decoder_walkthrough`; it refuses those it does
    not draw). GPT-2 takes the BERT path: its queries, keys and values are the engine's, its
    weights are not (no causal mask here; the page says so).

    a^i = trace.attention_inputs[layer] (what the layer's queries, keys and values are
    projected from: its input in BERT), W and b sliced from the model.
    Masks (windows, causal) are not applied to a BERT head: use a trace made with full
    attention.
    """
    if getattr(model, "kind", None) == "decoder" and hasattr(model, "rotary"):
        return decoder_walkthrough(model, trace, layer, head)
    s = head_slices(model, layer, head)
    inputs = np.array(trace.attention_inputs[layer], dtype=np.float32)  # [n, hidden], a copy
    return _walk(trace.tokens, inputs, s["w_q"], s["w_k"], s["w_v"], s["b_q"], s["b_k"],
                 s["b_v"], "real", layer=layer, head=head, options=trace.request.options())


def trace_differences(walk: Walkthrough, trace) -> dict[str, float]:
    """max |walkthrough - trace| for queries, keys, values, scores, weights, outputs (scores
    and weights only where the trace holds them: a long decoder input keeps q and k only)."""
    lh = (walk.layer, walk.head)
    recorded = {name: getattr(trace, name)[lh] for name in ("queries", "scores", "weights",
                                                            "outputs")
                if getattr(trace, name) is not None}
    recorded["keys"], recorded["values"] = trace.head_keys(*lh), trace.head_values(*lh)
    return {name: float(np.max(np.abs(getattr(walk, name) - recorded[name])))
            for name in ("queries", "keys", "values", "scores", "weights", "outputs")
            if name in recorded}


# ------------------------------------------------------------------ step by step details
def dot_terms(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The terms q_t k_t of q . k = sum_t q_t k_t: [d_k]."""
    return np.asarray(q) * np.asarray(k)


def _masked(logits: np.ndarray, allowed: np.ndarray | None) -> np.ndarray:
    """Logits with the keys `allowed` does not allow set to -inf (their weight becomes 0)."""
    if allowed is None:
        return logits
    return np.where(np.asarray(allowed, dtype=bool), logits, -np.inf)


def softmax_parts(scores_row: np.ndarray, scale: float, temperature: float = 1.0,
                  allowed: np.ndarray | None = None) -> dict:
    """One query's softmax in the open: logits z_j = s_j * scale / T, e_j = exp(z_j - max z),
    weights e_j / sum e (subtracting max z changes nothing but avoids overflow). A key that
    `allowed` [n] masks has z_j = -inf, e_j = 0 and weight 0 (a decoder's later tokens)."""
    z = _masked(np.asarray(scores_row, dtype=np.float64) * scale / temperature, allowed)  # [n]
    e = np.exp(z - z.max())
    return {"logits": z, "exps": e, "total": float(e.sum()), "weights": e / e.sum()}


def temperature_weights(scores: np.ndarray, scale: float, temperature: float,
                        mask: np.ndarray | None = None) -> np.ndarray:
    """softmax(scores * scale / T) along the last axis (keys), over the keys `mask` allows."""
    return softmax_rows(_masked(np.asarray(scores, dtype=np.float64) * scale / temperature,
                                mask))


def temperature_limit(scores_row: np.ndarray, rtol: float = 1e-9,
                      allowed: np.ndarray | None = None) -> np.ndarray:
    """The weights softmax(s / T) tend to as T -> 0: 1 / t on the t keys tied for the largest
    score (equal within rtol of its size), 0 elsewhere. One-hot only when the maximum is
    unique (the toy's two "saw"s have the same key, so they tie). Only the keys `allowed`
    allows take part."""
    s = _masked(np.asarray(scores_row, dtype=np.float64), allowed)
    top = s.max()
    tied = s >= top - rtol * max(1.0, abs(top))
    return tied / tied.sum()


def temperature_sweep(scores_row: np.ndarray, scale: float, temperatures,
                      allowed: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """For each T: the largest weight and the entropy of one query's softmax."""
    t = np.asarray(list(temperatures), dtype=np.float64)
    w = np.stack([softmax_parts(scores_row, scale, x, allowed)["weights"] for x in t])  # [T, n]
    return {"temperature": t, "max_weight": w.max(axis=1), "entropy": entropy(w)}


def dk_sweep(dims=(2, 4, 8, 16, 32, 64, 128, 256, 512), n: int = 8, samples: int = 400,
             seed: int = 0) -> dict[str, np.ndarray]:
    """Why divide by sqrt(d_k): q, k with independent N(0, 1) components have
    Var(q . k) = d_k, so raw scores spread like sqrt(d_k) and the softmax turns one-hot as d_k
    grows; q . k / sqrt(d_k) keeps variance 1 at every d_k. Mean over `samples` queries, n keys.
    """
    rng = np.random.default_rng(seed)
    out = {k: [] for k in ("raw_std", "scaled_std", "max_weight_raw", "max_weight_scaled")}
    for d in dims:
        q = rng.standard_normal((samples, 1, d))
        k = rng.standard_normal((samples, n, d))
        s = np.sum(q * k, axis=-1)  # [samples, n]
        for tag, logits in (("raw", s), ("scaled", s / math.sqrt(d))):
            out[f"{tag}_std"].append(float(logits.std()))
            out[f"max_weight_{tag}"].append(float(softmax_rows(logits).max(-1).mean()))
    return {"d_k": np.asarray(dims), **{k: np.asarray(v) for k, v in out.items()}}


def contributions(weights_row: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The weighted vectors alpha'_{i,j} v^j whose sum is b^i: [n, p]."""
    return np.asarray(weights_row)[:, None] * np.asarray(values)


# ------------------------------------------------------------------------ multi-head
@dataclass
class MultiHead:
    """Multi-head self-attention of one layer (row layout; shapes in the comments)."""

    tokens: list[str]
    inputs: np.ndarray  # [n, m]
    w_q: np.ndarray  # [m, m]   all heads' W^q stacked: head g owns rows g*d_h:(g+1)*d_h
    w_k: np.ndarray  # [m, m]
    w_v: np.ndarray  # [m, m]
    w_o: np.ndarray  # [m, m]   W_O (torch layout [out, in])
    b_q: np.ndarray  # [m]
    b_k: np.ndarray
    b_v: np.ndarray
    b_o: np.ndarray  # [m]
    queries: np.ndarray  # [h, n, d_h]
    keys: np.ndarray  # [h, n, d_h]
    values: np.ndarray  # [h, n, d_h]
    scores: np.ndarray  # [h, n, n]
    weights: np.ndarray  # [h, n, n]
    outputs: np.ndarray  # [h, n, d_h]  each head's weights @ values (as Trace.outputs)
    concat: np.ndarray  # [n, m]   heads side by side
    projected: np.ndarray  # [n, m]   concat W_O^T + b_O: the attention block's output

    @property
    def n_heads(self) -> int:
        return self.weights.shape[0]

    @property
    def head_dim(self) -> int:
        return self.queries.shape[-1]

    def arrays(self) -> dict[str, np.ndarray]:
        names = ("inputs", "w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o", "queries",
                 "keys", "values", "scores", "weights", "outputs", "concat", "projected")
        return {"tokens": np.array(self.tokens, dtype=str), **{k: getattr(self, k) for k in names}}


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """[n, h * d_h] -> [h, n, d_h]: head g takes columns g*d_h:(g+1)*d_h (as BERT does)."""
    n, width = x.shape
    if width % n_heads:
        raise ValueError(f"{n_heads} heads do not divide the width {width}")
    return np.ascontiguousarray(x.reshape(n, n_heads, width // n_heads).transpose(1, 0, 2))


def multihead(tokens, inputs, w_q, w_k, w_v, w_o, n_heads: int, b_q=None, b_k=None, b_v=None,
              b_o=None) -> MultiHead:
    """MultiHead(A) = concat_g(softmax(Q_g K_g^T / sqrt(d_h)) V_g) W_O^T + b_O, d_h = d / h."""
    m = w_o.shape[0]
    zero = np.zeros(w_q.shape[0], dtype=inputs.dtype)
    b_q, b_k, b_v = (zero if b is None else b for b in (b_q, b_k, b_v))
    b_o = np.zeros(m, dtype=inputs.dtype) if b_o is None else b_o
    q, k, v = (split_heads(project(inputs, w, b), n_heads)
               for w, b in ((w_q, b_q), (w_k, b_k), (w_v, b_v)))  # 3 x [h, n, d_h]
    y, weights, scores = attend(q, k, v)  # [h, n, d_h], [h, n, n], [h, n, n]
    concat = np.ascontiguousarray(y.transpose(1, 0, 2).reshape(inputs.shape[0], -1))  # [n, m]
    projected = project(concat, w_o, b_o)  # [n, m]
    return MultiHead(list(tokens), inputs, w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o, q, k, v,
                     scores, weights, y, concat, projected)


def heads_choices(m: int) -> list[int]:
    """Numbers of heads that split m evenly (d_h = m / h must be whole)."""
    return [h for h in range(1, m + 1) if m % h == 0]


def toy_multihead(walk: Walkthrough, n_heads: int, seed: int = 0) -> MultiHead:
    """Multi-head attention on the toy inputs: W^Q, W^K, W^V, W_O all [m, m] from the seed."""
    m = walk.m
    if n_heads not in heads_choices(m):
        raise ValueError(f"h must divide m = {m}: one of {heads_choices(m)}")
    mats = [toy_matrix(f"multi:{name}", m, m, seed) for name in ("W^Q", "W^K", "W^V", "W_O")]
    return multihead(walk.tokens, walk.inputs, *mats, n_heads=n_heads)


def real_multihead(model, trace, layer: int) -> MultiHead:
    """All heads of one BERT layer, recomputed from the model's weights (float32)."""
    lay, hid = model.layers[layer], model.hidden
    cpu = lambda t: t.detach().cpu().numpy()  # noqa: E731
    b = cpu(lay.qkv_b)
    inputs = np.array(trace.attention_inputs[layer], dtype=np.float32)  # [n, hidden], a copy
    return multihead(trace.tokens, inputs, cpu(lay.w_q), cpu(lay.w_k), cpu(lay.w_v),
                     cpu(lay.out_w), model.n_heads, b[:hid], b[hid:2 * hid], b[2 * hid:],
                     cpu(lay.out_b))


def decoder_multihead(model, trace, layer: int) -> MultiHead:
    """All heads of one layer of a Llama-shaped decoder (decoder_walkthrough's, head by head):
    queries [H, n, d] turned by RoPE, each head's keys and values those of its key/value head
    (Trace.kv_heads: a group of query heads reads one), weights under the layer's mask,
    O_g = A'_g V_g, concatenated, B = O W_O^T (+ b_O). `w_k`, `w_v` are [G * d, hidden]: the
    key/value heads, fewer than the query heads in grouped-query attention."""
    walks = [decoder_walkthrough(model, trace, layer, h) for h in range(model.n_heads)]
    lay = model.layers[layer]
    cpu = lambda t: None if t is None else t.detach().cpu().float().numpy()  # noqa: E731
    stack = lambda name: np.stack([getattr(w, name) for w in walks])  # noqa: E731
    outputs = stack("outputs")  # [H, n, d]
    n = outputs.shape[1]
    concat = np.ascontiguousarray(outputs.transpose(1, 0, 2).reshape(n, -1))  # [n, H * d]
    w_o = cpu(lay.o_w)  # [hidden, H * d]
    b_o = cpu(lay.o_b) if lay.o_b is not None else np.zeros(w_o.shape[0], dtype=np.float32)
    projected = (torch.as_tensor(concat) @ torch.as_tensor(w_o).T).numpy() + b_o  # [n, hidden]
    zero = lambda w: np.zeros(w.shape[0], dtype=np.float32)  # noqa: E731
    w_q, w_k, w_v = cpu(lay.q_w), cpu(lay.k_w), cpu(lay.v_w)
    b_q, b_k, b_v = (zero(w) if b is None else cpu(b)
                     for w, b in ((w_q, lay.q_b), (w_k, lay.k_b), (w_v, lay.v_b)))
    return MultiHead(list(trace.tokens), walks[0].inputs, w_q, w_k, w_v, w_o, b_q, b_k, b_v,
                     b_o, stack("queries"), stack("keys"), stack("values"), stack("scores"),
                     stack("weights"), outputs, concat, projected)


def decoder_after_attention(model, layer: int, inputs: np.ndarray,
                            block: np.ndarray) -> dict[str, np.ndarray]:
    """What follows the attention block B in a Llama-shaped decoder layer (row layout):

        x' = x + B                                           the residual (no norm after it)
        h  = x' + W_down (SiLU(W_gate RMSNorm(x')) * W_up RMSNorm(x'))   feed-forward, residual

    (the model's last layer then applies its final RMSNorm, as hidden_states[-1] records).
    inputs: the layer's input x = hidden_states[layer] [n, hidden] (before RMSNorm); block: B.
    Returns {"after_attention": x', "layer_output": h}."""
    from attnviz.engine.families.llama import rms_norm

    lay = model.layers[layer]
    dev = lambda t: None if t is None else t.detach().cpu().float()  # noqa: E731
    x = torch.as_tensor(np.asarray(inputs, dtype=np.float32))
    with torch.no_grad():
        mid = x + torch.as_tensor(np.asarray(block, dtype=np.float32))
        h = rms_norm(mid, dev(lay.norm_ff), model.eps)
        ff = F.linear(model.act(F.linear(h, dev(lay.gate_w), dev(lay.gate_b)))
                      * F.linear(h, dev(lay.up_w), dev(lay.up_b)), dev(lay.down_w),
                      dev(lay.down_b))
        out = mid + ff
        if layer == model.n_layers - 1:
            out = rms_norm(out, dev(model.final_norm), model.eps)
    return {"after_attention": mid.numpy(), "layer_output": out.numpy()}


def decoder_multihead_shapes(m: int, n: int, h: int, g: int, d: int) -> list[dict[str, str]]:
    """multihead_shapes for a decoder with h query heads on g key/value heads of size d
    (grouped-query attention: K and V have g heads, each read by h / g query heads)."""
    rows = [
        (_("inputs"), "I = (a^1 ... a^n), a^i = RMSNorm(x^i)", f"{m} x {n}"),
        (_("all queries"), _("Q = W^Q I, turned by RoPE,  W^Q: {hd} x {m}").format(
            hd=h * d, m=m), f"{h * d} x {n}"),
        (_("keys and values"), _("K = W^K I (turned), V = W^V I,  W^K, W^V: {gd} x {m}").format(
            gd=g * d, m=m), f"2 x ({g * d} x {n})"),
        (_("split into heads"), _("{h} query heads, {g} key/value heads: query head q reads "
                                  "key/value head q // {per}").format(h=h, g=g, per=h // g),
         f"{h} x ({d} x {n}), {g} x ({d} x {n})"),
        (_("weights per head"), _("A'_q = softmax of each column of K_g^T Q_q / sqrt({d}), "
                                  "causal").format(d=d), f"{h} x ({n} x {n})"),
        (_("head outputs"), "O_q = V_g A'_q", f"{h} x ({d} x {n})"),
        (_("concatenation"), _("O = (O_0; ...; O_{h-1}) stacked"), f"{h * d} x {n}"),
        (_("attention block output"), f"B = W^O O,  W^O: {m} x {h * d}", f"{m} x {n}"),
        (_("then, in this decoder"), _("x + B, RMSNorm, feed-forward (SwiGLU), residual: the "
                                       "layer's output"), f"{m} x {n}"),
        (_("parameters"), "W^Q, W^K, W^V, W^O",
         _("{count} ({saved} fewer than with {h} key/value heads)").format(
             count=2 * m * h * d + 2 * m * g * d, saved=2 * m * (h - g) * d, h=h)),
    ]
    return [dict(what=a, formula=b, shape=c) for a, b, c in rows]


def multihead_shapes(m: int, n: int, h: int) -> list[dict[str, str]]:
    """{what, formula (the lecture's column layout), shape} for every matrix of multi-head,
    in the session's language (a table the page shows)."""
    d = m // h
    rows = [
        (_("inputs"), "I = (a^1 ... a^n)", f"{m} x {n}"),
        (_("all queries"), f"Q = W^Q I,  W^Q: {m} x {m}", f"{m} x {n}"),
        (_("split into heads"), _("Q_g = rows g*{d}..(g+1)*{d}-1 of Q, g = 0..{last}").format(
            d=d, last=h - 1), f"{h} x ({d} x {n})"),
        (_("scores per head"), _("A_g = K_g^T Q_g (rows = keys; attnviz draws A_g^T)"),
         f"{h} x ({n} x {n})"),
        (_("weights per head"), _("A'_g = softmax of each column of A_g / sqrt({d})").format(
            d=d), f"{h} x ({n} x {n})"),
        (_("head outputs"), "O_g = V_g A'_g", f"{h} x ({d} x {n})"),
        (_("concatenation"), _("O = (O_0; ...; O_{h-1}) stacked"), f"{m} x {n}"),
        (_("attention block output"), f"B = W^O O (+ b^O),  W^O: {m} x {m}", f"{m} x {n}"),
        (_("then, in BERT"), _("LayerNorm(I + B), feed-forward, LayerNorm: the layer's output"),
         f"{m} x {n}"),
        (_("parameters"), "W^Q, W^K, W^V, W^O",
         _("4 x {m} x {m} = {count}, whatever h is").format(m=m, count=4 * m * m)),
    ]
    return [dict(what=a, formula=b, shape=c) for a, b, c in rows]


# ---------------------------------------------------------------------- additive score
def toy_additive_vector(d_k: int, seed: int = 0) -> np.ndarray:
    """The vector w of the additive score (the lecture's final 'transform'): [d_k], one decimal."""
    return toy_matrix("additive:w", 1, d_k, seed)[0]


def additive_scores(queries: np.ndarray, keys: np.ndarray, w: np.ndarray) -> np.ndarray:
    """alpha_{i,j} = w . tanh(q^i + k^j): [n_query, n_key] (Bahdanau et al. 2015, as the
    lecture draws it)."""
    q = torch.as_tensor(np.asarray(queries))
    k = torch.as_tensor(np.asarray(keys))
    t = torch.tanh(q[:, None, :] + k[None, :, :])  # [n, n, d_k]
    return (t @ torch.as_tensor(np.asarray(w, dtype=queries.dtype))).numpy()


def additive_weights(scores: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """softmax of each row of additive scores (no 1/sqrt(d_k): tanh already bounds each term),
    over the keys `mask` allows (a decoder's causal mask)."""
    return softmax_rows(_masked(np.asarray(scores, dtype=np.float64), mask))


def heads_sweep(walk: Walkthrough, seed: int = 0) -> dict[str, np.ndarray]:
    """For every h dividing m: mean largest weight and mean entropy / ln n over heads and queries.

    The parameters (4 m^2) are the same for every h. Whether more, smaller heads give a
    flatter or a sharper softmax has no rule: q . k / sqrt(d_h) has the same spread for every
    d_h when the entries are independent (`heads_trend` measures it over seeds).
    """
    hs = heads_choices(walk.m)
    norm = math.log(walk.n) if walk.n > 1 else 1.0
    mw, ent = [], []
    for h in hs:
        w = toy_multihead(walk, h, seed).weights  # [h, n, n]
        mw.append(float(w.max(-1).mean()))
        ent.append(float(entropy(w).mean() / norm))
    return {"heads": np.asarray(hs), "max_weight": np.asarray(mw), "entropy_norm": np.asarray(ent)}


def heads_trend(text: str | None, ms=(4, 6, 8), seeds=range(40), progress=None) -> dict:
    """Do more, smaller heads give a flatter softmax? Measured, not assumed.

    For each input size m and seed: the toy inputs of `text` (toy_walkthrough) and the seed's
    W^Q, W^K, W^V, W_O (toy_multihead); change[m, s] = E(h = m) - E(h = 1), where E = mean over
    heads and queries of entropy / ln n (heads_sweep). > 0: the most heads were flatter.
    Returns {"m": [M], "seeds": S, "change": [M, S], "flatter": [M] count of change > 0,
    "sharper": [M] count of change < 0}.
    """
    ms, seeds = [int(m) for m in ms], [int(x) for x in seeds]
    change = np.zeros((len(ms), len(seeds)))
    for a, m in enumerate(ms):
        for b, seed in enumerate(seeds):
            e = heads_sweep(toy_walkthrough(text, m, 3, 3, seed), seed)["entropy_norm"]
            change[a, b] = e[-1] - e[0]
            if progress:
                progress((a * len(seeds) + b + 1) / (len(ms) * len(seeds)), f"m = {m}")
    return {"m": np.asarray(ms), "seeds": len(seeds), "change": change,
            "flatter": (change > 0).sum(axis=1), "sharper": (change < 0).sum(axis=1)}


def layer_after_attention(model, layer: int, inputs: np.ndarray,
                          block: np.ndarray) -> dict[str, np.ndarray]:
    """What follows the attention block B = W_O O + b_O in a BERT layer (row layout):

        x' = LayerNorm(I + B)                       residual, then add & norm
        h  = LayerNorm(x' + W_2 GELU(W_1 x' + b_1) + b_2)   feed-forward, add & norm

    inputs: the layer's input [n, m]; block: B [n, m]. Returns {"after_attention": x',
    "layer_output": h}, h being the next layer's input (hidden_states[layer + 1]).
    """
    lay = model.layers[layer]
    x = torch.as_tensor(np.asarray(inputs), dtype=lay.out_w.dtype)
    y = torch.as_tensor(np.asarray(block), dtype=lay.out_w.dtype)
    with torch.no_grad():
        mid = F.layer_norm(x + y, (x.shape[-1],), lay.ln1_w.cpu(), lay.ln1_b.cpu(), model.eps)
        ff = F.linear(model.act(F.linear(mid, lay.ff1_w.cpu(), lay.ff1_b.cpu())),
                      lay.ff2_w.cpu(), lay.ff2_b.cpu())
        out = F.layer_norm(mid + ff, (x.shape[-1],), lay.ln2_w.cpu(), lay.ln2_b.cpu(), model.eps)
    return {"after_attention": mid.numpy(), "layer_output": out.numpy()}
