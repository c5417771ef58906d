"""Tiny part-of-speech taggers, trained live on the CPU: the lecture's argument, measured.

The lecture ("I saw a saw", Hung-yi Lee's self-attention lecture): a fully connected layer
sees each word alone, so both "saw"s get the same tag; a window of neighbours helps, but to
consider the whole sentence the window must grow huge, with many parameters that overfit;
self-attention sees the whole sentence with a parameter count that does not grow with its
length; and without positions the two "saw"s are still the same.

Each tagger maps word ids x_1..x_n to one tag distribution per word, p_i = softmax(W h_i):

(a) "mlp":           h_i = MLP(e(x_i))                        one word alone
(b) "window<w>":     h_i = ReLU(sum_{|o|<=r} C_o e(x_{i+o}))   1-D convolution, width w = 2r+1,
                     then an MLP; w = 3, 5, 9 and FULL_WIDTH = 2 L - 1, which lets every word
                     of the longest sentence (L words) see every other word
(c) "attention":     h = Transformer(e(x))                     self-attention, NO positions
(d) "attention_pos": h = Transformer(e(x) + p)                 self-attention + learned p_i
(e) "attention_rope": h = Transformer_RoPE(e(x))               self-attention, q and k turned
                     by their place (rotary positions, Su et al. 2021: engine.rope)

Parameters: (b) has V d + w d^2 + d (embedding, one d x d matrix C_o per offset, bias) plus
its MLP (d^2 + d + d T + T), so it grows with the width it needs; (c), (d) and (e) have the
same weights whatever the sentence length ((d) adds a table of MAX_WORDS position vectors; (e)
adds nothing: its angles are computed).

The attention taggers use the engine's `attention()`: scores = Q K^T, weights =
softmax(scores / sqrt(d_k)) with padded keys masked, outputs = weights V (Vaswani et al.
2017). Without positions the layer is permutation-equivariant, so two copies of one word in
one sentence get identical vectors, hence identical tags: (c) is right on at most half of
the words that play two roles. (a) gives one tag per word form, so on ambiguous words it
can do no better than each word's majority tag.

Training: Adam, cross-entropy over real (non-pad) words, fixed seed, CPU, one thread;
5% of training words are replaced by <unk> so unknown words get a learned id. A progress
callback reports (fraction done, message). `overfitting` retrains on smaller training sets
for the same number of optimizer steps and reports train and held-out accuracy.

The length test (`length_test`) trains self-attention with learned, sinusoidal (Vaswani et al.
2017, engine.positions.sinusoidal) and rotary positions on the corpus, whose sentences have at
most 20 words, and tags inputs of 21 to 40 words written by the same grammar (`long_inputs`:
its sentences one after another). A learned table has a row per place: the length test's has
LENGTH_PLACES rows, and the rows past the longest training sentence are never trained (they
keep their random starting values); sinusoids and rotations are computed for any place.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import cachetools
import numpy as np
import torch
from torch import nn

from attnviz.analysis.corpus import (
    Corpus,
    Sentence,
    deciding_distances,
    double_role_positions,
    generate,
    make_corpus,
    max_words,
    words,
)
from attnviz.analysis.seeding import seeded
from attnviz.engine.attention import attention
from attnviz.engine.positions import sinusoidal
from attnviz.engine.rope import rope

FULL_WIDTH = 2 * max_words() - 1  # a window this wide shows every word of the longest sentence
WIDTHS: tuple[int, ...] = (3, 5, 9, FULL_WIDTH)
NAMES: dict[str, str] = {
    "mlp": "(a) per-word MLP",
    **{f"window{w}": f"(b) window of {w}" + (" (whole sentence)" if w == FULL_WIDTH else "")
       for w in WIDTHS},
    "attention": "(c) self-attention, no positions",
    "attention_pos": "(d) self-attention + positions",
    "attention_rope": "(e) self-attention + rotary positions",
}
SHORT_NAMES: dict[str, str] = {  # for figures, where space is short
    "mlp": "(a) per word", **{f"window{w}": f"(b) window {w}" for w in WIDTHS},
    "attention": "(c) attention", "attention_pos": "(d) attention + positions",
    "attention_rope": "(e) attention + RoPE",
}
# How each self-attention tagger places its words (AttentionTagger's `positions`); the
# sinusoidal one is trained by the length test only.
POSITIONS: dict[str, str] = {"attention": "none", "attention_pos": "learned",
                             "attention_sin": "sinusoidal", "attention_rope": "rotary"}
LABELS: dict[str, str] = {**NAMES, "attention_sin": "self-attention + sinusoidal positions"}
MAX_WORDS = 32  # learned position table size; longer inputs are cut for tagging
NEAR = 1  # a deciding word at this distance or closer is "near" (inside a window of 3)

Progress = Callable[[float, str], None]


def window_name(width: int) -> str:
    """The tagger name of the window of `width` words ('window3')."""
    return f"window{width}"


@dataclass(frozen=True)
class Settings:
    """Everything that decides the trained taggers (the cache key of the lesson page)."""

    seed: int = 0
    n_sentences: int = 2000
    epochs: int = 6
    dim: int = 64  # embedding / model width
    layers: int = 2  # attention layers in (c) and (d)
    heads: int = 4
    batch_size: int = 64
    lr: float = 3e-3
    unk_rate: float = 0.05


class MLPTagger(nn.Module):
    """(a) p_i = softmax(W2 ReLU(W1 e(x_i))): each word alone."""

    def __init__(self, n_words: int, n_tags: int, dim: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(n_words, dim, padding_idx=0)
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, n_tags))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # [B, n] -> [B, n, tags]
        return self.mlp(self.embed(ids))


class WindowTagger(nn.Module):
    """(b) a 1-D convolution of width `width` (odd) over the word vectors, then a per-word MLP."""

    def __init__(self, n_words: int, n_tags: int, dim: int, width: int) -> None:
        super().__init__()
        if width < 1 or width % 2 == 0:
            raise ValueError("width must be a positive odd number")
        self.width = width
        self.embed = nn.Embedding(n_words, dim, padding_idx=0)  # <pad> = zero vector
        self.conv = nn.Conv1d(dim, dim, kernel_size=width, padding=width // 2)
        self.out = nn.Sequential(nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, n_tags))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids).transpose(1, 2)  # [B, dim, n]
        return self.out(self.conv(x).transpose(1, 2))  # [B, n, tags]


class AttentionLayer(nn.Module):
    """Pre-LayerNorm Transformer block: x + MHA(LN x), then + FFN(LN x). With `rotary`, each
    head's q and k are turned by their place before the scores (engine.rope.rope, base
    10000): q·k then depends on the two places' distance only."""

    def __init__(self, dim: int, heads: int, rotary: bool = False) -> None:
        super().__init__()
        self.heads, self.head_dim, self.rotary = heads, dim // heads, rotary
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [B, heads, n, head_dim]
        if self.rotary:  # words sit at places 0..n-1 (padding comes after them)
            places = torch.arange(n, device=x.device)
            q, k = rope(q, places), rope(k, places)
        out, weights, _ = attention(q, k, v, mask=mask)  # mask [B, 1, 1, n]: real keys
        x = x + self.proj(out.transpose(1, 2).reshape(b, n, d))
        return x + self.ffn(self.ln2(x)), weights  # weights [B, heads, n, n]


class AttentionTagger(nn.Module):
    """(c)/(d)/(e) word vectors, placed by `positions`, then blocks:

    "none"        nothing: order is invisible
    "learned"     + a learned vector p_i per place: a table of `max_words` rows, so the
                  longest input it reads is `max_words` words (a longer one: IndexError)
    "sinusoidal"  + the sinusoid PE_i of Vaswani et al. (engine.positions.sinusoidal)
    "rotary"      q and k of every head turned by their place (engine.rope)
    """

    def __init__(self, n_words: int, n_tags: int, dim: int, layers: int, heads: int,
                 positions: str = "none", max_words: int = MAX_WORDS) -> None:
        super().__init__()
        if positions not in ("none", "learned", "sinusoidal", "rotary"):
            raise ValueError(f"unknown positions {positions!r}")
        self.positions = positions
        self.embed = nn.Embedding(n_words, dim, padding_idx=0)
        self.position_embeddings = (nn.Embedding(max_words, dim) if positions == "learned"
                                    else None)
        self.blocks = nn.ModuleList(AttentionLayer(dim, heads, rotary=positions == "rotary")
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, n_tags)

    def forward(self, ids: torch.Tensor, return_weights: bool = False):
        x = self.embed(ids)  # [B, n, dim]
        if self.position_embeddings is not None:
            x = x + self.position_embeddings(torch.arange(ids.shape[1], device=ids.device))
        elif self.positions == "sinusoidal":
            x = x + sinusoidal(ids.shape[1], x.shape[-1]).to(x.device)
        mask = (ids != 0)[:, None, None, :]  # [B, 1, 1, n] True = a real word (may attend)
        all_weights = []
        for block in self.blocks:
            x, w = block(x, mask)
            all_weights.append(w)
        logits = self.out(self.ln(x))  # [B, n, tags]
        if return_weights:
            return logits, torch.stack(all_weights, 1)  # [B, layers, heads, n, n]
        return logits


def build(name: str, corpus: Corpus, settings: Settings, places: int = MAX_WORDS) -> nn.Module:
    """An untrained tagger by name (one of LABELS); `places`: the rows of a learned table."""
    v, t, d = len(corpus.vocab), len(corpus.tags), settings.dim
    if name == "mlp":
        return MLPTagger(v, t, d)
    if name.startswith("window") and name[6:].isdigit():
        return WindowTagger(v, t, d, int(name[6:]))
    if name in POSITIONS:
        return AttentionTagger(v, t, d, settings.layers, settings.heads,
                               positions=POSITIONS[name], max_words=places)
    raise ValueError(f"unknown tagger {name!r}; choose from {tuple(LABELS)}")


def parameters(model: nn.Module) -> int:
    """Number of trained numbers in a tagger: sum of p.numel() over its parameters."""
    return sum(p.numel() for p in model.parameters())


def window_parameters(width: int, n_words: int, n_tags: int, dim: int) -> int:
    """(b)'s parameter count by formula: V d (embedding) + w d^2 + d (convolution) + d^2 + d
    + d T + T (the MLP after it). A window that shows every word of an L-word sentence needs
    w = 2 L - 1, so this grows linearly with the sentence length."""
    return n_words * dim + width * dim * dim + dim + dim * dim + dim + dim * n_tags + n_tags


def batch(corpus: Corpus, sentences: list[Sentence]) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad to the longest sentence: ids [B, n] (0 = <pad>), tags [B, n] (-100 = ignore)."""
    n = max(len(s.words) for s in sentences)
    ids = torch.zeros(len(sentences), n, dtype=torch.long)
    tags = torch.full((len(sentences), n), -100, dtype=torch.long)
    for r, s in enumerate(sentences):
        ids[r, : len(s.words)] = torch.tensor(corpus.ids(s.words))
        tags[r, : len(s.words)] = torch.tensor(corpus.tag_ids(s.tags))
    return ids, tags


@contextmanager
def _one_thread():
    """Tiny matrices: one thread is 2-5x faster than two on a busy 2-core CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def steps_per_epoch(n_train: int, settings: Settings) -> int:
    """Optimizer steps in one pass over `n_train` training sentences."""
    return math.ceil(n_train / settings.batch_size)


def train_one(name: str, corpus: Corpus, settings: Settings,
              progress: Progress | None = None,
              steps: int | None = None, places: int = MAX_WORDS) -> tuple[nn.Module, list[float]]:
    """Train one tagger with a fixed seed; returns (model in eval mode, mean loss per epoch).

    By default `settings.epochs` passes over corpus.train; with `steps`, exactly that many
    optimizer steps (as many passes as it takes: a small training set is seen more often).
    `places`: the rows of a learned position table (build).
    """
    with seeded(settings.seed):  # the initial weights: atomic under concurrent sessions
        model = build(name, corpus, settings, places)
    with _one_thread():
        gen = torch.Generator().manual_seed(settings.seed)
        ids, tags = batch(corpus, corpus.train)
        opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
        losses: list[float] = []
        n_batches = steps_per_epoch(len(ids), settings)
        total_steps = settings.epochs * n_batches if steps is None else steps
        done = 0
        model.train()
        while done < total_steps:
            order = torch.randperm(len(ids), generator=gen)
            total, count = 0.0, 0
            for b in range(n_batches):
                if done == total_steps:
                    break
                rows = order[b * settings.batch_size: (b + 1) * settings.batch_size]
                x, y = ids[rows], tags[rows]
                drop = (torch.rand(x.shape, generator=gen) < settings.unk_rate) & (x > 1)
                x = x.masked_fill(drop, 1)  # some words become <unk>
                logits = model(x)
                loss = nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(),
                                                   ignore_index=-100)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total, count, done = total + float(loss.detach()), count + 1, done + 1
            losses.append(total / count)
            if progress is not None:
                progress(done / total_steps, f"{LABELS[name]}: epoch {len(losses)}")
    return model.eval(), losses


@dataclass
class Trained:
    """The trained taggers, the corpus they saw, and how long each took (seconds)."""

    corpus: Corpus
    settings: Settings
    models: dict[str, nn.Module]
    losses: dict[str, list[float]]
    seconds: dict[str, float] = field(default_factory=dict)
    kept: str | None = None  # where they were read from (kept_name; None: trained here)

    @property
    def total_seconds(self) -> float:
        return float(sum(self.seconds.values()))


def train_all(settings: Settings = Settings(), progress: Progress | None = None,
              names: tuple[str, ...] = tuple(NAMES)) -> Trained:
    """Generate the corpus and train every tagger in `names`; progress goes from 0 to 1."""
    corpus = make_corpus(settings.n_sentences, settings.seed)
    models, losses, seconds = {}, {}, {}
    for k, name in enumerate(names):
        def sub(frac: float, msg: str, k: int = k) -> None:
            if progress is not None:
                progress((k + frac) / len(names), msg)

        start = time.perf_counter()
        models[name], losses[name] = train_one(name, corpus, settings, sub)
        seconds[name] = time.perf_counter() - start
    return Trained(corpus, settings, models, losses, seconds)


@torch.no_grad()
def predict(model: nn.Module, corpus: Corpus, sentences: list[Sentence]) -> list[list[str]]:
    """The tag each model gives each word (argmax of its tag distribution)."""
    if not sentences:
        return []
    ids, _ = batch(corpus, sentences)
    best = model(ids).argmax(-1)  # [B, n]
    return [[corpus.tags[int(t)] for t in best[r, : len(s.words)]]
            for r, s in enumerate(sentences)]


@dataclass(frozen=True)
class Scores:
    """Held-out accuracy: all words, ambiguous words, double-role words, and the ambiguous
    words by the distance of their deciding word: near (1: a neighbour), far (2 or more), and
    each distance d as (d, correct, words). Counts beside each."""

    overall: float
    ambiguous: float
    double_role: float
    n_words: int
    n_ambiguous: int
    n_double_role: int
    near: float = float("nan")
    far: float = float("nan")
    n_near: int = 0
    n_far: int = 0
    by_distance: tuple[tuple[int, int, int], ...] = ()

    def at_distance(self) -> dict[int, float]:
        """{distance: accuracy} over the ambiguous words whose deciding word lies that far."""
        return {d: hits / n for d, hits, n in self.by_distance}


def _acc(hits: int, n: int) -> float:
    return hits / n if n else float("nan")


def score(corpus: Corpus, sentences: list[Sentence], predicted: list[list[str]]) -> Scores:
    """Accuracies of `predicted` tags against the gold tags of `sentences`.

    overall     = correct words / words
    ambiguous   = correct / words whose form is one of corpus.ambiguous
    double_role = correct / words at double_role_positions (a word with two roles in its
                  sentence, e.g. both saws of "i saw a saw")
    near, far   = correct / ambiguous words whose deciding word (corpus.deciding_distances)
                  lies at distance <= NEAR, > NEAR
    """
    amb = set(corpus.ambiguous)
    hit = n = hit_a = n_a = hit_d = n_d = 0
    dist: dict[int, list[int]] = {}
    for s, pred in zip(sentences, predicted, strict=True):
        dr = set(double_role_positions(s))
        far = deciding_distances(s, corpus.ambiguous)
        for i, (w, gold, p) in enumerate(zip(s.words, s.tags, pred, strict=True)):
            ok = int(gold == p)
            hit, n = hit + ok, n + 1
            if w in amb:
                hit_a, n_a = hit_a + ok, n_a + 1
                if far[i] is not None:
                    dist.setdefault(far[i], [0, 0])
                    dist[far[i]][0] += ok
                    dist[far[i]][1] += 1
            if i in dr:
                hit_d, n_d = hit_d + ok, n_d + 1
    near = [v for d, v in dist.items() if d <= NEAR]
    far_ = [v for d, v in dist.items() if d > NEAR]
    return Scores(
        _acc(hit, n), _acc(hit_a, n_a), _acc(hit_d, n_d), n, n_a, n_d,
        near=_acc(sum(h for h, _ in near), sum(c for _, c in near)),
        far=_acc(sum(h for h, _ in far_), sum(c for _, c in far_)),
        n_near=sum(c for _, c in near), n_far=sum(c for _, c in far_),
        by_distance=tuple((d, h, c) for d, (h, c) in sorted(dist.items())))


def evaluate(model: nn.Module, corpus: Corpus, sentences: list[Sentence] | None = None) -> Scores:
    """score() of the model's predictions on `sentences` (default: the held-out split)."""
    sentences = corpus.test if sentences is None else sentences
    return score(corpus, sentences, predict(model, corpus, sentences))


def majority_tags(corpus: Corpus) -> dict[str, str]:
    """Each ambiguous word's most frequent tag in the training split (ties: the tag first seen)."""
    amb = set(corpus.ambiguous)
    counts: dict[str, dict[str, int]] = {}
    for s in corpus.train:
        for w, t in zip(s.words, s.tags, strict=True):
            if w in amb:
                counts.setdefault(w, {}).setdefault(t, 0)
                counts[w][t] += 1
    return {w: max(c, key=c.get) for w, c in counts.items()}


def majority_baseline(corpus: Corpus, sentences: list[Sentence] | None = None) -> dict:
    """What one-tag-per-word-form can reach on the ambiguous words of `sentences`.

    train_majority: accuracy of always giving each word its most frequent training tag.
    best_possible:  the best any one-tag-per-form tagger can do on these very sentences,
                    sum_w max_t count(w, t) / sum_w count(w): an upper bound for (a).
    near, far, double_role: train_majority on the ambiguous words whose deciding word lies
                    at distance <= NEAR, > NEAR, and on double-role words (with n_<split> and
                    <split>_best_possible beside each); by_distance: {d: train_majority}.
    """
    sentences = corpus.test if sentences is None else sentences
    majority = majority_tags(corpus)
    seen = []  # (word, gold tag, distance of its deciding word, double-role?)
    for s in sentences:
        dist = deciding_distances(s, corpus.ambiguous)
        dr = set(double_role_positions(s))
        seen += [(w, t, d, i in dr) for i, (w, t, d) in enumerate(zip(s.words, s.tags, dist,
                                                                      strict=True))
                 if w in corpus.ambiguous]

    def rates(keep) -> tuple[float, float, int]:
        chosen = [(w, t) for w, t, d, dr in seen if keep(d, dr)]
        counts: dict[str, dict[str, int]] = {}
        for w, t in chosen:
            counts.setdefault(w, {}).setdefault(t, 0)
            counts[w][t] += 1
        hits = sum(int(majority.get(w) == t) for w, t in chosen)
        best = sum(max(c.values()) for c in counts.values())
        return _acc(hits, len(chosen)), _acc(best, len(chosen)), len(chosen)

    out: dict = {"majority": majority}
    out["train_majority"], out["best_possible"], out["n"] = rates(lambda d, dr: True)
    for split, keep in (("near", lambda d, dr: d is not None and d <= NEAR),
                        ("far", lambda d, dr: d is not None and d > NEAR),
                        ("double_role", lambda d, dr: dr)):
        out[split], out[f"{split}_best_possible"], out[f"n_{split}"] = rates(keep)
    out["by_distance"] = {d: rates(lambda x, dr, d=d: x == d)[0]
                          for d in sorted({d for _, _, d, _ in seen if d is not None})}
    return out


@torch.no_grad()
def tag_sentence(model: nn.Module, corpus: Corpus, text: str) -> tuple[list[str], list[str]]:
    """(words, tags) for any typed text; unknown words get the <unk> id; at most MAX_WORDS."""
    ws = words(text)[:MAX_WORDS]
    if not ws:
        return [], []
    ids = torch.tensor([corpus.ids(ws)])
    best = model(ids).argmax(-1)[0]
    return ws, [corpus.tags[int(t)] for t in best]


@torch.no_grad()
def tag_probabilities(model: nn.Module, corpus: Corpus, ws: list[str]) -> np.ndarray:
    """softmax over tags for each word: [n_words, n_tags] (float32)."""
    ids = torch.tensor([corpus.ids(ws[:MAX_WORDS])])
    return torch.softmax(model(ids), -1)[0].numpy()


@torch.no_grad()
def tagger_weights(model: AttentionTagger, corpus: Corpus, ws: list[str]) -> np.ndarray:
    """An attention tagger's softmax weights for one sentence: [layers, heads, n, n]."""
    ids = torch.tensor([corpus.ids(ws[:MAX_WORDS])])
    _, w = model(ids, return_weights=True)
    return w[0].numpy()


# ---------------------------------------------------------------- cost and reach
def cost_by_length(corpus: Corpus, settings: Settings, lengths: tuple[int, ...]) -> dict:
    """What it takes to see every word of a sentence of L words, for each L in `lengths`:
    {"window": [parameters of a window tagger of width 2 L - 1], "attention_pos": [parameters
    of tagger (d) with a table of L position vectors]}, counted on the built (untrained)
    modules of this corpus' vocabulary and the settings' sizes."""
    out: dict[str, list[int]] = {"window": [], "attention_pos": []}
    v, t, d = len(corpus.vocab), len(corpus.tags), settings.dim
    with seeded(settings.seed):
        for n in lengths:
            out["window"].append(parameters(WindowTagger(v, t, d, 2 * n - 1)))
            out["attention_pos"].append(parameters(AttentionTagger(
                v, t, d, settings.layers, settings.heads, "learned", max_words=n)))
    return out


def untrained_positions(model: AttentionTagger, corpus: Corpus,
                        settings: Settings) -> tuple[int, int, float]:
    """(places the position table has, the longest training sentence in words, the largest
    change training made to any row past it). A row past the longest training sentence is
    never added to a word, gets no gradient, and Adam leaves it where it started: the change
    is 0.0, so those places are untested."""
    table = model.position_embeddings.weight.detach()
    with seeded(settings.seed):  # the weights as train_one built them, before any step
        start = build("attention_pos", corpus, settings).position_embeddings.weight.detach()
    longest = max(len(s.words) for s in corpus.train)
    change = float((table[longest:] - start[longest:]).abs().max()) if longest < len(table) \
        else 0.0
    return len(table), longest, change


# ---------------------------------------------------------------- overfitting
SWEEP_NAMES: tuple[str, ...] = ("window3", "window9", window_name(FULL_WIDTH), "attention_pos")
SWEEP_SIZES: tuple[int, ...] = (50, 200, 1600)  # training sentences (the full split: 1600)
SWEEP_SEEDS: tuple[int, ...] = (0, 1, 2)


@dataclass(frozen=True)
class Sweep:
    """Train and held-out accuracy on ambiguous words as the training set shrinks.

    train[name][k], held_out[name][k]: for sizes[k] training sentences (the first sizes[k]
    of the training split), each run `steps` optimizer steps. gap = train - held_out.
    """

    sizes: tuple[int, ...]
    steps: int
    train: dict[str, tuple[float, ...]]
    held_out: dict[str, tuple[float, ...]]
    seconds: float

    def gap(self, name: str) -> tuple[float, ...]:
        return tuple(a - b for a, b in zip(self.train[name], self.held_out[name], strict=True))


def subset(corpus: Corpus, n_train: int) -> Corpus:
    """The first n_train training sentences with the same held-out split; the vocabulary is
    rebuilt from them (a word they never show is <unk>)."""
    from attnviz.analysis.corpus import PAD, UNK

    train = corpus.train[:n_train]
    vocab = [PAD, UNK] + sorted({w for s in train for w in s.words})
    return Corpus(train=train, test=corpus.test, vocab=vocab, tags=corpus.tags,
                  ambiguous=corpus.ambiguous, seed=corpus.seed)


def overfitting(settings: Settings = Settings(), sizes: tuple[int, ...] = SWEEP_SIZES,
                names: tuple[str, ...] = SWEEP_NAMES, progress: Progress | None = None,
                trained: Trained | None = None) -> Sweep:
    """Retrain each tagger in `names` on the first `size` training sentences for each size,
    every run the same number of optimizer steps as `settings.epochs` passes over the whole
    training split; report ambiguous-word accuracy on that training subset and held out.

    With `trained` (train_all of the same settings), its corpus is used and, for the size that
    is the whole training split, its models: that run is the same one (same seed, same steps).
    """
    corpus = trained.corpus if trained else make_corpus(settings.n_sentences, settings.seed)
    sizes = tuple(min(n, len(corpus.train)) for n in sizes)
    steps = settings.epochs * steps_per_epoch(len(corpus.train), settings)
    train: dict[str, list[float]] = {n: [] for n in names}
    held: dict[str, list[float]] = {n: [] for n in names}
    start, runs = time.perf_counter(), len(names) * len(sizes)
    for k, (size, name) in enumerate((s, n) for s in sizes for n in names):
        sub = subset(corpus, size)

        def report(frac: float, msg: str, k: int = k, size: int = size) -> None:
            if progress is not None:
                progress((k + frac) / runs, f"{msg} ({size} sentences)")

        if trained is not None and size == len(corpus.train) and name in trained.models:
            model, sub = trained.models[name], corpus
        else:
            model, _ = train_one(name, sub, settings, report, steps=steps)
        train[name].append(evaluate(model, sub, sub.train).ambiguous)
        held[name].append(evaluate(model, sub).ambiguous)
    return Sweep(sizes, steps, {k: tuple(v) for k, v in train.items()},
                 {k: tuple(v) for k, v in held.items()}, time.perf_counter() - start)


# ---------------------------------------------------------------- the length test
LENGTH_NAMES: tuple[str, ...] = ("attention_pos", "attention_sin", "attention_rope")
LONG_WORDS: tuple[int, int] = (21, 40)  # the long inputs' lengths in words, both included
LENGTH_PLACES = LONG_WORDS[1]  # the length test's learned table: a row for each place to 40
LONG_INPUTS = 200  # long inputs per seed


def long_inputs(corpus: Corpus, seed: int, count: int = LONG_INPUTS,
                span: tuple[int, int] = LONG_WORDS) -> list[Sentence]:
    """`count` inputs of span[0]..span[1] words, written by the corpus' grammar: its
    sentences (analysis.corpus.generate with seed 1000 + seed; none is a training sentence of
    `corpus`, with or without its ".") one after another, each ending with "." (added, tagged
    PUNCT, where it has none), until a length drawn evenly from the span is reached; a
    sentence that would pass the span's end starts the input again. A deciding word always
    lies in its own sentence (no sentence starts with a list), so the tags follow the
    corpus' rules unchanged."""
    import random

    lo, hi = span
    rng = random.Random(seed)

    def bare(x: Sentence) -> tuple[str, ...]:  # a sentence without its final "."
        return x.words[:-1] if x.words[-1] == "." else x.words

    trained = {bare(s) for s in corpus.train}
    out: list[Sentence] = []
    ws: list[str] = []
    ts: list[str] = []
    target = rng.randint(lo, hi)
    for s in generate(20 * count, 1000 + seed):  # ~5 sentences an input, with restarts
        if bare(s) in trained:  # with or without its ".", never a training sentence
            continue
        w, t = list(s.words), list(s.tags)
        if w[-1] != ".":
            w, t = w + ["."], t + ["PUNCT"]
        if len(ws) + len(w) > hi:
            ws, ts = [], []
        ws, ts = ws + w, ts + t
        if len(ws) >= target:
            out.append(Sentence(tuple(ws), tuple(ts)))
            ws, ts, target = [], [], rng.randint(lo, hi)
            if len(out) == count:
                return out
    raise ValueError(f"the grammar wrote fewer than {count} inputs of {lo}-{hi} words")


def place_accuracy(corpus: Corpus, sentences: list[Sentence], predicted: list[list[str]],
                   split: int) -> tuple[float, float, int, int]:
    """Accuracy on the ambiguous words at places 1..split and at places split+1.. (1-based):
    (inside, beyond, words inside, words beyond)."""
    amb = set(corpus.ambiguous)
    hits, counts = [0, 0], [0, 0]
    for s, pred in zip(sentences, predicted, strict=True):
        for i, (w, gold, p) in enumerate(zip(s.words, s.tags, pred, strict=True)):
            if w in amb:
                k = int(i >= split)
                hits[k] += int(gold == p)
                counts[k] += 1
    return _acc(hits[0], counts[0]), _acc(hits[1], counts[1]), counts[0], counts[1]


@dataclass(frozen=True)
class LengthTest:
    """Taggers trained on sentences of at most `longest` words (the grammar's longest),
    tested on longer inputs.

    For each name and seed (`seeds[k]`): held_out[name][k], the held-out sentences' ambiguous
    words; inside[name][k] and beyond[name][k], the long inputs' ambiguous words at places
    1..longest and longest+1..; words[k] = (held-out, inside, beyond) ambiguous words counted.
    """

    seeds: tuple[int, ...]
    longest: int
    lengths: tuple[int, int]  # the long inputs' shortest and longest, in words
    inputs: int  # long inputs per seed
    held_out: dict[str, tuple[float, ...]]
    inside: dict[str, tuple[float, ...]]
    beyond: dict[str, tuple[float, ...]]
    words: tuple[tuple[int, int, int], ...]
    seconds: float

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.held_out)


def length_test(settings: Settings = Settings(), seeds: tuple[int, ...] = SWEEP_SEEDS,
                names: tuple[str, ...] = LENGTH_NAMES, progress: Progress | None = None,
                trained: Trained | None = None, count: int = LONG_INPUTS) -> LengthTest:
    """Train each of `names` (learned tables of LENGTH_PLACES rows) for each seed as train_one
    does, and score it on the held-out sentences and on `count` long_inputs. `trained`
    (train_all of one of these settings) lends its rotary tagger (the same training) to its
    own seed."""
    start, runs = time.perf_counter(), len(seeds) * len(names)
    held: dict[str, list[float]] = {n: [] for n in names}
    inside: dict[str, list[float]] = {n: [] for n in names}
    beyond: dict[str, list[float]] = {n: [] for n in names}
    counts, longest, lengths = [], max_words(), (0, 0)
    for k, seed in enumerate(seeds):
        s = dataclasses.replace(settings, seed=seed)
        mine = trained is not None and trained.settings == s
        corpus = trained.corpus if mine else make_corpus(s.n_sentences, seed)
        longest = max_words()  # the grammar's longest sentence: no training sentence is longer
        long = long_inputs(corpus, seed, count)
        lengths = (min(len(x.words) for x in long), max(len(x.words) for x in long))
        for j, name in enumerate(names):
            def report(frac: float, msg: str, step: int = k * len(names) + j,
                       seed: int = seed) -> None:
                if progress is not None:
                    progress((step + frac) / runs, f"seed {seed}: {msg}")

            if mine and name == "attention_rope" and name in trained.models:
                model = trained.models[name]  # build ignores places without a table
            else:
                model, _ = train_one(name, corpus, s, report, places=LENGTH_PLACES)
            sc = evaluate(model, corpus)
            held[name].append(sc.ambiguous)
            a, b, n_a, n_b = place_accuracy(corpus, long, predict(model, corpus, long), longest)
            inside[name].append(a)
            beyond[name].append(b)
        counts.append((sc.n_ambiguous, n_a, n_b))
    return LengthTest(tuple(seeds), longest, lengths, count,
                      {n: tuple(v) for n, v in held.items()},
                      {n: tuple(v) for n, v in inside.items()},
                      {n: tuple(v) for n, v in beyond.items()}, tuple(counts),
                      time.perf_counter() - start)


def length_to_json(lt: LengthTest) -> dict:
    return {"seeds": list(lt.seeds), "longest": lt.longest, "lengths": list(lt.lengths),
            "inputs": lt.inputs, "seconds": lt.seconds,
            "words": [list(w) for w in lt.words],
            **{part: {k: list(v) for k, v in getattr(lt, part).items()}
               for part in ("held_out", "inside", "beyond")}}


def length_from_json(data: dict) -> LengthTest:
    return LengthTest(
        tuple(int(s) for s in data["seeds"]), int(data["longest"]),
        (int(data["lengths"][0]), int(data["lengths"][1])), int(data["inputs"]),
        *({k: tuple(v) for k, v in data[part].items()}
          for part in ("held_out", "inside", "beyond")),
        tuple(tuple(int(x) for x in w) for w in data["words"]), float(data["seconds"]))


@dataclass(frozen=True)
class Sweeps:
    """The overfitting sweep once per seed (`runs[k]` for `seeds[k]`): each seed draws its own
    corpus, initial weights and batches, so the spread shows how much of a gap is chance.
    `lengths`: the length test over the same seeds, where it was run (kept_or_swept)."""

    seeds: tuple[int, ...]
    runs: tuple[Sweep, ...]
    lengths: LengthTest | None = None

    @property
    def sizes(self) -> tuple[int, ...]:
        return self.runs[0].sizes

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.runs[0].train)

    @property
    def seconds(self) -> float:
        return float(sum(r.seconds for r in self.runs))

    def gaps(self, name: str) -> np.ndarray:
        """[seeds, sizes] train minus held-out accuracy on ambiguous words."""
        return np.array([r.gap(name) for r in self.runs], dtype=np.float64)

    def mean_gap(self, name: str) -> tuple[float, ...]:
        return tuple(float(x) for x in self.gaps(name).mean(0))


def overfitting_seeds(settings: Settings = Settings(), seeds: tuple[int, ...] = SWEEP_SEEDS,
                      progress: Progress | None = None, trained: Trained | None = None,
                      sizes: tuple[int, ...] = SWEEP_SIZES,
                      names: tuple[str, ...] = SWEEP_NAMES) -> Sweeps:
    """`overfitting` for `settings` with each seed in `seeds` (the other settings kept);
    `trained` (train_all of one of these settings) is reused for its own seed."""
    runs = []
    for k, seed in enumerate(seeds):
        s = dataclasses.replace(settings, seed=seed)

        def report(frac: float, msg: str, k: int = k, seed: int = seed) -> None:
            if progress is not None:
                progress((k + frac) / len(seeds), f"seed {seed}: {msg}")

        runs.append(overfitting(s, sizes, names, report,
                                trained if trained is not None and trained.settings == s
                                else None))
    return Sweeps(tuple(seeds), tuple(runs))


def sweeps_to_json(sw: Sweeps) -> dict:
    """Plain JSON values (floats written exactly: json writes each float's repr)."""
    return {"seeds": list(sw.seeds), "runs": [
        {"sizes": list(r.sizes), "steps": r.steps, "seconds": r.seconds,
         "train": {k: list(v) for k, v in r.train.items()},
         "held_out": {k: list(v) for k, v in r.held_out.items()}} for r in sw.runs],
        "lengths": None if sw.lengths is None else length_to_json(sw.lengths)}


def sweeps_from_json(data: dict) -> Sweeps:
    lengths = data.get("lengths")
    return Sweeps(tuple(int(s) for s in data["seeds"]), tuple(
        Sweep(tuple(r["sizes"]), int(r["steps"]), {k: tuple(v) for k, v in r["train"].items()},
              {k: tuple(v) for k, v in r["held_out"].items()}, float(r["seconds"]))
        for r in data["runs"]), None if lengths is None else length_from_json(lengths))


# ---------------------------------------------------------------- kept on disk
# Trained taggers and sweeps are kept in a diskcache.Cache in the folder given (its "kept"
# folder): SQLite, safe for several processes at once (a server's workers, its training child,
# test workers), bounded to KEPT_BYTES with the least recently used dropped first, so a class
# trying many seeds and epochs never fills the disk. Whoever trains first keeps them; the
# others read them. Training itself is taken in turns by a file lock in the folder
# (ui.preload.CHILD, tests/lesson_trained.py): the kernel releases it when its holder ends,
# however it ends, where diskcache's Lock stays taken until it expires.
KEPT_FORMAT = 1  # what save_trained writes; a change makes every kept entry stale
KEPT_SOURCES = ("analysis/corpus.py", "analysis/taggers.py", "analysis/seeding.py",
                "engine/attention.py")  # the code a trained tagger's weights depend on
KEPT_BYTES = 256 * 2**20  # the most a folder's kept taggers and sweeps take on disk
_STORES: cachetools.LRUCache = cachetools.LRUCache(8)  # folder -> its open diskcache.Cache
_STORES_LOCK = threading.Lock()


def code_key() -> str:
    """A digest of the code and versions trained weights depend on: the file format, the code
    that builds, trains and feeds the taggers (KEPT_SOURCES), torch's and NumPy's versions."""
    import hashlib
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(json.dumps([KEPT_FORMAT, torch.__version__, np.__version__]).encode())
    for name in KEPT_SOURCES:
        h.update(name.encode() + b"\0" + (root / name).read_bytes())
    return h.hexdigest()[:12]


def kept_key(settings: Settings, what: str = "taggers") -> str:
    """The key `what` ("taggers" or "sweeps") for `settings` is kept under: what is kept, a
    digest of the settings, then code_key(). The same key means the same training, so the
    same weights bit for bit."""
    import hashlib
    import json

    mine = hashlib.sha256(json.dumps([what, dataclasses.asdict(settings)]).encode())
    return f"{what}-{mine.hexdigest()[:12]}-{code_key()}"


def kept_store(folder):
    """The diskcache.Cache in `folder`/kept holding the kept taggers and sweeps (opened once
    per folder). OSError when it cannot be opened (a folder that cannot be written)."""
    from pathlib import Path

    import diskcache

    path = str(Path(folder).resolve() / "kept")
    with _STORES_LOCK:
        store = _STORES.get(path)
        if store is None:
            try:
                store = diskcache.Cache(path, size_limit=KEPT_BYTES,
                                        eviction_policy="least-recently-used")
            except Exception as e:  # noqa: BLE001 - sqlite3's errors are not OSErrors
                raise OSError(f"cannot keep the lesson's taggers in {path}: {e}") from e
            _STORES[path] = store
    return store


def kept_name(folder, settings: Settings, what: str = "taggers") -> str:
    """Where `what` for `settings` is kept, in words: the store's folder and the key."""
    return f"{kept_store(folder).directory}#{kept_key(settings, what)}"


def is_kept(folder, settings: Settings, what: str = "taggers") -> bool:
    """Whether `folder` keeps `what` ("taggers" or "sweeps") for `settings` now."""
    try:
        return kept_key(settings, what) in kept_store(folder)
    except Exception:  # noqa: BLE001 - a folder that cannot be read keeps nothing
        return False


def _keep(folder, key: str, value) -> None:
    """Keep one value (bytes or text) under key; OSError when the store cannot be written."""
    try:
        kept_store(folder).set(key, value)
    except OSError:
        raise
    except Exception as e:  # noqa: BLE001 - sqlite3's errors are not OSErrors
        raise OSError(f"cannot keep {key} in {folder}: {e}") from e


def _kept(folder, key: str):
    """The value kept under key, or None (none kept, or a store that cannot be read)."""
    try:
        return kept_store(folder).get(key)
    except Exception:  # noqa: BLE001 - unreadable: train again
        return None


def forget_stale(folder) -> list[str]:
    """Remove the entries in `folder`'s store that older code kept (their key ends in another
    code_key()): no run can read them again. The keys removed."""
    gone, code = [], code_key()
    store = kept_store(folder)
    for key in list(store.iterkeys()):
        if isinstance(key, str) and not key.endswith("-" + code) and store.delete(key):
            gone.append(key)
    return gone


def save_trained(tr: Trained, folder) -> None:
    """Keep trained taggers in `folder` (kept_store): their weights, losses and times."""
    import io

    data = {"format": KEPT_FORMAT, "key": kept_key(tr.settings),
            "models": {k: m.state_dict() for k, m in tr.models.items()},
            "losses": {k: list(map(float, v)) for k, v in tr.losses.items()},
            "seconds": {k: float(v) for k, v in tr.seconds.items()}}
    buffer = io.BytesIO()
    torch.save(data, buffer)
    _keep(folder, kept_key(tr.settings), buffer.getvalue())


def load_trained(folder, settings: Settings) -> Trained | None:
    """The taggers save_trained kept for `settings` (read without pickle's code:
    weights_only), or None when there are none or what is kept does not fit them."""
    import io

    raw = _kept(folder, kept_key(settings))
    if not isinstance(raw, bytes):
        return None
    try:
        data = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
        if data.get("format") != KEPT_FORMAT or data.get("key") != kept_key(settings):
            return None
        corpus = make_corpus(settings.n_sentences, settings.seed)
        models = {}
        for name, state in data["models"].items():
            with seeded(settings.seed):
                models[name] = build(name, corpus, settings)
            models[name].load_state_dict(state, strict=True)
            models[name].eval()
        return Trained(corpus, settings, models, {k: list(v) for k, v in data["losses"].items()},
                       dict(data["seconds"]), kept=kept_name(folder, settings))
    except Exception:  # noqa: BLE001 - an unreadable or foreign entry: train again
        return None


def kept_or_trained(settings: Settings, folder=None, progress: Progress | None = None,
                    names: tuple[str, ...] = tuple(NAMES)) -> Trained:
    """The taggers kept in `folder` for `settings`, else train_all (then kept there). A
    folder that cannot be written only means training next time too."""
    if folder is not None:
        tr = load_trained(folder, settings)
        if tr is not None and tuple(tr.models) == tuple(names):
            return tr
    tr = train_all(settings, progress, names)
    if folder is not None:
        try:
            save_trained(tr, folder)
            forget_stale(folder)
        except OSError:
            pass
    return tr


def kept_or_swept(settings: Settings, folder=None, progress: Progress | None = None,
                  trained: Trained | None = None) -> Sweeps:
    """overfitting_seeds for `settings` (SWEEP_SEEDS) and the length test over the same
    seeds (Sweeps.lengths), kept in `folder` as JSON."""
    import json

    raw = _kept(folder, kept_key(settings, "sweeps")) if folder is not None else None
    if isinstance(raw, str):
        try:
            data = json.loads(raw)
            if data.get("key") == kept_key(settings, "sweeps"):
                return sweeps_from_json(data)
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
    runs = len(SWEEP_SEEDS) * len(SWEEP_SIZES) * len(SWEEP_NAMES)
    share = runs / (runs + len(SWEEP_SEEDS) * len(LENGTH_NAMES))  # of the progress bar

    def part(start: float, size: float) -> Progress | None:
        if progress is None:
            return None
        return lambda frac, msg: progress(start + size * frac, msg)

    sw = overfitting_seeds(settings, progress=part(0.0, share), trained=trained)
    sw = dataclasses.replace(sw, lengths=length_test(settings, progress=part(share, 1 - share),
                                                     trained=trained))
    if folder is not None:
        try:
            save_sweeps(sw, folder, settings)
            forget_stale(folder)
        except OSError:
            pass
    return sw


def save_sweeps(sw: Sweeps, folder, settings: Settings) -> None:
    """Keep the sweeps for `settings` in `folder` (kept_store) as JSON."""
    import json

    data = {**sweeps_to_json(sw), "key": kept_key(settings, "sweeps")}
    _keep(folder, kept_key(settings, "sweeps"), json.dumps(data))


def _scores_json(sc: Scores) -> dict:
    return {"all": sc.overall, "ambiguous": sc.ambiguous, "double_role": sc.double_role,
            "near": sc.near, "far": sc.far,
            "by_distance": {str(d): h / n for d, h, n in sc.by_distance},
            "words": {"all": sc.n_words, "ambiguous": sc.n_ambiguous,
                      "double_role": sc.n_double_role, "near": sc.n_near, "far": sc.n_far,
                      "by_distance": {str(d): n for d, _, n in sc.by_distance}}}


def report(tr: Trained) -> dict:
    """The lesson's numbers as plain JSON-ready values: per tagger its label, parameters and
    held-out accuracy (all words, ambiguous, double-role, near and far deciding word, and by
    each distance), the majority-tag baseline on the same groups, and the training times."""
    base = majority_baseline(tr.corpus)
    return {
        "settings": {f: getattr(tr.settings, f) for f in tr.settings.__dataclass_fields__},
        "sentences": {"train": len(tr.corpus.train), "held_out": len(tr.corpus.test)},
        "near_means_distance_at_most": NEAR,
        "majority_tag": {"ambiguous": base["train_majority"], "near": base["near"],
                         "far": base["far"], "double_role": base["double_role"],
                         "by_distance": {str(d): a for d, a in base["by_distance"].items()}},
        "taggers": {name: {"label": NAMES[name], "parameters": parameters(m),
                           "held_out": _scores_json(evaluate(m, tr.corpus))}
                    for name, m in tr.models.items()},
        "training_seconds": dict(tr.seconds),
    }


def measure(settings: Settings = Settings()) -> dict:
    """Train everything and return the numbers the lesson quotes (used by the benchmark and
    the command line): per tagger its parameters and held-out Scores."""
    tr = train_all(settings)
    out = {"seconds": dict(tr.seconds), "total_seconds": tr.total_seconds,
           "baseline": majority_baseline(tr.corpus)}
    for name, m in tr.models.items():
        out[name] = {"parameters": parameters(m), "held_out": evaluate(m, tr.corpus),
                     "double_role": evaluate(m, tr.corpus, tr.corpus.test_double_role),
                     "i saw a saw": tag_sentence(m, tr.corpus, "I saw a saw")[1]}
    return out
