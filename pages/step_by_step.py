"""Self-attention step by step in the notation of Hung-yi Lee's self-attention lecture: vectors,
q k v, scores, weights, outputs, multi-head, additive similarity.

Numbers: analysis.walkthrough (toy numbers from a seed, or one head of the model recomputed
from its weights and checked against the cached Trace); figures: plotting.steps."""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis import walkthrough as wt
from attnviz.engine import token_labels
from attnviz.plotting import heads_grid
from attnviz.plotting import steps as sp
from attnviz.ui.text import literal

STEPS = {1: "Vectors", 2: "Queries, keys, values", 3: "Similarity", 4: "Scale, temperature",
         5: "Softmax", 6: "Weighted sum", 7: "Multi-head", 8: "Additive similarity"}
show = ui.show_figure


def main() -> None:
    st.title("Self-attention step by step")
    st.caption("Notation of Hung-yi Lee's self-attention lecture (and the notes on it): the "
               "inputs $I=(a^1\\cdots a^n)$ are $m\\times n$, $Q=W^qI$, the scores "
               "$A=K^{\\top}Q$ have a **row per key**, $A'$ = softmax of each column, "
               "$O=VA'$. Elsewhere attnviz draws score and weight matrices with **queries in "
               "rows**: $A^{\\top}$ and $A'^{\\top}$ (PyTorch's row layout writes them "
               "$QK^{\\top}$ and $\\mathrm{softmax}(QK^{\\top}/\\sqrt{d_k})$). Math indices count "
               "from 1 like the lecture; axis labels count tokens from #0.")
    ctx = ui.context()
    c1, c2 = st.columns([1, 4])
    # Options are the URL's values (?sbs_mode=real&sbs_step=3); names go in the captions.
    mode = c1.radio("Numbers", ["toy", "real"], key="sbs_mode", bind="query-params",
                    captions=["small, to redo on paper", "a head of the bundled BERT"])
    step = c2.radio("Step", list(STEPS), key="sbs_step", bind="query-params", horizontal=True,
                    captions=list(STEPS.values()))
    box = st.container(horizontal=True)
    if mode == "toy":
        if not ui.require_text(ctx):
            return
        m = box.slider("m (input size)", 2, 8, 4, key="sbs_m", bind="query-params")
        d_k = box.slider("d_k (query/key size)", 2, 8, 3, key="sbs_dk", bind="query-params")
        p = box.slider("p (value size)", 2, 8, 3, key="sbs_p", bind="query-params")
        seed = box.number_input("Random seed", 0, 10_000, 0, key="sbs_seed",
                                bind="query-params", help="Chooses the toy's numbers.")
        walk = wt.toy_walkthrough(ctx.text, m, d_k, p, int(seed))
        if walk.options["cut"]:
            st.warning(f"The sentence is longer than the toy's {wt.MAX_TOY_TOKENS} words: the last "
                       f"{walk.options['cut']} words were dropped (Real mode takes it all).")
        dec, qdec = 1, 2
        t = layer = None
    else:
        t = ui.trace_or_message(ctx)
        if t is None or not ui.require_bert_like(ctx, "Real mode"):
            return
        layer = box.selectbox("Layer", range(t.n_layers), key="sbs_layer", bind="query-params")
        head = box.selectbox("Head", range(t.n_heads), key="sbs_head", bind="query-params")
        walk = wt.real_walkthrough(ctx.model, t, layer, head)
        diff = wt.trace_differences(walk, t)
        st.caption(f"Recomputed from layer {layer}'s input $a^i$ and the slices "
                   f"W[{head * t.head_dim}:{(head + 1) * t.head_dim}] of W^q, W^k, W^v (+ biases); "
                   f"max |recomputed − engine trace| = {max(diff.values()):.1e}.")
        dec, qdec = 3, 3
    labels = sp.token_axis(walk.tokens)
    for k in ("sbs_query", "sbs_key"):  # a position past a new, shorter sentence goes back to 0
        if st.session_state.get(k, 0) >= walk.n:
            st.session_state[k] = 0
    i = box.number_input("Query token #", 0, walk.n - 1, 0, key="sbs_query", bind="query-params",
                         help="Position of the token that looks (the row of the score matrix).")
    st.caption(f"Query: **{literal(walk.tokens[i])} #{i}**, i.e. $q^{{{i + 1}}}$.")
    st.subheader(f"Step {step}: {STEPS[step]}")
    real = (ctx.model, t, layer) if mode == "real" else None
    extra = show_step(step, walk, i, labels, dec, qdec, int(seed) if mode == "toy" else 0, real)

    ui.download_arrays("Download this walkthrough's numbers (.npz)", {**walk.arrays(), **extra},
                       file_name=f"attnviz_steps_{mode}_step{step}.npz", key="sbs_download")


def show_step(step: int, walk, i: int, labels, dec: int, qdec: int, seed: int,
              real: tuple | None) -> dict:
    """Draw one step for query i; returns the extra numbers it adds to the download.

    `real` is (model, trace, layer) in real mode, None in toy mode."""
    mode = "toy" if real is None else "real"
    extra: dict = {}
    if step == 1:
        st.markdown(f"Each of the $n={walk.n}$ tokens becomes a vector $a^i$ of size "
                    f"$m={walk.m}$; side by side they form $I$. " + (
                        "Toy vectors depend only on the word, so both *saw* get the same $a^i$: "
                        "without positions attention cannot tell them apart."
                    if mode == "toy" else f"In BERT, $a^i$ is the input of layer {walk.layer}."))
        show(sp.matrix_figure(walk.inputs.T, sp.dim_labels("a", walk.m), labels,
                              f"I ({walk.m} × {walk.n})", decimals=dec), key="s1_A")
    elif step == 2:
        st.markdown(r"$q^i = W^q a^i,\; k^i = W^k a^i,\; v^i = W^v a^i$; all tokens at once: "
                    r"$Q = W^qI,\; K = W^kI,\; V = W^vI$." + (
                        r" BERT's projections also add a bias: $q^i = W^q a^i + b^q$, so "
                        r"$Q = W^qI + b^q\mathbf{1}^{\top}$ (the bias added to every column, "
                        "drawn as its own panel). Colours of these big matrices stop at the "
                        "99th percentile of |value|; hover for the exact numbers."
                        if mode == "real" else ""))
        for name in "qkv":
            show(sp.projection_figure(walk, name, qdec), key=f"s2_{name}")
    elif step == 3:
        j = st.number_input("Key token #", 0, walk.n - 1, min(1, walk.n - 1), key="sbs_key",
                            bind="query-params")
        st.caption(f"Key: **{literal(walk.tokens[j])} #{j}**, i.e. $k^{{{j + 1}}}$.")
        if mode == "toy":
            for k in range(walk.n):
                st.latex(sp.dot_product_latex(walk.queries[i], walk.keys[k], i, k, qdec))
        show(sp.dot_terms_figure(wt.dot_terms(walk.queries[i], walk.keys[j]),
                                 f"α<sub>{i + 1},{j + 1}</sub> = q<sup>{i + 1}</sup> · "
                                 f"k<sup>{j + 1}</sup>"), key="s3_terms")
        conv = st.radio("Rows of the score matrix are", ["queries", "keys"], horizontal=True,
                        key="sbs_conv", bind="query-params", captions=[
                            "A^T = Q^T K: how attnviz draws scores",
                            "A = K^T Q: the lecture's layout"])
        show(sp.scores_figure(walk, conv, qdec, 4 if mode == "toy" else 3), key="s3_S")
    elif step == 4:
        temp = st.select_slider("Temperature T", [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0,
                                3.0, 5.0, 10.0, 20.0, 50.0], value=1.0, key="sbs_temp",
                                bind="query-params")
        limit = wt.temperature_limit(walk.scores[i])
        tied = [labels[j] for j in np.flatnonzero(limit)]
        st.markdown(rf"Scaled scores $\alpha_{{i,j}}/\sqrt{{d_k}}$, $\sqrt{{d_k}} = "
                    rf"{np.sqrt(walk.d_k):.3f}$; the softmax below uses $\alpha/(T\sqrt{{d_k}})$. "
                    "Small T puts all the weight on the largest score, split evenly when several "
                    "keys tie for it; large T flattens to uniform; T = 1 is the model. For "
                    f"query {labels[i]}, T → 0 gives " + (
                        f"weight 1 to {tied[0]}." if len(tied) == 1 else
                        f"{1 / len(tied):.2g} to each of {', '.join(tied)} (tied).") + (
                        " In the toy both *saw*s have the same key vector, so a query whose "
                        "largest score is a *saw* splits evenly between them."
                        if mode == "toy" else ""))
        w_t = wt.temperature_weights(walk.scores, walk.scale, temp)
        show(sp.matrices_figure([(walk.scores * walk.scale, labels, labels, "scores / sqrt(d_k)",
                                  "scores"), (w_t, labels, labels, f"weights at T = {temp:g}",
                                              "weights")], ["→"], "Scale, then softmax",
                                decimals=3), key="s4_m")
        show(sp.weights_bar_figure({f"T = {temp:g}": w_t[i], "T = 1": walk.weights[i]},
                                   walk.tokens, f"Weights of query {labels[i]}"), key="s4_bar")
        temps = np.geomspace(0.02, 100, 60)
        show(sp.temperature_figure(wt.temperature_sweep(walk.scores[i], walk.scale, temps), temp,
                                   walk.n), key="s4_T")
        show(sp.dk_figure(wt.dk_sweep(), walk.d_k), key="s4_dk")
        extra = {"weights_at_T": w_t, "temperature": temp}
    elif step == 5:
        st.markdown(r"$\alpha'_{i,j} = e^{z_j} / \sum_{j'} e^{z_{j'}}$ with "
                    r"$z_j = \alpha_{i,j}/\sqrt{d_k}$: each row of weights sums to 1.")
        sums = walk.weights.sum(axis=1, keepdims=True)
        show(sp.matrices_figure([(walk.weights, labels, labels,
                                  "weights A'<sup>T</sup> (rows = queries)", "weights"),
                                 (sums, labels, ["row sum"], "Σ_j", "weights")], [""],
                                "Softmax of each row", decimals=3), key="s5_W")
        parts = wt.softmax_parts(walk.scores[i], walk.scale)
        st.dataframe({"key": token_labels(walk.tokens), "score α": walk.scores[i],
                      "z = α/√d_k": parts["logits"], "exp(z − max z)": parts["exps"],
                      "weight α'": walk.weights[i]})
        st.caption(f"Σ exp = {parts['total']:.6f}; weight = exp / Σ; Σ weights = "
                   f"{walk.weights[i].sum():.6f}")
    elif step == 6:
        st.markdown(rf"$b^{{{i + 1}}} = \sum_j \alpha'_{{{i + 1},j}}\, v^j$; for every token at "
                    r"once $O = V A'$, column $i$ of $O$ being $b^i$ ($A'$ has a row per key; in "
                    r"the row layout $O^{\top} = A'^{\top}V$, PyTorch `weights @ values`).")
        st.caption(r"The notes on the lecture write $C = Q^{\top}K$ (a row per query) and then "
                   r"$B = VC$. Read literally, column $i$ of $VC$ mixes the values with the "
                   r"weights *on* key $i$, not those *of* query $i$. The consistent form, which "
                   r"is what is computed here, is $B = VC^{\top} = VA'$.")
        contrib = wt.contributions(walk.weights[i], walk.values)
        show(sp.weighted_sum_figure(contrib, walk.tokens, i), key="s6_arrows")
        show(sp.contributions_figure(contrib, walk.tokens, i), key="s6_bars")
        show(sp.outputs_figure(walk), key="s6_O")
    elif step == 7:
        st.markdown(r"$B = W^O\,(O_0;\dots;O_{h-1})$, $O_g = \mathrm{Attention}(Q_g,K_g,V_g)$: "
                    r"rows of $Q=W^QI$ are split into h heads of size $d_h = m/h$ (Vaswani et al. "
                    r"2017). $B$ is the attention block's output, not the layer's: a BERT layer "
                    r"then adds its input and normalises, $\mathrm{LayerNorm}(I + B)$, and runs "
                    "the feed-forward with another residual and LayerNorm.")
        if mode == "toy":
            h = st.radio("Heads h", wt.heads_choices(walk.m), horizontal=True, key="sbs_heads",
                         bind="query-params")
            mh = wt.toy_multihead(walk, h, int(seed))
        else:
            model, t, layer = real
            mh = wt.real_multihead(model, t, layer)
        st.table(wt.multihead_shapes(walk.m, walk.n, mh.n_heads))
        if mode == "toy":
            show(sp.heads_figure(mh.weights, walk.tokens, f"{mh.n_heads} head"
                                 f"{'s' if mh.n_heads > 1 else ''}: weights A'<sup>T</sup> "
                                 "(rows = queries)"),
                 key="s7_h")
            show(sp.entropy_by_heads_figure(wt.heads_sweep(walk, int(seed))), key="s7_eff")
            trend = ui.with_progress(
                "results", ("sbs_heads_trend", " ".join(walk.tokens)),
                "Measuring over 40 seeds:", lambda p: wt.heads_trend(" ".join(walk.tokens),
                                                                     progress=p))
            st.caption(
                "The bars are one seed's. Do more, smaller heads give a flatter softmax? "
                f"Measured on this sentence over {trend['seeds']} seeds, going from 1 head to m "
                "heads made it flatter in " + ", ".join(
                    f"{f} (m = {m})" for m, f in zip(trend["m"], trend["flatter"], strict=True))
                + f" of {trend['seeds']} cases and sharper in the rest: no consistent trend. "
                "Dividing by $\\sqrt{d_h}$ gives $q\\cdot k/\\sqrt{d_h}$ the same spread for "
                "every head size when the entries are independent.")
        else:
            show(heads_grid(mh.weights, walk.tokens,
                            title=f"Layer {walk.layer}: {mh.n_heads} heads"),
                 key="s7_h")
        show(sp.output_projection_figure(mh), key="s7_O")
        if mode == "real":
            model, t, layer = real
            after = wt.layer_after_attention(model, layer, mh.inputs, mh.projected)
            gap = float(np.abs(after["layer_output"] - t.hidden_states[layer + 1]).max())
            st.caption(
                "Colours of W^O stop at the 99th percentile of |value| (hover: exact). From "
                "$B$ to the layer's output: $\\mathrm{LayerNorm}(I + B)$, then the "
                "feed-forward with its residual and LayerNorm, recomputed here: max "
                f"|recomputed − engine's layer {layer} output| = {gap:.1e}, while $B$ itself "
                f"differs from that output by up to "
                f"{float(np.abs(mh.projected - t.hidden_states[layer + 1]).max()):.1f}.")
            extra["layer_output"] = after["layer_output"]
        extra |= {f"multihead_{k}": v for k, v in mh.arrays().items() if k != "tokens"}
    elif step == 8:
        w_add = wt.toy_additive_vector(walk.d_k, int(seed) if mode == "toy" else 0)
        add = wt.additive_scores(walk.queries, walk.keys, w_add)
        st.markdown(r"The lecture's other similarity: $\alpha_{i,j} = w^{\top}\tanh(q^i + k^j)$, "
                    "with a vector $w$ of size $d_k$ (untrained here: made from the seed): "
                    f"`w = {np.array2string(w_add, precision=1, max_line_width=10**6)}`")
        show(sp.matrices_figure([(walk.scores, labels, labels, "dot product q·k", "scores"),
                                 (add, labels, labels, "additive w·tanh(q+k)", "scores")], [""],
                                "Two similarities on the same q, k", decimals=3), key="s8_S")
        show(sp.matrices_figure([(walk.weights, labels, labels, "softmax(q·k / sqrt(d_k))",
                                  "weights"), (wt.additive_weights(add), labels, labels,
                                               "softmax(additive)", "weights")], [""],
                                "Their weights", decimals=3), key="s8_W")
        extra = {"additive_w": w_add, "additive_scores": add}

    return extra


main()
