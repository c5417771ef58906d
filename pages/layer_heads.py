"""Heads of one layer: each head's Q·K similarities and softmax weights for the sentence.

Numbers: the cached Trace of the sidebar's sentence (engine.model.Model.trace); what it shows:
views.layer_heads."""

import streamlit as st

from attnviz import ui
from attnviz.i18n import _
from attnviz.ui.render import render
from attnviz.views import layer_heads as view


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
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
    render(view.sizes(t))
    render(view.numbering())
    # Lazy tabs: only the open one builds its figures (a class shares one server).
    tabs = st.tabs(  # labels (and so lh_tab in a URL) in the language
        [_(tab) for tab in view.TABS], key="lh_tab", on_change="rerun", bind="query-params")
    for which, fig_key, build in ((0, "grid_w", view.weights_grid),
                                  (1, "grid_s", view.scores_grid)):
        if tabs[which].open:
            if which == 1:
                render(view.scores_note(), where=tabs[which])
            render(ui.cached_figure((fig_key, key, layer), lambda b=build: b(t, layer)),
                      where=tabs[which], key=fig_key)
    if tabs[2].open:
        with tabs[2]:
            head = st.select_slider(_("Head"), options=list(range(t.n_heads)), key="head",
                                    bind="query-params", persist_state="page")
            # side by side for short sentences; a long one's square cells need the width
            a, b = st.columns(2) if view.side_by_side(t) else (st.container(),) * 2
            render(ui.cached_figure(("one_s", key, layer, head),
                                       lambda: view.head_scores(t, layer, head)),
                      where=a, key="one_s")
            render(ui.cached_figure(("one_w", key, layer, head),
                                       lambda: view.head_weights(t, layer, head)),
                      where=b, key="one_w")
    render(view.download(ctx.trace, layer))  # on click: no trace kept per session


main()
