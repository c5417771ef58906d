"""Two sentences side by side: one head's attention for the tokens the sentences share, and the
difference (sentence A minus sentence B), each sentence encoded alone.

Numbers: analysis.compare (difflib alignment, the difference) on the two cached Traces;
figure: plotting.compare."""

import numpy as np
import streamlit as st

from attnviz import TraceRequest, ui
from attnviz.analysis.compare import align_tokens, aligned_difference
from attnviz.export.html import Heading, Markdown
from attnviz.i18n import _
from attnviz.plotting.compare import compare_figure
from attnviz.ui.render import render
from attnviz.ui.text import literal

DEFAULT_B = "I saw a dog"


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(Heading(_("Compare two sentences"), 1))
    render(Markdown(_(
        "Change a word and watch a head change its mind. Both sentences are encoded alone; "
        "tokens are **aligned** where the two token lists agree, in order, and for those "
        "tokens the page shows the head's weights in A, in B, and **A - B** (red: A reads "
        "that key more, blue: B does).")))
    ctx = ui.context()
    if not ui.require_text(ctx):
        return
    text_b = ctx.text_pair or st.text_input(_("Sentence B"), value=DEFAULT_B, key="cmp_b",
                                            bind="query-params", max_chars=2000) or DEFAULT_B
    if ctx.text_pair:
        render(Markdown(_("Sentence B is the sidebar's second sentence (encoded alone here)."),
                        "caption"))
    try:
        ta = ui.cached_trace(ctx.model, TraceRequest(ctx.text))
        tb = ui.cached_trace(ctx.model, TraceRequest(text_b))
    except ValueError as e:
        render(Markdown(_("Cannot encode this input: {error}").format(error=e), "error"))
        return
    for name, tr in (("A", ta), ("B", tb)):
        if tr.dropped:
            render(Markdown(_("Sentence {name} is longer than the model's {n} positions: "
                              "{dropped} tokens at the end were dropped.").format(
                name=name, n=tr.n_tokens, dropped=tr.dropped), "warning"))
    head_view(ctx, text_b)


@ui.fragment  # layer and head rerun only this part of the page
def head_view(ctx: ui.Context, text_b: str) -> None:
    # from the cache: the fragment keeps no trace of its own between reruns
    ta = ui.cached_trace(ctx.model, TraceRequest(ctx.text))
    tb = ui.cached_trace(ctx.model, TraceRequest(text_b))
    pairs = align_tokens(ta.tokens, tb.tokens)
    c1, c2 = st.columns(2)
    layer = c1.selectbox(_("Layer"), range(ta.n_layers), key="cmp_layer", bind="query-params")
    head = c2.selectbox(_("Head"), range(ta.n_heads), key="cmp_head", bind="query-params")
    wa, wb, diff = aligned_difference(ta.weights[layer, head], tb.weights[layer, head], pairs)
    toks = [ta.tokens[i] for i, _ in pairs]
    # each aligned token's number in A, as every label has it (engine.token_labels: saw #2)
    number = [ta.labels[i].rsplit(" #", 1)[1] for i, _ in pairs]
    render(Markdown(f"A: {literal(ctx.text)}  \nB: {literal(text_b)}  \n" + _(
        "{k} aligned tokens of {a} in A and {b} in B.").format(k=len(pairs), a=ta.n_tokens,
                                                              b=tb.n_tokens)))
    big = np.unravel_index(np.abs(diff).argmax(), diff.shape) if diff.size else None
    if big is not None:
        render(Markdown(_("Largest change: query {q} (#{qi} in A) reading key {k} (#{ki} in "
                          "A): {a:.3f} in A, {b:.3f} in B. Rows sum to less than 1: keys that "
                          "are not aligned are left out.").format(
            q=literal(toks[big[0]]), qi=number[big[0]], k=literal(toks[big[1]]),
            ki=number[big[1]], a=wa[big], b=wb[big]), "caption"))
    render(ui.cached_figure(("cmp_fig", ta.key, tb.key, layer, head), lambda: (
        compare_figure(wa, wb, diff, toks, (
            _("A, layer {layer} head {head}").format(layer=layer, head=head),
            _("B, same head"), "A - B"), labels=[ta.labels[i] for i, _ in pairs]))), key="cmp_fig")
    whole = aligned_difference(ta.weights, tb.weights, pairs)[2]
    render(Markdown(_("Mean |A - B| over the aligned pairs, per layer (all heads):") + " "
                    + _(", ").join(_("layer {i}: {v:.3f}").format(i=i, v=v) for i, v in
                                   enumerate(np.abs(whole).mean(axis=(1, 2, 3)))), "caption"))
    ui.download_arrays(_("Download the aligned weights and the difference (.npz)"), lambda: {
        "tokens_a": np.array(ta.tokens), "tokens_b": np.array(tb.tokens),
        "aligned": np.array(pairs, dtype=np.int64).reshape(-1, 2), "weights_a": wa,
        "weights_b": wb, "difference": diff, "difference_all_heads": whole,
        "layer": layer, "head": head}, file_name="attnviz_compare.npz", key="cmp_download")


main()
