"""Self-attention step by step (the lecture's notation): vectors, q k v, scores, weights,
outputs, multi-head, additive similarity.

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
    st.caption("Column vectors as in seeds 003/004: $A=(a^1\\cdots a^n)$ is $m\\times n$, "
               "$Q=W^qA$. Score matrices put **queries in rows, keys in columns** "
               "($Q^{\\top}K$; PyTorch's row layout writes the same matrix $QK^{\\top}$). "
               "Math indices count from 1 like the seeds; axis labels count tokens from #0.")
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
        seed = box.number_input("Seed", 0, 10_000, 0, key="sbs_seed", bind="query-params")
        walk = wt.toy_walkthrough(ctx.text, m, d_k, p, int(seed))
        if walk.options["cut"]:
            st.warning(f"The sentence is longer than the toy's {wt.MAX_TOY_TOKENS} words: the last "
                       f"{walk.options['cut']} words were dropped (Real mode takes it all).")
        dec, qdec = 1, 2
        t = layer = None
    else:
        t = ui.trace_or_message(ctx)
        if t is None:
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
                    f"$m={walk.m}$; side by side they form $A$. " + (
                        "Toy vectors depend only on the word, so both *saw* get the same $a^i$: "
                        "without positions attention cannot tell them apart."
                    if mode == "toy" else f"In BERT, $a^i$ is the input of layer {walk.layer}."))
        show(sp.matrix_figure(walk.inputs.T, sp.dim_labels("a", walk.m), labels,
                              f"A ({walk.m} × {walk.n})", decimals=dec), key="s1_A")
    elif step == 2:
        st.markdown(r"$q^i = W^q a^i,\; k^i = W^k a^i,\; v^i = W^v a^i$; all tokens at once: "
                    r"$Q = W^qA,\; K = W^kA,\; V = W^vA$" + (" (+ a bias b per row in BERT)."
                                                           if mode == "real" else "."))
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
                            "Q^T K: attnviz, seed 004's C", "A = K^T Q: seed 003's layout"])
        show(sp.scores_figure(walk, conv, qdec, 4 if mode == "toy" else 3), key="s3_S")
    elif step == 4:
        temp = st.select_slider("Temperature T", [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0,
                                3.0, 5.0, 10.0, 20.0, 50.0], value=1.0, key="sbs_temp",
                                bind="query-params")
        st.markdown(rf"Scaled scores $\alpha_{{i,j}}/\sqrt{{d_k}}$, $\sqrt{{d_k}} = "
                    rf"{np.sqrt(walk.d_k):.3f}$; the softmax below uses $\alpha/(T\sqrt{{d_k}})$. "
                    "Small T sharpens to one-hot, large T flattens to uniform; T = 1 is the model.")
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
        show(sp.matrices_figure([(walk.weights, labels, labels, "weights A'", "weights"),
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
                    r"once $O = V A'^{\top}$ (row layout: $O = A'V$, PyTorch `weights @ values`).")
        contrib = wt.contributions(walk.weights[i], walk.values)
        show(sp.weighted_sum_figure(contrib, walk.tokens, i), key="s6_arrows")
        show(sp.contributions_figure(contrib, walk.tokens, i), key="s6_bars")
        show(sp.outputs_figure(walk), key="s6_O")
    elif step == 7:
        st.markdown(r"$\mathrm{MultiHead}(A) = W_O\,(O_0;\dots;O_{h-1})$, $O_g = "
                    r"\mathrm{Attention}(Q_g,K_g,V_g)$: rows of $Q=W^QA$ are split into h heads of "
                    r"size $d_h = m/h$ (seeds 000/002).")
        if mode == "toy":
            h = st.radio("Heads h", wt.heads_choices(walk.m), horizontal=True, key="sbs_heads",
                         bind="query-params")
            mh = wt.toy_multihead(walk, h, int(seed))
        else:
            model, t, layer = real
            mh = wt.real_multihead(model, t, layer)
        st.table(wt.multihead_shapes(walk.m, walk.n, mh.n_heads))
        if mode == "toy":
            show(sp.heads_figure(mh.weights, walk.tokens, f"{mh.n_heads} heads: weights"),
                 key="s7_h")
            show(sp.entropy_by_heads_figure(wt.heads_sweep(walk, int(seed))), key="s7_eff")
        else:
            show(heads_grid(mh.weights, walk.tokens,
                            title=f"Layer {walk.layer}: {mh.n_heads} heads"),
                 key="s7_h")
        show(sp.output_projection_figure(mh), key="s7_O")
        extra = {f"multihead_{k}": v for k, v in mh.arrays().items() if k != "tokens"}
    elif step == 8:
        w_add = wt.toy_additive_vector(walk.d_k, int(seed) if mode == "toy" else 0)
        add = wt.additive_scores(walk.queries, walk.keys, w_add)
        st.markdown(r"Seed 004's other similarity: $\alpha_{i,j} = w^{\top}\tanh(q^i + k^j)$, "
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
