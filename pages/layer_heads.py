"""Heads of one layer: each head's Q·K similarities and softmax weights for the sentence.

Numbers: the cached Trace of the sidebar's sentence (engine.model.Model.trace); figures:
plotting.heatmaps."""

import streamlit as st

from attnviz import plotting, ui
from attnviz.i18n import N_, _

TABS = (N_("Weights, all heads"), N_("Scores, all heads"), N_("One head, exact"))


def layer_numbers(t, layer: int) -> dict:
    return {"tokens": t.tokens, "scores": t.scores[layer], "weights": t.weights[layer],
            "queries": t.queries[layer], "keys": t.keys[layer], "values": t.values[layer]}


def main() -> None:
    st.title(_("Heads of one layer"))
    st.markdown(_(
        "Each head compares every **query** $q^i$ with every **key** $k^j$: the similarity "
        "$s_{ij} = q^i \\cdot k^j$ (tab *Scores*), then $w_{ij} = \\mathrm{softmax}_j(s_{ij}/"
        "\\sqrt{d_k})$ (tab *Weights*); tab *One head, exact* shows one head's two side by "
        "side. Rows are queries (the token that looks), columns are keys (the token looked "
        "at); every row of weights sums to 1."
    ))
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    layer_view(ctx, t.key)


@ui.fragment  # changing the layer or head reruns only this part of the page
def layer_view(ctx: ui.Context, key: tuple) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    c1 = st.columns([1, 3])[0]
    # no format_func: the URL then reads ?layer=3 like every other page's layer
    layer = c1.selectbox(_("Layer"), range(t.n_layers), key="layer", bind="query-params")
    st.caption(_("{tokens} tokens · {heads} heads · d_k = {d_k} · 1/sqrt(d_k) = {scale:.4f} · "
                 "computed on {device}").format(tokens=t.n_tokens, heads=t.n_heads,
                                               d_k=t.head_dim, scale=t.scale, device=t.device))
    # Lazy tabs: only the open one builds its figures (a class shares one server).
    tab_w, tab_s, tab_one = st.tabs(  # labels (and so lh_tab in a URL) in the language
        [_(tab) for tab in TABS], key="lh_tab", on_change="rerun", bind="query-params")
    if tab_w.open:
        with tab_w:
            ui.show_figure(ui.cached_figure(("grid_w", key, layer), lambda: plotting.heads_grid(
                t.weights[layer], t.tokens, "weights",
                title=_("Layer {layer}: softmax weights").format(layer=layer))), key="grid_w")
    if tab_s.open:
        with tab_s:
            ui.show_figure(ui.cached_figure(("grid_s", key, layer), lambda: plotting.heads_grid(
                t.scores[layer], t.tokens, "scores",
                title=_("Layer {layer}: Q·K similarity (raw)").format(layer=layer))),
                key="grid_s")
    if tab_one.open:
        with tab_one:
            head = st.select_slider(_("Head"), options=list(range(t.n_heads)), key="head",
                                    bind="query-params", persist_state="page")
            a, b = st.columns(2)
            with a:
                ui.show_figure(ui.cached_figure(
                    ("one_s", key, layer, head), lambda: plotting.attention_heatmap(
                        t.scores[layer, head], t.tokens, "scores",
                        title=_("Layer {layer}, head {head}: scores q·k").format(
                            layer=layer, head=head))), key="one_s")
            with b:
                ui.show_figure(ui.cached_figure(
                    ("one_w", key, layer, head), lambda: plotting.attention_heatmap(
                        t.weights[layer, head], t.tokens, "weights",
                        title=_("Layer {layer}, head {head}: weights").format(
                            layer=layer, head=head))), key="one_w")
    ui.download_arrays(
        _("Download this layer's numbers (.npz)"),
        lambda: layer_numbers(ctx.trace(), layer),  # on click: no trace kept per session
        file_name=f"attnviz_layer{layer}.npz",
    )


main()
