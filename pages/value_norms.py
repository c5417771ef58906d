"""Attention weights beside the size of what they move (Kobayashi et al. 2020, "Attention is Not
Only a Weight"): ||alpha_ij f(x_j)|| per head, and how many heads change their picture.

Numbers: analysis.norms on the cached Trace's weights and values and the model's output
projection W_O, once per server; what it shows: views.value_norms."""

import functools

import streamlit as st

from attnviz import ui
from attnviz.i18n import _
from attnviz.ui.live_chart import clicked_cell
from attnviz.ui.render import render
from attnviz.views import value_norms as view


def numbers(ctx, t) -> dict:
    """Value norms [L, H, n] and the per-head comparison, once per server."""
    return ui.cached("results", ("value_norms", t.key), lambda: view.numbers_of(ctx.model, t))


def pick_cell(n_layers: int, n_heads: int) -> None:
    """A click on the map opens that head (a click event of another shape: nothing)."""
    cell = clicked_cell("vn_map", n_layers, n_heads)
    if cell is not None:
        st.session_state["vn_layer"], st.session_state["vn_head"] = cell


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    with st.spinner(_("Computing the value norms...")):
        nb = numbers(ctx, t)
    render(view.summary(t, nb))
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
    # Built once per server for this trace and head (and word level): a rerun draws the cached
    # figures and computes the maps below only for a file
    render(ui.cached_figure(("vn_map", t.key, layer, head),
                            lambda: view.heads_figure(nb, layer, head, view.has_special(t))),
           key="vn_map", on_select=functools.partial(pick_cell, t.n_layers, t.n_heads),
           selection_mode="points")

    def head_maps():
        whole = ui.cached("results", ("layer_norms", t.key, layer),
                          lambda: view.layer_norms(ctx.model, t, layer))
        return view.head_maps(t, nb, whole, layer, head)

    render(ui.cached_figure(("vn_maps", t.key, layer, head, words),
                            lambda: view.maps_figure(t, head_maps(), layer, head, words)),
           key="vn_maps")
    render(view.head_note(nb, layer, head))
    render(view.download(t, nb, head_maps, layer, head), key="vn_download")

main()
