"""Two sentences side by side: one head's attention for the tokens the sentences share, and the
difference (sentence A minus sentence B), each sentence encoded alone.

Numbers: the two cached Traces; what it shows: views.compare."""

import streamlit as st

from attnviz import TraceRequest, ui
from attnviz.i18n import _
from attnviz.ui.boxes import text_box
from attnviz.ui.render import render
from attnviz.views import compare as view


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    if not ui.require_text(ctx):
        return
    text_b = ctx.text_pair or text_box(
        _("Sentence B"), value=view.DEFAULT_B, key="cmp_b", bind="query-params") or view.DEFAULT_B
    if ctx.text_pair:
        render(view.pair_note())
    try:
        ta = ui.cached_trace(ctx.model, TraceRequest(ctx.text))
        tb = ui.cached_trace(ctx.model, TraceRequest(text_b))
    except ValueError as e:
        render(view.cannot_encode(e))
        return
    render(view.dropped(ta, tb))
    if refusal := ui.needs_every_weight(ctx.model, ta) or ui.needs_every_weight(ctx.model, tb):
        render(refusal)
        return
    head_view(ctx, text_b)


@ui.fragment  # layer and head rerun only this part of the page
def head_view(ctx: ui.Context, text_b: str) -> None:
    # from the cache: the fragment keeps no trace of its own between reruns
    ta = ui.cached_trace(ctx.model, TraceRequest(ctx.text))
    tb = ui.cached_trace(ctx.model, TraceRequest(text_b))
    c1, c2 = st.columns(2)
    layer = c1.selectbox(_("Layer"), range(ta.n_layers), key="cmp_layer", bind="query-params")
    head = c2.selectbox(_("Head"), range(ta.n_heads), key="cmp_head", bind="query-params")
    fig = ui.cached_figure(("cmp_fig", ta.key, tb.key, layer, head),
                           lambda: view.figure(ta, tb, layer, head))
    render(view.head_text(ta, tb, ctx.text, text_b, layer, head))
    render(fig, key="cmp_fig")
    render(view.layer_means(ta, tb))
    render(view.download(ta, tb, layer, head), key="cmp_download")


main()
