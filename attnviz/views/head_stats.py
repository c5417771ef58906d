"""Head statistics after Clark et al. 2019 ("What Does BERT Look At?"), in either their exact
conventions or attnviz's, and attention rollout and attention flow (Abnar & Zuidema 2020)
next to the raw attention of a layer (pages/head_stats.py).

Numbers: analysis.head_stats, analysis.rollout, analysis.flow (a flow matrix is passed in: the
page computes it with a progress bar), analysis.words for the word level; figures:
plotting.stats and plotting.heatmaps."""

from __future__ import annotations

import numpy as np

from ..analysis import flow
from ..analysis.head_stats import (
    CLS_TOKENS,
    CONVENTIONS,
    SEP_TOKENS,
    STATS,
    head_stats,
    stats_rows,
    trace_head_stats,
)
from ..analysis.rollout import rollout, streamed_rollout
from ..analysis.words import merge_tokens, word_attention, word_groups, words_view
from ..i18n import N_, _
from ..plotting.heatmaps import attention_heatmap
from ..plotting.stats import CLIP_PERCENTILE, colour_top, maps_side_by_side, stats_heatmaps
from .blocks import Heading, Markdown, Table
from .common import numbers

TABS = (N_("Statistics"), N_("Rollout and flow"))


def intro() -> list:
    return [Heading(_("Head statistics, rollout and flow"), 1), Markdown(_(
        "Per head, averaged over the **queries** (rows) of its softmax weights: how spread out "
        "a row is (entropy, in nats; $\\ln n$ = uniform) and how much weight goes to [CLS], to "
        "[SEP], to punctuation, to the token itself, to the previous and to the next token "
        "(Clark et al. 2019). One cell = one head. **Click a cell or a table row** to pick a "
        "head."))]


def caveat() -> Markdown:
    return Markdown(_(
        "Attention is not explanation by itself: a weight says where a head reads from, not "
        "how much it takes from there (see *Weights vs value norms*) nor why the model decides. "
        "Jain & Wallace (2019) found other weights that give the same output; Wiegreffe & "
        "Pinter (2019, \"Attention is not not Explanation\") answered that this alone does not "
        "show attention is meaningless and proposed tests of when it is faithful. Rollout and "
        "flow ignore the values, the feed-forward layers and LayerNorm. Read these maps as "
        "hypotheses to test."), "info")


# ------------------------------------------------------------------ statistics
def stats_of(t, conventions: str, words: bool) -> dict:
    """{statistic: [layers, heads]} of a trace (word level: pieces merged into words), a layer
    at a time, so a long input whose trace holds no weights is read as the forward pass
    summarised them or one layer's weights computed again at a time
    (analysis.head_stats.trace_head_stats)."""
    if not words:
        return trace_head_stats(t, conventions)
    layers = []
    for layer in range(t.n_layers):
        w, toks = words_view(t.layer_weights(layer)[None], t.tokens, t.word_pieces)[:2]
        layers.append(head_stats(w, toks, conventions))
    return {name: np.concatenate([one[name] for one in layers]) for name in layers[0]}


def names() -> dict:
    """The statistics' names in the current language."""
    return {k: _(v) for k, v in STATS.items()}


def conventions_note(t, conventions: str) -> list:
    out = [Markdown(_("Shown: **{conv}** conventions: {about}.").format(
        conv=conventions, about=_(CONVENTIONS[conventions])), "caption")]
    if not has_start_or_separator(t):
        out.append(Markdown(_("This model has no [CLS]/[SEP] tokens (nor <s>/</s>): the "
                              "weight on them is 0 by construction, so its maps and columns "
                              "are left out."), "caption"))
    if t.request.causal:
        out.append(Markdown(_("In a causal model no token sees the token after it: the "
                              "weight on the next token is 0 by construction, so its map "
                              "and column are left out."), "caption"))
    return out


def has_start_or_separator(t) -> bool:
    """Whether the sentence has [CLS]/[SEP] (or <s>/</s>) tokens: a decoder such as SmolLM2
    adds none, and the weight on them is 0 in every head."""
    return any(tok in CLS_TOKENS | SEP_TOKENS for tok in t.tokens)


def shown(t, stats: dict) -> dict:
    """The statistics drawn and tabled: all of them, less the weight on [CLS] and on [SEP]
    where the sentence has neither, and the weight on the next token under a causal mask
    (0 by construction; the download keeps every statistic)."""
    left_out = (() if has_start_or_separator(t) else ("cls", "sep")) + (
        ("next",) if t.request.causal else ())
    return {k: v for k, v in stats.items() if k not in left_out}


def stats_figure(stats: dict, layer: int, head: int):
    return stats_heatmaps(stats, names(), selected=(layer, head))


def one_head_title(layer: int, head: int) -> str:
    return _("Layer {layer}, head {head}").format(layer=layer, head=head)


def one_head_figure(t, words: bool, layer: int, head: int):
    w, toks = (words_view(t.weights_of(layer, head), t.tokens, t.word_pieces)[:2] if words
               else (t.weights_of(layer, head), t.tokens))
    return attention_heatmap(w, toks, "weights", one_head_title(layer, head))


def stats_table(stats: dict) -> Table:
    """One row per head: layer, head and each statistic (named in the current language)."""
    rows = stats_rows(stats)
    shown = {**names(), "layer": _("layer"), "head": _("head")}
    return Table({shown.get(k, k): [r[k] for r in rows] for k in rows[0]})


def table_note() -> Markdown:
    return Markdown(_("Sort by any column with a click on its header; the row picks that head. "
                      "Averaged over many sentences: *Heads across many sentences*."), "caption")


def stats_download(t, conventions: str, words: bool, stats: dict):
    return numbers(_("Download the statistics (.npz)"), {
        "tokens": np.array(t.tokens), "conventions": conventions, "word_level": words, **stats},
        "attnviz_head_stats.npz")


def statistics(t, conventions: str, words: bool, stats: dict, layer: int, head: int) -> list:
    """The Statistics tab (its widgets left out)."""
    return [*conventions_note(t, conventions), stats_figure(shown(t, stats), layer, head),
            one_head_figure(t, words, layer, head), stats_table(shown(t, stats)), table_note(),
            stats_download(t, conventions, words, stats)]


# ------------------------------------------------------------------ rollout and flow
def flow_intro() -> Markdown:
    return Markdown(_(
        "Raw attention shows one layer. **Rollout** follows the flow through all of them: "
        "average the heads, add the identity for the residual connection, renormalise the "
        "rows, and multiply the layers, $R = \\hat A_{l} \\cdots \\hat A_0$ with "
        "$\\hat A_l = (\\bar W_l + I)/2$. **Attention flow** reads the same $\\hat A$ as pipe "
        "capacities: the flow from input $j$ to output $i$ is the maximum flow through the "
        "layered graph, each row then divided by its sum (Abnar & Zuidema 2020)."))


def maps_of(t, layer: int, words: bool, flows: np.ndarray | None, progress=None) -> dict:
    """Raw (mean of the layer's heads), rollout and flow (`flows`, None past
    flow.MAX_TOKENS), [n, n] each; word level: merged into words. A trace that does not hold
    its weights (a long decoder input) is rolled out a layer at a time, each layer's weights
    computed again (analysis.rollout.streamed_rollout; `progress(fraction, message)` told
    after each layer)."""
    out = {"raw": t.layer_weights(layer).astype(np.float64).mean(0),
           "rollout": rollout(t.weights)[layer] if t.holds_weights
           else streamed_rollout(t.layer_weights, layer, progress)}
    if flows is not None:
        out["flow"] = flows
    if words:
        groups = word_groups(t.word_pieces)
        out = {k: word_attention(v, groups) for k, v in out.items()}
    return out


def flow_missing(t, upto: int) -> Markdown:
    return Markdown(_(
        "Attention flow is computed up to {max} tokens: it takes up to one max-flow per "
        "(output, input) pair, n² = {pairs:,} here, on a graph of {layers} x n² edges (pairs "
        "whose bounds meet skip theirs). Rollout is shown instead.").format(
        max=flow.MAX_TOKENS, pairs=t.n_tokens ** 2, layers=upto + 1), "info")


def maps_tokens(t, words: bool) -> list[str]:
    return merge_tokens(t.tokens, word_groups(t.word_pieces)) if words else t.tokens


def maps_figure(t, maps: dict, upto: int, words: bool):
    titles = [_("raw attention, layer {layer} (mean of heads)").format(layer=upto),
              _("rollout, layers 0-{layer}").format(layer=upto)]
    if "flow" in maps:
        titles.append(_("flow, layers 0-{layer}").format(layer=upto))
    return maps_side_by_side(list(maps.values()), titles, maps_tokens(t, words),
                             clip_note=False)  # said once in maps_notes: long bar titles met


def maps_notes(t, maps: dict | None = None) -> list:
    """The maps' captions; with `maps`, whether their colour scales stop at a percentile."""
    clipped = maps is not None and any(colour_top(m)[1] for m in maps.values())
    out = [Markdown(_("Rows are outputs (after the layer), columns are input tokens; every row "
                      "sums to 1. Each panel has its own colour scale (bar under it): flow is "
                      "often much flatter than rollout.") + ("" if not clipped else " " + _(
                          "Each map's colour scale tops out at its {p}th percentile: the top "
                          "{share}% of its cells share the top colour (hover: the exact "
                          "value).").format(p=CLIP_PERCENTILE, share=100 - CLIP_PERCENTILE)),
                   "caption")]
    if t.n_tokens > 1 and not np.triu(t.mask, 1).any():
        out.append(Markdown(_("This model is causal (a token sees only itself and the tokens "
                              "before it), so every map here is 0 above the diagonal: output i "
                              "can only come from inputs 0..i."), "caption"))
    return out


def maps_download(t, maps: dict, upto: int, words: bool):
    return numbers(_("Download raw attention, rollout and flow (.npz)"), {
        "tokens": np.array(maps_tokens(t, words)), "layer": upto, "word_level": words,
        **{f"{k}": v for k, v in maps.items()}}, f"attnviz_rollout_flow_l{upto}.npz")


def rollout_and_flow(t, maps: dict, upto: int, words: bool) -> list:
    """The Rollout and flow tab (its widgets left out)."""
    return [flow_intro(), *([] if "flow" in maps else [flow_missing(t, upto)]),
            maps_figure(t, maps, upto, words), *maps_notes(t, maps),
            maps_download(t, maps, upto, words)]


def page(t, conventions: str = "attnviz", words: bool = False, layer: int = 0, head: int = 0,
         report=()) -> list:
    """The page as it opens (the Statistics tab), its widgets left out."""
    stats = stats_of(t, conventions, words)
    return [*intro(), *report, *statistics(t, conventions, words, stats, layer, head),
            caveat()]
