"""Why are two sentences similar? The bundled model is a sentence-embedding model: each
sentence is encoded alone, its tokens' last-layer vectors are averaged, and two sentences are
compared by the cosine. Integrated gradients (from a chosen blank) and gradient x input
attribute that cosine to each token, beside what raw attention, rollout and flow say about the
same tokens, and beside occlusion (each word removed or masked in turn).

Numbers: analysis.attribution (IG with a progress bar, once per server) and
analysis.occlusion on the model;
analysis.rollout and analysis.flow (ui.flow: a progress bar, shared with Head statistics) on
each sentence's cached Trace; figures: plotting.attribution."""

import numpy as np
import streamlit as st

from attnviz import TraceRequest, ui
from attnviz.analysis import attribution, flow, occlusion
from attnviz.analysis.common import special_mask
from attnviz.analysis.rollout import rollout
from attnviz.export.html import Heading, Markdown, Metric, Table
from attnviz.i18n import N_, _
from attnviz.plotting.attribution import attribution_bars, occlusion_bars
from attnviz.plotting.common import axis_labels
from attnviz.ui import worklist
from attnviz.ui.cache import peek
from attnviz.ui.flow import flow_of
from attnviz.ui.render import render
from attnviz.ui.text import literal

DEFAULT_B = attribution.DEFAULT_B
VIEW_LABELS = {"raw attention (last layer)": N_("raw attention (last layer)"),
               "rollout": N_("rollout"), "flow": N_("flow")}  # shown translated; export keys stay
BLANKS = {"pad": N_("[PAD] (the default)"), "mask": N_("[MASK]")}  # attribution.BASELINES


def attention_views(t) -> dict:
    """What mean pooling takes from each input under each attention map: [n] per method."""
    def compute():
        out = {"raw attention (last layer)": attribution.pooled_importance(
            t.weights[-1].astype(np.float64).mean(0)),
            "rollout": attribution.pooled_importance(rollout(t.weights)[-1])}
        flows = flow_of(t)  # the last layer's, shared with Head statistics' flow tab
        if flows is not None:
            out["flow"] = attribution.pooled_importance(flows)
        return out
    return ui.cached("results", ("pooled_views", t.key), compute)


def prepared_side(model, text_b: str, steps: int):
    """B's half of every attribution against it, where this server holds it (a class server's
    warm-up makes it for the default B: attnviz.ui.preload), else None: both paths are
    encoded, cheaper for one sentence A than preparing B. The two ways give the same numbers
    up to float rounding (~1e-7; the tests pin 1e-6), so a shown digit may differ in the rare
    case the rounding falls on its boundary. Once evicted from the cache it is not made again
    here (a student's request never pays the preparation)."""
    return peek("results", attribution.side_key(model.key, text_b, steps))


def sentence_panel(name: str, res, side: str, t, occ) -> None:
    ig, gxi = (res.ig_a, res.gxi_a) if side == "a" else (res.ig_b, res.gxi_b)
    if len(ig) <= 2:
        render(Markdown(_("Sentence {name} has no words to credit (only [CLS] and [SEP]).")
                        .format(name=name), "info"))
        return
    base = res.baseline_a if side == "a" else res.baseline_b
    gap = res.gap(side)
    render(Markdown(
        _("**Sentence {name}.** Sum of IG = {ig:+.5f}; score minus the score with {name} "
          "blanked = {score:.5f} - {base:.5f} = {drop:+.5f}; completeness gap "
          "**{gap:.3%}**").format(name=name, ig=ig.sum(), score=res.score, base=base,
                                  drop=res.score - base, gap=gap)
        + " " + (_("(within 1%)") if gap <= 0.01 else _("(**over 1%: raise the steps**)"))))
    views = attention_views(t)
    ig_label = _("integrated gradients")
    series = {ig_label: ig, _("gradient × input"): gxi,
              **{_(VIEW_LABELS[k]): v for k, v in views.items()}}
    render(attribution_bars(res.tokens_a if side == "a" else res.tokens_b, series,
                            _("Sentence {name}: what each method credits to each "
                              "token").format(name=name)),
           key=f"sim_bars_{side}")
    words = ~special_mask(res.tokens_a if side == "a" else res.tokens_b)
    methods = [m for m in series if m != ig_label]
    rho = _("Spearman ρ with IG (words)")
    # half a page wide: the method's name wraps in a medium column, the number keeps its room
    render(Table({_("method"): methods, rho: [
        attribution.spearman(ig[words], np.asarray(series[m])[words]) for m in methods]}),
        column_config={_("method"): st.column_config.TextColumn(width="medium"),
                       rho: st.column_config.NumberColumn(format="%.4f", width="small")})
    if "flow" not in views:
        render(Markdown(_("Flow is computed up to {max} tokens; this sentence has {n}.")
                        .format(max=flow.MAX_TOKENS, n=t.n_tokens), "caption"))
    if occ is None:
        render(Markdown(_("Occlusion is computed up to {max} tokens; this sentence has {n}.")
                        .format(max=occlusion.MAX_TOKENS, n=t.n_tokens), "caption"))
        return
    tokens = res.tokens_a if side == "a" else res.tokens_b
    occ_series = {ig_label: ig, _("occlusion: word removed"): occ.remove,
                  _("occlusion: word → [MASK]"): occ.mask}
    render(occlusion_bars(tokens, occ_series, _("Sentence {name}: IG beside occlusion")
                          .format(name=name)), key=f"sim_occ_{side}")
    occluded = ~np.isnan(occ.remove)  # the words ([CLS]/[SEP] are never occluded)
    render(Table({_("token"): list(np.asarray(axis_labels(tokens))[occluded]),
                  **{k: np.round(np.asarray(v, float)[occluded], 5) for k, v in zip(
                      (_("IG"), _("removed"), _("→ [MASK]")), occ_series.values(),
                      strict=True)}}))


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(Heading(_("Why are two sentences similar?"), 1))
    render(Markdown(_(
        "all-MiniLM-L6-v2 turns a sentence into one vector: the mean of its tokens' last-layer "
        "vectors. Two sentences are similar when the **cosine** of their vectors is high. "
        "**Integrated gradients** (Sundararajan, Taly and Yan 2017) credit that cosine to each "
        "token: the input vectors of **all** words fade together, along one straight path, to "
        "a blank sentence (here each word becomes the word you pick below, at the same place; "
        "[CLS] and [SEP] stay), and each token is credited with the part of the cosine's "
        "change that its own coordinates carry along the way. The credits add up to the score "
        "minus the blank's score (*completeness*), and they depend on the blank: another "
        "blank gives other credits. Beside them, what the attention maps say mean pooling "
        "takes from each token, and **occlusion**: each word taken away alone, the others "
        "kept.")))
    ctx = ui.context()
    if not ui.require_text(ctx):
        return
    if ctx.text_pair:
        text_b = ctx.text_pair
        render(Markdown(_("Sentence B is the sidebar's second sentence (encoded alone here)."),
                        "caption"))
    else:
        text_b = st.text_input(_("Sentence B"), value=DEFAULT_B, key="sim_b", bind="query-params",
                               max_chars=2000) or DEFAULT_B
    steps = st.select_slider(_("Integration steps"), [8, 16, 24, 32, 64],
                             value=attribution.DEFAULT_STEPS, key="sim_steps",
                             bind="query-params")
    blank = st.radio(_("The blank each word fades to"), list(BLANKS), key="sim_blank",
                     format_func=lambda k: _(BLANKS[k]), horizontal=True, bind="query-params")
    model = ctx.model
    try:
        ta = ui.cached_trace(model, TraceRequest(ctx.text))
        tb = ui.cached_trace(model, TraceRequest(text_b))
        side = prepared_side(model, text_b, steps) if blank == "pad" else None
        res = ui.with_progress("results", ("ig", model.key, ctx.text, text_b, steps, blank),
                               _("Integrated gradients..."), lambda progress: attribution.attribute(
                                   model, ctx.text, text_b, steps, progress, side_b=side,
                                   baseline=blank),
                               quick=len(ctx.text) + len(text_b) < worklist.HEAVY_CHARS)
        occ_a, occ_b = (ui.with_progress(
            "results", ("occlusion", model.key, x, y), _("Occlusion..."),
            lambda progress, x=x, y=y: occlusion.occlude(model, x, y, progress),
            quick=len(x) < worklist.HEAVY_CHARS) if tr.n_tokens <= occlusion.MAX_TOKENS
            else None for x, y, tr in ((ctx.text, text_b, ta), (text_b, ctx.text, tb)))
    except ValueError as e:
        render(Markdown(_("Cannot encode this input: {error}").format(error=e), "error"))
        return
    for name, tr in (("A", ta), ("B", tb)):
        if tr.dropped:
            render(Markdown(_("Sentence {name} is longer than the model's {n} positions: "
                              "{dropped} tokens at the end were dropped.").format(
                name=name, n=tr.n_tokens, dropped=tr.dropped), "warning"))
    render(Metric(_("Cosine similarity"), f"{res.score:.4f}"))
    render(Markdown(f"A: {literal(ctx.text)}  \nB: {literal(text_b)}"))
    left, right = st.columns(2)
    with left:
        sentence_panel("A", res, "a", ta, occ_a)
    with right:
        sentence_panel("B", res, "b", tb, occ_b)
    render(Markdown(_(
        "The bars of each method are scaled to its largest |value| (hover for the number). "
        "IG and gradient × input can be negative (a token that makes the sentences less "
        "alike); the attention views are shares and never negative, and they say where "
        "information can flow, not what it does to the cosine. [CLS] and [SEP] are part of "
        "the blank, so IG gives them 0 by construction; the rank correlations leave them "
        "out. Occlusion and IG are both in units of the cosine but ask different questions: "
        "occlusion takes one word away while all the others stay (its drops need not add up "
        "to anything); IG fades all words together and shares out the whole change."),
        "info"))
    ui.download_arrays(_("Download the attributions (.npz)"), lambda: {
        "tokens_a": np.array(res.tokens_a), "tokens_b": np.array(res.tokens_b),
        "ig_a": res.ig_a, "ig_b": res.ig_b, "gxi_a": res.gxi_a, "gxi_b": res.gxi_b,
        "score": res.score, "baseline_a": res.baseline_a, "baseline_b": res.baseline_b,
        "steps": steps, "blank": blank,
        **{f"occlusion_{mode}_{k}": getattr(o, mode) for k, o in (("a", occ_a), ("b", occ_b))
           if o is not None for mode in occlusion.MODES},
        **{f"a_{k}": v for k, v in attention_views(ta).items()},
        **{f"b_{k}": v for k, v in attention_views(tb).items()}},
        file_name="attnviz_similarity.npz", key="sim_download")


main()
