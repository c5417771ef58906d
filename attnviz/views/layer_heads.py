"""Heads of one layer: each head's Q·K similarities and softmax weights for the sentence
(pages/layer_heads.py). Numbers: the Trace; figures: plotting.heatmaps."""

from __future__ import annotations

from collections.abc import Callable

from .. import plotting
from ..i18n import N_, _
from .blocks import Heading, Markdown
from .common import numbers

TABS = (N_("Weights, all heads"), N_("Scores, all heads"), N_("One head, exact"))


def intro() -> list:
    return [Heading(_("Heads of one layer"), 1), Markdown(_(
        "Each head compares every **query** $q^i$ with every **key** $k^j$: the similarity "
        "$s_{ij} = q^i \\cdot k^j$ (tab *Scores, all heads*), then "
        "$w_{ij} = \\mathrm{softmax}_j(s_{ij}/\\sqrt{d_k})$ (tab *Weights, all heads*); tab "
        "*One head, exact* shows one head's two side by side. Rows are queries (the token that "
        "looks), columns are keys (the token looked at); every row of weights sums to 1."
    ))]


def sizes(t) -> Markdown:
    return Markdown(_("{tokens} tokens · {heads} heads · d_k = {d_k} · 1/sqrt(d_k) = {scale:.4f} "
                      "· computed on {device}").format(
        tokens=t.n_tokens, heads=t.n_heads, d_k=t.head_dim, scale=t.scale, device=t.device),
        "caption")


def numbering() -> Markdown:
    """How every figure numbers the tokens, said where a student first meets the labels."""
    return Markdown(_(
        "Token labels carry a number: the words count from 1, as the lecture's $a^1, a^2, "
        "\\dots$, and a start token the model adds ([CLS]) is #0, so the two saws of \"I saw "
        "a saw\" read saw #2 and saw #4. Long inputs name every k-th token on the axes; the "
        "hover names every cell's two tokens."), "caption")


def side_by_side(t) -> bool:
    """Whether tab *One head, exact* puts its two heatmaps side by side: up to
    plotting.heatmaps.SQUARE_FROM tokens; longer ones each take the page's width."""
    return t.n_tokens <= plotting.heatmaps.SQUARE_FROM


def weights_grid(t, layer: int):
    return plotting.heads_grid(t.weights[layer], t.tokens, "weights",
                               title=_("Layer {layer}: softmax weights").format(layer=layer))


def scores_grid(t, layer: int):
    return plotting.heads_grid(t.scores[layer], t.tokens, "scores",
                               title=_("Layer {layer}: Q·K similarity (raw)").format(layer=layer))


def head_scores(t, layer: int, head: int):
    return plotting.attention_heatmap(
        t.scores[layer, head], t.tokens, "scores",
        title=_("Layer {layer}, head {head}: scores q·k").format(layer=layer, head=head))


def head_weights(t, layer: int, head: int):
    """One head's weights; past SQUARE_FROM tokens a row's weights are small (~1/n), so the
    colour scale tops at the head's largest weight (its bar says which) instead of at 1."""
    w = t.weights[layer, head]
    return plotting.attention_heatmap(
        w, t.tokens, "weights",
        title=_("Layer {layer}, head {head}: weights").format(layer=layer, head=head),
        zmax=None if side_by_side(t) else float(w.max()))


def scores_note() -> Markdown:
    """Why the scores grid has one colour scale."""
    return Markdown(_(
        "One colour scale for every head, so heads compare with each other: a head whose "
        "scores span a small range looks pale here. Tab *One head, exact* scales one head to "
        "its own largest |score|."), "caption")


def layer_numbers(t, layer: int) -> dict:
    return {"tokens": t.tokens, "scores": t.scores[layer], "weights": t.weights[layer],
            "queries": t.queries[layer], "keys": t.keys[layer], "values": t.values[layer],
            "kv_heads": t.kv_heads}  # keys, values: one per key/value head


def download(trace: Callable, layer: int):
    """The layer's numbers, made from `trace()` when the file is (no trace held meanwhile)."""
    return numbers(_("Download this layer's numbers (.npz)"),
                   lambda: layer_numbers(trace(), layer), f"attnviz_layer{layer}.npz")


def tab(t, layer: int, which: int, head: int = 0) -> list:
    """The figures of tab `which` (an index into TABS)."""
    if which == 0:
        return [weights_grid(t, layer)]
    if which == 1:
        return [scores_note(), scores_grid(t, layer)]
    return [head_scores(t, layer, head), head_weights(t, layer, head)]


def page(t, layer: int = 0, which: int = 0, head: int = 0, report=()) -> list:
    """The page as it opens on `layer` with tab `which` (the widgets left out); `report`:
    what the page says about the trace (common.trace_report)."""
    return [*intro(), *report, sizes(t), numbering(), *tab(t, layer, which, head),
            download(lambda: t, layer)]
