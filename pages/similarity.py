"""Why are two sentences similar? Integrated gradients and gradient x input credit the cosine
of two sentence vectors to each token, beside raw attention, rollout, flow and occlusion.

Numbers: analysis.attribution (IG with a progress bar, once per server) and
analysis.occlusion on the model; ui.flow (a progress bar, shared with Head statistics) on each
sentence's cached Trace; what it shows: views.similarity. On a causal decoder only the
cosines of view.UNRELATED beside the typed pair (analysis.attribution.pair_cosines)."""

import streamlit as st

from attnviz import TraceRequest, ui
from attnviz.analysis import attribution, occlusion
from attnviz.i18n import _
from attnviz.ui import worklist
from attnviz.ui.boxes import text_box
from attnviz.ui.cache import peek
from attnviz.ui.flow import flow_of
from attnviz.ui.render import render
from attnviz.views import similarity as view


def attention_views(t) -> dict:
    """What mean pooling takes from each input under each attention map, once per server
    (the flow shared with Head statistics' flow tab)."""
    return ui.cached("results", ("pooled_views", t.key),
                     lambda: view.attention_views(t, flow_of(t)))


def prepared_side(model, text_b: str, steps: int):
    """B's half of every attribution against it, where this server holds it (a class server's
    warm-up makes it for the default B: attnviz.ui.preload), else None: both paths are
    encoded, cheaper for one sentence A than preparing B. The two ways give the same numbers
    up to float rounding (~1e-7; the tests pin 1e-6), so a shown digit may differ in the rare
    case the rounding falls on its boundary. Once evicted from the cache it is not made again
    here (a student's request never pays the preparation)."""
    return peek("results", attribution.side_key(model.key, text_b, steps))


def occluded(model, x: str, y: str, t):
    """Occlusion of sentence x against y, once per server (None past its token limit)."""
    if t.n_tokens > occlusion.MAX_TOKENS:
        return None
    return ui.with_progress("results", ("occlusion", model.key, x, y), _("Occlusion..."),
                            lambda progress: occlusion.occlude(model, x, y, progress),
                            quick=len(x) < worklist.HEAVY_CHARS)


def decoder(model, text_a: str, text_b: str) -> None:
    """The cosine of the typed pair and of view.UNRELATED on a causal decoder, once per
    server, and why the credits stop there."""
    pairs = [(text_a, text_b), *view.UNRELATED]
    try:
        cosines = ui.cached("results", ("pair_cosines", model.key, text_a, text_b),
                            lambda: attribution.pair_cosines(model, pairs))
    except ValueError as e:
        render(view.cannot_encode(e))
        return
    render(view.not_an_embedding(model, text_a, text_b, cosines))


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    ctx = ui.context()
    render(view.intro(ctx.model))
    if not ui.require_text(ctx):
        return
    if ctx.text_pair:
        text_b = ctx.text_pair
        render(view.pair_note())
    else:
        text_b = text_box(_("Sentence B"), value=view.DEFAULT_B, key="sim_b",
                          bind="query-params") or view.DEFAULT_B
    if view.is_decoder(ctx.model):  # not a sentence-embedding model: said, with its cosines
        return decoder(ctx.model, ctx.text, text_b)
    steps = st.select_slider(_("Integration steps"), view.STEPS,
                             value=attribution.DEFAULT_STEPS, key="sim_steps",
                             bind="query-params")
    offered = view.blanks(ctx.model.tokenizer)  # no [MASK] blank without a mask token
    blank = st.radio(_("The blank each word fades to"), offered, key="sim_blank",
                     format_func=lambda k: _(view.BLANKS[k]), horizontal=True,
                     bind="query-params") if len(offered) > 1 else offered[0]
    model = ctx.model
    try:
        ta = ui.cached_trace(model, TraceRequest(ctx.text))
        tb = ui.cached_trace(model, TraceRequest(text_b))
        if refusal := ui.needs_every_weight(model, ta) or ui.needs_every_weight(model, tb):
            render([*view.dropped(ta, tb), *refusal])
            return
        side = prepared_side(model, text_b, steps) if blank == "pad" else None
        res = ui.with_progress("results", ("ig", model.key, ctx.text, text_b, steps, blank),
                               _("Integrated gradients..."), lambda progress: attribution.attribute(
                                   model, ctx.text, text_b, steps, progress, side_b=side,
                                   baseline=blank),
                               quick=len(ctx.text) + len(text_b) < worklist.HEAVY_CHARS)
        occ_a, occ_b = occluded(model, ctx.text, text_b, ta), occluded(model, text_b, ctx.text, tb)
    except ValueError as e:
        render(view.cannot_encode(e))
        return
    render(view.dropped(ta, tb))
    render(view.score(res, ctx.text, text_b))
    views_a, views_b = attention_views(ta), attention_views(tb)
    left, right = st.columns(2)
    render(view.panel("A", res, "a", ta, occ_a, views_a), where=left,
           keys=("sim_bars_a", "sim_occ_a"))
    render(view.panel("B", res, "b", tb, occ_b, views_b), where=right,
           keys=("sim_bars_b", "sim_occ_b"))
    render(view.reading(model))
    render(view.download(res, occ_a, occ_b, views_a, views_b, steps, blank), key="sim_download")


main()
