"""Heads over many sentences (Clark et al. 2019, "What Does BERT Look At?", sections 3 and 6):
the head statistics of analysis.head_stats averaged over a corpus, the distance between heads,
and a 2-D map of the heads.

For sentences s = 1..S (each encoded alone), a statistic x_s [layers, heads] has

    mean = (1/S) sum_s x_s,      spread = sqrt((1/S) sum_s (x_s - mean)^2)   (population std)

Distance between heads p and q: the Jensen-Shannon divergence of their rows, averaged over the
queries of a sentence and then over sentences (natural log, so 0 <= JS <= ln 2),

    JS_s(p, q) = (1/n_s) sum_i JSD(W_p[i], W_q[i]),   JSD(a, b) = H((a + b)/2) - (H(a) + H(b))/2
    D(p, q) = sqrt((1/S) sum_s JS_s(p, q))

A divergence is not a distance (it breaks the triangle inequality); its square root is one, and
the root of a mean of squared distances is one too. (Clark et al. sum the unsquared divergences
of rows smoothed as 0.999 W + 0.001/n over documents and call the sum a distance.)

The map places each head at 2-D coordinates whose distances approximate D: classical
(Torgerson) multidimensional scaling, written out here:

    B = -1/2 J D^2 J   (J = I - 11^T/N, D^2 squared entrywise),   B = V diag(lambda) V^T
    coordinates = V[:, :2] sqrt(lambda[:2])       (the two largest eigenvalues)

with the share of sum(max(lambda, 0)) that the two axes carry reported beside the map. Clark et
al. use scikit-learn's metric MDS (stress majorisation); classical MDS is exact and has no random
start.

Behaviour of a head (its colour on the map), from the corpus means: the largest of its shares on
[CLS], [SEP], the previous and the next token when that share is at least BEHAVIOUR_SHARE;
otherwise "broad" when its mean relative entropy (row entropy / ln n) is at least BROAD_ENTROPY;
otherwise "mixed".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .common import entropy
from .head_stats import STATS, head_stats

SAMPLE = Path(__file__).resolve().parents[2] / "assets" / "corpus" / "sample.txt"
MAX_SENTENCES = 200  # a pasted text is cut here (each sentence is one encoder run)
MAX_SENTENCE_TOKENS = 192  # longer sentences are skipped: the head distances cost (LH)^2 n^2 each
BEHAVIOUR_SHARE = 0.5
BROAD_ENTROPY = 0.6
BEHAVIOURS = ("[CLS]", "[SEP]", "previous", "next", "broad", "mixed")


def sample_text() -> str:
    """The bundled public-domain sample (assets/corpus/sample.txt, see assets/README.md)."""
    return SAMPLE.read_text(encoding="utf-8")


def split_sentences(text: str, limit: int = MAX_SENTENCES) -> list[str]:
    """Sentences of a text: a break after '.', '!' or '?' (and a closing quote or bracket)
    followed by white space, and at every line break. Empty pieces are dropped; at most
    `limit` sentences."""
    pieces = re.split(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+|\n+", text or "")
    out = [p.strip() for p in pieces if p and p.strip()]
    return out[:limit]


def js_divergence_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """JSD(a, b) = H((a+b)/2) - (H(a) + H(b))/2 row by row along the last axis (nats)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return entropy((a + b) / 2) - (entropy(a) + entropy(b)) / 2


def head_js(weights: np.ndarray) -> np.ndarray:
    """JS_s(p, q) for every pair of heads of one sentence: weights [L, H, n, n] -> [LH, LH],
    the mean over queries of the rows' Jensen-Shannon divergence (p = layer * H + head)."""
    w = np.asarray(weights, dtype=np.float64)
    flat = w.reshape(-1, *w.shape[-2:])  # [N, n, n]
    h = entropy(flat)  # [N, n]
    out = np.zeros((len(flat), len(flat)))
    for p in range(len(flat)):
        m = (flat[p][None] + flat[p:]) / 2  # [N - p, n, n]
        js = (entropy(m) - (h[p][None] + h[p:]) / 2).mean(axis=-1)  # [N - p]
        out[p, p:] = out[p:, p] = js
    np.fill_diagonal(out, 0.0)
    return np.maximum(out, 0.0)  # rounding can leave -1e-17


def classical_mds(distances: np.ndarray, dims: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Torgerson's classical MDS: (coordinates [N, dims], all eigenvalues of B, largest first)."""
    d = np.asarray(distances, dtype=np.float64)
    n = len(d)
    j = np.eye(n) - np.ones((n, n)) / n
    b = -0.5 * j @ (d ** 2) @ j
    b = (b + b.T) / 2
    values, vectors = np.linalg.eigh(b)  # ascending
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    top = np.maximum(values[:dims], 0.0)
    coords = vectors[:, :dims] * np.sqrt(top)[None, :]
    # A fixed sign per axis (the largest |coordinate| positive): the same map on every run.
    flip = np.sign(coords[np.abs(coords).argmax(axis=0), np.arange(dims)])
    return coords * np.where(flip == 0, 1.0, flip)[None, :], values


def explained_share(eigenvalues: np.ndarray, dims: int = 2) -> float:
    """sum of the top `dims` positive eigenvalues / sum of all positive eigenvalues."""
    pos = np.maximum(np.asarray(eigenvalues, dtype=np.float64), 0.0)
    return float(pos[:dims].sum() / pos.sum()) if pos.sum() > 0 else 0.0


def behaviours(means: dict[str, np.ndarray], relative_entropy: np.ndarray) -> np.ndarray:
    """One of BEHAVIOURS per head, [layers, heads] of str (rule in the module docstring)."""
    names = ("cls", "sep", "prev", "next")
    shares = np.stack([means[k] for k in names])  # [4, L, H]
    best = shares.argmax(axis=0)
    top = shares.max(axis=0)
    label = np.array(BEHAVIOURS[:4], dtype=object)[best]
    label = np.where(top >= BEHAVIOUR_SHARE, label,
                     np.where(relative_entropy >= BROAD_ENTROPY, "broad", "mixed"))
    return label.astype(str)


@dataclass
class CorpusHeads:
    """Corpus-level head statistics: {stat: [L, H]} means and spreads, the head distances
    [LH, LH], the 2-D map [LH, 2] with its eigenvalues, and each head's behaviour."""

    sentences: list[str]  # the sentences used
    skipped: int  # sentences left out (longer than MAX_SENTENCE_TOKENS, or empty)
    tokens: int  # tokens encoded in all
    mean: dict[str, np.ndarray]
    spread: dict[str, np.ndarray]
    relative_entropy: np.ndarray  # [L, H] mean over sentences of entropy / ln n
    js: np.ndarray  # [LH, LH] mean Jensen-Shannon divergence (nats)
    distance: np.ndarray  # [LH, LH] sqrt(js)
    coords: np.ndarray  # [LH, 2]
    eigenvalues: np.ndarray  # [LH]
    behaviour: np.ndarray  # [L, H] str
    conventions: str


def corpus_heads(model, sentences: Sequence[str], conventions: str = "attnviz",
                 progress: Callable[[float, str], None] | None = None) -> CorpusHeads:
    """Trace every sentence alone (model.trace) and aggregate (formulas in the docstring)."""
    per: dict[str, list[np.ndarray]] = {k: [] for k in STATS}
    rel, js_sum, used, tokens, skipped = [], None, [], 0, 0
    for s, text in enumerate(sentences):
        t = model.trace(text)
        if t.n_tokens > MAX_SENTENCE_TOKENS or t.n_tokens < 3 or t.dropped:
            skipped += 1
            continue
        stats = head_stats(t.weights, t.tokens, conventions)
        for k in STATS:
            per[k].append(stats[k])
        rel.append(stats["entropy"] / np.log(t.n_tokens))
        js = head_js(t.weights)
        js_sum = js if js_sum is None else js_sum + js
        used.append(text)
        tokens += t.n_tokens
        if progress is not None:
            progress((s + 1) / len(sentences), f"sentence {s + 1} of {len(sentences)}")
    if not used:
        raise ValueError("no sentence of 1 to "
                         f"{MAX_SENTENCE_TOKENS - 2} word pieces to analyse")
    mean = {k: np.mean(v, axis=0) for k, v in per.items()}
    spread = {k: np.std(v, axis=0) for k, v in per.items()}
    relative = np.mean(rel, axis=0)
    js = js_sum / len(used)
    distance = np.sqrt(js)
    coords, values = classical_mds(distance)
    return CorpusHeads(used, skipped, tokens, mean, spread, relative, js, distance, coords,
                       values, behaviours(mean, relative), conventions)
