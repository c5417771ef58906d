"""Head statistics after Clark et al. 2019 ("What Does BERT Look At?") for the sentence in the
box, and attention rollout (Abnar & Zuidema 2020) next to the raw last-layer attention.

Numbers: analysis.head_stats and analysis.rollout on the cached Trace's weights, computed once
per server; figures: plotting.stats."""

import numpy as np
import pandas as pd
import streamlit as st

from attnviz import ui
from attnviz.analysis.head_stats import STATS, head_stats, stats_rows
from attnviz.analysis.rollout import rollout
from attnviz.analysis.views import mean_maps
from attnviz.plotting.stats import rollout_pair, stats_heatmaps


def numbers(t) -> tuple[dict, np.ndarray, np.ndarray]:
    """(statistics {name: [layers, heads]}, rollout [layers, n, n], mean of each layer's heads
    [layers, n, n]) of a trace, computed once per server."""
    return ui.cached("results", ("head_stats", t.key), lambda: (
        head_stats(t.weights, t.tokens), rollout(t.weights), mean_maps(t.weights)["layers"]))


def pick_cell() -> None:
    points = st.session_state["hs_map"].selection.points
    if points:
        st.session_state["hs_layer"] = int(points[0]["y"])
        st.session_state["hs_head"] = int(points[0]["x"])


def pick_row(n_heads: int) -> None:
    rows = st.session_state["hs_table"].selection.rows
    if rows:
        st.session_state["hs_layer"], st.session_state["hs_head"] = divmod(rows[0], n_heads)


def main() -> None:
    st.title("Head statistics and rollout")
    st.markdown(
        "Per head, averaged over the **queries** (rows) of its softmax weights: how spread out "
        "a row is (entropy, in nats; $\\ln n$ = uniform) and how much weight goes to [CLS], to "
        "[SEP], to punctuation, to the token itself, to the previous and to the next token "
        "(Clark et al. 2019). One cell = one head. **Click a cell or a table row** to pick a "
        "head."
    )
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    with st.spinner("Computing the statistics and the rollout..."):
        stats, rolled, raw = numbers(t)

    c1, c2, c3 = st.columns([1, 1, 3])
    layer = c1.selectbox("Layer", range(t.n_layers), key="hs_layer", bind="query-params")
    head = c2.selectbox("Head", range(t.n_heads), key="hs_head", bind="query-params")
    with c3:
        st.page_link("pages/explore.py", label=f"Open layer {layer}, head {head} in All heads",
                     icon=":material/explore:",
                     query_params={"ex_layer": str(layer), "ex_head": str(head)})
        st.page_link("pages/inside_score.py", label=f"Open layer {layer}, head {head} inside "
                     "one score", icon=":material/biotech:",
                     query_params={"ins_layer": str(layer), "ins_head": str(head)})

    ui.show_figure(stats_heatmaps(stats, STATS, selected=(layer, head)), key="hs_map",
                   on_select=pick_cell, selection_mode="points")
    table = pd.DataFrame(stats_rows(stats)).rename(columns=STATS)
    n_heads = t.n_heads
    st.dataframe(table, hide_index=True, key="hs_table", on_select=lambda: pick_row(n_heads),
                 selection_mode="single-row", height=280,
                 column_config={c: st.column_config.NumberColumn(format="%.4f")
                                for c in STATS.values()})
    st.caption("Sort by any column with a click on its header; the row picks that head.")

    st.header("Attention rollout")
    st.markdown(
        "Raw attention shows one layer. **Rollout** follows the flow through all of them: "
        "average the heads, add the identity for the residual connection, renormalise the "
        "rows, and multiply the layers, $R = \\hat A_{L-1} \\cdots \\hat A_0$ with "
        "$\\hat A_l = (\\bar W_l + I)/2$ (Abnar & Zuidema 2020)."
    )
    upto = st.select_slider("Rollout up to layer", options=list(range(t.n_layers)),
                            value=t.n_layers - 1, key="hs_roll", bind="query-params")
    ui.show_figure(rollout_pair(
        raw[upto], rolled[upto], t.tokens,
        f"raw attention, layer {upto} (mean of heads)", f"rollout through layers 0-{upto}"),
        key="hs_rollout")
    st.info(
        "Attention is not explanation: a weight says where a head reads from, not what it "
        "takes from there (the values can be tiny) nor why the model decides; rollout ignores "
        "the values, the feed-forward layers and LayerNorm, and different weights can give the "
        "same output (Jain & Wallace 2019; Wiegreffe & Pinter 2019). Read both maps as "
        "hypotheses to test."
    )
    ui.download_arrays(
        "Download the statistics and the rollout (.npz)",
        {"tokens": np.array(t.tokens), **stats, "rollout": rolled,
         "raw_mean_of_heads": raw},
        file_name="attnviz_head_stats.npz", key="hs_download",
    )


main()
