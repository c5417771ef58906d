"""Self-attention step by step in the notation of Hung-yi Lee's self-attention lecture: vectors,
q k v, scores, weights, outputs, multi-head, additive similarity.

Numbers: analysis.walkthrough (toy numbers from a seed, or one head of the model recomputed
from its weights and checked against the cached Trace); figures: plotting.steps."""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis import walkthrough as wt
from attnviz.engine import token_labels
from attnviz.i18n import N_, _
from attnviz.plotting import heads_grid
from attnviz.plotting import steps as sp
from attnviz.ui.text import literal

STEPS = {1: N_("Vectors"), 2: N_("Queries, keys, values"), 3: N_("Similarity"),
         4: N_("Scale, temperature"), 5: N_("Softmax"), 6: N_("Weighted sum"),
         7: N_("Multi-head"), 8: N_("Additive similarity")}
MODES = {"toy": N_("toy"), "real": N_("real")}
ROWS = {"queries": N_("queries"), "keys": N_("keys")}
show = ui.show_figure


def main() -> None:
    st.title(_("Self-attention step by step"))
    st.caption(_("Notation of Hung-yi Lee's self-attention lecture (and the notes on it): the "
                 "inputs $I=(a^1\\cdots a^n)$ are $m\\times n$, $Q=W^qI$, the scores "
                 "$A=K^{\\top}Q$ have a **row per key**, $A'$ = softmax of each column, "
                 "$O=VA'$. Elsewhere attnviz draws score and weight matrices with **queries in "
                 "rows**: $A^{\\top}$ and $A'^{\\top}$ (PyTorch's row layout writes them "
                 "$QK^{\\top}$ and $\\mathrm{softmax}(QK^{\\top}/\\sqrt{d_k})$). Math indices "
                 "count from 1 like the lecture; axis labels count tokens from #0."))
    ctx = ui.context()
    c1, c2 = st.columns([1, 4])
    # The URL holds the shown option (?sbs_mode=real in English, the Chinese name in Chinese);
    # ui.urlstate reads either in either language. Steps are numbers, named in the captions.
    mode = c1.radio(_("Numbers"), list(MODES), key="sbs_mode", bind="query-params",
                    format_func=lambda m: _(MODES[m]),
                    captions=[_("small, to redo on paper"), _("a head of the bundled BERT")])
    step = c2.radio(_("Step"), list(STEPS), key="sbs_step", bind="query-params", horizontal=True,
                    captions=[_(v) for v in STEPS.values()])
    box = st.container(horizontal=True)
    if mode == "toy":
        if not ui.require_text(ctx):
            return
        m = box.slider(_("m (input size)"), 2, 8, 4, key="sbs_m", bind="query-params")
        d_k = box.slider(_("d_k (query/key size)"), 2, 8, 3, key="sbs_dk", bind="query-params")
        p = box.slider(_("p (value size)"), 2, 8, 3, key="sbs_p", bind="query-params")
        seed = box.number_input(_("Random seed"), 0, 10_000, 0, key="sbs_seed",
                                bind="query-params", help=_("Chooses the toy's numbers."))
        walk = wt.toy_walkthrough(ctx.text, m, d_k, p, int(seed))
        if walk.options["cut"]:
            st.warning(_("The sentence is longer than the toy's {max} words: the last {cut} "
                         "words were dropped (Real mode takes it all).").format(
                max=wt.MAX_TOY_TOKENS, cut=walk.options["cut"]))
        dec, qdec = 1, 2
        t = layer = None
    else:
        t = ui.trace_or_message(ctx)
        if t is None or not ui.require_bert_like(ctx, _("Real mode")):
            return
        layer = box.selectbox(_("Layer"), range(t.n_layers), key="sbs_layer", bind="query-params")
        head = box.selectbox(_("Head"), range(t.n_heads), key="sbs_head", bind="query-params")
        walk = wt.real_walkthrough(ctx.model, t, layer, head)
        diff = wt.trace_differences(walk, t)
        st.caption(_("Recomputed from layer {layer}'s input $a^i$ and the slices W[{lo}:{hi}] of "
                     "W^q, W^k, W^v (+ biases); max |recomputed − engine trace| = {diff:.1e}.")
                   .format(layer=layer, lo=head * t.head_dim, hi=(head + 1) * t.head_dim,
                           diff=max(diff.values())))
        dec, qdec = 3, 3
    labels = sp.token_axis(walk.tokens)
    for k in ("sbs_query", "sbs_key"):  # a position past a new, shorter sentence goes back to 0
        if st.session_state.get(k, 0) >= walk.n:
            st.session_state[k] = 0
    i = box.number_input(_("Query token #"), 0, walk.n - 1, 0, key="sbs_query",
                         bind="query-params", help=_("Position of the token that looks (the row "
                                                     "of the score matrix)."))
    st.caption(_("Query: **{token} #{i}**, i.e. $q^{{{k}}}$.").format(
        token=literal(walk.tokens[i]), i=i, k=i + 1))
    st.subheader(_("Step {step}: {name}").format(step=step, name=_(STEPS[step])))
    real = (ctx.model, t, layer) if mode == "real" else None
    extra = show_step(step, walk, i, labels, dec, qdec, int(seed) if mode == "toy" else 0, real)

    ui.download_arrays(_("Download this walkthrough's numbers (.npz)"), {**walk.arrays(), **extra},
                       file_name=f"attnviz_steps_{mode}_step{step}.npz", key="sbs_download")


def show_step(step: int, walk, i: int, labels, dec: int, qdec: int, seed: int,
              real: tuple | None) -> dict:
    """Draw one step for query i; returns the extra numbers it adds to the download.

    `real` is (model, trace, layer) in real mode, None in toy mode."""
    mode = "toy" if real is None else "real"
    extra: dict = {}
    if step == 1:
        st.markdown(_("Each of the $n={n}$ tokens becomes a vector $a^i$ of size $m={m}$; side by "
                      "side they form $I$.").format(n=walk.n, m=walk.m) + " " + (
            _("Toy vectors depend only on the word, so both *saw* get the same $a^i$: without "
              "positions attention cannot tell them apart.")
            if mode == "toy" else
            _("In BERT, $a^i$ is the input of layer {layer}.").format(layer=walk.layer)))
        show(sp.matrix_figure(walk.inputs.T, sp.dim_labels("a", walk.m), labels,
                              f"I ({walk.m} × {walk.n})", decimals=dec), key="s1_A")
    elif step == 2:
        st.markdown(_(r"$q^i = W^q a^i,\; k^i = W^k a^i,\; v^i = W^v a^i$; all tokens at once: "
                      r"$Q = W^qI,\; K = W^kI,\; V = W^vI$.") + (
            " " + _(r"BERT's projections also add a bias: $q^i = W^q a^i + b^q$, so "
                    r"$Q = W^qI + b^q\mathbf{1}^{\top}$ (the bias added to every column, drawn "
                    "as its own panel). Colours of these big matrices stop at the 99th "
                    "percentile of |value|; hover for the exact numbers.")
            if mode == "real" else ""))
        for name in "qkv":
            show(sp.projection_figure(walk, name, qdec), key=f"s2_{name}")
    elif step == 3:
        j = st.number_input(_("Key token #"), 0, walk.n - 1, min(1, walk.n - 1), key="sbs_key",
                            bind="query-params")
        st.caption(_("Key: **{token} #{j}**, i.e. $k^{{{k}}}$.").format(
            token=literal(walk.tokens[j]), j=j, k=j + 1))
        if mode == "toy":
            for k in range(walk.n):
                st.latex(sp.dot_product_latex(walk.queries[i], walk.keys[k], i, k, qdec))
        show(sp.dot_terms_figure(wt.dot_terms(walk.queries[i], walk.keys[j]),
                                 f"α<sub>{i + 1},{j + 1}</sub> = q<sup>{i + 1}</sup> · "
                                 f"k<sup>{j + 1}</sup>"), key="s3_terms")
        conv = st.radio(_("Rows of the score matrix are"), list(ROWS), horizontal=True,
                        key="sbs_conv", bind="query-params", format_func=lambda r: _(ROWS[r]),
                        captions=[_("A^T = Q^T K: how attnviz draws scores"),
                                  _("A = K^T Q: the lecture's layout")])
        show(sp.scores_figure(walk, conv, qdec, 4 if mode == "toy" else 3), key="s3_S")
    elif step == 4:
        temp = st.select_slider(_("Temperature T"), [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5,
                                2.0, 3.0, 5.0, 10.0, 20.0, 50.0], value=1.0, key="sbs_temp",
                                bind="query-params")
        limit = wt.temperature_limit(walk.scores[i])
        tied = [labels[j] for j in np.flatnonzero(limit)]
        said = [_(r"Scaled scores $\alpha_{{i,j}}/\sqrt{{d_k}}$, $\sqrt{{d_k}} = {root:.3f}$; "
                  r"the softmax below uses $\alpha/(T\sqrt{{d_k}})$. Small T puts all the weight "
                  "on the largest score, split evenly when several keys tie for it; large T "
                  "flattens to uniform; T = 1 is the model.").format(root=np.sqrt(walk.d_k))]
        if len(tied) == 1:
            said.append(_("For query {query}, T → 0 gives weight 1 to {key}.").format(
                query=labels[i], key=tied[0]))
        else:
            said.append(_("For query {query}, T → 0 gives {share:.2g} to each of {keys} (tied).")
                        .format(query=labels[i], share=1 / len(tied), keys=", ".join(tied)))
        if mode == "toy":
            said.append(_("In the toy both *saw*s have the same key vector, so a query whose "
                          "largest score is a *saw* splits evenly between them."))
        st.markdown(" ".join(said))
        w_t = wt.temperature_weights(walk.scores, walk.scale, temp)
        show(sp.matrices_figure(
            [(walk.scores * walk.scale, labels, labels, _("scores / sqrt(d_k)"), "scores"),
             (w_t, labels, labels, _("weights at T = {t:g}").format(t=temp), "weights")], ["→"],
            _("Scale, then softmax"), decimals=3), key="s4_m")
        show(sp.weights_bar_figure({f"T = {temp:g}": w_t[i], "T = 1": walk.weights[i]},
                                   walk.tokens, _("Weights of query {query}").format(
                                       query=labels[i])), key="s4_bar")
        temps = np.geomspace(0.02, 100, 60)
        show(sp.temperature_figure(wt.temperature_sweep(walk.scores[i], walk.scale, temps), temp,
                                   walk.n), key="s4_T")
        show(sp.dk_figure(wt.dk_sweep(), walk.d_k), key="s4_dk")
        extra = {"weights_at_T": w_t, "temperature": temp}
    elif step == 5:
        st.markdown(_(r"$\alpha'_{i,j} = e^{z_j} / \sum_{j'} e^{z_{j'}}$ with "
                      r"$z_j = \alpha_{i,j}/\sqrt{d_k}$: each row of weights sums to 1."))
        sums = walk.weights.sum(axis=1, keepdims=True)
        show(sp.matrices_figure([(walk.weights, labels, labels,
                                  _("weights A'<sup>T</sup> (rows = queries)"), "weights"),
                                 (sums, labels, [_("row sum")], "Σ_j", "weights")], [""],
                                _("Softmax of each row"), decimals=3), key="s5_W")
        parts = wt.softmax_parts(walk.scores[i], walk.scale)
        st.dataframe({_("key"): token_labels(walk.tokens), _("score α"): walk.scores[i],
                      "z = α/√d_k": parts["logits"], "exp(z − max z)": parts["exps"],
                      _("weight α'"): walk.weights[i]})
        st.caption(_("Σ exp = {total:.6f}; weight = exp / Σ; Σ weights = {sum:.6f}").format(
            total=parts["total"], sum=walk.weights[i].sum()))
    elif step == 6:
        st.markdown(_(r"$b^{{{k}}} = \sum_j \alpha'_{{{k},j}}\, v^j$; for every token at once "
                      r"$O = V A'$, column $i$ of $O$ being $b^i$ ($A'$ has a row per key; in the "
                      r"row layout $O^{{\top}} = A'^{{\top}}V$, PyTorch `weights @ values`).")
                    .format(k=i + 1))
        st.caption(_(r"The notes on the lecture write $C = Q^{\top}K$ (a row per query) and then "
                     r"$B = VC$. Read literally, column $i$ of $VC$ mixes the values with the "
                     r"weights *on* key $i$, not those *of* query $i$. The consistent form, which "
                     r"is what is computed here, is $B = VC^{\top} = VA'$."))
        contrib = wt.contributions(walk.weights[i], walk.values)
        show(sp.weighted_sum_figure(contrib, walk.tokens, i), key="s6_arrows")
        show(sp.contributions_figure(contrib, walk.tokens, i), key="s6_bars")
        show(sp.outputs_figure(walk), key="s6_O")
    elif step == 7:
        extra = multihead_step(walk, seed, real)
    elif step == 8:
        w_add = wt.toy_additive_vector(walk.d_k, int(seed) if mode == "toy" else 0)
        add = wt.additive_scores(walk.queries, walk.keys, w_add)
        st.markdown(_(r"The lecture's other similarity: $\alpha_{{i,j}} = w^{{\top}}\tanh(q^i + "
                      r"k^j)$, with a vector $w$ of size $d_k$ (untrained here: made from the "
                      "seed): `w = {w}`").format(
            w=np.array2string(w_add, precision=1, max_line_width=10**6)))
        show(sp.matrices_figure([(walk.scores, labels, labels, _("dot product q·k"), "scores"),
                                 (add, labels, labels, _("additive w·tanh(q+k)"), "scores")],
                                [""], _("Two similarities on the same q, k"), decimals=3),
             key="s8_S")
        show(sp.matrices_figure([(walk.weights, labels, labels, "softmax(q·k / sqrt(d_k))",
                                  "weights"), (wt.additive_weights(add), labels, labels,
                                               _("softmax(additive)"), "weights")], [""],
                                _("Their weights"), decimals=3), key="s8_W")
        extra = {"additive_w": w_add, "additive_scores": add}

    return extra


SHAPE_COLUMNS = {"what": N_("what"), "formula": N_("formula"), "shape": N_("shape")}


def multihead_step(walk, seed: int, real: tuple | None) -> dict:
    """Step 7: multi-head attention, its shapes, the heads' weights and W^O; returns the
    extra numbers it adds to the download."""
    st.markdown(_(r"$B = W^O\,(O_0;\dots;O_{h-1})$, $O_g = \mathrm{Attention}(Q_g,K_g,V_g)$: "
                  r"rows of $Q=W^QI$ are split into h heads of size $d_h = m/h$ (Vaswani et al. "
                  r"2017). $B$ is the attention block's output, not the layer's: a BERT layer "
                  r"then adds its input and normalises, $\mathrm{LayerNorm}(I + B)$, and runs "
                  "the feed-forward with another residual and LayerNorm."))
    extra: dict = {}
    if real is None:
        h = st.radio(_("Heads h"), wt.heads_choices(walk.m), horizontal=True, key="sbs_heads",
                     bind="query-params")
        mh = wt.toy_multihead(walk, h, int(seed))
    else:
        model, t, layer = real
        mh = wt.real_multihead(model, t, layer)
    st.table([{_(SHAPE_COLUMNS[k]): v for k, v in row.items()}
              for row in wt.multihead_shapes(walk.m, walk.n, mh.n_heads)])
    if real is None:
        title = (_("1 head: weights A'<sup>T</sup> (rows = queries)") if mh.n_heads == 1 else
                 _("{n} heads: weights A'<sup>T</sup> (rows = queries)").format(n=mh.n_heads))
        show(sp.heads_figure(mh.weights, walk.tokens, title), key="s7_h")
        show(sp.entropy_by_heads_figure(wt.heads_sweep(walk, int(seed))), key="s7_eff")
        trend = ui.with_progress(
            "results", ("sbs_heads_trend", " ".join(walk.tokens)),
            _("Measuring over 40 seeds:"), lambda p: wt.heads_trend(" ".join(walk.tokens),
                                                                     progress=p))
        st.caption(_(
            "The bars are one seed's. Do more, smaller heads give a flatter softmax? Measured on "
            "this sentence over {seeds} seeds, going from 1 head to m heads made it flatter in "
            "{counts} of {seeds} cases and sharper in the rest: no consistent trend. Dividing "
            "by $\\sqrt{{d_h}}$ gives $q\\cdot k/\\sqrt{{d_h}}$ the same spread for every head "
            "size when the entries are independent.").format(
            seeds=trend["seeds"], counts=", ".join(
                f"{f} (m = {m})" for m, f in zip(trend["m"], trend["flatter"], strict=True))))
    else:
        show(heads_grid(mh.weights, walk.tokens, title=_("Layer {layer}: {n} heads").format(
            layer=walk.layer, n=mh.n_heads)), key="s7_h")
    show(sp.output_projection_figure(mh), key="s7_O")
    if real is not None:
        model, t, layer = real
        after = wt.layer_after_attention(model, layer, mh.inputs, mh.projected)
        gap = float(np.abs(after["layer_output"] - t.hidden_states[layer + 1]).max())
        st.caption(_(
            "Colours of W^O stop at the 99th percentile of |value| (hover: exact). From $B$ to "
            "the layer's output: $\\mathrm{{LayerNorm}}(I + B)$, then the feed-forward with its "
            "residual and LayerNorm, recomputed here: max |recomputed − engine's layer {layer} "
            "output| = {gap:.1e}, while $B$ itself differs from that output by up to {far:.1f}.")
            .format(layer=layer, gap=gap,
                    far=float(np.abs(mh.projected - t.hidden_states[layer + 1]).max())))
        extra["layer_output"] = after["layer_output"]
    extra |= {f"multihead_{k}": v for k, v in mh.arrays().items() if k != "tokens"}
    return extra


main()
