"""Heads across many sentences (Clark et al. 2019, sections 3 and 6): each head's statistics
averaged over a corpus with their spread, the Jensen-Shannon distance between heads and a 2-D
map of the heads coloured by behaviour; click a head to pick it and see it on a sentence.

Numbers: analysis.corpus_heads (each sentence traced alone; classical MDS), computed once per
server with a progress bar; figures: plotting.corpus and plotting.stats."""

from collections import Counter

import numpy as np
import streamlit as st

from attnviz import TraceRequest, ui
from attnviz.analysis import corpus_heads as ch
from attnviz.analysis.head_stats import CONVENTIONS, STATS
from attnviz.export.html import Heading, Markdown
from attnviz.i18n import N_, _
from attnviz.plotting.corpus import head_map
from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.plotting.stats import stats_heatmaps
from attnviz.ui.render import render

BEHAVIOUR_LABELS = {"previous": N_("previous"), "next": N_("next"), "broad": N_("broad"),
                    "mixed": N_("mixed")}  # [CLS], [SEP] stay as they are


def behaviour(name: str) -> str:
    return _(BEHAVIOUR_LABELS[name]) if name in BEHAVIOUR_LABELS else name


def pick_head(n_heads: int) -> None:
    points = [p for p in ui.clicked_points("ch_map")
              if p.get("curve_number", 0) == 0]
    if points:
        st.session_state["ch_layer"], st.session_state["ch_head"] = divmod(
            int(points[0]["point_index"]), n_heads)


def corpus_text(ctx) -> str:
    names = {"sidebar": _("sidebar"), "sample": _("sample")}
    src = st.radio(_("Sentences from (the sample: Lincoln and Carroll, public domain)"),
                   ["sidebar", "sample"], key="ch_src", horizontal=True, bind="query-params",
                   format_func=names.get)
    if src == "sample":
        return ch.sample_text()
    render(Markdown(_("Paste a paragraph or more into the sidebar's sentence box (up to "
                      "20,000 characters); it is split into sentences at . ! ? and line "
                      "breaks."), "caption"))
    return ctx.text


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(Heading(_("Heads across many sentences"), 1))
    render(Markdown(_(
        "One sentence shows what a head did once. Averaged over many sentences, the statistics "
        "of *Head statistics* say what a head **usually** does (the hover gives the mean ± its "
        "spread over sentences). The map places heads that attend alike near each other: "
        "distance = square root of the Jensen-Shannon divergence of their rows, averaged over "
        "queries and sentences; map = classical multidimensional scaling.")))
    ctx = ui.context()
    if ctx.model is None:
        render(Markdown(ctx.error or _("No model is loaded."), "error"))
        return
    text = corpus_text(ctx)
    conv = st.radio(_("Conventions"), list(CONVENTIONS), key="ch_conv", horizontal=True,
                    bind="query-params")
    sentences = ch.split_sentences(text)
    if not sentences:
        render(Markdown(_("Type or paste a few sentences into the sidebar's box to begin, or "
                          "pick the sample."), "info"))
        return
    model = ctx.model
    try:
        c = corpus(model, tuple(sentences), conv)
    except ValueError as e:
        render(Markdown(_("Nothing to analyse: {error}. Longer sentences are left out because "
                          "the distances between heads cost (heads² x tokens²) per "
                          "sentence.").format(error=e), "warning"))
        return
    render(Markdown(
        _("{n} sentences, {tokens:,} tokens, **{conv}** conventions ({about})").format(
            n=len(c.sentences), tokens=c.tokens, conv=conv, about=_(CONVENTIONS[conv]))
        + (_("; {k} sentence(s) left out (longer than {max} tokens, or empty)").format(
            k=c.skipped, max=ch.MAX_SENTENCE_TOKENS) if c.skipped else "")
        + _("; at most {n} sentences.").format(n=ch.MAX_SENTENCES), "caption"))
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
    share = ch.explained_share(c.eigenvalues)
    render(ui.cached_figure(("ch_map", *at, layer, head), lambda: head_map(
        c.coords, c.behaviour, (layer, head), title=_(
            "Map of the {n} heads (the two axes carry {share:.0%} of the distances' "
            "variance)").format(n=c.coords.shape[0], share=share))), key="ch_map",
        on_select=lambda: pick_head(model.n_heads), selection_mode="points")
    counts = Counter(c.behaviour.ravel().tolist())
    render(Markdown(_(
        "Layer {layer}, head {head}: **{behaviour}**. Behaviours: {counts}. A head is [CLS], "
        "[SEP], previous or next when its mean share there is at least {share:.0%}; otherwise "
        "broad when its mean row entropy is at least {entropy:.0%} of ln n; otherwise "
        "mixed.").format(layer=layer, head=head, behaviour=behaviour(c.behaviour[layer, head]),
                         counts=", ".join(f"{behaviour(k)} {counts[k]}"
                                          for k in ch.BEHAVIOURS if counts[k]),
                         share=ch.BEHAVIOUR_SHARE, entropy=ch.BROAD_ENTROPY), "caption"))
    sent = st.selectbox(_("The picked head on one sentence of the corpus"),
                        range(len(c.sentences)), key="ch_sent",
                        format_func=lambda k: f"{k + 1}: {c.sentences[k][:90]}")
    one = ui.cached_trace(model, TraceRequest(c.sentences[sent]))
    render(ui.cached_figure(("ch_one", one.key, layer, head, sent), lambda: (
        attention_heatmap(one.weights[layer, head], one.tokens, "weights",
                          _("Layer {layer}, head {head}, sentence {k}").format(
                              layer=layer, head=head, k=sent + 1)))), key="ch_one")
    render(ui.cached_figure(("ch_stats", *at, layer, head), lambda: stats_heatmaps(
        c.mean, {k: _(v) for k, v in STATS.items()}, selected=(layer, head),
        spread=c.spread)), key="ch_stats")
    ui.download_arrays(_("Download the corpus statistics (.npz)"), lambda: {
        "sentences": np.array(c.sentences), "conventions": conv,
        **{f"mean_{k}": v for k, v in c.mean.items()},
        **{f"spread_{k}": v for k, v in c.spread.items()},
        "relative_entropy": c.relative_entropy, "js_divergence": c.js,
        "distance": c.distance, "map": c.coords, "eigenvalues": c.eigenvalues,
        "behaviour": c.behaviour}, file_name="attnviz_corpus_heads.npz", key="ch_download")


main()
