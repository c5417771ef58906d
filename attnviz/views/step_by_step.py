"""Self-attention step by step in the notation of Hung-yi Lee's self-attention lecture: vectors,
q k v, scores, weights, outputs, multi-head, additive similarity (pages/step_by_step.py).

Numbers: analysis.walkthrough (toy numbers from a seed, or one head of the model recomputed
from its weights and checked against the Trace); figures: plotting.steps.

Each step's parts are cut where the page draws a widget (step 3's key, step 4's temperature,
step 7's number of heads): a part function takes that widget's value. Its figures come in the
order of FIGURES[step] (the page's figure keys)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..analysis import walkthrough as wt
from ..engine import token_labels
from ..i18n import N_, _
from ..plotting import heads_grid
from ..plotting import steps as sp
from .blocks import Heading, Markdown, Table, Tex
from .common import literal, numbers

STEPS = {1: N_("Vectors"), 2: N_("Queries, keys, values"), 3: N_("Similarity"),
         4: N_("Scale, temperature"), 5: N_("Softmax"), 6: N_("Weighted sum"),
         7: N_("Multi-head"), 8: N_("Additive similarity")}
MODES = {"toy": N_("toy"), "real": N_("real")}
ROWS = {"queries": N_("queries"), "keys": N_("keys")}
SHAPE_COLUMNS = {"what": N_("what"), "formula": N_("formula"), "shape": N_("shape")}
TEMPERATURES = [0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0]
FIGURES = {1: ["s1_A"], 2: ["s2_q", "s2_k", "s2_v"], 3: ["s3_terms", "s3_S"],
           4: ["s4_m", "s4_bar", "s4_T", "s4_dk"], 5: ["s5_W"],
           6: ["s6_arrows", "s6_bars", "s6_O"], 7: ["s7_h", "s7_eff", "s7_O"],
           8: ["s8_S", "s8_W"]}  # in the order each step draws them (real step 7: no s7_eff)
ROPE_FIGURES = ["s2_rope_q", "s2_rope_k"]  # step 2 of a rotary decoder: q, k turned by RoPE


def figure_keys(step: int, walk) -> list[str]:
    """The page's figure keys of `step` for this walkthrough, in the order they are drawn."""
    return FIGURES[step] + (ROPE_FIGURES if step == 2 and walk.rotary else [])


def real_refusal(model) -> list:
    """[] when real mode can show this model (a BERT-like encoder, or a Llama-shaped decoder:
    walkthrough.decoder_refusal); else one sentence why not (info)."""
    from .common import bert_like, not_bert_like, shown_name

    if model is None or bert_like(model):
        return []
    if getattr(model, "kind", None) == "decoder":
        reason = wt.decoder_refusal(model)
        if reason is None:
            return []
        return [Markdown(_("Real mode draws a BERT-like encoder's head, or a decoder's with "
                           "Llama's attention (Llama, SmolLM2, Mistral, Qwen2). The loaded "
                           "model, {name}, is a {title}: {reason}.").format(
            name=literal(shown_name(model)), title=model.title, reason=reason), "info")]
    return not_bert_like(model, _("Real mode"))


def intro() -> list:
    return [Heading(_("Self-attention step by step"), 1), Markdown(_(
        "Notation of Hung-yi Lee's self-attention lecture (and the notes on it): the "
        "inputs $I=(a^1\\cdots a^n)$ are $m\\times n$, $Q=W^qI$, the scores "
        "$A=K^{\\top}Q$ have a **row per key**, $A'$ = softmax of each column, "
        "$O=VA'$. Elsewhere attnviz draws score and weight matrices with **queries in "
        "rows**: $A^{\\top}$ and $A'^{\\top}$ (PyTorch's row layout writes them "
        "$QK^{\\top}$ and $\\mathrm{softmax}(QK^{\\top}/\\sqrt{d_k})$). Math indices "
        "count from 1 like the lecture, and so do the words on the axes (I #1 is $a^1$; a "
        "start token such as [CLS] is #0). The token boxes below take these numbers too; the "
        "line under them names the token."), "caption")]


def toy_cut(walk) -> list:
    """A warning when the sentence is longer than the toy takes."""
    if not walk.options["cut"]:
        return []
    return [Markdown(_("The sentence is longer than the toy's {max} words: the last {cut} "
                       "words were dropped (Real mode takes it all).").format(
        max=wt.MAX_TOY_TOKENS, cut=walk.options["cut"]), "warning")]


def real_check(walk, t, layer: int, head: int) -> Markdown:
    """How far the recomputed head is from the engine's trace."""
    diff = wt.trace_differences(walk, t)
    if walk.kv_head is not None:  # a decoder's head: its own W^q rows, its group's W^k, W^v
        d = t.head_dim
        return Markdown(_(
            "Recomputed from layer {layer}'s input $a^i$ (the RMSNorm of the layer's input) "
            "and the rows {lo}:{hi} of W^q (query head {head}), {klo}:{khi} of W^k and W^v "
            "(key/value head {g}, which query heads {group} share: grouped-query attention); "
            "{bias}; q and k turned by RoPE; the causal mask. max |recomputed − engine "
            "trace| = {diff:.1e}.").format(
            layer=layer, lo=head * d, hi=(head + 1) * d, head=head, klo=walk.kv_head * d,
            khi=(walk.kv_head + 1) * d, g=walk.kv_head,
            group=", ".join(str(h) for h in walk.kv_group),
            bias=_("with biases") if walk.biases else _("no biases (Llama's projections "
                                                        "have none)"),
            diff=max(diff.values())), "caption")
    return Markdown(_("Recomputed from layer {layer}'s input $a^i$ and the slices W[{lo}:{hi}] "
                      "of W^q, W^k, W^v (+ biases); max |recomputed − engine trace| = "
                      "{diff:.1e}.").format(layer=layer, lo=head * t.head_dim,
                                            hi=(head + 1) * t.head_dim, diff=max(diff.values())),
                    "caption")


def decimals(mode: str) -> tuple[int, int]:
    """(decimals of the inputs, of q k v) shown in the matrices."""
    return (1, 2) if mode == "toy" else (3, 3)


def _number(walk, i: int) -> str:
    """Token i's number as every label gives it (engine.token_labels: words from 1)."""
    return token_labels(walk.tokens)[i].rsplit(" #", 1)[1]


def first_number(walk) -> int:
    """The number the first token's label carries: 1 for a word (I #1), 0 for a start token
    ([CLS] #0). The page's token inputs take these numbers, as the labels show them."""
    return int(_number(walk, 0))


def default_query(walk, causal: bool) -> int:
    """The query token's number the page opens on: the first token's, or under a causal mask
    (a decoder) the last token's, the one query that sees every key (the first sees only
    itself)."""
    return first_number(walk) + (walk.n - 1 if causal else 0)


def query_note(walk, i: int) -> Markdown:
    return Markdown(_("Query: **{token} #{i}**, i.e. $q^{{{k}}}$.").format(
        token=literal(walk.tokens[i]), i=_number(walk, i), k=i + 1), "caption")


def step_heading(step: int) -> Heading:
    return Heading(_("Step {step}: {name}").format(step=step, name=_(STEPS[step])), 3)


def vectors(walk, mode: str) -> list:
    """Step 1."""
    dec = decimals(mode)[0]
    return [Markdown(_("Each of the $n={n}$ tokens becomes a vector $a^i$ of size $m={m}$; side "
                       "by side they form $I$.").format(n=walk.n, m=walk.m) + " " + (
        _("Toy vectors depend only on the word, so both *saw* get the same $a^i$: without "
          "positions attention cannot tell them apart.")
        if mode == "toy" else
        _("In this decoder, $a^i$ is the RMSNorm of layer {layer}'s input.").format(
            layer=walk.layer) if walk.kv_head is not None else
        _("In BERT, $a^i$ is the input of layer {layer}.").format(layer=walk.layer))),
        sp.matrix_figure(walk.inputs.T, sp.dim_labels("a", walk.m), sp.token_axis(walk.tokens),
                         f"I ({walk.m} × {walk.n})", decimals=dec)]


def projections(walk, mode: str) -> list:
    """Step 2 (and, for a rotary decoder, q and k turned by RoPE: `rotations`)."""
    if walk.kv_head is not None:
        return decoder_projections(walk)
    qdec = decimals(mode)[1]
    return [Markdown(_(r"$q^i = W^q a^i,\; k^i = W^k a^i,\; v^i = W^v a^i$; all tokens at once: "
                       r"$Q = W^qI,\; K = W^kI,\; V = W^vI$.") + (
        " " + _(r"BERT's projections also add a bias: $q^i = W^q a^i + b^q$, so "
                r"$Q = W^qI + b^q\mathbf{1}^{\top}$ (the bias added to every column, drawn "
                "as its own panel). Colours of these big matrices stop at the 99th "
                "percentile of |value|; hover for the exact numbers.")
        if mode == "real" else "")),
        *(sp.projection_figure(walk, name, qdec) for name in "qkv")]


def decoder_projections(walk) -> list:
    """Step 2 of a decoder's head: q k v from its slices (GQA: k and v are its group's),
    then RoPE (`rotations`)."""
    qdec = decimals("real")[1]
    said = _(r"$q^i = W^q a^i,\; k^i = W^k a^i,\; v^i = W^v a^i$, as in BERT; ") + (
        _("with biases, as in Qwen2.") if walk.biases else
        _("no biases: Llama's projections have none.")) + " " + _(
        "$W^k$ and $W^v$ are those of key/value head {g}: query heads {group} all read the "
        "same keys and values (grouped-query attention), so a layer stores fewer of them. "
        "Colours of these big matrices stop at the 99th percentile of |value|; hover for the "
        "exact numbers.").format(g=walk.kv_head, group=", ".join(str(h) for h in walk.kv_group))
    return [Markdown(said), *(sp.projection_figure(walk, name, qdec) for name in "qkv"),
            *rotations(walk)]


def rotations(walk) -> list:
    """RoPE as a step of its own: q and k before and after the turn (none without it)."""
    if not walk.rotary:
        return [Markdown(_("Positions are switched off (none): q and k are not turned, and the "
                           "scores use them as projected."), "caption")]
    theta = walk.angles[1] if walk.n > 1 else walk.angles[0]
    return [Markdown(_(
        r"**RoPE**, new in this step: before any score, $q^i$ and $k^i$ are turned by their "
        r"position $i$ (counted from 0). Their $d_k = {d}$ numbers form {pairs} pairs "
        r"(dimension $t$ with $t + {pairs}$), and pair $t$ turns by the angle $i\,\theta_t$, "
        r"$\theta_t$ from {first:.3g} down to {last:.2g} radians per position. Turning keeps "
        r"each pair's length; $q^i\cdot k^j$ then depends on the distance $i - j$, not on "
        r"where the two tokens stand. The first token (position 0) is not turned; the value "
        r"vectors never are.").format(d=walk.d_k, pairs=walk.d_k // 2, first=float(theta[0]),
                                      last=float(theta[-1]))),
        *(sp.rotation_figure(walk, name) for name in "qk")]


def default_key(walk) -> int:
    return min(1, walk.n - 1)


def similarity(walk, i: int, j: int, mode: str) -> list:
    """Step 3 up to its layout choice: the key, (toy) every dot product, q^i · k^j's terms."""
    qdec = decimals(mode)[1]
    out = [Markdown(_("Key: **{token} #{j}**, i.e. $k^{{{k}}}$.").format(
        token=literal(walk.tokens[j]), j=_number(walk, j), k=j + 1), "caption")]
    if mode == "toy":
        out += [Tex(sp.dot_product_latex(walk.queries[i], walk.keys[k], i, k, qdec))
                for k in range(walk.n)]
    out.append(sp.dot_terms_figure(wt.dot_terms(walk.queries[i], walk.keys[j]),
                                   f"α<sub>{i + 1},{j + 1}</sub> = q<sup>{i + 1}</sup> · "
                                   f"k<sup>{j + 1}</sup>"))
    return out


def scores(walk, rows: str, mode: str) -> list:
    """Step 3 after its layout choice (`rows`: a ROWS key)."""
    return [*mask_note(walk),
            sp.scores_figure(walk, rows, decimals(mode)[1], 4 if mode == "toy" else 3)]


def mask_note(walk) -> list:
    """What a decoder's mask hides in step 3: later keys, and on a layer with a sliding window
    the keys that lie outside it (more than W - 1 tokens back)."""
    if walk.mask is None:
        return []
    later = np.triu(np.ones((walk.n, walk.n), dtype=bool), 1)  # j > i
    outside = int((~walk.mask & ~later).sum())  # j <= i, masked: outside the window
    if walk.window is None or not outside:
        said = _(r"The causal mask: query $i$ may look at keys $j \le i$ only. The {count} "
                 r"scores of later keys are computed but masked: blank in the matrix, their "
                 r"weights exactly 0 (step 5).").format(count=int((~walk.mask & later).sum()))
        if walk.window is not None:
            said += " " + _("This layer's sliding window of {w} tokens is as long as the input "
                            "or longer: it masks nothing more here.").format(w=walk.window)
        return [Markdown(said, "caption")]
    return [Markdown(_(
        r"The causal mask and this layer's sliding window of {w} tokens: query $i$ may look "
        r"at keys $i - {w1} \le j \le i$ only. The {later} scores of later keys and the "
        r"{outside} scores of keys outside the window (more than {w1} tokens back) are "
        r"computed but masked: blank in the matrix, their weights exactly 0 (step 5).").format(
        w=walk.window, w1=walk.window - 1, later=int(later.sum()), outside=outside), "caption")]


def temperature(walk, i: int, temp: float, mode: str) -> tuple[list, dict]:
    """Step 4 after its temperature slider: (blocks, numbers added to the download)."""
    labels = sp.token_axis(walk.tokens)
    limit = wt.temperature_limit(walk.scores[i], allowed=walk.allowed(i))
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
    w_t = wt.temperature_weights(walk.scores, walk.scale, temp, walk.mask)
    temps = np.geomspace(0.02, 100, 60)
    scaled = walk.scores * walk.scale
    if walk.mask is not None:  # masked scores left blank, as in step 3
        scaled = np.where(walk.mask, scaled, np.nan)
    return [Markdown(" ".join(said)),
            sp.matrices_figure(
                [(scaled, labels, labels, _("scores / sqrt(d_k)"), "scores"),
                 (w_t, labels, labels, _("weights at T = {t:g}").format(t=temp), "weights")],
                ["→"], _("Scale, then softmax"), decimals=3),
            sp.weights_bar_figure({f"T = {temp:g}": w_t[i], "T = 1": walk.weights[i]},
                                  walk.tokens, _("Weights of query {query}").format(
                                      query=labels[i])),
            sp.temperature_figure(wt.temperature_sweep(walk.scores[i], walk.scale, temps,
                                                       walk.allowed(i)), temp,
                                  walk.n if walk.mask is None else int(walk.mask[i].sum())),
            sp.dk_figure(wt.dk_sweep(), walk.d_k)], {"weights_at_T": w_t, "temperature": temp}


SOFTMAX_DIGITS = 4  # step 5's table and its sums: one number of digits for all


def softmax(walk, i: int) -> list:
    """Step 5."""
    labels = sp.token_axis(walk.tokens)
    sums = walk.weights.sum(axis=1, keepdims=True)
    parts = wt.softmax_parts(walk.scores[i], walk.scale, allowed=walk.allowed(i))
    masked = "" if walk.mask is None else " " + _(
        r"A masked key (a later token) has $z_j = -\infty$, so $e^{z_j} = 0$ and its weight "
        r"is exactly 0.")
    return [Markdown(_(r"$\alpha'_{i,j} = e^{z_j} / \sum_{j'} e^{z_{j'}}$ with "
                       r"$z_j = \alpha_{i,j}/\sqrt{d_k}$: each row of weights sums to 1.")
                     + masked),
            sp.matrices_figure([(walk.weights, labels, labels,
                                 _("weights A'<sup>T</sup> (rows = queries)"), "weights"),
                                (sums, labels, [_("row sum")], "Σ_j", "weights")], [""],
                               _("Softmax of each row"), decimals=3),
            Table({_("key"): token_labels(walk.tokens), _("score α"): walk.scores[i],
                   "z = α/√d_k": parts["logits"], "exp(z − max z)": parts["exps"],
                   _("weight α'"): walk.weights[i]},
                  # the row's numbers and the sums under them with the same digits
                  formats={h: f"%.{SOFTMAX_DIGITS}f" for h in (
                      _("score α"), "z = α/√d_k", "exp(z − max z)", _("weight α'"))}),
            Markdown(_("Σ exp = {total}; weight = exp / Σ; Σ weights = {sum}").format(
                total=f"{parts['total']:.{SOFTMAX_DIGITS}f}",
                sum=f"{walk.weights[i].sum():.{SOFTMAX_DIGITS}f}"), "caption")]


def weighted_sum(walk, i: int) -> list:
    """Step 6."""
    contrib = wt.contributions(walk.weights[i], walk.values)
    return [Markdown(_(r"$b^{{{k}}} = \sum_j \alpha'_{{{k},j}}\, v^j$; for every token at once "
                       r"$O = V A'$, column $i$ of $O$ being $b^i$ ($A'$ has a row per key; in "
                       r"the row layout $O^{{\top}} = A'^{{\top}}V$, PyTorch `weights @ "
                       r"values`).").format(k=i + 1)),
            Markdown(_(r"The notes on the lecture write $C = Q^{\top}K$ (a row per query) and "
                       r"then $B = VC$. Read literally, column $i$ of $VC$ mixes the values with "
                       r"the weights *on* key $i$, not those *of* query $i$. The consistent "
                       r"form, which is what is computed here, is $B = VC^{\top} = VA'$."),
                     "caption"),
            sp.weighted_sum_figure(contrib, walk.tokens, i),
            sp.contributions_figure(contrib, walk.tokens, i), sp.outputs_figure(walk)]


def multihead_intro(walk=None) -> Markdown:
    """Step 7's text, above its heads: the lecture's (toy, a BERT layer), or a Llama-shaped
    decoder's (real mode on a decoder: grouped key/value heads, x + B then RMSNorm)."""
    if walk is not None and walk.kv_head is not None:
        return Markdown(_(
            r"$B = W^O\,(O_0;\dots;O_{h-1})$, $O_q = \mathrm{Attention}(Q_q,K_g,V_g)$: rows "
            r"of $Q=W^QI$ are split into h query heads of size $d_h$, those of $K$ and $V$ into "
            r"g key/value heads, each read by h/g query heads (grouped-query attention, "
            r"Ainslie et al. 2023). $B$ is the attention block's output, not the layer's: this "
            r"decoder adds it to the layer's input, $x + B$, and runs the feed-forward on "
            r"$\mathrm{RMSNorm}(x + B)$ with another residual."))
    return Markdown(_(r"$B = W^O\,(O_0;\dots;O_{h-1})$, $O_g = \mathrm{Attention}(Q_g,K_g,V_g)$: "
                      r"rows of $Q=W^QI$ are split into h heads of size $d_h = m/h$ (Vaswani et "
                      r"al. 2017). $B$ is the attention block's output, not the layer's: a BERT "
                      r"layer then adds its input and normalises, $\mathrm{LayerNorm}(I + B)$, "
                      "and runs the feed-forward with another residual and LayerNorm."))


def heads_choices(walk) -> list[int]:
    return wt.heads_choices(walk.m)


def toy_multihead(walk, heads: int, seed: int):
    return wt.toy_multihead(walk, heads, int(seed))


def heads_trend(walk, progress: Callable | None = None) -> dict:
    """Over 40 seeds: does going from 1 head to m heads flatten the softmax?"""
    text = " ".join(walk.tokens)
    return wt.heads_trend(text, progress=progress) if progress else wt.heads_trend(text)


def shapes_table(walk, mh) -> Table:
    found = (wt.multihead_shapes(walk.m, walk.n, mh.n_heads) if walk.kv_head is None else
             wt.decoder_multihead_shapes(walk.m, walk.n, mh.n_heads,
                                         mh.w_k.shape[0] // mh.head_dim, mh.head_dim))
    rows = [{_(SHAPE_COLUMNS[k]): v for k, v in row.items()} for row in found]
    return Table({k: [r[k] for r in rows] for k in rows[0]})


def multihead(walk, mh, seed: int, trend: Callable[[], dict], real: tuple | None
              ) -> tuple[list, dict]:
    """Step 7 after its choice of heads: (blocks, numbers added to the download). `trend()`:
    heads_trend(walk), asked for in toy mode only, when its caption is made; `real`: (model,
    trace, layer) in real mode."""
    out: list = [shapes_table(walk, mh)]
    extra: dict = {}
    if real is None:
        title = (_("1 head: weights A'<sup>T</sup> (rows = queries)") if mh.n_heads == 1 else
                 _("{n} heads: weights A'<sup>T</sup> (rows = queries)").format(n=mh.n_heads))
        out += [sp.heads_figure(mh.weights, walk.tokens, title),
                sp.entropy_by_heads_figure(wt.heads_sweep(walk, int(seed)))]
        trend = trend()
        out.append(Markdown(_(
            "The bars are one seed's. Do more, smaller heads give a flatter softmax? Measured on "
            "this sentence over {seeds} seeds, going from 1 head to m heads made it flatter in "
            "{counts} of {seeds} cases and sharper in the rest: no consistent trend. Dividing "
            "by $\\sqrt{{d_h}}$ gives $q\\cdot k/\\sqrt{{d_h}}$ the same spread for every head "
            "size when the entries are independent.").format(
            seeds=trend["seeds"], counts=", ".join(
                f"{f} (m = {m})" for m, f in zip(trend["m"], trend["flatter"], strict=True))),
            "caption"))
    else:
        out.append(heads_grid(mh.weights, walk.tokens, title=_("Layer {layer}: {n} heads").format(
            layer=walk.layer, n=mh.n_heads)))
        if walk.kv_head is not None:
            out.append(kv_groups(mh))
    out.append(sp.output_projection_figure(mh))
    if real is not None and walk.kv_head is not None:
        model, t, layer = real
        after = wt.decoder_after_attention(model, layer, t.hidden_states[layer], mh.projected)
        out.append(decoder_after(after, mh, t, layer))
        extra["layer_output"] = after["layer_output"]
    elif real is not None:
        model, t, layer = real
        after = wt.layer_after_attention(model, layer, mh.inputs, mh.projected)
        gap = float(np.abs(after["layer_output"] - t.hidden_states[layer + 1]).max())
        out.append(Markdown(_(
            "Colours of W^O stop at the 99th percentile of |value| (hover: exact). From $B$ to "
            "the layer's output: $\\mathrm{{LayerNorm}}(I + B)$, then the feed-forward with its "
            "residual and LayerNorm, recomputed here: max |recomputed − engine's layer {layer} "
            "output| = {gap:.1e}, while $B$ itself differs from that output by up to {far:.1f}.")
            .format(layer=layer, gap=gap,
                    far=float(np.abs(mh.projected - t.hidden_states[layer + 1]).max())),
            "caption"))
        extra["layer_output"] = after["layer_output"]
    extra |= {f"multihead_{k}": v for k, v in mh.arrays().items() if k != "tokens"}
    return out, extra


def kv_groups(mh) -> Markdown:
    """Which key/value head each query head of a decoder's layer reads (grouped-query
    attention): the heads of a group share one K and one V."""
    per = mh.n_heads // (mh.w_k.shape[0] // mh.head_dim)
    groups = [_("query heads {heads} read key/value head {g}").format(
        heads=_(", ").join(str(h) for h in range(g * per, (g + 1) * per)), g=g)
        for g in range(mh.n_heads // per)]
    return Markdown(_("Grouped-query attention: {n} query heads share {g} key/value heads, "
                      "{per} each: {groups}. The heads of a group meet the same keys, so their "
                      "weights differ only through their queries.").format(
        n=mh.n_heads, g=len(groups), per=per, groups=_("; ").join(groups)), "caption")


def decoder_after(after: dict, mh, t, layer: int) -> Markdown:
    """From B to a decoder layer's output, recomputed (analysis.walkthrough.
    decoder_after_attention) and compared with the engine's."""
    gap = float(np.abs(after["layer_output"] - t.hidden_states[layer + 1]).max())
    return Markdown(_(
        "Colours of W^O stop at the 99th percentile of |value| (hover: exact). From $B$ to the "
        "layer's output in this decoder: the residual $x' = x + B$ with no norm after it, then "
        "$x' + \\mathrm{{FFN}}(\\mathrm{{RMSNorm}}(x'))$ (a gated feed-forward, SwiGLU; the "
        "last layer then its final RMSNorm), recomputed here: max |recomputed − engine's layer "
        "{layer} output| = {gap:.1e}, while $B$ itself differs from that output by up to "
        "{far:.1f}.").format(layer=layer, gap=gap, far=float(
            np.abs(mh.projected - t.hidden_states[layer + 1]).max())), "caption")


def additive(walk, seed: int, mode: str) -> tuple[list, dict]:
    """Step 8: (blocks, numbers added to the download)."""
    labels = sp.token_axis(walk.tokens)
    w_add = wt.toy_additive_vector(walk.d_k, int(seed) if mode == "toy" else 0)
    add = wt.additive_scores(walk.queries, walk.keys, w_add)
    return [Markdown(_(r"The lecture's other similarity: $\alpha_{{i,j}} = w^{{\top}}\tanh(q^i + "
                       r"k^j)$, with a vector $w$ of size $d_k$ (untrained here: made from the "
                       "seed): `w = {w}`").format(
        w=np.array2string(w_add, precision=1, max_line_width=10**6))),
        sp.matrices_figure([(walk.scores, labels, labels, _("dot product q·k"), "scores"),
                            (add, labels, labels, _("additive w·tanh(q+k)"), "scores")],
                           [""], _("Two similarities on the same q, k"), decimals=3),
        sp.matrices_figure([(walk.weights, labels, labels, "softmax(q·k / sqrt(d_k))",
                             "weights"), (wt.additive_weights(add, walk.mask), labels, labels,
                                          _("softmax(additive)"), "weights")], [""],
                           _("Their weights"), decimals=3)], {"additive_w": w_add,
                                                              "additive_scores": add}


def download(walk, mode: str, step: int, extra: dict):
    return numbers(_("Download this walkthrough's numbers (.npz)"), {**walk.arrays(), **extra},
                   f"attnviz_steps_{mode}_step{step}.npz")


def toy_step(walk, step: int, i: int = 0, seed: int = 0, key: int | None = None,
             rows: str = "queries", temp: float = 1.0, heads: int | None = None,
             trend: Callable[[], dict] | None = None) -> list:
    """One step in toy mode with the page's choices (their defaults: as the page opens)."""
    extra: dict = {}
    if step == 1:
        out = vectors(walk, "toy")
    elif step == 2:
        out = projections(walk, "toy")
    elif step == 3:
        out = [*similarity(walk, i, default_key(walk) if key is None else key, "toy"),
               *scores(walk, rows, "toy")]
    elif step == 4:
        out, extra = temperature(walk, i, temp, "toy")
    elif step == 5:
        out = softmax(walk, i)
    elif step == 6:
        out = weighted_sum(walk, i)
    elif step == 7:
        mh = toy_multihead(walk, heads_choices(walk)[0] if heads is None else heads, seed)
        more, extra = multihead(walk, mh, seed, trend or (lambda: heads_trend(walk)), None)
        out = [multihead_intro(), *more]
    else:
        out, extra = additive(walk, seed, "toy")
    return [step_heading(step), *out, download(walk, "toy", step, extra)]


def page(text: str, step: int, m: int = 4, d_k: int = 3, p: int = 3, seed: int = 0) -> list:
    """The page as it opens on `step`: the toy numbers for `text` (any model: only Real mode
    reads one), its widgets left out."""
    head = intro()
    if not text.strip():
        return [*head, Markdown(_("Type a sentence in the sidebar to begin, e.g. *I saw a "
                                  "saw*."), "info")]
    walk = wt.toy_walkthrough(text, m, d_k, p, int(seed))
    return [*head, *toy_cut(walk), query_note(walk, 0), *toy_step(walk, step, seed=seed)]
