"""Windows and receptive fields: truncated vs full and causal attention, receptive fields vs a
1-D CNN, how much context BERT uses, windows' cost, today's sliding windows and attention sink.

Numbers: cached Traces, analysis.receptive, .windows, .cost (ui.window_cost); views.windows."""

import streamlit as st

from attnviz import ui
from attnviz.analysis import receptive
from attnviz.engine import token_labels
from attnviz.i18n import _
from attnviz.ui import window_cost
from attnviz.ui.render import render
from attnviz.views import windows as view


def window_slider(where=st) -> int:  # drawn by each tab that uses it, kept across tabs
    return where.slider(_("Window w: each token sees ±w tokens"), 0, 16, 1, key="win_w",
                        bind="query-params", persist_state="page")


def masks_tab(ctx: ui.Context, t) -> None:
    c1, c2, c3 = st.columns(3)
    w = window_slider(c1)
    layer = c2.selectbox(_("Layer"), range(t.n_layers), key="win_layer", bind="query-params",
                         format_func=lambda i: _("layer {i}").format(i=i), persist_state="page")
    head = c3.selectbox(_("Head"), range(t.n_heads), key="win_head", bind="query-params",
                        format_func=lambda h: _("head {k}").format(k=h), persist_state="page")
    traces = view.mask_traces(ctx.trace, w)
    render(ui.cached_figure(("win_masks", t.key, w, layer, head), lambda: view.masks_figure(
        t, traces, w, layer, head)), key="win_masks")
    render(view.masks_note())
    render(view.masks_download(t, traces, layer, head), key="win_dl_m")


def fields_tab(ctx: ui.Context) -> None:
    model = ctx.model
    c1, c2 = st.columns(2)
    w = window_slider(c1)
    # options are English values (the URL's in English); shown in the session's language
    src = c2.radio(_("Text"), [view.SOURCES["passage"], view.SOURCES["sidebar"]],
                   horizontal=True, key="win_rf_text", bind="query-params", format_func=_)
    request = view.fields_request(ctx.request, src)
    ids, segments, _offsets = model.tokenize(request.text, request.pair)
    toks = model.tokens_of(ids)
    if st.session_state.get("win_token") not in range(len(toks)):
        st.session_state["win_token"] = len(toks) // 2
    token = st.selectbox(_("Output token t"), range(len(toks)), key="win_token",
                         format_func=token_labels(toks).__getitem__, bind="query-params")
    key = (model.key, request, token, w)
    with st.spinner(_("Back-propagating from the output token through every depth...")):
        f = ui.cached("results", ("win_fields", *key),
                      lambda: receptive.all_fields(model, ids, segments, token, w))
    render(ui.cached_figure(("win_fields", *key), lambda: view.fields_figure(f, toks, token, w)),
           key="win_fields")
    render(view.fields_note(model.n_layers, f, len(toks), token, w, toks))
    render(view.fields_download(toks, f), key="win_dl_r")


def context_sweeps(ctx: ui.Context) -> dict:
    """{KEPT: sweep, PLAIN: sweep}, computed once per (model, sentence) with a progress bar."""
    model, request = ctx.model, ctx.request
    n = len(model.tokenize(request.text, request.pair)[0])
    return ui.with_progress("results", ("win_sweep", model.key, request),
                            _("Running the encoder for each window:"),
                            lambda progress: view.context_sweeps(model, request, progress),
                            quick=n <= view.QUICK_SWEEP_TOKENS)


def context_tab(ctx: ui.Context, t) -> None:
    c1, c2 = st.columns(2)
    w = window_slider(c1)
    kept = c2.toggle(_("[CLS] and [SEP] stay visible to every token"), True, key="win_keep",
                     bind="query-params", help=_(
                         "On: a token sees its ±w neighbours and also [CLS] and [SEP]. Off: a "
                         "plain window, which hides them too. Both curves are drawn; this "
                         "chooses the solid one."))
    s = context_sweeps(ctx)
    render(view.context_figure(t, s, kept, w), key="win_context")
    render(view.context_text(t, s, kept, w))
    render(view.context_download(t, s, kept), key="win_dl_c")


def cost_tab(ctx: ui.Context) -> None:
    render(view.cost_intro())
    a, b = st.columns(2)
    top = a.select_slider(_("Longest L"), window_cost.LENGTHS[2:],
                          value=window_cost.DEFAULT_TOP, key="win_maxlen", bind="query-params")
    cw = b.select_slider(_("Window for this timing (± frames)"), window_cost.COST_WINDOWS,
                         value=window_cost.DEFAULT_WINDOW, key="win_cost_w", bind="query-params")
    dev, lengths = str(ctx.model.device), window_cost.lengths_up_to(top)
    ms = ui.with_progress("results", window_cost.key(dev, lengths, cw), _("Measuring:"),
                          lambda p: window_cost.measure(dev, lengths, cw, p))
    render(view.cost_figure(ms, dev), key="win_cost")
    render(view.cost_note())
    render(view.cost_table(ms))
    render(view.cost_download(ms), key="win_dl_l")


def decoders_tab(ctx: ui.Context, t) -> None:
    size = st.slider(_("Sliding window W (keys each query sees)"), 2, 8, 4, key="win_slide",
                     bind="query-params")
    for (*shown, numbers), keys, dl in (  # the sink part: a note alone for an encoder
            (view.sliding_tab(size), ("win_slide_masks", "win_reach"), "win_dl_s"),
            (view.sink_part(ctx.model, t), ("win_sink",), "win_dl_k")):
        render(shown, keys=keys)
        render(numbers, key=dl)
    if view.streams(ctx.model):
        w = st.select_slider(_("Window for the next word (tokens)"), view.STREAM_WINDOWS, 32,
                             key="win_stream_w", bind="query-params")
        with st.spinner(_("Running the model with each mask...")):
            res = ui.cached("results", ("win_stream", ctx.model.key, w),
                            lambda: view.streaming(ctx.model, w))
        *shown, numbers = view.streaming_part(ctx.model, res, w)
        render(shown, keys=("win_stream",))
        render(numbers, key="win_dl_n")


def bert_only(ctx: ui.Context) -> bool:
    """True for a BERT-like model; else says why not (a decoder: where its windows are)."""
    render(refusal := view.bert_only(ctx.model) if ctx.model is not None else [])
    return not refusal


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    if ui.trace_or_message(ctx, streams=True) is not None:
        tabs_view(ctx)


@ui.fragment  # the tabs and the choices inside them rerun only this part of the page
def tabs_view(ctx: ui.Context) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    tabs = st.tabs([_(tab) for tab in view.TABS], key="win_tab", on_change="rerun",
                   bind="query-params")
    # Lazy tabs (only the open one computes); the first three are for a BERT-like model.
    draws = (lambda: bert_only(ctx) and masks_tab(ctx, t),
             lambda: bert_only(ctx) and fields_tab(ctx),
             lambda: bert_only(ctx) and context_tab(ctx, t),
             lambda: cost_tab(ctx), lambda: decoders_tab(ctx, t))
    for tab, draw in zip(tabs, draws, strict=True):
        if tab.open:
            with tab:
                draw()


main()
