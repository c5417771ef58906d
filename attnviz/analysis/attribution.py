"""Why are two sentences similar? Attribution of a sentence-embedding model's similarity score
to the tokens of both sentences.

all-MiniLM-L6-v2 is used as sentence-transformers uses it: each sentence is encoded alone, its
embedding is the mean of the last layer's token vectors (mean pooling over every token,
[CLS] and [SEP] included), and two sentences are compared by the cosine of their embeddings:

    e(X) = (1/n) sum_i h_L(X)_i,        s(A, B) = cos(e(A), e(B))

Integrated gradients (Sundararajan, Taly and Yan 2017, "Axiomatic Attribution for Deep
Networks", arXiv:1703.01365) fades ALL tokens of a sentence together, along one straight path
from a baseline x' to the input x, and credits each token with the part of the score's change
that its coordinates carry; it is not the drop from removing one token (that is occlusion,
analysis.occlusion). The credits depend on the baseline.

Inputs x are the encoder's input vectors (Model.embed: word + position + segment, after
LayerNorm), one per token. The baseline x' of a sentence keeps the structural tokens
([CLS], [SEP], [PAD], <s>, </s>: `structural_ids`) and blanks every other token, [UNK] and
[MASK] included, at the same positions and segments; `BASELINES` names the blanks:
"pad" (the default) puts the [PAD] word there, "mask" the [MASK] word, "zero" an all-zero
input vector (its path is steep near the blank: completeness needs far more points than
DEFAULT_STEPS, so the page offers "pad" and "mask").
Each sentence is attributed with the other one held fixed (two blanks of one length
would be near-identical, s(x'_A, x'_B) ~ 1, and every word would only "lower" the score):

    IG^A_i = sum_c (x_ic - x'_ic) * integral_0^1 ds(x' + a (x - x'), B)/dx_ic da

and the same for B with A fixed. The integral is computed by composite Gauss-Legendre
quadrature: `steps` points in all, half of them on each half of the path, a in [0, 1/2] and
[1/2, 1] (path_rule; exact for polynomials of degree steps - 1 on each half). Why two halves:
for this model the integrand has one sharp peak in the middle of the path, where one
Gauss-Legendre panel's points are sparsest (they crowd towards the ends); the two halves' ends
crowd there instead. Measured by bench_attribution on the load test's 20 sentences and three
more, each against the page's default B and the tests' B (92 attributions): the peak lies at
a = 0.34-0.72 (median 0.51); 24 points in two halves came within 6.8e-3 of the largest |IG|
of a 128-point reference on every token, 32 points in one panel within 1.6e-2 (medians 2.6e-4
and 2.1e-4). The tests pin this on two pairs.

Completeness: sum_i IG^A_i = s(A, B) - s(x'_A, B), and pages show the relative gap
|sum IG - difference| / |difference|.

Gradient x input (a one-point local estimate): GxI_i = sum_c x_ic ds/dx_ic at the input; it
does not sum to anything in particular.

A sentence held fixed for many (the page's default B, against every student's A): its IG is
linear in the other sentence's unit embedding u = e(A)/|e(A)|. With e_k = e(x'_B + a_k (x_B -
x'_B)), J_k its Jacobian and d_t the input difference x_B - x'_B kept on token t only,

    ds/de(e_k) = (I - ê_k ê_k^T) u / |e_k|     (ê = e/|e|), so
    IG^B_t = u . sum_k w_k (I - ê_k ê_k^T) J_k d_t / |e_k| = u . M_t,

and likewise GxI^B_t = u . (I - ê ê^T) J x_t / |e| at the input and s(A, x'_B) = u . ê_0.
`prepare_side` computes the vectors M_t once (J_k d_t by forward-mode differentiation: one
Jacobian-vector product per token and path point); `attribute(..., side_b=...)` then needs only
A's path. Same quadrature, same numbers up to float rounding (the tests pin 1e-6).

For comparison, what the attention maps say about input token j, given the mean pooling:
the mean over output tokens i of a [output, input] map M (last layer's head-mean weights,
rollout, flow): importance_j = (1/n) sum_i M_ij (these sum to 1 and are never negative).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.autograd.forward_ad as fwad

from attnviz.analysis.common import sequences_per_batch

DEFAULT_B = "She cut the wood with a saw."  # the similarity page's sentence B
DEFAULT_STEPS = 24  # in two halves: as accurate as 32 in one panel (module docstring)


@dataclass
class Attribution:
    """Attributions of s(A, B) to each token of A and of B (float64 arrays)."""

    tokens_a: list[str]
    tokens_b: list[str]
    ig_a: np.ndarray  # [n_a]
    ig_b: np.ndarray  # [n_b]
    gxi_a: np.ndarray  # [n_a]
    gxi_b: np.ndarray  # [n_b]
    score: float  # s(A, B)
    baseline_a: float  # s(x'_A, B): A blanked
    baseline_b: float  # s(A, x'_B): B blanked
    steps: int
    baseline: str = "pad"  # the blank the tokens fade from (BASELINES)

    def gap(self, side: str) -> float:
        """Completeness: |sum IG - (s - baseline)| / |s - baseline| for side "a" or "b"."""
        ig, base = (self.ig_a, self.baseline_a) if side == "a" else (self.ig_b, self.baseline_b)
        delta = self.score - base
        return abs(float(ig.sum()) - delta) / abs(delta) if delta else float("inf")


BASELINES = ("pad", "mask", "zero")  # what a word fades from (module docstring)


def structural_ids(tokenizer) -> set[int]:
    """The ids of the tokens every input has whatever its words ([CLS], [SEP], [PAD], <s>,
    </s>): kept by every baseline. [UNK] and [MASK] stand for words and are not in it."""
    names = ("cls_token_id", "sep_token_id", "pad_token_id", "bos_token_id", "eos_token_id")
    return {i for i in (getattr(tokenizer, n, None) for n in names) if i is not None}


def baseline_ids(ids: list[int], keep: set[int], blank: int) -> list[int]:
    """The ids in `keep` (structural_ids) kept, every other token replaced by `blank`."""
    return [i if i in keep else blank for i in ids]


def _inputs(model, text: str, baseline: str = "pad"
            ) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """(x [n, hidden], x' [n, hidden], tokens) of a sentence for a baseline in BASELINES."""
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {', '.join(BASELINES)}")
    ids, segments, _ = model.tokenize(text)
    tok = model.tokenizer
    keep = structural_ids(tok)
    x, _ = model.embed(ids, segments)
    if baseline == "zero":
        kept = torch.tensor([i in keep for i in ids], device=x.device)[:, None]
        x0 = torch.where(kept, x, torch.zeros_like(x))
    else:
        blank = tok.pad_token_id if baseline == "pad" else tok.mask_token_id
        if blank is None:
            raise ValueError(f"this tokenizer has no {baseline} token")
        x0, _ = model.embed(baseline_ids(ids, keep, blank), segments)
    return x.detach(), x0.detach(), model.tokens_of(ids)


def sentence_embedding(model, x: torch.Tensor) -> torch.Tensor:
    """e = mean_i h_L(x)_i for input vectors x [n, hidden] or a batch [points, n, hidden] (full
    attention): [..., hidden], by Model.last_hidden (the engine's one eager pass)."""
    return model.last_hidden(x).mean(dim=-2)


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a, b, dim=-1)


def _grad(model, x: torch.Tensor, other: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(s, ds/dx) for s = cos(e(x), other); x [points, n, hidden] -> s [points], ds/dx like x.
    The points of a batch are encoded independently, so the gradient of sum(s) holds each
    point's own gradient."""
    x = x.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        s = _cos(sentence_embedding(model, x), other)
        (g,) = torch.autograd.grad(s.sum(), x)
    return s.detach(), g


MEMORY_PER_BATCH = 256 * 2**20  # bytes the autograd graph of one batch of path points may hold


def points_per_batch(model, n: int) -> int:
    """How many path points of an n-token input are encoded at once: what the backward pass
    keeps per point (every layer's work) within MEMORY_PER_BATCH."""
    return sequences_per_batch(model, n, MEMORY_PER_BATCH, layers=model.n_layers)


def path_rule(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre on [0, 1]: (steps + 1) // 2 points on [0, 1/2] and steps // 2
    on [1/2, 1] -> (points a_k, weights w_k), float64, sum w_k = 1."""
    if steps < 2:
        raise ValueError("steps must be at least 2 (one point on each half of the path)")
    alphas, weights = [], []
    for start, count in ((0.0, (steps + 1) // 2), (0.5, steps // 2)):
        nodes, w = np.polynomial.legendre.leggauss(count)  # on [-1, 1]
        alphas.append(start + (nodes + 1) / 4)
        weights.append(w / 4)
    return np.concatenate(alphas), np.concatenate(weights)


@dataclass
class _Path:
    ig: np.ndarray  # [n] float64
    start: float  # s at a = 0 (the blank)
    end: float  # s at a = 1 (the input)
    end_grad: torch.Tensor  # ds/dx at the input [n, hidden]


def _path(model, x: torch.Tensor, x0: torch.Tensor, other: torch.Tensor, steps: int,
          tick: Callable[[], None] = lambda: None) -> _Path:
    """IG along x0 -> x, with the path's two ends encoded in the same batches as its quadrature
    points (weight 0): s at the blank, s and its gradient at the input."""
    rule_a, rule_w = path_rule(steps)
    alphas = torch.tensor(np.r_[rule_a, 0.0, 1.0], dtype=x.dtype, device=x.device)
    w = torch.tensor(np.r_[rule_w, 0.0, 0.0], dtype=torch.float64, device=x.device)
    acc = torch.zeros_like(x, dtype=torch.float64)
    values = []
    size = points_per_batch(model, x.shape[0])
    for start in range(0, len(alphas), size):
        a = alphas[start:start + size, None, None]  # [b, 1, 1]
        s, g = _grad(model, x0 + a * (x - x0), other)  # [b], [b, n, hidden]
        acc += (w[start:start + size, None, None] * g.double()).sum(dim=0)
        values.append(s)
        for _ in range(len(a)):
            tick()
    values = torch.cat(values)  # the last batch ends with a = 0, then a = 1
    return _Path(ig=((x - x0).double() * acc).sum(dim=-1).cpu().numpy(),
                 start=float(values[-2]), end=float(values[-1]), end_grad=g[-1].clone())


def integrated_gradients(model, x: torch.Tensor, x0: torch.Tensor, other: torch.Tensor,
                         steps: int, tick: Callable[[], None] = lambda: None) -> np.ndarray:
    """IG_i = sum_c (x - x0)_ic sum_k w_k ds/dx_ic(x0 + a_k (x - x0)) with (a_k, w_k) =
    path_rule(steps): [n] float64. The path points are encoded in batches (points_per_batch)."""
    return _path(model, x, x0, other, steps, tick).ig


@dataclass
class FixedSide:
    """A sentence's half of every attribution against it (module docstring: IG^B_t = u . M_t),
    made once by `prepare_side` for one number of steps."""

    text: str
    steps: int
    model_key: object  # the model it was made with (Model.key)
    tokens: list[str]
    embedding: torch.Tensor  # e(x) [hidden], as sentence_embedding computes it
    ig: np.ndarray  # [n, hidden] float64: IG_t = ig[t] . u
    gxi: np.ndarray  # [n, hidden] float64: GxI_t = gxi[t] . u
    blank: np.ndarray  # [hidden] float64: s(other, x') = blank . u

    def against(self, other: torch.Tensor) -> tuple[np.ndarray, np.ndarray, float]:
        """(IG [n], GxI [n], s at the blank) of this side against the other sentence's
        embedding [hidden]."""
        u = other.double().cpu().numpy()
        u = u / np.linalg.norm(u)
        return self.ig @ u, self.gxi @ u, float(self.blank @ u)


_FORWARD_AD = threading.Lock()


def side_key(model_key, text: str, steps: int) -> tuple:
    """The key a server caches `prepare_side(model, text, steps)` under (its "results")."""
    return ("ig_side", model_key, text, steps)


def prepare_side(model, text: str, steps: int = DEFAULT_STEPS,
                 progress: Callable[[float, str], None] | None = None) -> FixedSide:
    """What `attribute` needs of a sentence B that many sentences A are compared with: the
    Jacobian-vector products J_k d_t along B's path (and J x_t at its input), one per token and
    point, by forward-mode differentiation of the eager encoder; n times a path's encoder
    passes, so worth it from ~20 sentences A on (bench_attribution)."""
    with _FORWARD_AD:  # torch has one forward-mode level per process: one preparation at a time
        return _prepare_side(model, text, steps, progress)


def _prepare_side(model, text, steps, progress) -> FixedSide:
    rule_a, rule_w = path_rule(steps)
    x, x0, tokens = _inputs(model, text)
    n, hidden = x.shape
    alphas = torch.tensor(np.r_[rule_a, 0.0, 1.0], dtype=x.dtype, device=x.device)
    weights = np.r_[rule_w, 0.0, 0.0]
    points = x0 + alphas[:, None, None] * (x - x0)  # [P, n, hidden]; P - 2: blank, P - 1: input
    one_token = torch.eye(n, dtype=x.dtype, device=x.device)[:, :, None]  # [t, n, 1]
    rows = [(k, t) for k in range(len(alphas)) for t in range(n)]
    rows += [(-1, t) for t in range(n)]  # J x_t at the input (gradient x input)
    size = max(1, points_per_batch(model, n))
    values, tangents = [], []
    with torch.no_grad(), fwad.dual_level():
        for start in range(0, len(rows), size):
            part = rows[start:start + size]
            k = torch.tensor([r[0] for r in part], device=x.device)
            t = torch.tensor([r[1] for r in part], device=x.device)
            direction = torch.where((k == -1)[:, None, None], x, x - x0)
            dual = fwad.make_dual(points[k].contiguous(),
                                  (one_token[t] * direction).contiguous())
            e, de = fwad.unpack_dual(model.encode(dual, record=False).hidden_states[-1]
                                     .mean(dim=-2))
            values.append(e.double())
            tangents.append(de.double())
            if progress is not None:
                done = min(start + size, len(rows))
                progress(done / len(rows), f"{done} of {len(rows)} products")
    e, de = torch.cat(values), torch.cat(tangents)  # [rows, hidden]
    norm = e.norm(dim=-1, keepdim=True)
    unit = e / norm
    projected = (de - (de * unit).sum(-1, keepdim=True) * unit) / norm  # (I - êê^T) J d / |e|
    w = torch.tensor([weights[r[0]] if r[0] >= 0 else 0.0 for r in rows], dtype=torch.float64,
                     device=x.device)
    points_part = len(alphas) * n
    ig = (w[:points_part, None] * projected[:points_part]).reshape(len(alphas), n, hidden)
    blank_row = (len(alphas) - 2) * n  # any token's row at a = 0 holds e(x')
    with torch.no_grad():
        embedding = sentence_embedding(model, x)
    return FixedSide(text=text, steps=steps, model_key=getattr(model, "key", None),
                     tokens=tokens, embedding=embedding,
                     ig=ig.sum(dim=0).cpu().numpy(),
                     gxi=projected[points_part:].cpu().numpy(),
                     blank=unit[blank_row].cpu().numpy())


def attribute(model, text_a: str, text_b: str, steps: int = DEFAULT_STEPS,
              progress: Callable[[float, str], None] | None = None,
              side_b: FixedSide | None = None, baseline: str = "pad") -> Attribution:
    """Integrated gradients and gradient x input of s(A, B) (formulas in the docstring), the
    words fading from `baseline` (BASELINES). `side_b`: B's half made beforehand
    (`prepare_side(model, text_b, steps)`, the "pad" baseline): only A's path is encoded."""
    path_rule(steps)  # refuses too few steps before any work
    if side_b is not None and (side_b.text != text_b or side_b.steps != steps
                               or side_b.model_key != getattr(model, "key", None)
                               or baseline != "pad"):
        raise ValueError("side_b was prepared for another sentence, model, number of steps "
                         "or baseline")
    xa, xa0, toks_a = _inputs(model, text_a, baseline)
    with torch.no_grad():
        ea = sentence_embedding(model, xa)
    if side_b is None:
        xb, xb0, toks_b = _inputs(model, text_b, baseline)
        with torch.no_grad():
            eb = sentence_embedding(model, xb)
    else:
        toks_b, eb = side_b.tokens, side_b.embedding
    done, total = [0], (1 if side_b is not None else 2) * (steps + 2)

    def tick() -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0] / total, f"step {done[0]} of {total}")

    pa = _path(model, xa, xa0, eb, steps, tick)
    per_token = lambda x, g: (x.double() * g.double()).sum(dim=-1).cpu().numpy()  # noqa: E731
    if side_b is None:
        pb = _path(model, xb, xb0, ea, steps, tick)
        ig_b, gxi_b, baseline_b = pb.ig, per_token(xb, pb.end_grad), pb.start
    else:
        ig_b, gxi_b, baseline_b = side_b.against(ea)
    return Attribution(
        tokens_a=toks_a, tokens_b=toks_b, ig_a=pa.ig, ig_b=ig_b,
        gxi_a=per_token(xa, pa.end_grad), gxi_b=gxi_b,
        score=pa.end, baseline_a=pa.start, baseline_b=baseline_b, steps=steps,
        baseline=baseline,
    )


def text_embedding(model, text: str) -> torch.Tensor:
    """e(text) [hidden]: the sentence encoded alone (with its tokenizer's own added tokens),
    the mean of its last layer's vectors (sentence_embedding), without autograd."""
    ids, segments, _ = model.tokenize(text)
    x, _ = model.embed(ids, segments)
    with torch.no_grad():
        return sentence_embedding(model, x)


def pair_cosines(model, pairs) -> list[float]:
    """s(A, B) = cos(e(A), e(B)) of each (A, B) in `pairs`, each sentence encoded once."""
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    e = {t: text_embedding(model, t) for t in texts}
    return [float(_cos(e[a], e[b])) for a, b in pairs]


def pooled_importance(matrix: np.ndarray) -> np.ndarray:
    """(1/n) sum_i M_ij for a map M [outputs, inputs]: what mean pooling takes from input j."""
    return np.asarray(matrix, dtype=np.float64).mean(axis=0)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties); nan for fewer than 2 values."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if len(a) < 2:
        return float("nan")

    def ranks(x: np.ndarray) -> np.ndarray:
        order = np.argsort(x, kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x), dtype=np.float64)
        for v in np.unique(x):  # ties share their mean rank
            tie = x == v
            r[tie] = r[tie].mean()
        return r

    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = np.sqrt((ra ** 2).sum() * (rb ** 2).sum())
    return float((ra * rb).sum() / denom) if denom else float("nan")
