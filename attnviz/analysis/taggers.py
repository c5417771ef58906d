"""Four tiny part-of-speech taggers, trained live on the CPU: the lecture's argument, measured.

The lecture ("I saw a saw", Hung-yi Lee's self-attention lecture): a fully connected layer
sees each word alone, so both "saw"s get the same tag; a window of neighbours helps but does
not see the whole sentence; self-attention sees it all; and without positions the two "saw"s
are still the same.

Each tagger maps word ids x_1..x_n to one tag distribution per word, p_i = softmax(W h_i):

(a) "mlp":           h_i = MLP(e(x_i))                        one word alone
(b) "window":        h_i = ReLU(sum_{|o|<=r} C_o e(x_{i+o}))   1-D convolution, width 2r+1
(c) "attention":     h = Transformer(e(x))                     self-attention, NO positions
(d) "attention_pos": h = Transformer(e(x) + p)                 self-attention + learned p_i

The attention taggers use the engine's `attention()`: scores = Q K^T, weights =
softmax(scores / sqrt(d_k)) with padded keys masked, outputs = weights V (Vaswani et al.
2017). Without positions the layer is permutation-equivariant, so two copies of one word in
one sentence get identical vectors, hence identical tags: (c) is right on at most half of
the words that play two roles. (a) gives one tag per word form, so on ambiguous words it
can do no better than each word's majority tag.

Training: Adam, cross-entropy over real (non-pad) words, fixed seed, CPU, a few seconds;
5% of training words are replaced by <unk> so unknown words get a learned id. A progress
callback reports (fraction done, message).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from attnviz.analysis.corpus import Corpus, Sentence, double_role_positions, make_corpus, words
from attnviz.analysis.seeding import seeded
from attnviz.engine.attention import attention

NAMES: dict[str, str] = {
    "mlp": "(a) per-word MLP",
    "window": "(b) window (1-D CNN)",
    "attention": "(c) self-attention, no positions",
    "attention_pos": "(d) self-attention + positions",
}
MAX_WORDS = 32  # learned position table size; longer inputs are cut for tagging

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Settings:
    """Everything that decides the trained taggers (the cache key of the lesson page)."""

    seed: int = 0
    n_sentences: int = 2000
    epochs: int = 6
    dim: int = 64  # embedding / model width
    width: int = 3  # (b)'s convolution width (odd): each word sees (width - 1) / 2 each side
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
        self.embed = nn.Embedding(n_words, dim, padding_idx=0)  # <pad> = zero vector
        self.conv = nn.Conv1d(dim, dim, kernel_size=width, padding=width // 2)
        self.out = nn.Sequential(nn.ReLU(), nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, n_tags))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids).transpose(1, 2)  # [B, dim, n]
        return self.out(self.conv(x).transpose(1, 2))  # [B, n, tags]


class AttentionLayer(nn.Module):
    """Pre-LayerNorm Transformer block: x + MHA(LN x), then + FFN(LN x)."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ffn = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, self.head_dim)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [B, heads, n, head_dim]
        out, weights, _ = attention(q, k, v, mask=mask)  # mask [B, 1, 1, n]: real keys
        x = x + self.proj(out.transpose(1, 2).reshape(b, n, d))
        return x + self.ffn(self.ln2(x)), weights  # weights [B, heads, n, n]


class AttentionTagger(nn.Module):
    """(c)/(d) word vectors (+ learned position vectors p_i when `with_positions`), then
    blocks."""

    def __init__(self, n_words: int, n_tags: int, dim: int, layers: int, heads: int,
                 with_positions: bool) -> None:
        super().__init__()
        self.embed = nn.Embedding(n_words, dim, padding_idx=0)
        self.position_embeddings = nn.Embedding(MAX_WORDS, dim) if with_positions else None
        self.blocks = nn.ModuleList(AttentionLayer(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.out = nn.Linear(dim, n_tags)

    def forward(self, ids: torch.Tensor, return_weights: bool = False):
        x = self.embed(ids)  # [B, n, dim]
        if self.position_embeddings is not None:
            x = x + self.position_embeddings(torch.arange(ids.shape[1], device=ids.device))
        mask = (ids != 0)[:, None, None, :]  # [B, 1, 1, n] True = a real word (may attend)
        all_weights = []
        for block in self.blocks:
            x, w = block(x, mask)
            all_weights.append(w)
        logits = self.out(self.ln(x))  # [B, n, tags]
        if return_weights:
            return logits, torch.stack(all_weights, 1)  # [B, layers, heads, n, n]
        return logits


def build(name: str, corpus: Corpus, settings: Settings) -> nn.Module:
    """An untrained tagger by name (one of NAMES)."""
    v, t, d = len(corpus.vocab), len(corpus.tags), settings.dim
    if name == "mlp":
        return MLPTagger(v, t, d)
    if name == "window":
        return WindowTagger(v, t, d, settings.width)
    if name in ("attention", "attention_pos"):
        return AttentionTagger(v, t, d, settings.layers, settings.heads,
                               with_positions=(name == "attention_pos"))
    raise ValueError(f"unknown tagger {name!r}; choose from {tuple(NAMES)}")


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


def train_one(name: str, corpus: Corpus, settings: Settings,
              progress: Progress | None = None) -> tuple[nn.Module, list[float]]:
    """Train one tagger with a fixed seed; returns (model in eval mode, mean loss per epoch)."""
    with seeded(settings.seed):  # the initial weights: atomic under concurrent sessions
        model = build(name, corpus, settings)
    with _one_thread():
        gen = torch.Generator().manual_seed(settings.seed)
        ids, tags = batch(corpus, corpus.train)
        opt = torch.optim.Adam(model.parameters(), lr=settings.lr)
        losses: list[float] = []
        n_batches = math.ceil(len(ids) / settings.batch_size)
        model.train()
        for epoch in range(settings.epochs):
            order = torch.randperm(len(ids), generator=gen)
            total = 0.0
            for b in range(n_batches):
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
                total += float(loss.detach())
            losses.append(total / n_batches)
            if progress is not None:
                progress((epoch + 1) / settings.epochs, f"{NAMES[name]}: epoch {epoch + 1}")
    return model.eval(), losses


@dataclass
class Trained:
    """The four trained taggers, the corpus they saw, and how long each took (seconds)."""

    corpus: Corpus
    settings: Settings
    models: dict[str, nn.Module]
    losses: dict[str, list[float]]
    seconds: dict[str, float] = field(default_factory=dict)

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
    """Held-out accuracy: all words, ambiguous words, double-role words (with counts)."""

    overall: float
    ambiguous: float
    double_role: float
    n_words: int
    n_ambiguous: int
    n_double_role: int


def _acc(hits: int, n: int) -> float:
    return hits / n if n else float("nan")


def evaluate(model: nn.Module, corpus: Corpus, sentences: list[Sentence] | None = None) -> Scores:
    """Accuracy on `sentences` (default: the held-out split).

    overall     = correct words / words
    ambiguous   = correct / words whose form is one of corpus.ambiguous
    double_role = correct / words at double_role_positions (a word with two roles in its
                  sentence, e.g. both saws of "i saw a saw")
    """
    sentences = corpus.test if sentences is None else sentences
    amb = set(corpus.ambiguous)
    hit = n = hit_a = n_a = hit_d = n_d = 0
    for s, pred in zip(sentences, predict(model, corpus, sentences), strict=True):
        dr = set(double_role_positions(s))
        for i, (w, gold, p) in enumerate(zip(s.words, s.tags, pred, strict=True)):
            ok = int(gold == p)
            hit, n = hit + ok, n + 1
            if w in amb:
                hit_a, n_a = hit_a + ok, n_a + 1
            if i in dr:
                hit_d, n_d = hit_d + ok, n_d + 1
    return Scores(_acc(hit, n), _acc(hit_a, n_a), _acc(hit_d, n_d), n, n_a, n_d)


def majority_baseline(corpus: Corpus, sentences: list[Sentence] | None = None) -> dict:
    """What one-tag-per-word-form can reach on the ambiguous words of `sentences`.

    train_majority: accuracy of always giving each word its most frequent training tag.
    best_possible:  the best any one-tag-per-form tagger can do on these very sentences,
                    sum_w max_t count(w, t) / sum_w count(w): an upper bound for (a).
    """
    sentences = corpus.test if sentences is None else sentences
    amb = set(corpus.ambiguous)
    train_counts: dict[str, dict[str, int]] = {}
    for s in corpus.train:
        for w, t in zip(s.words, s.tags, strict=True):
            if w in amb:
                train_counts.setdefault(w, {}).setdefault(t, 0)
                train_counts[w][t] += 1
    majority = {w: max(c, key=c.get) for w, c in train_counts.items()}
    test_counts: dict[str, dict[str, int]] = {}
    hits = n = 0
    for s in sentences:
        for w, t in zip(s.words, s.tags, strict=True):
            if w in amb:
                test_counts.setdefault(w, {}).setdefault(t, 0)
                test_counts[w][t] += 1
                hits += int(majority.get(w) == t)
                n += 1
    best = sum(max(c.values()) for c in test_counts.values())
    return {"train_majority": _acc(hits, n), "best_possible": _acc(best, n), "n": n,
            "majority": majority}


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


def measure(settings: Settings = Settings()) -> dict:
    """Train everything and return the numbers the lesson quotes (used by the benchmark)."""
    tr = train_all(settings)
    out = {"seconds": dict(tr.seconds), "total_seconds": tr.total_seconds,
           "baseline": majority_baseline(tr.corpus)}
    for name, m in tr.models.items():
        out[name] = {"held_out": evaluate(m, tr.corpus),
                     "double_role": evaluate(m, tr.corpus, tr.corpus.test_double_role),
                     "i saw a saw": tag_sentence(m, tr.corpus, "I saw a saw")[1]}
    return out
