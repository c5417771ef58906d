"""Windows and receptive fields: truncated self-attention (the lecture's speech example) vs full
and causal, receptive fields across depth vs a 1-D CNN, how much context BERT uses (with
[CLS]/[SEP] kept visible or not), and the measured cost of full vs windowed attention.

Numbers: cached Traces with `window=` / `causal=` (their `mask`), analysis.receptive (gradient
fields), analysis.windows (context sweeps, the weight on [CLS]/[SEP]), analysis.cost
(timings); figures: plotting.windows."""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis import cost, receptive
from attnviz.analysis import windows as win
from attnviz.analysis.common import special_mask
from attnviz.engine import TraceRequest, token_labels
from attnviz.i18n import N_, _
from attnviz.plotting import windows as windows_plots
from attnviz.plotting.common import axis_labels
from attnviz.ui import window_cost
from attnviz.ui.text import literal

PASSAGE = ("I saw a saw in the shed, so I took the saw and cut the old board in two "
           "before the rain came.")
METHOD_NAMES = {"full": N_("full"), "masked": N_("masked"), "windowed": N_("windowed")}
COST_COLUMNS = {"length": N_("length"), "window": N_("window"), "method": N_("method"),
                "seconds": N_("seconds"), "median_seconds": N_("median seconds")}
KEPT, PLAIN = N_("[CLS]/[SEP] kept visible"), N_("plain window")  # shown through _()
SOURCES = {"passage": N_("a longer passage"), "sidebar": N_("sidebar sentence")}


def window_slider(where=st) -> int:
    """The page's w, drawn by each tab that uses it (the cost tab has its own window in
    frames); kept while another tab is open (persist_state: the tabs are lazy)."""
    return where.slider(_("Window w: each token sees ±w tokens"), 0, 16, 1, key="win_w",
                        bind="query-params", persist_state="page")


def masks_tab(ctx: ui.Context, t) -> None:
    c1, c2, c3 = st.columns(3)
    w = window_slider(c1)
    layer = c2.selectbox(_("Layer"), range(t.n_layers), key="win_layer", bind="query-params",
                         format_func=lambda i: _("layer {i}").format(i=i), persist_state="page")
    head = c3.selectbox(_("Head"), range(t.n_heads), key="win_head", bind="query-params",
                        format_func=lambda h: _("head {k}").format(k=h), persist_state="page")
    traces = {"full": t, f"window ±{w}": ctx.trace(window=w), "causal": ctx.trace(causal=True)}
    masks = {k: v.mask for k, v in traces.items()}  # English names: the download's
    weights = {k: v.weights[layer, head] for k, v in traces.items()}
    shown = dict(zip(traces, (_("full"), _("window ±{w}").format(w=w), _("causal")),
                     strict=True))
    ui.show_figure(ui.cached_figure(("win_masks", t.key, w, layer, head), lambda: (
        windows_plots.masks_and_weights(
            t.tokens, {shown[k]: m for k, m in masks.items()},
            {shown[k]: x for k, x in weights.items()},
            _("Layer {layer}, head {head}: each mask (top) and the weights α' it gives "
              "(bottom)").format(layer=layer, head=head)))), key="win_masks")
    st.caption(_("Rows are queries, columns keys. Outside the blue cells the weight is exactly 0 "
                 "(its score became -inf before the softmax) and every row still sums to 1. "
                 "These windows hide [CLS] and [SEP] from tokens farther than w, as a plain "
                 "window does; *How much context?* also tries keeping them visible."))
    ui.download_arrays(_("Download masks and weights (.npz)"), {
        "tokens": t.tokens, **{f"mask_{i}": m for i, m in enumerate(masks.values())},
        **{f"weights_{i}": x for i, x in enumerate(weights.values())},
        "names": list(masks)}, file_name=f"attnviz_windows_L{layer}H{head}.npz", key="win_dl_m")


def fields_tab(ctx: ui.Context) -> None:
    model = ctx.model
    c1, c2 = st.columns(2)
    w = window_slider(c1)
    # options are English values (the URL's in English); shown in the session's language
    src = c2.radio(_("Text"), [SOURCES["passage"], SOURCES["sidebar"]], horizontal=True,
                   key="win_rf_text", bind="query-params", format_func=_)
    request = ctx.request if src == SOURCES["sidebar"] else TraceRequest(PASSAGE)
    ids, segments, _offsets = model.tokenize(request.text, request.pair)
    toks = model.tokens_of(ids)
    labels = token_labels(toks)
    if st.session_state.get("win_token") not in range(len(toks)):
        st.session_state["win_token"] = len(toks) // 2
    token = st.selectbox(_("Output token t"), range(len(toks)), key="win_token",
                         format_func=lambda i: labels[i], bind="query-params")
    key = (model.key, request, token, w)
    with st.spinner(_("Back-propagating from the output token through every depth...")):
        f = ui.cached("results", ("win_fields", *key),
                      lambda: receptive.all_fields(model, ids, segments, token, w))
    ui.show_figure(ui.cached_figure(("win_fields", *key), lambda: windows_plots.receptive_fields(
        f, toks, token, w, _("Which inputs can change token t at depth l: |∂(r·h_l[t])/∂x_j|, "
                             "r a fixed random unit vector (blank = exactly 0)"))),
        key="win_fields")
    depth = model.n_layers
    measured = {k: receptive.field_extent(v)[-1] for k, v in f.items()}
    analytic = receptive.analytic_field("window", len(toks), depth, token, w)
    a, b = receptive.field_extent(analytic)[-1]
    reach = _(", ").join(_("{kind} reaches #{lo}..#{hi}").format(
        kind=windows_plots.field_title(k, w), lo=lo, hi=hi) for k, (lo, hi) in measured.items())
    st.caption(_(
        "At depth {depth}: {reach}. Analytic field of the window and of the CNN (kernel 2w + 1): "
        "t ± l·w = #{a}..#{b}. The gradients are taken along r, one fixed random unit vector, so "
        "a single number per input says whether (and how much) it can change h_l[t]. Inside the "
        "field both models' gradients depend on the input (the CNN's too, through GELU); what "
        "does not depend on the content is the CNN's mixing weights, its kernels, while "
        "attention computes its weights α' from the sentence.").format(
        depth=depth, reach=reach, a=a, b=b))
    ui.download_arrays(_("Download the gradient fields (.npz)"), {"tokens": toks, **f},
                       file_name="attnviz_receptive_fields.npz", key="win_dl_r")


# A sweep this short is short work: ~2n windows of n tokens, encoded as one batch per sweep
# (analysis.windows.windows_per_batch), two sweeps well under a second on a quiet machine.
QUICK_SWEEP_TOKENS = 24


def context_sweeps(ctx: ui.Context) -> dict:
    """{KEPT: sweep, PLAIN: sweep} over w = 0 .. n - 1 (thinned for long inputs), computed once
    per (model, sentence) with a progress bar."""
    model, request = ctx.model, ctx.request
    ids, segments, _offsets = model.tokenize(request.text, request.pair)

    def compute(progress):
        windows = [0, *win.sweep_windows(len(ids))]
        return {name: win.context_sweep(
            model, ids, segments, windows, keep_special=(name == KEPT),
            progress=lambda f, msg, k=k, name=name: progress((k + f) / 2, f"{_(name)}, {msg}"))
            for k, name in enumerate((KEPT, PLAIN))}

    return ui.with_progress("results", ("win_sweep", model.key, request),
                            _("Running the encoder for each window:"), compute,
                            quick=len(ids) <= QUICK_SWEEP_TOKENS)


def context_tab(ctx: ui.Context, t) -> None:
    c1, c2 = st.columns(2)
    w = window_slider(c1)
    kept = c2.toggle(_("[CLS] and [SEP] stay visible to every token"), True, key="win_keep",
                     bind="query-params", help=_(
                         "On: a token sees its ±w neighbours and also [CLS] and [SEP]. Off: a "
                         "plain window, which hides them too. Both curves are drawn; this "
                         "chooses the solid one."))
    s = context_sweeps(ctx)
    main = KEPT if kept else PLAIN
    names = axis_labels(t.tokens)
    pair = s[main].pair
    label = _("{a} and {b}").format(a=names[pair[0]], b=names[pair[1]]) if pair else ""
    k = int(np.searchsorted(s[main].windows, min(w, s[main].windows[-1])))
    ui.show_figure(windows_plots.context_curve(
        s[main].windows, {_(name): {"mean": x.mean_cosine, "worst": x.cosine.min(axis=1),
                                    "pair": x.pair_cosine} for name, x in s.items()},
        _(main), s[main].full_pair_cosine, label, int(s[main].windows[k]),
        _("How far the final vectors move when each token sees only ±w neighbours")),
        key="win_context")
    share = win.special_share(t.weights, t.tokens)
    even = float(special_mask(t.tokens).mean())
    wk = int(s[main].windows[k])
    a, b = s[KEPT].mean_cosine[k], s[PLAIN].mean_cosine[k]
    gone = (a - b) / (1 - b) if b < 1 else 0.0
    worst = (_("worst token: {worst:.2f} with the specials visible") if kept else
             _("worst token: {worst:.2f} with the plain window")).format(
        worst=s[main].cosine[k].min())
    st.markdown(_(
        "With w = {w}, the final vectors keep a mean cosine of **{kept:.2f}** with full "
        "attention when [CLS] and [SEP] stay visible and **{plain:.2f}** with a plain window "
        "({worst}). This BERT's heads put **{share:.0%}** of their weight on [CLS] and [SEP] for "
        "this sentence (mean over layers, heads and queries; {even:.0%} if spread evenly over "
        "the tokens): they serve as a resting place, a *sink*. A plain window cuts most tokens "
        "off them, and keeping them visible removes **{gone:.0%}** of the drop at w = {w}.")
        .format(w=wk, kept=a, plain=b, worst=worst, share=share.mean(), even=even, gone=gone))
    if s[main].pair is not None:
        st.caption(_("The pair {pair}: cosine {cos:.3f} with w = {w}, {full:.3f} with full "
                     "attention ({mask}).").format(
            pair=literal(label), cos=s[main].pair_cosine[k], w=wk,
            full=s[main].full_pair_cosine, mask=_(main)))
    else:
        st.info(_("No token appears twice here; try *I saw a saw* to follow the two saws."))
    st.caption(_("Either way, this BERT was trained with full attention only: any window puts "
                 "it outside its training distribution. These curves show how the trained model "
                 "copes with a mask it never saw, not how much context a model trained with a "
                 "window would need."))
    ui.download_arrays(_("Download the sweeps (.npz)"), {
        "tokens": s[main].tokens, "windows": s[main].windows,
        "special_share_per_layer": share,
        **{f"{tag}_{name}": value for tag, x in (("kept", s[KEPT]), ("plain", s[PLAIN]))
           for name, value in (("cosine", x.cosine), ("mean_cosine", x.mean_cosine),
                               *((("pair_cosine", x.pair_cosine),) if x.pair else ()))},
        **({"pair": np.array(s[main].pair)} if s[main].pair else {})},
        file_name="attnviz_context_sweep.npz", key="win_dl_c")


def cost_tab(ctx: ui.Context) -> None:
    st.markdown(_("Speech has ~100 frames per second: attention over a minute is L = 6000. "
                  "This tab times random queries, keys and values (one head, d = 64), not BERT: "
                  "the sentence, w, layer and head of the other tabs do not enter here. Full "
                  "attention vs the windowed implementation that never builds the L×L matrix."))
    a, b = st.columns(2)
    top = a.select_slider(_("Longest L"), window_cost.LENGTHS[2:],
                          value=window_cost.DEFAULT_TOP, key="win_maxlen", bind="query-params")
    cw = b.select_slider(_("Window for this timing (± frames)"), window_cost.COST_WINDOWS,
                         value=window_cost.DEFAULT_WINDOW, key="win_cost_w", bind="query-params")
    dev = str(ctx.model.device)
    lengths = window_cost.lengths_up_to(top)
    ms = ui.with_progress("results", window_cost.key(dev, lengths, cw), _("Measuring:"),
                          lambda p: window_cost.measure(dev, lengths, cw, p))
    table = cost.measurements_table(ms)
    ui.show_figure(windows_plots.cost_chart(table, cost.device_name(dev), ms[0].memory_method),
                   key="win_cost")
    st.caption(_("Peak memory counts the tensors allocated, so it repeats exactly; times are "
                 "the best of 5 calls and wobble when other programs share the processor."))
    shown = {**table, "method": [_(METHOD_NAMES[m]) for m in table["method"]]}
    st.dataframe({**{_(COST_COLUMNS[k]): v for k, v in shown.items() if k != "peak_bytes"},
                  _("peak MiB"): table["peak_bytes"] / 2**20}, hide_index=True)
    ui.download_csv(_("Download the measurements (.csv)"), table, "attnviz_window_cost.csv",
                    key="win_dl_l")


def main() -> None:
    st.title(_("Windows and receptive fields"))
    st.markdown(_(
        "Truncated self-attention (the lecture's speech example) lets query $i$ see only the "
        "keys $j$ with $|i-j| \\le w$: $\\alpha'_{i,j} = \\mathrm{softmax}_{|i-j|\\le w}"
        "(q^i\\cdot k^j/\\sqrt{d_k})$. A decoder's causal mask keeps $j \\le i$.\n\n"
        "The lecture's slogan: *a CNN is self-attention that can only attend within a "
        "receptive field; self-attention is a CNN whose field is learned.* The paper it cites "
        "proves something narrower (Cordonnier, Loukas & Jaggi 2020, Theorem 1): a multi-head "
        "self-attention layer with $k^2$ heads and a relative positional encoding can express "
        "any $k\\times k$ convolution. One windowed head is not a convolution: it mixes one "
        "projection of the inputs with scalar weights, $b^i = \\sum_{|i-j|\\le w} "
        "\\alpha'_{i,j}\\, W^v a^j$, where a convolution applies its own matrix to each "
        "offset. What this page compares is the field: where information can come from."
    ))
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    tabs_view(ctx)


@ui.fragment  # the tabs and the choices inside them rerun only this part of the page
def tabs_view(ctx: ui.Context) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    # Lazy tabs: only the open one computes (the sweep and the cost timings are not free).
    tabs = st.tabs(
        [_("Masks and weights"), _("Receptive fields"), _("How much context?"),
         _("Long sequences: cost")], key="win_tab", on_change="rerun", bind="query-params")
    # The cost tab times random tensors; the others are written for a BERT-like model.
    draws = (lambda: ui.require_bert_like(ctx, _("This tab")) and masks_tab(ctx, t),
             lambda: ui.require_bert_like(ctx, _("This tab")) and fields_tab(ctx),
             lambda: ui.require_bert_like(ctx, _("This tab")) and context_tab(ctx, t),
             lambda: cost_tab(ctx))
    for tab, draw in zip(tabs, draws, strict=True):
        if tab.open:
            with tab:
                draw()


main()
