"""Attention weights beside the size of what they move (Kobayashi et al. 2020, "Attention is Not
Only a Weight"): ||alpha_ij f(x_j)|| per head, and how many heads change their picture.

Numbers: analysis.norms on the cached Trace's weights and values and the model's output
projection W_O (analysis.words for the word-level option), once per server; figures:
plotting.stats."""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis import norms
from attnviz.analysis.words import merge_tokens, word_attention, word_groups
from attnviz.i18n import N_, _
from attnviz.plotting.stats import maps_side_by_side, stats_heatmaps

TITLES = {"special_weight": N_("[CLS]/[SEP] share of the weights"),
          "special_norm": N_("[CLS]/[SEP] share of the norms"),
          "top_changes": N_("queries whose top key changes")}  # shown translated


def numbers(ctx, t) -> dict:
    """Value norms [L, H, n] and the per-head comparison, once per server."""
    def compute():
        vn = norms.value_norms(t.values, norms.output_projections(ctx.model))
        return {"value_norms": vn, **norms.comparison(t.weights, vn, t.tokens)}
    return ui.cached("results", ("value_norms", t.key), compute)


def pick_cell() -> None:
    points = st.session_state["vn_map"].selection.points
    if points:
        st.session_state["vn_layer"] = int(points[0]["y"])
        st.session_state["vn_head"] = int(points[0]["x"])


def main() -> None:
    st.title(_("Weights vs value norms"))
    st.markdown(_(
        "A weight $\\alpha_{ij}$ says how much query $i$ reads from key $j$; what actually "
        "arrives is the vector $\\alpha_{ij} f(x_j)$ with $f(x_j) = v_j W_O^h$ (the head's "
        "value, through its slice of the output projection). Its size "
        "$\\lVert \\alpha_{ij} f(x_j) \\rVert$ is the **norm** picture (Kobayashi et al. 2020). "
        "Heads often park their weight on [CLS] or [SEP] with vectors of small norm."))
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    with st.spinner(_("Computing the value norms...")):
        nb = numbers(ctx, t)
    changed = int(nb["changed"].sum())
    total = t.n_layers * t.n_heads
    st.metric(_("Heads whose picture changes"),
              _("{k} of {n} ({share:.0%})").format(k=changed, n=total, share=changed / total),
              help=_("For at least half of the head's queries, the key with the largest norm is "
                     "not the key with the largest weight."))
    st.caption(_(
        "Mean share on [CLS]/[SEP] over all heads: **{weights:.1%}** of the weights, "
        "**{norms:.1%}** of the norms (each row's norms divided by their sum). **Click a cell** "
        "to open that head below.").format(weights=nb["special_weight"].mean(),
                                           norms=nb["special_norm"].mean()))
    head_view(ctx)


@ui.fragment  # layer, head, word level and a click on the map rerun only this part
def head_view(ctx: ui.Context) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    nb = numbers(ctx, t)
    c1, c2, c3 = st.columns([1, 1, 2])
    layer = c1.selectbox(_("Layer"), range(t.n_layers), key="vn_layer", bind="query-params")
    head = c2.selectbox(_("Head"), range(t.n_heads), key="vn_head", bind="query-params")
    words = c3.toggle(_("Word level"), key="vn_words", bind="query-params",
                      help=_("Merge word pieces: shares summed over a word's keys, averaged "
                             "over its queries (Clark et al.)."))
    titles = {k: _(v) for k, v in TITLES.items()}
    # Built once per server for this trace and head (and word level): a rerun draws the cached
    # figures and computes the maps below only for a file
    ui.show_figure(ui.cached_figure(("vn_map", t.key, layer, head), lambda: stats_heatmaps(
        {k: nb[k] for k in TITLES}, titles, cols=3, selected=(layer, head))),
        key="vn_map", on_select=pick_cell, selection_mode="points")

    def head_maps() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """This head's weights, their norm shares and its layer's, [n, n] each."""
        w = t.weights[layer, head].astype(np.float64)
        shares = norms.row_shares(norms.weighted_norms(w, nb["value_norms"][layer, head]))
        whole = norms.row_shares(ui.cached("results", ("layer_norms", t.key, layer), lambda: (
            norms.layer_norms(t.weights[layer:layer + 1], t.values[layer:layer + 1],
                              norms.output_projections(ctx.model)[layer:layer + 1])[0])))
        return w, shares, whole

    def maps_figure():
        maps, toks = list(head_maps()), t.tokens
        if words:
            groups = word_groups(t.word_pieces)
            maps, toks = [word_attention(m, groups) for m in maps], merge_tokens(t.tokens, groups)
        return maps_side_by_side(maps, [
            _("weights, layer {layer} head {head}").format(layer=layer, head=head),
            _("norm shares, this head"),
            _("norm shares, layer {layer} (all heads)").format(layer=layer)], toks)

    ui.show_figure(ui.cached_figure(("vn_maps", t.key, layer, head, words), maps_figure),
                   key="vn_maps")
    st.caption(_("Changed top key for {share:.0%} of this head's queries. Rows are queries, "
                 "columns keys; each row sums to 1; each panel has its own colour "
                 "scale.").format(share=nb["top_changes"][layer, head]))

    def numbers_file() -> dict:
        _w, shares, whole = head_maps()
        return {"tokens": np.array(t.tokens), "weights": t.weights,
                "value_norms": nb["value_norms"], "norm_shares_head": shares,
                "norm_shares_layer": whole, "layer": layer, "head": head,
                **{k: nb[k] for k in ("special_weight", "special_norm", "top_changes",
                                      "changed")}}

    ui.download_arrays(_("Download weights, norms and the comparison (.npz)"), numbers_file,
                       file_name="attnviz_value_norms.npz", key="vn_download")

main()
