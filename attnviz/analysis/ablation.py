"""Weight is not effect: switch heads off and measure what changes (Michel, Levy and Neubig 2019,
"Are Sixteen Heads Really Better than One?", arXiv:1905.10650), and copy one run's activations
into another (activation patching; Vig et al. 2020, Meng et al. 2022).

Measures m of a sentence's last-layer vectors h_L (what is compared before and after):

    "repeat"  cos(h_L[i], h_L[j]) of two tokens, by default the first repeated pair (the two
              "saw"s of "I saw a saw")
    "pair"    the similarity of a sentence pair, as analysis.attribution defines it: each
              sentence encoded alone, mean-pooled, s(A, B) = cos(e(A), e(B))
    "change"  how far every token's final vector moves: (1/n) sum_t (1 - cos(h_L[t], h'_L[t]))
              between the plain run h_L and the ablated one h'_L (0 for the plain run)

A head's importance is effect = m(ablated) - m(plain): the measure's change when that head's
output Y_h = A'_h V_h (A'_h: the head's weights alpha'_{i,j}) is replaced (engine.intervene:
zero, or its mean over the reference sentences, REFERENCE_SENTENCES or the caller's own).
For "repeat", a positive effect means that removing the head brings the two tokens closer.

Ablating head (l, h) leaves layers before l untouched, so the map starts each layer's heads from
the plain run's input to layer l and runs the remaining layers once for all of that layer's
heads as one batch (Model.encode with `start` and one Edit per sequence).

Patching (clean and corrupted sentences of the same number of tokens, e.g. "I saw a saw" and
"I saw a dog"): the corrupted run gets one activation of the clean run, a head's output or the
input of layer l at token t, and

    restored = (m(patched) - m(corrupted)) / (m(clean) - m(corrupted))

is 1 where that one activation carries the whole difference and 0 where it carries none.
Ablation asks whether a head matters at all; patching asks whether it carries what differs
between the two sentences. For BART (`decoder_patching`) the same is done for each head of the
decoder's masked self-attention and of its cross-attention, measured on the decoder's final
vectors of the two repeated tokens (without a target the decoder reads the sentence itself).

One head removed (`one_head`): every token's final vector against the plain run's,
cos(h'_L[t], h_L[t]), and every head's weights alpha' as a difference, with the head removed
minus without [n, n] (0 for layers l' <= l: removing Y_h changes nothing before layer l's
output). It takes two traces, so it is made for any length the model reads; the maps above
(MAX_TOKENS) run the model once per head, and a longer text's maps are computed on its first
MAX_TOKENS tokens (`first_tokens`).

Importance beside what the head looks at (`beside_stats`): the size of the change |effect| of
every head next to Clark et al.'s statistics of the same heads on the same sentence
(analysis.head_stats), with Spearman's rank correlation over the heads per statistic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from ..engine.attention import build_mask
from ..engine.intervene import Edit, mean_outputs
from ..engine.request import REFERENCE_SENTENCES, TraceRequest
from .attribution import spearman
from .common import first_repeated_pair
from .head_stats import head_stats

MEASURES = ("repeat", "pair", "change")
MAX_TOKENS = 128  # a map past this many tokens is refused (its cost grows with n^2 per pass)
CHUNK = 16  # sequences per batched pass in the layer x token patching map
# The layer x token patching map runs layers x tokens passes (not layers x heads): past this many
# tokens it is left out (at 128 tokens it takes seconds, not a fraction of one).
RESIDUAL_MAX_TOKENS = 64

Progress = Callable[[int, int], None] | None


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cosine_similarity(a, b, dim=-1)


@dataclass
class Importance:
    """A head-importance map: the measure after removing each head alone."""

    measure: str
    mode: str
    base: float  # m of the plain run
    values: np.ndarray  # [layers, heads] m with that head removed
    tokens: list[str]
    pair: tuple[int, int] | None = None  # "repeat": the two token positions
    reference: tuple[str, ...] = REFERENCE_SENTENCES  # mean ablation's sentences

    @property
    def effect(self) -> np.ndarray:  # [layers, heads]
        return self.values - self.base

    def ranking(self) -> list[tuple[int, int]]:
        """Heads by effect, largest first (for "repeat": most brings the two tokens closer);
        ties keep layer-then-head order."""
        e = self.effect.ravel()
        order = np.argsort(-e, kind="stable")
        H = self.values.shape[1]
        return [(int(k // H), int(k % H)) for k in order]


class _Run:
    """A plain run of one sentence: its trace, mask and what ablations start from."""

    def __init__(self, model, request: TraceRequest):
        self.model, self.request = model, request
        self.trace = model.trace(request)
        n = self.trace.n_tokens
        if n > MAX_TOKENS:
            raise ValueError(f"these maps run the model once per head on every token; they are "
                             f"made for up to {MAX_TOKENS} tokens and this text has {n}: "
                             "shorten it")
        self.n = n
        self.mask = build_mask(n, request.window, request.causal, model.device)
        self.states = torch.as_tensor(self.trace.hidden_states, device=model.device)
        self.final = self.states[-1]  # [n, hidden]

    def from_layer(self, layer: int, edit: Edit, batch: int) -> torch.Tensor:
        """Final vectors [batch, n, hidden] of `batch` edited runs started at layer `layer`."""
        x = self.states[layer].expand(batch, -1, -1)
        with torch.inference_mode():
            return self.model.encode(x, self.mask, record=False, edit=edit,
                                     start=layer).hidden_states[-1]


def _plain(request) -> TraceRequest:
    return request if request.ablate is None else request.with_options(ablate=None)


def first_tokens(trace, n: int = MAX_TOKENS) -> TraceRequest:
    """The trace's input cut to its first n tokens, as token ids with its segments and options:
    what the maps are computed on for a longer text."""
    return TraceRequest(ids=tuple(int(i) for i in trace.token_ids[:n]),
                        segments=tuple(int(s) for s in trace.segments[:n]),
                        **trace.request.options())


def _measure(measure: str, runs: list[_Run], pair: tuple[int, int] | None):
    """m(finals) for the batch of final vectors of each run (one per sentence)."""
    if measure == "repeat":
        i, j = pair
        return lambda finals: _cos(finals[0][..., i, :], finals[0][..., j, :])
    if measure == "pair":
        return lambda finals: _cos(finals[0].mean(-2), finals[1].mean(-2))
    base = runs[0].final
    return lambda finals: (1 - _cos(finals[0], base)).mean(-1)


def _setup(model, request, measure, tokens, pair_text):
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}; got {measure!r}")
    request = _plain(request)
    runs = [_Run(model, request)]
    pair = None
    if measure == "repeat":
        pair = tuple(tokens) if tokens is not None else first_repeated_pair(runs[0].trace.tokens)
        if pair is None:
            raise ValueError("the two-token measure needs a word that occurs twice (like the "
                             "two 'saw's of 'I saw a saw'), or two positions")
        if not all(0 <= p < runs[0].n for p in pair) or pair[0] == pair[1]:
            raise ValueError(f"two different token positions from 0 to {runs[0].n - 1}")
    if measure == "pair":
        if request.text is None:
            raise ValueError("the pair's similarity needs two texts")
        text_b = pair_text if pair_text is not None else request.pair
        if not text_b:
            raise ValueError("the pair's similarity needs a second sentence")
        runs = [_Run(model, TraceRequest(request.text, **request.options())),
                _Run(model, TraceRequest(text_b, **request.options()))]
    return request, runs, pair


def _fill(model, mode, request, reference=REFERENCE_SENTENCES):
    if mode not in ("zero", "mean"):
        raise ValueError(f"mode must be zero or mean; got {mode!r}")
    if mode == "mean" and not reference:
        raise ValueError("mean ablation needs at least one reference sentence")
    return mean_outputs(model, tuple(reference), request) if mode == "mean" else None


def head_importance(model, request: TraceRequest, measure: str = "repeat", mode: str = "zero",
                    tokens: tuple[int, int] | None = None, pair_text: str | None = None,
                    progress: Progress = None,
                    reference: tuple[str, ...] = REFERENCE_SENTENCES) -> Importance:
    """m with each head removed alone, [layers, heads] (see the module docstring). `mode`:
    "zero" or "mean" (the head's mean output over `reference`, as Ablation(reference=...));
    `tokens`: the two positions of "repeat" (default: the first repeated pair)."""
    request, runs, pair = _setup(model, request, measure, tokens, pair_text)
    fill = _fill(model, mode, request, reference)
    m = _measure(measure, runs, pair)
    L, H = model.n_layers, model.n_heads
    with torch.inference_mode():
        base = float(m([r.final for r in runs]))
    values = np.zeros((L, H))
    for layer in range(L):
        keep = torch.ones(H, L, H, dtype=torch.bool, device=model.device)
        keep[torch.arange(H), layer, torch.arange(H)] = False  # sequence b: head b removed
        edit = Edit(keep=keep, fill=fill)
        finals = [r.from_layer(layer, edit, H) for r in runs]
        values[layer] = m(finals).double().cpu().numpy()
        if progress is not None:
            progress(layer + 1, L)
    return Importance(measure, mode, base, values, list(runs[0].trace.tokens), pair,
                      tuple(reference))


def layer_removal(model, request: TraceRequest, measure: str = "repeat",
                  tokens: tuple[int, int] | None = None,
                  pair_text: str | None = None) -> tuple[float, np.ndarray]:
    """A whole layer's attention left out, one layer at a time: (m of the plain run, [layers]
    m with layer l's attention sublayer output Z = concat_h(Y_h) W_O + b_O set to 0), so that
    layer's input passes on by the residual connection alone (Ablation(layers=(l,))). Every
    layer is run in one batched pass from the embeddings; `measure`, `tokens` and `pair_text`
    as in head_importance."""
    request, runs, pair = _setup(model, request, measure, tokens, pair_text)
    m = _measure(measure, runs, pair)
    L = model.n_layers
    att = ~torch.eye(L, dtype=torch.bool, device=model.device)  # sequence l: layer l off
    finals = [r.from_layer(0, Edit(attention=att), L) for r in runs]
    with torch.inference_mode():
        base = float(m([r.final for r in runs]))
    return base, m(finals).double().cpu().numpy()


def pruning_curve(model, request: TraceRequest, importance: Importance,
                  tokens: tuple[int, int] | None = None, pair_text: str | None = None,
                  progress: Progress = None) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Heads removed one after another, least important first (smallest |effect| of
    `importance`, ties in layer-then-head order), and m after removing the first k of them
    together, k = 0..layers*heads: (the heads in that order, [layers*heads + 1] m).

    In the manner of Michel et al. (2019), who rank heads by a gradient-based importance over
    a dataset and plot a task's accuracy: here the order is single-head ablation on this one
    sentence and m is its measure. The removed heads get what `importance` used: zero, or
    their mean over `importance.reference`."""
    request, runs, pair = _setup(model, request, importance.measure, tokens or importance.pair,
                                 pair_text)
    fill = _fill(model, importance.mode, request, importance.reference)
    m = _measure(importance.measure, runs, pair)
    L, H = model.n_layers, model.n_heads
    order = np.argsort(np.abs(importance.effect).ravel(), kind="stable")
    heads = [(int(k // H), int(k % H)) for k in order]
    out = np.zeros(L * H + 1)
    chunk = 24
    for s in range(0, L * H + 1, chunk):
        ks = list(range(s, min(s + chunk, L * H + 1)))
        keep = torch.ones(len(ks), L, H, dtype=torch.bool, device=model.device)
        for b, k in enumerate(ks):
            for layer, head in heads[:k]:
                keep[b, layer, head] = False
        finals = [r.from_layer(0, Edit(keep=keep, fill=fill), len(ks)) for r in runs]
        out[ks] = m(finals).double().cpu().numpy()
        if progress is not None:
            progress(ks[-1] + 1, L * H + 1)
    return heads, out


@dataclass
class PruningSummary:
    """What a pruning curve m_0..m_N shows (m_k: the k least important heads removed): the
    few last removals that carry most of where it ends, and how flat it is before them."""

    flat: int  # k: heads removed before the last ones
    low: float  # min of m_0..m_k
    high: float  # max of m_0..m_k
    last: list[tuple[int, int]]  # the heads removed last (the (k+1)-th to the N-th)
    start: float  # m_k
    end: float  # m_N: every head removed


TAIL_SHARE = 2 / 3  # pruning_summary's last removals carry at least this share of the change


def pruning_summary(heads: list[tuple[int, int]], curve: np.ndarray) -> PruningSummary:
    """The fewest last removals r that move the curve at least TAIL_SHARE of the way to its
    end from the point farthest from it, |m_N - m_(N-r)| >= TAIL_SHARE max_k |m_N - m_k|, and
    the range of m over the N - r removals before them."""
    curve = np.asarray(curve, dtype=np.float64)
    n = len(curve) - 1
    far = float(np.abs(curve[-1] - curve).max())
    r = next(r for r in range(1, n + 1)
             if abs(curve[-1] - curve[n - r]) >= TAIL_SHARE * far - 1e-12)
    k = n - r
    return PruningSummary(k, float(curve[:k + 1].min()), float(curve[:k + 1].max()),
                          list(heads[k:]), float(curve[k]), float(curve[-1]))


@dataclass
class Patching:
    """How much of the measure's difference one clean activation restores in the corrupted run."""

    clean: float  # m of the clean run
    corrupted: float  # m of the corrupted run
    heads: np.ndarray  # [layers, heads] restored fraction, patching that head's output
    residual: np.ndarray | None  # [layers, tokens] restored fraction, patching layer l's
    # input at t; None past RESIDUAL_MAX_TOKENS
    tokens: list[str]  # the clean sentence's
    corrupted_tokens: list[str]
    pair: tuple[int, int]


def patching(model, clean: TraceRequest, corrupted: TraceRequest,
             tokens: tuple[int, int] | None = None, progress: Progress = None) -> Patching:
    """Activation patching from `clean` into `corrupted` (two sentences of the same number of
    tokens), one activation at a time:

        heads[l, h]     head (l, h)'s output Y_h in the corrupted run := the clean run's
                        (Patch(clean, heads=((l, h),)))
        residual[l, t]  the input of layer l at token t := the clean run's hidden_states[l][t]
                        (Patch(clean, residual=((l, t),))); None past RESIDUAL_MAX_TOKENS
                        tokens, as it runs layers x tokens passes

    each as restored = (m(patched) - m(corrupted)) / (m(clean) - m(corrupted)), m the "repeat"
    measure on positions `tokens` (default: the clean sentence's first repeated pair) read in
    each run's own tokens. 1: that activation restores the whole difference; 0: none; below
    0, the patch moves m away from the clean value; above 1, past it. The heads of a layer run
    as one batched pass from the corrupted run's input to that layer."""
    c, k = _Run(model, _plain(clean)), _Run(model, _plain(corrupted))
    if c.n != k.n:
        raise ValueError(f"patching copies activations token by token: the clean sentence has "
                         f"{c.n} tokens and the corrupted one {k.n}; choose two of the same "
                         "length")
    pair = tuple(tokens) if tokens is not None else first_repeated_pair(c.trace.tokens)
    if pair is None:
        raise ValueError("the measure needs a word that occurs twice in the clean sentence "
                         "(like the two 'saw's), or two positions")
    m = _measure("repeat", [k], pair)
    with torch.inference_mode():
        m_clean, m_bad = float(m([c.final])), float(m([k.final]))
    gap = m_clean - m_bad
    if abs(gap) < 1e-6:
        raise ValueError("the two sentences give the same measure: nothing to restore")
    L, H, n = model.n_layers, model.n_heads, c.n
    clean_outputs = torch.as_tensor(c.trace.outputs, device=model.device)  # [L, H, n, d]
    heads, resid = np.zeros((L, H)), np.zeros((L, n))
    for layer in range(L):
        keep = torch.ones(H, L, H, dtype=torch.bool, device=model.device)
        keep[torch.arange(H), layer, torch.arange(H)] = False
        heads[layer] = m([k.from_layer(layer, Edit(keep=keep, fill=clean_outputs), H)]
                         ).double().cpu().numpy()
        for s in range(0, n if n <= RESIDUAL_MAX_TOKENS else 0, CHUNK):  # b: token s + b
            ts = torch.arange(s, min(s + CHUNK, n), device=model.device)
            where = torch.zeros(len(ts), L, n, 1, dtype=torch.bool, device=model.device)
            where[torch.arange(len(ts)), layer, ts] = True
            edit = Edit(inputs=(where, c.states[:-1]))
            resid[layer, s:s + len(ts)] = m([k.from_layer(layer, edit, len(ts))]
                                            ).double().cpu().numpy()
        if progress is not None:
            progress(layer + 1, L)
    resid = (resid - m_bad) / gap if n <= RESIDUAL_MAX_TOKENS else None
    return Patching(m_clean, m_bad, (heads - m_bad) / gap, resid,
                    list(c.trace.tokens), list(k.trace.tokens), pair)


@dataclass
class DecoderPatching:
    """Patching BART's decoder heads: how much of the measure's difference (the two repeated
    decoder tokens' cosine after the decoder's last layer) one clean head output restores."""

    clean: float  # m of the clean run
    corrupted: float  # m of the corrupted run
    decoder: np.ndarray  # [decoder layers, heads] restored, patching a masked self-attention head
    cross: np.ndarray  # [decoder layers, heads] restored, patching a cross-attention head
    tokens: list[str]  # the clean run's decoder tokens
    corrupted_tokens: list[str]
    pair: tuple[int, int]  # decoder token positions


def _has_decoder(model) -> None:
    """ValueError unless `model` has a decoder (an encoder-decoder: BART)."""
    if not getattr(model, "n_decoder_layers", 0):
        raise ValueError(f"{model.title} has no decoder: decoder and cross-attention heads are "
                         "an encoder-decoder's (BART)")


def _decoder_pair(decoder_tokens, tokens, where: str) -> tuple[int, int]:
    """The two decoder positions a decoder map measures: `tokens`, or the first repeated pair
    of `decoder_tokens` (`where` names the text they come from in the message); ValueError
    past MAX_TOKENS decoder tokens (the maps run the decoder once per head), without a pair,
    or for positions that are not two different ones of the decoder's."""
    m = len(decoder_tokens)
    if m > MAX_TOKENS:
        raise ValueError(f"these maps run the decoder once per head; they are made for up to "
                         f"{MAX_TOKENS} tokens and this text has {m}: shorten it")
    pair = tuple(tokens) if tokens is not None else first_repeated_pair(decoder_tokens)
    if pair is None:
        raise ValueError(f"the measure needs a word that occurs twice in {where} (like the "
                         "two 'saw's), or two positions")
    if len(pair) != 2 or not all(0 <= p < m for p in pair) or pair[0] == pair[1]:
        raise ValueError(f"two different decoder token positions from 0 to {m - 1}")
    return pair


def decoder_patching(model, clean: TraceRequest, corrupted: TraceRequest,
                     tokens: tuple[int, int] | None = None,
                     progress: Progress = None) -> DecoderPatching:
    """Patch each decoder self-attention and cross-attention head's output, one at a time, from
    the clean run into the corrupted one (engine.intervene.Patch(decoder_heads=, cross_heads=));
    measure "repeat" on the decoder's final vectors at positions `tokens` (default: the clean
    decoder's first repeated pair). The corrupted run's encoder is run once: each patched pass
    runs the decoder only (the model's `decode`, with the Edit such a Patch makes)."""
    _has_decoder(model)
    clean, corrupted = _plain(clean), _plain(corrupted).with_options(**clean.options())
    c, k = model.trace(clean), model.trace(corrupted)
    m = len(c.decoder_tokens)
    if m != len(k.decoder_tokens):
        raise ValueError(f"patching copies activations token by token: the clean decoder reads "
                         f"{m} tokens and the corrupted one {len(k.decoder_tokens)}; choose two "
                         "of the same length")
    i, j = pair = _decoder_pair(c.decoder_tokens, tokens, "the clean sentence")

    def measure(states) -> float:
        a, b = states[-1][i].double(), states[-1][j].double()
        return float(_cos(a, b))

    dev = model.device
    m_clean = measure(torch.as_tensor(c.decoder_hidden_states))
    m_bad = measure(torch.as_tensor(k.decoder_hidden_states))
    gap = m_clean - m_bad
    if abs(gap) < 1e-6:
        raise ValueError("the two sentences give the same measure: nothing to restore")
    y = torch.as_tensor(k.decoder_embeddings, device=dev)
    memory = torch.as_tensor(k.hidden_states[-1], device=dev)
    L, H = model.n_decoder_layers, model.n_heads
    out = {"decoder": np.zeros((L, H)), "cross": np.zeros((L, H))}
    done = 0
    for part, field in (("decoder", "decoder_outputs"), ("cross", "cross_outputs")):
        fill = torch.as_tensor(getattr(c, field), device=dev)  # [L, H, m, d]: the clean run's
        for layer in range(L):
            for head in range(H):
                keep = torch.ones(L, H, dtype=torch.bool, device=dev)
                keep[layer, head] = False  # what Patch(decoder_heads=/cross_heads=) makes
                edit = Edit(keep=keep, fill=fill)
                with torch.inference_mode():
                    states = model.decode(y, memory, *((edit, None) if part == "decoder"
                                                       else (None, edit)))
                out[part][layer, head] = (measure(states["decoder_hidden_states"]) - m_bad) / gap
            done += 1
            if progress is not None:
                progress(done, 2 * L)
    return DecoderPatching(m_clean, m_bad, out["decoder"], out["cross"],
                           list(c.decoder_tokens), list(k.decoder_tokens), pair)


DECODER_FIELDS = {"decoder": "decoder_outputs", "cross": "cross_outputs"}


class _DecoderRun:
    """A plain run of BART's decoder: the encoder run once, then the decoder (Model.decode)
    again for every edit of one kind of head ("decoder": its masked self-attention, "cross":
    its cross-attention); m = the cosine of the decoder's final vectors at two positions."""

    def __init__(self, model, request: TraceRequest, part: str, tokens):
        _has_decoder(model)
        if part not in DECODER_FIELDS:
            raise ValueError(f"part must be one of {', '.join(DECODER_FIELDS)}; got {part!r}")
        self.model, self.request, self.part = model, _plain(request), part
        self.trace = t = model.trace(self.request)
        self.pair = _decoder_pair(t.decoder_tokens, tokens, "the sentence the decoder reads")
        self.y = torch.as_tensor(t.decoder_embeddings, device=model.device)
        self.memory = torch.as_tensor(t.hidden_states[-1], device=model.device)
        self.base = self.measure(torch.as_tensor(t.decoder_hidden_states))

    def measure(self, states) -> float:
        i, j = self.pair
        return float(_cos(states[-1][i].double(), states[-1][j].double()))

    def run(self, edit: Edit) -> float:
        """m with `edit` applied to this run's kind of head."""
        edits = (edit, None) if self.part == "decoder" else (None, edit)
        with torch.inference_mode():
            states = self.model.decode(self.y, self.memory, *edits)["decoder_hidden_states"]
        return self.measure(states)


def _decoder_fill(run: _DecoderRun, mode: str, reference):
    if mode not in ("zero", "mean"):
        raise ValueError(f"mode must be zero or mean; got {mode!r}")
    if mode == "zero":
        return None
    if not reference:
        raise ValueError("mean ablation needs at least one reference sentence")
    return mean_outputs(run.model, tuple(reference), run.request, DECODER_FIELDS[run.part])


def decoder_importance(model, request: TraceRequest, part: str = "decoder", mode: str = "zero",
                       tokens: tuple[int, int] | None = None, progress: Progress = None,
                       reference: tuple[str, ...] = REFERENCE_SENTENCES) -> Importance:
    """BART: the head-importance map of the decoder's masked self-attention heads
    (part="decoder") or of its cross-attention heads (part="cross"): each head's output Y_h
    removed alone (zero, or its mean over `reference`, as Ablation(decoder_heads=...,
    cross_heads=...)), m the cosine of the decoder's final vectors at positions `tokens`
    (default: the decoder's first repeated pair), [decoder layers, heads]. The measure is
    "repeat"; its tokens are the decoder's."""
    run = _DecoderRun(model, request, part, tokens)
    fill = _decoder_fill(run, mode, reference)
    L, H = model.n_decoder_layers, model.n_heads
    values = np.zeros((L, H))
    for layer in range(L):
        for head in range(H):
            keep = torch.ones(L, H, dtype=torch.bool, device=model.device)
            keep[layer, head] = False
            values[layer, head] = run.run(Edit(keep=keep, fill=fill))
        if progress is not None:
            progress(layer + 1, L)
    return Importance("repeat", mode, run.base, values, list(run.trace.decoder_tokens), run.pair,
                      tuple(reference))


def decoder_layer_removal(model, request: TraceRequest, part: str = "decoder",
                          tokens: tuple[int, int] | None = None) -> tuple[float, np.ndarray]:
    """BART: (m plain, [decoder layers] m with decoder layer l's whole masked self-attention
    (part="decoder") or cross-attention (part="cross") output Z = concat_h(Y_h) W_O + b_O set
    to 0), m as in decoder_importance."""
    run = _DecoderRun(model, request, part, tokens)
    L = model.n_decoder_layers
    values = np.zeros(L)
    for layer in range(L):
        att = torch.ones(L, dtype=torch.bool, device=model.device)
        att[layer] = False
        values[layer] = run.run(Edit(attention=att))
    return run.base, values


def decoder_pruning_curve(model, request: TraceRequest, importance: Importance,
                          part: str = "decoder", progress: Progress = None
                          ) -> tuple[list[tuple[int, int]], np.ndarray]:
    """BART: pruning_curve for the decoder's heads of one kind (`part`), from their
    decoder_importance: the heads least important first, and m with the first k removed
    together, k = 0..layers*heads."""
    run = _DecoderRun(model, request, part, importance.pair)
    fill = _decoder_fill(run, importance.mode, importance.reference)
    L, H = model.n_decoder_layers, model.n_heads
    order = np.argsort(np.abs(importance.effect).ravel(), kind="stable")
    heads = [(int(k // H), int(k % H)) for k in order]
    out = np.zeros(L * H + 1)
    keep = torch.ones(L, H, dtype=torch.bool, device=model.device)
    out[0] = run.base
    for k, (layer, head) in enumerate(heads, 1):
        keep[layer, head] = False
        out[k] = run.run(Edit(keep=keep.clone(), fill=fill))
        if progress is not None:
            progress(k, L * H)
    return heads, out


def saw_cosines(model, request: TraceRequest, tokens: tuple[int, int] | None = None
                ) -> tuple[tuple[int, int], np.ndarray, np.ndarray]:
    """The lesson's closing numbers: the two repeated tokens' cosine per layer (embedding and
    after each layer), with positions as the request has them and with positions="none"."""
    request = _plain(request)
    on = model.trace(request)
    pair = tuple(tokens) if tokens is not None else first_repeated_pair(on.tokens)
    if pair is None:
        raise ValueError("type a sentence in which a word occurs twice, like 'I saw a saw'")
    off = model.trace(request.with_options(positions="none"))
    i, j = pair

    def per_layer(h):
        h = torch.as_tensor(h)
        return _cos(h[:, i], h[:, j]).double().numpy()
    return pair, per_layer(on.hidden_states), per_layer(off.hidden_states)


# What one head removed changes, by the attention it belongs to: (the Ablation's field, the
# trace's weights, its hidden states, the query tokens, the key tokens). BART's decoder heads
# change its decoder tokens' final vectors and the later decoder layers' weights of that kind.
PARTS = {"encoder": ("heads", "weights", "hidden_states", "tokens", "tokens"),
         "decoder": ("decoder_heads", "decoder_weights", "decoder_hidden_states",
                     "decoder_tokens", "decoder_tokens"),
         "cross": ("cross_heads", "cross_weights", "decoder_hidden_states", "decoder_tokens",
                   "tokens")}


@dataclass
class OneHead:
    """What removing one head changes (see the module docstring)."""

    layer: int
    head: int
    mode: str
    token_cosine: np.ndarray  # [n] cos(final vector with the head removed, plain final vector)
    weights_diff: np.ndarray  # [layers, heads, n, m] float32: ablated weights - plain weights
    tokens: list[str]  # the queries' (rows')
    part: str = "encoder"  # "encoder" | "decoder" | "cross" (PARTS)
    key_tokens: list[str] | None = None  # the keys' (columns'); None: the same as `tokens`
    pair_similarity: tuple[float, float] | None = None  # a sentence pair's s(A, B) (the "pair"
    # measure), plain and with the head removed; None without a pair (or for a decoder head)

    @property
    def weights_change(self) -> np.ndarray:  # [layers, heads] mean |difference| of each head
        return np.abs(self.weights_diff.astype(np.float64)).mean(axis=(-1, -2))

    def later(self, head: int | None = None) -> list[tuple[int, np.ndarray]]:
        """(layer, [n, m]) for every layer after the removed head's: head `head`'s difference,
        or (None) the mean of the layer's heads' differences."""
        out = []
        for layer in range(self.layer + 1, self.weights_diff.shape[0]):
            d = self.weights_diff[layer].astype(np.float64)
            out.append((layer, d.mean(axis=0) if head is None else d[head]))
        return out


def one_head(model, request: TraceRequest, layer: int, head: int,
             mode: str = "zero", part: str = "encoder") -> OneHead:
    """Head (layer, head) of the encoder (or of BART's decoder self-attention or its
    cross-attention: `part`) removed alone, zero or mean ablation: each token's final vector
    against the plain run's, and every head's weights (of that kind) minus the plain run's."""
    from ..engine.request import Ablation

    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}; got {part!r}")
    field, weights, states, queries, keys = PARTS[part]
    if part != "encoder" and not getattr(model, "n_decoder_layers", 0):
        raise ValueError(f"{model.title} has no decoder: decoder and cross-attention heads are "
                         "an encoder-decoder's (BART)")
    request = _plain(request)
    plain = model.trace(request)
    cut = model.trace(request.with_options(ablate=Ablation(**{field: ((layer, head),)},
                                                           mode=mode)))
    a = getattr(cut, states)[-1].astype(np.float64)
    b = getattr(plain, states)[-1].astype(np.float64)
    cos = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    diff = getattr(cut, weights) - getattr(plain, weights)  # float32: correctly rounded
    similarity = None
    if part == "encoder" and request.text is not None and request.pair:
        def s_ab(ablate) -> float:  # each sentence alone, mean-pooled, cosine (the "pair" measure)
            a, b = (model.trace(TraceRequest(x, **request.options(), ablate=ablate))
                    .hidden_states[-1].astype(np.float64).mean(0)
                    for x in (request.text, request.pair))
            return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
        similarity = (s_ab(None), s_ab(Ablation(heads=((layer, head),), mode=mode)))
    return OneHead(layer, head, mode, cos, diff, list(getattr(plain, queries)), part,
                   None if keys == queries else list(getattr(plain, keys)), similarity)


@dataclass
class BesideStats:
    """A head-importance map's |effect| next to Clark et al.'s statistics of the same heads."""

    size: np.ndarray  # [layers, heads] |effect|
    stats: dict[str, np.ndarray]  # {statistic: [layers, heads]} (analysis.head_stats.STATS)
    rho: dict[str, float]  # Spearman's rank correlation of size and each statistic over heads
    conventions: str

    def top(self, name: str) -> tuple[tuple[int, int], int] | None:
        """The head with the most of statistic `name`, and its rank by |effect| (1 = the head
        whose removal changes the measure most; ties keep layer-then-head order); None when
        every head has the same value (no punctuation in the sentence: 0 for every head), as
        no head has the most of it."""
        H = self.size.shape[1]
        values = self.stats[name]
        if np.ptp(values) == 0:
            return None
        k = int(np.argmax(values))
        order = np.argsort(-self.size.ravel(), kind="stable")
        return (k // H, k % H), int(np.nonzero(order == k)[0][0]) + 1


def beside_stats(model, request: TraceRequest, importance: Importance,
                 conventions: str = "attnviz") -> BesideStats:
    """|effect| of every head beside its statistics (analysis.head_stats) on the plain run of
    the sentence the measure reads first (the pair measure: sentence A alone)."""
    request = _plain(request)
    if importance.measure == "pair":
        request = TraceRequest(request.text, **request.options())
    t = model.trace(request)
    stats = head_stats(t.weights, list(t.tokens), conventions)
    size = np.abs(importance.effect)
    rho = {k: spearman(size.ravel(), v.ravel()) for k, v in stats.items()}
    return BesideStats(size, stats, rho, conventions)
