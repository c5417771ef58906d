"""Windows and receptive fields: truncated self-attention (the lecture's speech example) vs full
and causal, receptive fields across depth vs a 1-D CNN (Cordonnier et al. 2020,
arXiv:1911.03584), how much context BERT uses, and the measured cost of full vs windowed
attention on long sequences.

Numbers: cached Traces with `window=` / `causal=` (their `mask`), analysis.receptive (gradient
fields), analysis.windows (context sweep), analysis.cost (timings); figures: plotting.windows."""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis import cost, receptive
from attnviz.analysis import windows as win
from attnviz.engine import TraceRequest, token_labels
from attnviz.plotting import windows as windows_plots
from attnviz.plotting.common import axis_labels

PASSAGE = ("I saw a saw in the shed, so I took the saw and cut the old board in two "
           "before the rain came.")
LENGTHS = [256, 512, 1024, 2048, 4096, 8192]


def masks_tab(ctx: ui.Context, t, w: int, layer: int, head: int) -> None:
    traces = {"full": t, f"window ±{w}": ctx.trace(window=w), "causal": ctx.trace(causal=True)}
    masks = {k: v.mask for k, v in traces.items()}
    weights = {k: v.weights[layer, head] for k, v in traces.items()}
    ui.show_figure(windows_plots.masks_and_weights(
        t.tokens, masks, weights, f"Layer {layer}, head {head}: each mask (top) and the weights "
        "it gives (bottom)"), key="win_masks")
    st.caption("Rows are queries, columns keys. Outside the blue cells the weight is exactly 0 "
               "(its score became -inf before the softmax) and every row still sums to 1.")
    ui.download_arrays("Download masks and weights (.npz)", {
        "tokens": t.tokens, **{f"mask_{i}": m for i, m in enumerate(masks.values())},
        **{f"weights_{i}": x for i, x in enumerate(weights.values())},
        "names": list(masks)}, file_name=f"attnviz_windows_L{layer}H{head}.npz", key="win_dl_m")


def fields_tab(ctx: ui.Context, w: int) -> None:
    model = ctx.model
    src = st.radio("Text", ["a longer passage", "sidebar sentence"], horizontal=True,
                   key="win_rf_text", bind="query-params")
    request = ctx.request if src == "sidebar sentence" else TraceRequest(PASSAGE)
    ids, segments, _ = model.tokenize(request.text, request.pair)
    toks = model.tokens_of(ids)
    labels = token_labels(toks)
    if st.session_state.get("win_token") not in range(len(toks)):
        st.session_state["win_token"] = len(toks) // 2
    token = st.selectbox("Output token t", range(len(toks)), key="win_token",
                         format_func=lambda i: labels[i], bind="query-params")
    key = (model.key, request, token, w)
    with st.spinner("Back-propagating from the output token through every depth..."):
        f = ui.cached("results", ("win_fields", *key),
                      lambda: receptive.all_fields(model, ids, segments, token, w))
    ui.show_figure(ui.cached_figure(("win_fields", *key), lambda: windows_plots.receptive_fields(
        f, toks, token, w, "Which inputs can change token t at depth l: "
        "|∂(r·h_l[t])/∂x_j| from the models' own gradients (blank = exactly 0)")),
        key="win_fields")
    depth = model.n_layers
    measured = {k: receptive.field_extent(v)[-1] for k, v in f.items()}
    analytic = receptive.analytic_field("window", len(toks), depth, token, w)
    a, b = receptive.field_extent(analytic)[-1]
    st.caption(
        f"At depth {depth}: " + ", ".join(f"{k} reaches #{lo}..#{hi}"
                                          for k, (lo, hi) in measured.items()) +
        f". Analytic window/CNN field: t ± l·w = #{a}..#{b}. Inside the field the attention "
        "gradients depend on the sentence; the CNN's depend only on its fixed kernels.")
    ui.download_arrays("Download the gradient fields (.npz)", {"tokens": toks, **f},
                       file_name="attnviz_receptive_fields.npz", key="win_dl_r")


def context_tab(ctx: ui.Context) -> None:
    model, request = ctx.model, ctx.request

    def sweep(progress):
        ids, segments, _ = model.tokenize(request.text, request.pair)
        return win.context_sweep(model, ids, segments, win.sweep_windows(len(ids)),
                                 progress=progress)

    s = ui.with_progress("results", ("win_sweep", model.key, request),
                         "Running the encoder for each window:", sweep)
    label = (" and ".join(axis_labels(s.tokens)[i] for i in s.pair) if s.pair else "")
    ui.show_figure(windows_plots.context_curve(
        s.windows, s.mean_cosine, s.cosine.min(axis=1), s.pair_cosine, s.full_pair_cosine,
        label, "How far the final vectors move when each token sees only ±w neighbours"),
        key="win_context")
    k1 = int(np.argmax(s.windows == 1)) if 1 in s.windows else 0
    st.caption(f"With w = {s.windows[k1]} the final vectors keep a mean cosine of "
               f"{s.mean_cosine[k1]:.3f} with full attention (worst token "
               f"{s.cosine[k1].min():.3f})." + (
                   f" The pair {label}: cosine {s.pair_cosine[k1]:.3f} with w = "
                   f"{s.windows[k1]}, {s.full_pair_cosine:.3f} with full attention."
                   if s.pair else ""))
    if s.pair is None:
        st.info("No token appears twice here; try *I saw a saw* to follow the two saws.")
    ui.download_arrays("Download the sweep (.npz)", {
        "tokens": s.tokens, "windows": s.windows, "cosine": s.cosine,
        "mean_cosine": s.mean_cosine, **({"pair": np.array(s.pair), "pair_cosine": s.pair_cosine}
                                         if s.pair else {})},
        file_name="attnviz_context_sweep.npz", key="win_dl_c")


def cost_tab(ctx: ui.Context) -> None:
    st.markdown("Speech has ~100 frames per second: attention over a minute is L = 6000. Random "
                "queries/keys/values (1 head, d = 64), the engine's attention vs the blocked "
                "windowed implementation that never builds the L×L matrix.")
    a, b = st.columns(2)
    top = a.select_slider("Longest L", LENGTHS[2:], value=2048, key="win_maxlen",
                          bind="query-params")
    cw = b.slider("Window w (frames)", 1, 256, 50, key="win_cost_w", bind="query-params")
    dev = str(ctx.model.device)
    lengths = tuple(L for L in LENGTHS if L <= top)
    ms = ui.with_progress("results", ("win_cost", dev, lengths, cw), "Measuring:",
                          lambda p: cost.measure_sweep(lengths, cw, device=dev, progress=p))
    table = cost.measurements_table(ms)
    ui.show_figure(windows_plots.cost_chart(table, cost.device_name(dev), ms[0].memory_method),
                   key="win_cost")
    st.caption("Peak memory counts the tensors allocated, so it repeats exactly; times are the "
               "best of 5 calls and wobble when other programs share the processor.")
    st.dataframe({**{k: v for k, v in table.items() if k != "peak_bytes"},
                  "peak MiB": table["peak_bytes"] / 2**20}, hide_index=True)
    ui.download_csv("Download the measurements (.csv)", table, "attnviz_window_cost.csv",
                    key="win_dl_l")


def main() -> None:
    st.title("Windows and receptive fields")
    st.markdown(
        "Truncated self-attention lets query $i$ see only the keys $j$ with $|i-j| \\le w$: "
        "$w_{ij} = \\mathrm{softmax}_{|i-j|\\le w}(q^i\\cdot k^j/\\sqrt{d_k})$. A decoder's "
        "causal mask keeps $j \\le i$. A CNN is self-attention confined to a fixed field; "
        "self-attention is a CNN whose field is learned (Cordonnier et al. 2020)."
    )
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    c1, c2, c3 = st.columns(3)
    w = c1.slider("Window w (±w tokens)", 0, 16, 1, key="win_w", bind="query-params")
    layer = c2.selectbox("Layer", range(t.n_layers), key="win_layer", bind="query-params",
                         format_func=lambda i: f"layer {i}")
    head = c3.selectbox("Head", range(t.n_heads), key="win_head", bind="query-params",
                        format_func=lambda h: f"head {h}")
    # Lazy tabs: only the open one computes (the sweep and the cost timings are not free).
    tabs = st.tabs(
        ["Masks and weights", "Receptive fields", "How much context?", "Long sequences: cost"],
        key="win_tab", on_change="rerun", bind="query-params")
    draws = (lambda: masks_tab(ctx, t, w, layer, head), lambda: fields_tab(ctx, w),
             lambda: context_tab(ctx), lambda: cost_tab(ctx))
    for tab, draw in zip(tabs, draws, strict=True):
        if tab.open:
            with tab:
                draw()


main()
