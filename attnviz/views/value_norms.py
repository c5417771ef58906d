"""Attention weights beside the size of what they move (Kobayashi et al. 2020, "Attention is
Not Only a Weight"): ||alpha_ij f(x_j)|| per head, and how many heads change their picture
(pages/value_norms.py).

Numbers: analysis.norms on the Trace's weights and values and the model's output projection
W_O (analysis.words for the word level); figures: plotting.stats."""

from __future__ import annotations

import numpy as np

from ..analysis import norms
from ..analysis.common import special_mask
from ..analysis.words import merge_tokens, word_attention, word_groups
from ..i18n import N_, _
from ..plotting.stats import maps_side_by_side, stats_heatmaps
from .blocks import Heading, Markdown, Metric
from .common import numbers

TITLES = {"special_weight": N_("[CLS]/[SEP] share of the weights"),
          "special_norm": N_("[CLS]/[SEP] share of the norms"),
          "top_changes": N_("queries whose top key changes")}  # shown translated


def intro() -> list:
    return [Heading(_("Weights vs value norms"), 1), Markdown(_(
        "A weight $\\alpha_{ij}$ says how much query $i$ reads from key $j$; what actually "
        "arrives is the vector $\\alpha_{ij} f(x_j)$ with $f(x_j) = v_j W_O^h$ (the head's "
        "value, through its slice of the output projection). Its size "
        "$\\lVert \\alpha_{ij} f(x_j) \\rVert$ is the **norm** picture (Kobayashi et al. 2020). "
        "Heads often park their weight on [CLS] or [SEP] with vectors of small norm."))]


def numbers_of(model, t) -> dict:
    """Value norms [L, H, n] and the per-head comparison (analysis.norms.comparison)."""
    vn = norms.value_norms(t.values_per_head, norms.output_projections(model))
    return {"value_norms": vn, **norms.comparison(t.weights, vn, t.tokens)}


def layer_norms(model, t, layer: int) -> np.ndarray:
    """||alpha_ij f(x_j)|| summed over the heads of `layer`, [n, n]."""
    return norms.layer_norms(t.weights[layer:layer + 1], t.values_per_head[layer:layer + 1],
                             norms.output_projections(model)[layer:layer + 1])[0]


def summary(t, nb: dict) -> list:
    """How many heads change their picture (a metric) and the mean shares on [CLS]/[SEP]."""
    changed = int(nb["changed"].sum())
    total = t.n_layers * t.n_heads
    return [Metric(_("Heads where the norms pick another key"),
                   _("{k} of {n} ({share:.0%})").format(k=changed, n=total,
                                                        share=changed / total),
                   _("For at least half of the head's queries, the key with the largest norm "
                     "is not the key with the largest weight.")),
            Markdown(_("Mean share on [CLS]/[SEP] over all heads: **{weights:.1%}** of the "
                       "weights, **{norms:.1%}** of the norms (each row's norms divided by "
                       "their sum). **Click a cell** to open that head below.").format(
                weights=nb["special_weight"].mean(), norms=nb["special_norm"].mean())
                if has_special(t) else no_special_note() + " " + _(
                    "**Click a cell** to open that head below."),
                "caption")]


def has_special(t) -> bool:
    """Whether the sentence has [CLS]/[SEP] (or <s>/</s>) tokens: a decoder such as SmolLM2
    adds none, and its shares on them are 0 by construction."""
    return bool(special_mask(t.tokens).any())


def no_special_note() -> str:
    return _("This model has no [CLS]/[SEP] tokens, so their shares are not drawn.")


def heads_figure(nb: dict, layer: int, head: int, special: bool = True):
    """Every head's shares on [CLS]/[SEP] (only where the sentence has them: `special`) and
    its share of queries whose top key changes."""
    shown = [k for k in TITLES if special or not k.startswith("special")]
    return stats_heatmaps({k: nb[k] for k in shown}, {k: _(TITLES[k]) for k in shown},
                          cols=len(shown), selected=(layer, head))


def head_maps(t, nb: dict, whole_layer: np.ndarray, layer: int, head: int):
    """This head's weights, their norm shares and its layer's (from `whole_layer`, the
    layer's norms), [n, n] each."""
    w = t.weights[layer, head].astype(np.float64)
    shares = norms.row_shares(norms.weighted_norms(w, nb["value_norms"][layer, head]))
    return w, shares, norms.row_shares(whole_layer)


def maps_figure(t, maps, layer: int, head: int, words: bool):
    """`maps` = head_maps(...) side by side (word level: merged into words)."""
    maps, toks = list(maps), t.tokens
    if words:
        groups = word_groups(t.word_pieces)
        maps, toks = [word_attention(m, groups) for m in maps], merge_tokens(t.tokens, groups)
    return maps_side_by_side(maps, [
        _("weights, layer {layer} head {head}").format(layer=layer, head=head),
        _("norm shares, this head"),
        _("norm shares, layer {layer} (all heads)").format(layer=layer)], toks)


def head_note(nb: dict, layer: int, head: int) -> Markdown:
    return Markdown(_("Changed top key for {share:.0%} of this head's queries. Rows are queries, "
                      "columns keys; each row sums to 1; each panel has its own colour "
                      "scale.").format(share=nb["top_changes"][layer, head]), "caption")


def download(t, nb: dict, maps, layer: int, head: int):
    """Weights, norms and the comparison; `maps` is a function returning head_maps(...)
    (called when the file is made)."""
    def make() -> dict:
        _w, shares, whole = maps()
        return {"tokens": np.array(t.tokens), "weights": t.weights,
                "value_norms": nb["value_norms"], "norm_shares_head": shares,
                "norm_shares_layer": whole, "layer": layer, "head": head,
                **{k: nb[k] for k in ("special_weight", "special_norm", "top_changes",
                                      "changed")}}

    return numbers(_("Download weights, norms and the comparison (.npz)"), make,
                   "attnviz_value_norms.npz")


def one_head(t, nb: dict, whole_layer: np.ndarray, layer: int, head: int, words: bool) -> list:
    """The part under the summary: every head's shares, then one head's maps (its widgets
    left out)."""
    maps = head_maps(t, nb, whole_layer, layer, head)
    return [heads_figure(nb, layer, head, has_special(t)), maps_figure(t, maps, layer, head, words),
            head_note(nb, layer, head), download(t, nb, lambda: maps, layer, head)]


def page(model, t, layer: int = 0, head: int = 0, words: bool = False, report=()) -> list:
    """The page as it opens (its widgets left out)."""
    nb = numbers_of(model, t)
    return [*intro(), *report, *summary(t, nb),
            *one_head(t, nb, layer_norms(model, t, layer), layer, head, words)]
