"""Switch it off and see (pages/ablation.py): what changes when positions or heads are removed,
and what one clean activation restores in a corrupted run (analysis.ablation, engine.intervene).

`lesson_parts` is the lesson's closing view: positions off make the two "saw"s one vector in
every layer; with positions on, the heads whose removal brings them closest."""

from __future__ import annotations

import re

import numpy as np

from ..analysis import ablation
from ..engine.request import TraceRequest
from ..i18n import N_, _
from ..plotting import ablation as plots
from ..plotting.common import axis_labels, escape
from ..plotting.stats import CLIP_PERCENTILE, colour_top, maps_side_by_side
from .blocks import Heading, Markdown, Metric, Table
from .common import literal, numbers

MEASURE_NAMES = {"repeat": N_("cosine of the two repeated tokens"),
                 "pair": N_("similarity of the sentence pair"),
                 "change": N_("mean change of every token's final vector")}
MODE_NAMES = {"zero": N_("zero (the head's output set to 0)"),
              "mean": N_("mean (its average over reference sentences)")}
MODE_SHORT = {"zero": N_("zero ablation"), "mean": N_("mean ablation")}  # in titles
PART_NAMES = {"encoder": N_("encoder self-attention"),
              "decoder": N_("masked self-attention"),
              "cross": N_("cross-attention")}
TOP = 3  # heads shown with their weights in the lesson's view
MAX_TOKENS = ablation.MAX_TOKENS  # the maps' limit; a longer text's maps take its first tokens
SHOWN_MEAN = "mean"  # the link's value for the later layers' mean (the default, left out)


def shown_in_link(shown: int | None) -> str:
    """The later layers' head shown, as the link writes it: "h4", or "mean" (None or < 0).
    The same in every language, unlike the option's shown label."""
    return SHOWN_MEAN if shown is None or shown < 0 else f"h{int(shown)}"


def shown_from_link(value: str | None, n_heads: int) -> int:
    """A link's value back to the head shown (-1: the layer's mean). Reads "h4", and the
    labels older links hold ("head 4", or its Chinese); anything else, or a head the model
    lacks, is the mean."""
    match = re.search(r"-?\d+", value or "")
    if match is None or len(match.group()) > 6:
        return -1
    head = int(match.group())
    return head if 0 <= head < n_heads else -1


def long_text(n: int) -> list:
    """The one note of a text past the maps' limit: what is shown, and what a toggle asks."""
    return [Markdown(_("This text has {n} tokens. The maps of this page (every head removed in "
                       "turn, the pruning curve, patching) run the model once per head and are "
                       "made for up to {max} tokens: switch on the toggle below to compute "
                       "them on the text's first {max} tokens. One head removed, further down, "
                       "is shown for the whole text.").format(n=n, max=MAX_TOKENS), "info")]


def first_tokens(t) -> TraceRequest:
    """The request of trace `t` cut to its first MAX_TOKENS tokens (analysis.ablation)."""
    return ablation.first_tokens(t, MAX_TOKENS)


def for_maps(model, request: TraceRequest) -> TraceRequest:
    """`request`, or its first MAX_TOKENS tokens when it has more (the maps' limit); a text
    the model refuses is left as it is (the maps say why)."""
    try:
        t = model.trace(request)
    except ValueError:
        return request
    return request if t.n_tokens <= MAX_TOKENS else first_tokens(t)


def names(tokens: list[str]) -> list[str]:
    """Each token as the pages name it: a repeated token by its place ('saw #2', 'saw #4'),
    a token seen once bare ('dog'); escaped for Plotly."""
    labels = axis_labels(tokens)
    return [labels[k] if tokens.count(t) > 1 else escape(t) for k, t in enumerate(tokens)]


def intro() -> list:
    return [Heading(_("Switch it off and see"), 1), Markdown(_(
        "A weight says where a head looks, not whether it matters. Here a part of the model is "
        "**removed** and the result measured again: the position embeddings, one head's output "
        "$Y_h = A'_h V_h$ (its weights $A'_h$, the lecture's $\\alpha'_{i,j}$, times its "
        "values; before the output matrix $W_O$), or a whole layer's attention. **Zero** "
        "ablation sets $Y_h$ to 0; **mean** ablation replaces it by its average over a fixed "
        "set of reference sentences, so only what *this* sentence made the head say is removed "
        "(zero also removes the head's usual offset, which later layers expect)."))]


def lesson_parts(model, request: TraceRequest, progress=None, positions: bool = True,
                 tokens: tuple[int, int] | None = None) -> list:
    """Positions off -> the two repeated tokens' cosine is 1 in every layer; positions on ->
    all heads ranked by how much removing each (zero ablation) brings the two closest, the top
    ones with their weights. `tokens`: the two positions measured (default: the sentence's
    first repeated pair), named beside every number. `positions=False`: the heads only (the
    lesson's step on the real model draws the positions' curves itself)."""
    try:
        pair, on, off = ablation.saw_cosines(model, request, tokens)
        imp = ablation.head_importance(model, request, "repeat", "zero", tokens=pair,
                                       progress=progress)
    except ValueError as e:
        return [Markdown(literal(str(e)), "info")]
    t = model.trace(request.with_options(ablate=None))
    labels = names(t.tokens)
    i, j = pair
    a, b = f"`{labels[i]}`", f"`{labels[j]}`"
    cos_ab = f"cos({labels[i]}, {labels[j]})"
    ranked = imp.ranking()
    top = ranked[:TOP]
    maps = [t.weights[layer, head] for layer, head in top]
    titles = [_("layer {l}, head {h}: {e:+.4f}").format(l=layer, h=head, e=imp.effect[layer, head])
              for layer, head in top]
    shown = [
        Heading(_("Positions off, then heads off"), 2),
        Markdown(_("Without position embeddings the two tokens {a} and {b} enter layer 0 as "
                   "the same vector and stay the same in every layer (cosine 1 up to float "
                   "rounding): attention alone cannot tell them apart.").format(a=a, b=b)),
        plots.saw_cosines(on, off, labels[i], labels[j]),
        Metric(_("Cosine of {a} and {b} after the last layer, positions on").format(
            a=labels[i], b=labels[j]), f"{on[-1]:.4f}"),
        Metric(_("Cosine of {a} and {b} after the last layer, positions off").format(
            a=labels[i], b=labels[j]), f"{off[-1]:.6f}"),
    ]
    heads = [
        Markdown(_("Measured here: the two tokens {a} and {b}, whose cosine after the last "
                   "layer is {base:.4f}. With positions on, each of the {n} heads is removed "
                   "alone (zero ablation) and the cosine of {a} and {b} measured again: a "
                   "positive change means that removing the head brings the two closer, so the "
                   "head helps to tell them apart.").format(a=a, b=b, base=imp.base,
                                                            n=imp.values.size)),
        plots.head_map(imp.effect, _("Change of {cos} when one head is removed").format(
            cos=cos_ab), _("change"), selected=top[0] if top else None),
        # the change (what the heads are ranked by) before the cosine: a phone's narrow
        # table shows its first columns
        Table({_("rank"): list(range(1, 11)),
               _("layer"): [x for x, _y in ranked[:10]],
               _("head"): [y for _x, y in ranked[:10]],
               _("change of {cos}").format(cos=cos_ab): [
                   f"{imp.effect[h]:+.4f}" for h in ranked[:10]],
               _("{cos} without it").format(cos=cos_ab): [
                   f"{imp.values[h]:.4f}" for h in ranked[:10]]}),
        Markdown(_("The weights of the top {k} heads (each title: the change of the cosine of "
                   "{a} and {b} when that head is removed; rows: who looks, columns: who is "
                   "looked at):").format(k=TOP, a=a, b=b) + ("" if not any(
                       colour_top(m)[1] for m in maps) else " " + _(
                       "Each map's colour scale tops out at its {p}th percentile: the top "
                       "{share}% of its cells share the top colour (hover: the exact "
                       "weight).").format(p=CLIP_PERCENTILE, share=100 - CLIP_PERCENTILE))),
        maps_side_by_side(maps, titles, t.tokens, value=_("weight"), clip_note=False),
    ]
    return [*shown, *heads] if positions else heads


def importance_parts(model, request: TraceRequest, measure: str, mode: str, progress=None,
                     pair_text: str | None = None) -> list:
    """The head-importance map for a measure and mode, a layer's attention removed, the pruning
    curve, and the numbers."""
    imp = ablation.head_importance(model, request, measure, mode, pair_text=pair_text,
                                   progress=progress)
    base, layers = ablation.layer_removal(model, request, measure, pair_text=pair_text)
    order, curve = ablation.pruning_curve(model, request, imp, pair_text=pair_text)
    name = _(MEASURE_NAMES[measure])
    return [
        Heading(_("Head-importance map"), 2),
        Metric(name, f"{imp.base:.4f}", _("the plain run, nothing removed")),
        plots.head_map(imp.effect, _("Change of the {measure} when one head is removed ({mode})")
                       .format(measure=name, mode=_(MODE_SHORT[mode])), _("change")),
        *stats_parts(model, request, imp),
        Markdown(_("A whole layer's attention removed (all its heads and its output bias): the "
                   "layer's input passes on by the residual connection alone."), "caption"),
        plots.layer_bars(base, layers, name),
        Markdown(_("A pruning curve in the manner of Michel et al. (2019), who rank heads by a "
                   "gradient-based importance over a whole dataset and plot a task's accuracy: "
                   "here the heads are ordered by the change above (one head removed at a time, "
                   "this one sentence), removed one after another, the least important first, "
                   "and the y-axis is this sentence's measure."), "caption"),
        plots.pruning(curve, order, name),
        Markdown(pruning_said(ablation.pruning_summary(order, curve), name)),
        numbers(_("Download the ablation numbers (.npz)"),
                {"base": np.float64(imp.base), "values": imp.values, "effect": imp.effect,
                 "layer_removed": layers, "pruning_order": np.array(order),
                 "pruning_curve": curve, "tokens": np.array(imp.tokens)},
                f"attnviz_ablation_{measure}_{mode}.npz"),
    ]


def pruning_said(p: ablation.PruningSummary, name: str) -> str:
    """What the pruning curve shows, from its numbers (analysis.ablation.pruning_summary)."""
    heads = _(", ").join(_("layer {l}, head {h}").format(l=x, h=y) for x, y in p.last[:3])
    if len(p.last) > 3:
        heads = _("{heads}, …").format(heads=heads)
    return _("With the first {k} heads removed, the {measure} stays between {low:.3f} and "
             "{high:.3f}; the last {r} removed ({heads}) take it from {a:.3f} to "
             "{b:.3f}.").format(k=p.flat, measure=name, low=p.low, high=p.high, r=len(p.last),
                                heads=heads, a=p.start, b=p.end)


def patching_heading() -> list:
    return [Heading(_("Activation patching"), 2)]


def patching_parts(model, clean: TraceRequest, corrupted: TraceRequest, progress=None,
                   heading: bool = True) -> list:
    """Activation patching from the clean run into the corrupted one (same length); heading=
    False: without its heading (the page draws it above the corrupted sentence's box)."""
    top = patching_heading() if heading else []
    try:
        p = ablation.patching(model, clean, corrupted, progress=progress)
    except ValueError as e:
        return [*top, Markdown(literal(str(e)), "info")]
    labels, other = names(p.tokens), names(p.corrupted_tokens)
    i, j = p.pair
    restored = p.heads if p.residual is None else np.concatenate([p.heads.ravel(),
                                                                  p.residual.ravel()])
    return [
        *top,
        Markdown(_("Measure: the cosine of the final vectors at places {i} and {j}: of {a} and "
                   "{b} in the clean run, {clean:.4f}; of {c} and {d} in the corrupted run, "
                   "{bad:.4f}. One activation of the clean run is copied into the corrupted "
                   "run; 1 = it restores the whole difference, 0 = none. Ablation asks whether "
                   "a part matters at all; patching asks whether it carries what differs "
                   "between the two sentences.").format(
                       i=i, j=j, a=f"`{labels[i]}`", b=f"`{labels[j]}`", c=f"`{other[i]}`",
                       d=f"`{other[j]}`", clean=p.clean, bad=p.corrupted)),
        Markdown(_("The restored fraction is not held between 0 and 1: here it runs from "
                   "{low:.3f} to {high:.3f}. Below 0, the patch moves the cosine away from the "
                   "clean run's value; above 1, it moves it past that value. The layer x token "
                   "map is drawn for up to {n} tokens (it runs the model once per layer and "
                   "token).").format(low=float(restored.min()), high=float(restored.max()),
                                     n=ablation.RESIDUAL_MAX_TOKENS), "caption"),
        plots.head_map(p.heads, _("Patching one head's output"), _("restored")),
        plots.residual_map(p.residual, p.tokens, p.corrupted_tokens)
        if p.residual is not None else Markdown(_(
            "This sentence has {k} tokens: past {n}, the layer x token map is left "
            "out.").format(k=len(p.tokens), n=ablation.RESIDUAL_MAX_TOKENS), "caption"),
        numbers(_("Download the patching numbers (.npz)"),
                {"clean": np.float64(p.clean), "corrupted": np.float64(p.corrupted),
                 "heads_restored": p.heads,
                 **({} if p.residual is None else {"residual_restored": p.residual}),
                 "tokens": np.array(p.tokens), "corrupted_tokens": np.array(p.corrupted_tokens)},
                "attnviz_patching.npz"),
    ]


def decoder_patching_parts(model, clean: TraceRequest, corrupted: TraceRequest,
                           progress=None) -> list:
    """BART: patching each head of the decoder's masked self-attention and of its
    cross-attention from the clean run into the corrupted one (same length)."""
    try:
        p = ablation.decoder_patching(model, clean, corrupted, progress=progress)
    except ValueError as e:
        return [Heading(_("Patching the decoder's heads"), 3), Markdown(literal(str(e)), "info")]
    labels, other = names(p.tokens), names(p.corrupted_tokens)
    i, j = p.pair
    return [
        Heading(_("Patching the decoder's heads"), 3),
        Markdown(_("The same question for the decoder: one head's output of its masked "
                   "self-attention, or of its cross-attention (queries from the decoder, keys "
                   "and values from the encoder), copied from the clean run. Measure: the "
                   "cosine of the decoder's final vectors at places {i} and {j}: of {a} and {b} "
                   "in the clean run, {clean:.4f}; of {c} and {d} in the corrupted run, "
                   "{bad:.4f}.").format(i=i, j=j, a=f"`{labels[i]}`", b=f"`{labels[j]}`",
                                        c=f"`{other[i]}`", d=f"`{other[j]}`", clean=p.clean,
                                        bad=p.corrupted)),
        plots.head_map(p.decoder, _("Patching one head's output: {part}").format(
            part=_(PART_NAMES["decoder"])), _("restored")),
        plots.head_map(p.cross, _("Patching one head's output: {part}").format(
            part=_(PART_NAMES["cross"])), _("restored")),
        numbers(_("Download the decoder's patching numbers (.npz)"),
                {"clean": np.float64(p.clean), "corrupted": np.float64(p.corrupted),
                 "decoder_restored": p.decoder, "cross_restored": p.cross,
                 "pair": np.array(p.pair), "decoder_tokens": np.array(p.tokens),
                 "corrupted_decoder_tokens": np.array(p.corrupted_tokens)},
                "attnviz_patching_decoder.npz"),
    ]


def one_head_intro() -> list:
    return [Heading(_("One head removed"), 2), Markdown(_(
        "Pick a head: what its removal changes in every token's final vector, and in every "
        "later head's weights (heads in earlier layers cannot change)."), "caption")]


def one_head_parts(model, request: TraceRequest, layer: int, head: int, mode: str = "zero",
                   shown: int | None = None, part: str = "encoder") -> list:
    """One head removed: each token's final vector, each head's mean |change| of weights, and
    every later layer's weights as a difference map (head `shown`, or None: the layer's mean).
    `part`: the encoder's heads, or BART's decoder self-attention or cross-attention heads."""
    nb = ablation.one_head(model, request, layer, head, mode, part)
    later = nb.later(shown)
    out = [] if part == "encoder" else [Markdown(_(
        "A head of the decoder's {part} removed: the decoder tokens' final vectors, and the "
        "{part} weights of every decoder layer (rows: decoder tokens).").format(
            part=_(PART_NAMES[part])), "caption")]
    if nb.pair_similarity is not None:
        plain_s, cut_s = nb.pair_similarity
        out.append(Metric(_("Similarity of the sentence pair with the head removed"),
                          f"{cut_s:.4f}", _("{plain:.4f} with every head ({d:+.4f})").format(
                              plain=plain_s, d=cut_s - plain_s)))
    out += [
        plots.token_cosines(nb.token_cosine, nb.tokens, _(
            "Each token's final vector with layer {l}, head {h} removed").format(l=layer, h=head)),
        plots.head_map(nb.weights_change, _("How much each head's weights change (mean "
                                            "|change| of its weights)"), _("change"),
                       selected=(layer, head), signed=False),
    ]
    if later:
        out += [plots.weight_diffs(later, nb.tokens, shown, keys=nb.key_tokens), Markdown(_(
            "Purple: the query gives this key more weight without the head; orange: less. "
            "Each row of a weight map sums to 1, so each row of a difference map sums to 0."),
            "caption")]
    else:
        out.append(Markdown(_("Layer {l} is the last layer: no later layer's weights can "
                              "change.").format(l=layer), "caption"))
    return out + [
        numbers(_("Download this head's effect (.npz)"),
                {"token_cosine": nb.token_cosine, "weights_change": nb.weights_change,
                 "later_layers": np.array([x for x, _m in later], dtype=np.int64),
                 "later_weights_diff": np.array([m for _x, m in later], dtype=np.float32),
                 "later_head": -1 if shown is None else shown, "layer": layer, "head": head,
                 "mode": mode, "part": part, "tokens": np.array(nb.tokens),
                 **({} if nb.key_tokens is None else {"key_tokens": np.array(nb.key_tokens)})},
                f"attnviz_ablation_{part}_layer_{layer}_head_{head}.npz"
                if part != "encoder" else f"attnviz_ablation_layer_{layer}_head_{head}.npz"),
    ]


def decoder_importance_parts(model, request: TraceRequest, mode: str, progress=None) -> list:
    """BART: the decoder's masked self-attention heads and its cross-attention heads as the
    encoder's are shown: each one's importance map, each layer's attention removed, the pruning
    curve, and the numbers (analysis.ablation.decoder_importance, decoder_layer_removal,
    decoder_pruning_curve)."""
    out: list = [Heading(_("The decoder's heads"), 3)]
    try:
        imps = {part: ablation.decoder_importance(
            model, request, part, mode, progress=None if progress is None else (
                lambda d, t, k=k: progress(k * t + d, 2 * t)))
            for k, part in enumerate(("decoder", "cross"))}
    except ValueError as e:
        return [*out, Markdown(literal(str(e)), "info")]
    first = next(iter(imps.values()))
    labels = names(first.tokens)
    i, j = first.pair
    cos_ab = f"cos({labels[i]}, {labels[j]})"
    out.append(Markdown(_("The same maps for the decoder: each head of its masked "
                          "self-attention, then of its cross-attention (queries from the "
                          "decoder, keys and values from the encoder), removed alone ({mode}); "
                          "measure: the cosine of the decoder's final vectors of {a} and {b}, "
                          "{base:.4f} with every head.").format(
        mode=_(MODE_SHORT[mode]), a=f"`{labels[i]}`", b=f"`{labels[j]}`", base=first.base)))
    arrays: dict = {"pair": np.array(first.pair), "decoder_tokens": np.array(first.tokens),
                    "base": np.float64(first.base)}
    for part, imp in imps.items():
        base, layers = ablation.decoder_layer_removal(model, request, part, imp.pair)
        order, curve = ablation.decoder_pruning_curve(model, request, imp, part)
        name = _(PART_NAMES[part])
        out += [plots.head_map(imp.effect, _("Change of {cos} when one head is removed: "
                                             "{part}").format(cos=cos_ab, part=name),
                               _("change")),
                plots.layer_bars(base, layers, cos_ab, _(
                    "Removing a whole layer's attention: {part}").format(part=name)),
                plots.pruning(curve, order, cos_ab, _("Pruning curve: {part}").format(
                    part=name)),
                Markdown(pruning_said(ablation.pruning_summary(order, curve), cos_ab))]
        arrays |= {f"{part}_values": imp.values, f"{part}_effect": imp.effect,
                   f"{part}_layer_removed": layers, f"{part}_pruning_order": np.array(order),
                   f"{part}_pruning_curve": curve}
    out.append(numbers(_("Download the decoder's ablation numbers (.npz)"), arrays,
                       f"attnviz_ablation_decoder_{mode}.npz"))
    return out


def no_top(name: str, value: float) -> str:
    """Where no head has the most of a statistic: every head has the same value."""
    if name == "punct" and value == 0:
        return _("none: no punctuation in this sentence (0 for every head)")
    return _("none: {value:.4g} for every head").format(value=value)


def stats_parts(model, request: TraceRequest, imp: ablation.Importance) -> list:
    """|effect| beside Clark et al.'s statistics of the same heads, with the rank correlations
    and, per statistic, where its strongest head ranks by importance."""
    from .head_stats import names

    b = ablation.beside_stats(model, request, imp)
    titles = names()
    value = _("|change| when removed")
    tops = {k: b.top(k) for k in b.stats}
    fmt = lambda r: "—" if np.isnan(r) else f"{r:+.3f}"  # noqa: E731
    return [
        Markdown(_("Where a head looks and whether it matters, head by head: each point is one "
                   "of the {n} heads, placed by one of Clark et al.'s statistics on this "
                   "sentence (as on *Head statistics*) and by how much removing it changes the "
                   "measure. ρ is Spearman's rank correlation over the heads: near 0, looking "
                   "there says little about mattering here.").format(n=b.size.size)),
        plots.importance_vs_stats(b.size, b.stats, titles, b.rho, value),
        Table({_("statistic"): [titles[k] for k in b.stats],
               _("Spearman ρ with |change|"): [fmt(b.rho[k]) for k in b.stats],
               _("head with the most of it"): [
                   no_top(k, float(b.stats[k].flat[0])) if tops[k] is None else
                   _("layer {l}, head {h}").format(l=tops[k][0][0], h=tops[k][0][1])
                   for k in b.stats],
               _("its rank by |change|"): ["—" if tops[k] is None else
                                           f"{tops[k][1]} / {b.size.size}" for k in b.stats]}),
        numbers(_("Download importance and statistics (.npz)"),
                {"size": b.size, **{f"stat_{k}": v for k, v in b.stats.items()},
                 "spearman": np.array([b.rho[k] for k in b.stats]),
                 "statistics": np.array(list(b.stats)), "conventions": b.conventions},
                f"attnviz_ablation_{imp.measure}_{imp.mode}_statistics.npz"),
    ]


def page(model, request: TraceRequest, measure: str = "repeat", mode: str = "zero",
         corrupted: str = "I saw a dog", report=()) -> list:
    """The page as it opens (its widgets left out; one head removed: layer 0, head 0)."""
    out = [*intro(), *report, *lesson_parts(model, request)]
    for part in (lambda: importance_parts(model, request, measure, mode),
                 lambda: [*one_head_intro(), *one_head_parts(model, request, 0, 0, mode)]):
        try:
            out += part()
        except ValueError as e:
            out.append(Markdown(literal(str(e)), "info"))
    other = TraceRequest(corrupted, **request.options())
    out += patching_parts(model, request, other)
    if getattr(model, "n_decoder_layers", 0):
        out += decoder_patching_parts(model, request, other)
    return out


def message(error: Exception) -> list:
    """A plain message for what the maps cannot do (too long, no repeated word, no pair)."""
    return [Markdown(literal(str(error)), "info")]
