"""Head statistics after Clark et al. 2019 ("What Does BERT Look At?") for the sentence in the
box, in either their exact conventions or attnviz's, and attention rollout and attention flow
(Abnar & Zuidema 2020) next to the raw attention of a layer.

Numbers: analysis.head_stats, analysis.rollout and analysis.flow (through ui.flow, with a
progress bar) on the cached Trace's weights (analysis.words for the word-level option), computed
once per server; figures: plotting.stats."""

import numpy as np
import pandas as pd
import streamlit as st

from attnviz import ui
from attnviz.analysis import flow
from attnviz.analysis.head_stats import (
    CLS_TOKENS,
    CONVENTIONS,
    SEP_TOKENS,
    STATS,
    head_stats,
    stats_rows,
)
from attnviz.analysis.rollout import rollout
from attnviz.analysis.words import merge_tokens, word_attention, word_groups, words_view
from attnviz.i18n import _
from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.plotting.stats import maps_side_by_side, stats_heatmaps
from attnviz.ui.flow import flow_of
from attnviz.ui.flow import prepare as prepare_flow


def stats_of(t, conventions: str, words: bool) -> dict:
    """{statistic: [layers, heads]} of a trace, once per server."""
    def compute():
        w, toks = (words_view(t.weights, t.tokens, t.word_pieces)[:2] if words
                   else (t.weights, t.tokens))
        return head_stats(w, toks, conventions)
    return ui.cached("results", ("head_stats", t.key, conventions, words), compute)


def maps_of(t, layer: int, words: bool) -> dict:
    """Raw (mean of the layer's heads), rollout and (up to flow.MAX_TOKENS) flow, [n, n]."""
    def compute():
        out = {"raw": t.weights[layer].astype(np.float64).mean(0),
               "rollout": rollout(t.weights)[layer]}
        flows = flow_of(t, layer)
        if flows is not None:
            out["flow"] = flows
        if words:
            groups = word_groups(t.word_pieces)
            out = {k: word_attention(v, groups) for k, v in out.items()}
        return out
    return ui.cached("results", ("hs_maps", t.key, layer, words), compute)


def pick_cell() -> None:
    points = st.session_state["hs_map"].selection.points
    if points:
        st.session_state["hs_layer"] = int(points[0]["y"])
        st.session_state["hs_head"] = int(points[0]["x"])


def pick_row(n_heads: int) -> None:
    rows = st.session_state["hs_table"].selection.rows
    if rows:
        st.session_state["hs_layer"], st.session_state["hs_head"] = divmod(rows[0], n_heads)


def statistics_tab(t, words: bool) -> None:
    conv = st.radio(_("Conventions (clark: as in Clark et al.'s code, number for number)"),
                    list(CONVENTIONS), key="hs_conv", horizontal=True, bind="query-params")
    st.caption(_("Shown: **{conv}** conventions: {about}.").format(
        conv=conv, about=_(CONVENTIONS[conv])))
    if not any(tok in CLS_TOKENS | SEP_TOKENS for tok in t.tokens):
        st.caption(_("This model adds no start or separator token ([CLS]/[SEP], <s>/</s>): "
                     "the two columns for them are 0 by construction."))
    stats = stats_of(t, conv, words)
    names = {k: _(v) for k, v in STATS.items()}
    c1, c2, c3 = st.columns([1, 1, 3])
    layer = c1.selectbox(_("Layer"), range(t.n_layers), key="hs_layer", bind="query-params")
    head = c2.selectbox(_("Head"), range(t.n_heads), key="hs_head", bind="query-params")
    with c3:
        st.page_link("pages/explore.py", label=_(
            "Open layer {layer}, head {head} in All heads").format(layer=layer, head=head),
                     icon=":material/explore:",
                     query_params={"ex_layer": str(layer), "ex_head": str(head)})
        st.page_link("pages/inside_score.py", label=_(
            "Open layer {layer}, head {head} inside one score").format(layer=layer, head=head),
                     icon=":material/biotech:",
                     query_params={"ins_layer": str(layer), "ins_head": str(head)})
    # Built once per server for this trace, these choices and head: a rerun draws the cached
    # figures
    ui.show_figure(ui.cached_figure(("hs_map", t.key, conv, words, layer, head), lambda: (
        stats_heatmaps(stats, names, selected=(layer, head)))), key="hs_map",
        on_select=pick_cell, selection_mode="points")
    w, toks = (words_view(t.weights[layer, head], t.tokens, t.word_pieces)[:2] if words
               else (t.weights[layer, head], t.tokens))
    one = _("Layer {layer}, head {head}").format(layer=layer, head=head)
    with st.expander(_("{head} on this sentence").format(head=one), expanded=t.n_tokens <= 40):
        ui.show_figure(ui.cached_figure(("hs_one", t.key, words, layer, head), lambda: (
            attention_heatmap(w, toks, "weights", one))), key="hs_one")
    table = pd.DataFrame(stats_rows(stats)).rename(
        columns={**names, "layer": _("layer"), "head": _("head")})
    n_heads = t.n_heads
    st.dataframe(table, hide_index=True, key="hs_table", on_select=lambda: pick_row(n_heads),
                 selection_mode="single-row", height=280,
                 column_config={c: st.column_config.NumberColumn(format="%.4f")
                                for c in names.values()})
    st.caption(_("Sort by any column with a click on its header; the row picks that head. "
                 "Averaged over many sentences: *Heads across many sentences*."))
    ui.download_arrays(_("Download the statistics (.npz)"), {
        "tokens": np.array(t.tokens), "conventions": conv, "word_level": words, **stats},
        file_name="attnviz_head_stats.npz", key="hs_download")


def flow_tab(t, words: bool) -> None:
    st.markdown(_(
        "Raw attention shows one layer. **Rollout** follows the flow through all of them: "
        "average the heads, add the identity for the residual connection, renormalise the "
        "rows, and multiply the layers, $R = \\hat A_{l} \\cdots \\hat A_0$ with "
        "$\\hat A_l = (\\bar W_l + I)/2$. **Attention flow** reads the same $\\hat A$ as pipe "
        "capacities: the flow from input $j$ to output $i$ is the maximum flow through the "
        "layered graph, each row then divided by its sum (Abnar & Zuidema 2020)."))
    upto = st.select_slider(_("Up to layer"), options=list(range(t.n_layers)),
                            value=t.n_layers - 1, key="hs_roll", bind="query-params")
    maps = maps_of(t, upto, words)
    if "flow" not in maps:
        st.info(_("Attention flow is computed up to {max} tokens: it takes up to one max-flow "
                  "per (output, input) pair, n² = {pairs:,} here, on a graph of {layers} x n² "
                  "edges (pairs whose bounds meet skip theirs). Rollout is shown instead.").format(
            max=flow.MAX_TOKENS, pairs=t.n_tokens ** 2, layers=upto + 1))
    toks = merge_tokens(t.tokens, word_groups(t.word_pieces)) if words else t.tokens
    titles = [_("raw attention, layer {layer} (mean of heads)").format(layer=upto),
              _("rollout, layers 0-{layer}").format(layer=upto)]
    ui.show_figure(ui.cached_figure(("hs_rollout", t.key, upto, words), lambda: (
        maps_side_by_side(list(maps.values()), titles + (
            [_("flow, layers 0-{layer}").format(layer=upto)] if "flow" in maps else []),
            toks))), key="hs_rollout")
    st.caption(_("Rows are outputs (after the layer), columns are input tokens; every row sums "
                 "to 1. Each panel has its own colour scale (bar under it): flow is often much "
                 "flatter than rollout."))
    if t.n_tokens > 1 and not np.triu(t.mask, 1).any():
        st.caption(_("This model is causal (a token sees only itself and the tokens before "
                     "it), so every map here is 0 above the diagonal: output i can only come "
                     "from inputs 0..i."))
    ui.download_arrays(_("Download raw attention, rollout and flow (.npz)"),
                       {"tokens": np.array(toks), "layer": upto, "word_level": words,
                        **{f"{k}": v for k, v in maps.items()}},
                       file_name=f"attnviz_rollout_flow_l{upto}.npz", key="hs_download_flow")


def main() -> None:
    st.title(_("Head statistics, rollout and flow"))
    st.markdown(_(
        "Per head, averaged over the **queries** (rows) of its softmax weights: how spread out "
        "a row is (entropy, in nats; $\\ln n$ = uniform) and how much weight goes to [CLS], to "
        "[SEP], to punctuation, to the token itself, to the previous and to the next token "
        "(Clark et al. 2019). One cell = one head. **Click a cell or a table row** to pick a "
        "head."))
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    prepare_flow(t)  # the flow tab's worker processes start while the statistics show
    view(ctx)
    st.info(_(
        "Attention is not explanation by itself: a weight says where a head reads from, not "
        "how much it takes from there (see *Weights vs value norms*) nor why the model decides. "
        "Jain & Wallace (2019) found other weights that give the same output; Wiegreffe & "
        "Pinter (2019, \"Attention is not not Explanation\") answered that this alone does not "
        "show attention is meaningless and proposed tests of when it is faithful. Rollout and "
        "flow ignore the values, the feed-forward layers and LayerNorm. Read these maps as "
        "hypotheses to test."))


@ui.fragment  # word level, the tabs, layer, head and a click on the map rerun only this part
def view(ctx: ui.Context) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    words = st.toggle(_("Word level"), key="hs_words", bind="query-params",
                      help=_("Merge word pieces into words: attention to a word is the sum over "
                             "its pieces, attention from a word the mean (Clark et al.)."))
    tabs = st.tabs([_("Statistics"), _("Rollout and flow")], key="hs_tab", on_change="rerun",
                   bind="query-params")  # labels (and so hs_tab in a URL) in the language
    for tab, draw in zip(tabs, (statistics_tab, flow_tab), strict=True):
        if tab.open:
            with tab:
                draw(t, words)


main()
