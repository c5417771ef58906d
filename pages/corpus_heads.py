"""Heads across many sentences (Clark et al. 2019, sections 3 and 6): each head's statistics
averaged over a corpus with their spread, the Jensen-Shannon distance between heads and a 2-D
map of the heads coloured by behaviour; click a head to pick it and see it on a sentence.

Numbers: analysis.corpus_heads, computed once per server with a progress bar; what it shows:
views.corpus_heads."""

import streamlit as st

from attnviz import TraceRequest, ui
from attnviz.analysis import corpus_heads as ch
from attnviz.analysis.head_stats import CONVENTIONS
from attnviz.i18n import _
from attnviz.ui.live_chart import index_in
from attnviz.ui.render import render
from attnviz.views import corpus_heads as view


def pick_head(c: ch.CorpusHeads, n_layers: int, n_heads: int) -> None:
    """A click on a head's point opens it (a click event of another shape: nothing)."""
    for point in ui.clicked_points("ch_map"):
        index = index_in(point.get("point_index"), n_layers * n_heads)
        if point.get("curve_number", 0) == 0 and index is not None:
            st.session_state["ch_layer"], st.session_state["ch_head"] = view.picked(
                c, index, n_heads)
            return


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    if ctx.model is None:
        render(view.no_model(ctx.error))
        return
    src = st.radio(_("Sentences from (the sample: Lincoln and Carroll, public domain)"),
                   view.SOURCES, key="ch_src", horizontal=True, bind="query-params",
                   format_func=view.source_name)
    if src == "sidebar":
        render(view.paste_note())
    text = view.corpus_text(src, ctx.text)
    conv = st.radio(_("Conventions"), list(CONVENTIONS), key="ch_conv", horizontal=True,
                    bind="query-params")
    sentences = ch.split_sentences(text)
    if not sentences:
        render(view.no_sentences())
        return
    try:
        c = corpus(ctx.model, tuple(sentences), conv)
    except ValueError as e:
        render(view.nothing_to_analyse(e))
        return
    render(view.summary(c, conv))
    head_view(ctx, tuple(sentences), conv)


def corpus(model, sentences: tuple[str, ...], conv: str) -> ch.CorpusHeads:
    """The corpus's statistics, computed once per server (with a progress bar)."""
    return ui.with_progress("results", ("corpus", model.key, sentences, conv),
                            _("Encoding the sentences..."), lambda progress: ch.corpus_heads(
                                model, list(sentences), conv, progress))


@ui.fragment  # layer, head, the sentence shown and a click on the map rerun only this part
def head_view(ctx: ui.Context, sentences: tuple[str, ...], conv: str) -> None:
    model = ctx.model
    c = corpus(model, sentences, conv)  # from the cache: the fragment keeps none of its own
    at = (model.key, sentences, conv)  # the figures' keys: built once per server
    c1, c2, c3 = st.columns([1, 1, 3])
    layer = c1.selectbox(_("Layer"), range(model.n_layers), key="ch_layer", bind="query-params")
    head = c2.selectbox(_("Head"), range(model.n_heads), key="ch_head", bind="query-params")
    c3.page_link("pages/explore.py", label=_("Open layer {layer}, head {head} on the sidebar's "
                                             "sentence").format(layer=layer, head=head),
                 icon=":material/explore:",
                 query_params={"ex_layer": str(layer), "ex_head": str(head)})
    render(ui.cached_figure(("ch_map", *at, layer, head),
                            lambda: view.head_map_figure(c, layer, head)), key="ch_map",
           on_select=lambda: pick_head(c, model.n_layers, model.n_heads),
           selection_mode="points")
    render(view.behaviours(c, layer, head))
    sent = st.selectbox(_("The picked head on one sentence of the corpus"),
                        range(len(c.sentences)), key="ch_sent",
                        format_func=lambda k: view.sentence_label(c, k))
    one = ui.cached_trace(model, TraceRequest(c.sentences[sent]))
    render(ui.cached_figure(("ch_one", one.key, layer, head, sent),
                            lambda: view.one_sentence(one, layer, head, sent)), key="ch_one")
    render(ui.cached_figure(("ch_stats", *at, layer, head), lambda: view.stats(c, layer, head)),
           key="ch_stats")
    render(view.download(c, conv), key="ch_download")


main()
