"""What positional encoding does: self-attention with and without positions (pages/positions.py).

Numbers: analysis.positions (shuffles, Jensen-Shannon divergences between modes, encodings,
what the sinusoids' scale does) and analysis.common (cosines) on the sentence's Traces under
each `positions=` mode; figures: plotting.positions.

`trace_of(**options)` below is the page's way to the sentence's trace with other engine
options (the app's cached ctx.trace, the pack's Pack.trace)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..analysis import positions
from ..analysis.common import cosine_matrix, cosine_per_layer, first_repeated_pair
from ..engine import POSITION_MODES
from ..engine.positions import sinusoid_scale
from ..engine.rope import frequencies
from ..i18n import N_, _
from ..plotting import positions as plots
from ..plotting.common import axis_labels
from .blocks import Heading, Markdown
from .common import literal, model_notes, not_bert_like, numbers, shown_name

MODE_NAMES = plots.MODE_NAMES
TABS = (N_("1 · Shuffle the words"), N_("2 · I saw a saw"), N_("3 · The encodings"),
        N_("4 · Compare the choices"), N_("5 · Rotary positions (RoPE)"))
TOY_WORDS = ["I", "saw", "a", "saw"]


def intro() -> list:
    return [Heading(_("What positional encoding does"), 1), Markdown(_(
        "Self-attention compares every query $q^i$ with every key $k^j$, and nothing in "
        "$\\mathrm{softmax}(q^i\\cdot k^j/\\sqrt{d_k})$ says *where* token $j$ is: **there is no "
        "position information in self-attention**. So each position gets its own vector $e^i$, "
        "hand-crafted or learned from data, added to the input: $e^i + a^i \\to q^i, k^i, v^i$. "
        "Below, the same BERT runs with its learned $e^i$, with none, with the sinusoids of "
        "Vaswani et al. (scaled to the size of its learned vectors, tab 3), and with its learned "
        "vectors shuffled."
    ))]


def sinusoid_caveat(model) -> Markdown:
    """The caveat that goes wherever a sinusoidal curve appears (numbers from the engine)."""
    learned = model.position_embeddings
    c = sinusoid_scale(learned)
    mean = float(learned.norm(dim=1).mean())
    return Markdown(_(
        "Sinusoids: the engine adds $c\\,PE$ with $c = {c:.4f}$, so each has the mean norm of "
        "the learned position vectors ({mean:.2f}) instead of $\\sqrt{{d/2}} = {root:.1f}$. This "
        "BERT was trained with its learned vectors only: the sinusoidal curve shows how it "
        "copes with a position signal it never saw.").format(
        c=c, mean=mean, root=np.sqrt(model.hidden / 2)), "caption")


# ------------------------------------------------------------------ 1 · shuffle the words
def shuffle_check(model, request, trace_of: Callable, mode: str, seed: int, keep: bool):
    """(perm, max difference per layer) of the shuffled sentence against the original one
    shuffled the same way, for one position mode."""
    request = request.with_options(positions=mode)
    perm, shuffled = positions.shuffled_request(model, request, seed=seed, keep_special=keep)
    diffs = positions.permuted_differences(trace_of(positions=mode), model.trace(shuffled),
                                           perm)
    return perm, diffs["hidden_states"]


def toy_note() -> Markdown:
    return Markdown(_(
        "**Toy vectors first** (the lecture's $a^i \\to q^i, k^i, v^i$, $d = 4$): both *saw*s "
        "start from the same vector $a$, so without positions they get the same output $b^i$; "
        "adding $e^i$ makes them differ."))


def toy_figure(seed: int):
    return plots.toy_outputs(positions.toy_self_attention(TOY_WORDS, d=4, seed=seed), TOY_WORDS)


def nothing_to_shuffle(t, perm) -> list:
    if not (perm == np.arange(t.n_tokens)).all():
        return []
    return [Markdown(_("This sentence has fewer than two tokens that can move: nothing to "
                       "shuffle. Untick *Keep [CLS] and [SEP]* or type a longer sentence."),
                     "info")]


def permutation_figure(t, perm):
    return plots.permutation_figure(t.tokens, perm)


def shuffle_text(diffs: dict) -> Markdown:
    return Markdown(_(
        "Run BERT on the shuffled tokens and shuffle the original outputs the same way. "
        "**Without positions** they are the same vectors, equal up to float rounding: the "
        "largest difference over every layer is **{none:.2e}**. **With learned positions** it "
        "is **{learned:.2f}**: the words now know where they stand.").format(
        none=diffs["none"].max(), learned=diffs["learned"].max()))


def equivariance_figure(diffs: dict):
    return plots.equivariance_figure(diffs)


def log_scale_note() -> Markdown:
    return Markdown(_("Log scale: the no-positions bars are float rounding, about a million times "
                      "smaller than the learned ones, and would be invisible on a linear axis. "
                      "An exact 0 has no bar; it reads 0 on the floor."), "caption")


def shuffle_download(t, perm, diffs: dict):
    return numbers(_("Download these numbers (.npz)"), {
        "tokens": t.tokens, "permutation": perm,
        **{f"max_diff_{m}": d for m, d in diffs.items()}}, "attnviz_positions_shuffle.npz")


def shuffle_tab(t, seed: int, perm, diffs: dict) -> list:
    """Tab 1 (its checkbox left out)."""
    return [toy_note(), toy_figure(seed), *nothing_to_shuffle(t, perm),
            permutation_figure(t, perm), shuffle_text(diffs), equivariance_figure(diffs),
            log_scale_note(), shuffle_download(t, perm, diffs)]


# ------------------------------------------------------------------ 2 · I saw a saw
def default_pair(t) -> tuple[tuple[int, int], list]:
    """The first repeated token pair, or (0, 1)-like fallback with a sentence saying so."""
    pair = first_repeated_pair(t.tokens)
    if pair is not None:
        return pair, []
    return positions.fallback_pair(t.n_tokens), [Markdown(_(
        "No word repeats in this sentence (try *I saw a saw*). Pick any two tokens to "
        "compare."), "info")]


def pair_curves(runs: dict, a: int, b: int) -> dict:
    """{mode: cosine of tokens a and b in every layer} from {mode: trace}."""
    return {m: cosine_per_layer(runs[m].hidden_states, a, b) for m in POSITION_MODES}


def pair_name(t, a: int, b: int) -> str:
    """The two tokens' labels ('saw #2 and saw #4', escaped: it goes into figure text)."""
    names = axis_labels(t.tokens)
    return _("{a} and {b}").format(a=names[a], b=names[b])


def pair_text(t, a: int, b: int, curves: dict) -> list:
    tok = t.tokens
    same = tok[a] == tok[b] and t.segments[a] == t.segments[b] and a != b
    out = []
    if a == b:
        out.append(Markdown(_("Both choices are the same token: pick two different ones to "
                              "compare."), "info"))
    out.append(Markdown(_("Layer by layer, the cosine similarity of {pair} under each "
                          "choice.").format(pair=pair_name(t, a, b)) + " " + (_(
        "Same word: without positions both are fed the same vector, so every layer gives "
        "them the same vector again, equal up to float rounding (last layer: cosine "
        "{none:.6f}); with BERT's learned positions they drift apart ({learned:.6f}). That "
        "is what lets a tagger tell them apart (the lecture: in *I saw a saw* one is a verb, "
        "the other a noun). The sinusoids, a signal this BERT never learned to read, leave "
        "them at {sinusoidal:.6f}.").format(
        none=curves["none"][-1], learned=curves["learned"][-1],
        sinusoidal=curves["sinusoidal"][-1])
        if same else _("These tokens differ (word, or sentence A/B segment), so they differ "
                       "even without positions."))))
    return out


def cosine_figure(t, a: int, b: int, curves: dict):
    return plots.cosine_curve(curves, pair_name(t, a, b))


def rows_figure(t, runs: dict, a: int, b: int, layer: int, head: int):
    rows = {m: runs[m].weights[layer, head][[a, b]] for m in ("learned", "none")}
    return plots.attention_rows(rows, t.tokens, a, b, title=_(
        "Layer {layer}, head {head}: their attention rows (each sums to 1)").format(
        layer=layer, head=head))


def weights_figure(t, runs: dict, layer: int, head: int):
    return plots.weights_comparison(
        runs["learned"].weights[layer, head], runs["none"].weights[layer, head], t.tokens,
        title=_("Layer {layer}, head {head}: weights with and without positions").format(
            layer=layer, head=head))


def pair_download(t, runs: dict, a: int, b: int, layer: int, head: int, curves: dict):
    return numbers(_("Download these numbers (.npz)"), {
        "tokens": t.tokens, "pair": np.array([a, b]),
        **{f"cosine_{m}": c for m, c in curves.items()},
        **{f"weights_L{layer}H{head}_{m}": runs[m].weights[layer, head]
           for m in ("learned", "none")}}, "attnviz_positions_pair.npz")


# ------------------------------------------------------------------ 3 · the encodings
def encodings(model, count: int):
    """(sinusoidal table, learned table, PCA of the learned one, explained ratio): they depend
    on the model and the count only. Position 0 (always [CLS]) is far from all the others,
    so the projection leaves it out."""
    learned = positions.learned_table(model, count)
    return (positions.sinusoidal_table(count, model.hidden), learned,
            *positions.pca(learned[1:]))


def sinusoid_scaling(model, ids, segments) -> dict:
    """What the sinusoids' scale does to this sentence's input (analysis.positions)."""
    return positions.sinusoid_scaling(model, ids, segments)


def sinusoids_note() -> Markdown:
    return Markdown(_("**Hand-crafted** (Vaswani et al. 2017): "
                      "$PE_{p,2i} = \\sin(p/10000^{2i/d})$, $PE_{p,2i+1} = \\cos(p/10000^{2i/d})$. "
                      "Early dimensions wave fast, late ones slowly; the dot product "
                      "$e^p\\cdot e^q$ depends only on the distance $p-q$. Drawn below "
                      "unscaled."))


def scaling_text(sc: dict) -> Markdown:
    return Markdown(_(
        "**Their size matters.** Every row of $PE$ has norm $\\sqrt{{d/2}} = {raw:.1f}$, while "
        "this sentence's word (+ segment) embeddings have norms {lo:.2f} to {hi:.2f}. Added as "
        "they are, the sinusoid would swamp the word: after the embedding LayerNorm the input "
        "would keep a mean cosine of only **{kept_raw:.2f}** with the word alone. So the engine "
        "scales them by $c = {c:.4f}$, to the learned vectors' mean norm ({learned:.2f}): the "
        "input then keeps **{kept_scaled:.2f}** (learned positions: {kept_learned:.2f}). "
        "Vaswani et al. multiply the word embeddings by $\\sqrt{{d}}$ instead; this BERT was "
        "trained neither way.").format(
        raw=sc["raw_norm"], lo=sc["word_norm"].min(), hi=sc["word_norm"].max(),
        kept_raw=sc["kept_raw"].mean(), c=sc["scale"], learned=sc["learned_norm"],
        kept_scaled=sc["kept_scaled"].mean(), kept_learned=sc["kept_learned"].mean()))


def sinusoid_figure(model, pe):
    return plots.encoding_heatmap(pe, _("Sinusoidal PE (unscaled), d = {d}").format(
        d=model.hidden))


def sinusoid_dots_figure(pe):
    return plots.position_matrix(positions.dot_products(pe),
                                 _("Sinusoidal (unscaled): PE_p · PE_q"), _("dot"))


def learned_note(model) -> Markdown:
    return Markdown(_("**Learned from data**: {model}'s own table of {count} vectors, one per "
                      "position, trained with the model. Nobody told it to, yet neighbouring "
                      "positions end up similar.").format(model=literal(shown_name(model)),
                                                          count=model.max_positions))


def learned_figure(learned):
    return plots.encoding_heatmap(
        learned, _("Learned e^p (colours clipped at the 99th percentile)"), clip=99)


def learned_cosines_figure(learned):
    return plots.position_matrix(cosine_matrix(learned), _("Learned: cos(e^p, e^q)"),
                                 _("cosine"))


def position_zero_note() -> Markdown:
    return Markdown(_("Position 0, always [CLS] here, lies far from every other position (see "
                      "its row above), so the projection leaves it out."), "caption")


def pca_figure(coords, ratio):
    return plots.pca_scatter(coords, ratio, first=1)


def encodings_download(pe, learned, coords, sc: dict):
    return numbers(_("Download these numbers (.npz)"), {
        "sinusoidal_unscaled": pe, "sinusoid_scale": sc["scale"], "learned_positions": learned,
        "pca": coords, "word_norm": sc["word_norm"], "kept_raw": sc["kept_raw"],
        "kept_scaled": sc["kept_scaled"], "kept_learned": sc["kept_learned"]},
        "attnviz_positions_encodings.npz")


# ------------------------------------------------------------------ 4 · compare the choices
def compare_modes(trace_of: Callable, seed: int, ref: str):
    """({mode: per-head JS divergence from ref}, {mode: final-vector cosines with ref})."""
    traces = {m: trace_of(positions=m, seed=seed) for m in POSITION_MODES}
    return positions.mode_divergences(traces, ref), positions.final_cosines(traces, ref)


def compare_text(div: dict, ref: str) -> Markdown:
    return Markdown(_(
        "For each head, how different are its weights under another choice of positions? "
        "The mean over queries of the Jensen-Shannon divergence between the two weight rows "
        "(0 = identical, 1 bit = no overlap); a choice against itself is exactly 0. A "
        "divergence, not a distance: its square root is one. Mean over heads: {means}.").format(
        means=_("; ").join(_("{mode} {bits:.3f} bits").format(mode=_(MODE_NAMES[m]),
                                                             bits=d.mean())
                          for m, d in div.items() if m != ref)))


def divergence_figure(div: dict, ref: str):
    return plots.mode_divergence_grid(div, ref)


def final_figure(t, final: dict, ref: str):
    return plots.final_change_figure(final, t.tokens, ref)


def compare_download(t, div: dict, final: dict, ref: str):
    return numbers(_("Download these numbers (.npz)"), {
        "tokens": t.tokens, **{f"js_divergence_{m}_vs_{ref}": d for m, d in div.items()},
        **{f"final_cosine_{m}_vs_{ref}": c for m, c in final.items()}},
        "attnviz_positions_compare.npz")


# ------------------------------------------------------------------ 5 · rotary positions
TOY_Q, TOY_K = (1.0, 0.2), (0.1, 0.6)  # the toy pair's query and key (2-D): the key shorter
TOY_PLACES = (0, 1, 2, 3)
GRID_DIM, GRID_PLACES, GRID_BASE = 16, 32, 10000.0  # the toy score grid: d, places, base


def rope_intro() -> Markdown:
    return Markdown(_(
        "**Rotary positions** (RoPE; Su et al. 2021), the choice of Llama, Qwen, Mistral, "
        "Gemma and SmolLM2: nothing is added to the input. Instead each query and key is "
        "**turned** by an angle that grows with its place $m$: split the $d$ dimensions into "
        "$d/2$ pairs, and turn pair $i$ by $m\\,\\theta_i$, with "
        "$\\theta_i = \\mathrm{base}^{-2i/d}$. The score of a query at $m$ and a key at $p$ "
        "then keeps only $\\cos$ and $\\sin$ of $(m-p)\\,\\theta_i$: **only the distance "
        "counts**."))


def toy_rotation() -> dict:
    """{"q", "k": [places, 2] the toy pair turned at TOY_PLACES}."""
    return {"q": positions.rotated_pair(TOY_Q, TOY_PLACES),
            "k": positions.rotated_pair(TOY_K, TOY_PLACES)}


def rotation_figure(turned: dict):
    return plots.rotation_figure(turned, TOY_PLACES, positions.TOY_THETA)


def rotation_text(turned: dict) -> Markdown:
    """q·k of the toy pair at places (1, 0) and (3, 2): the same distance, the same score."""
    q, k = turned["q"], turned["k"]
    return Markdown(_(
        "One pair, $\\theta = {deg:.1f}°$ per place: $q$ and $k$ keep their length and turn. "
        "$q$ at place 1 with $k$ at place 0 scores **{a:.4f}**; $q$ at 3 with $k$ at 2 scores "
        "**{b:.4f}** (both one place apart); $q$ and $k$ both at 0 score {c:.4f}.").format(
        deg=float(np.degrees(positions.TOY_THETA)), a=float(q[1] @ k[0]),
        b=float(q[3] @ k[2]), c=float(q[0] @ k[0])))


def rotary_grid(seed: int) -> dict:
    """The toy score grid: {"scores" [n, n], "distances", "means", "spread", "plain" (q·k
    unturned), "q", "k"} for a seeded query and key of GRID_DIM dimensions, base GRID_BASE."""
    q, k = positions.toy_query_key(GRID_DIM, seed)
    s = positions.rotary_scores(q, k, GRID_PLACES, frequencies(GRID_DIM, GRID_BASE))
    dist, means, spread = positions.by_distance(s)
    return {"scores": s, "distances": dist, "means": means, "spread": spread,
            "plain": float(q @ k), "q": q, "k": k}


def grid_text(g: dict) -> Markdown:
    s = g["scores"]
    return Markdown(_(
        "Now one query and one key of $d = {d}$ dimensions (random, seeded; base {base:,.0f}), "
        "placed at every pair of places $m, p$ from 0 to {last}. The scores range from "
        "{lo:.3f} to {hi:.3f}, yet along each diagonal ($m - p$ fixed) they stay the same: the "
        "largest spread within one diagonal is **{spread:.1e}**, float rounding of the angles. "
        "Without the turn every cell would be $q\\cdot k$ = {plain:.3f}.").format(
        d=GRID_DIM, base=GRID_BASE, last=GRID_PLACES - 1, lo=s.min(), hi=s.max(),
        spread=g["spread"], plain=g["plain"]))


def grid_figure(g: dict):
    return plots.rotary_scores_figure(g["scores"])


def distance_figure(g: dict):
    return plots.distance_curve(g["distances"], g["means"])


def rotary_of(model) -> dict | None:
    """A model with rotary positions: {"head_dim", "theta" (the engine's θ_i, float32 [d/2],
    of its first layer type), "base" (its config's rope_theta)}; None for the others."""
    if not model.capabilities.get("rotary"):
        return None
    from ..engine.families.llama import rope_parameters

    kind = model.layer_types[0]
    theta, _factor = model.rotary[kind]
    return {"head_dim": int(model.head_dim), "theta": theta,
            "base": float(rope_parameters(model.config, kind)["rope_theta"])}


def spectrum_text(model, rot: dict, spec: dict, n_tokens: int) -> Markdown:
    w = spec["wavelength"]
    return Markdown(_(
        "{model}'s heads have $d = {d}$ dimensions, so {pairs} pairs; its config's "
        "`rope_theta` is {base:,.0f}. Pair 0 turns by $\\theta_0$ = {t0:.3f} radians per token "
        "(once every {w0:.1f} tokens); the last pair by {tl:.2e} (once every {wl:,.0f} "
        "tokens). This sentence has {n} tokens: {fast} of the {pairs} pairs turn once or more "
        "across it (the fast ones, which tell neighbours apart); the other {slow} turn less, "
        "and tell far places apart.").format(
        model=literal(shown_name(model)), d=rot["head_dim"], pairs=len(w), base=rot["base"],
        t0=spec["theta"][0], w0=w[0], tl=spec["theta"][-1], wl=w[-1], n=n_tokens,
        fast=int((w <= n_tokens).sum()), slow=int((w > n_tokens).sum())))


def spectrum_figure(spec: dict, n_tokens: int):
    return plots.spectrum_figure(spec["wavelength"], n_tokens)


def no_rotary_note(model) -> Markdown:
    return Markdown(_(
        "{model} has no rotary positions. Pick a model that has them (SmolLM2, a Llama-family "
        "decoder) in the sidebar to see its frequencies, and to ask what remains of the two "
        "*saw*s when its rotation is switched off.").format(model=literal(shown_name(model))),
        "info")


def twins_question() -> Markdown:
    return Markdown(":material/help: " + _(
        "**Predict first:** in BERT without positions the two *saw*s of *I saw a saw* become "
        "the same vector in every layer (tab 2). Switch off this decoder's rotation: do they "
        "become identical too?"))


def twins_text(t, a: int, b: int, tw: dict) -> Markdown:
    names = axis_labels(t.tokens)
    return Markdown(_(
        "**No.** Without rotation both enter as the same vector (cosine {emb:.6f} before the "
        "first layer), but this is a causal model: {b} sees the {nb} tokens up to it, {a} only "
        "{na}. After the last layer their cosine is **{none:.6f}** without rotation "
        "(largest difference {diff:.3g}) and {rope:.6f} with it. Order still leaks in through "
        "the mask, as Haviv et al. (2022) found: causal language models without any position "
        "encoding still learn positions.").format(
        emb=tw["without"][0], a=literal(names[a]), b=literal(names[b]), na=a + 1, nb=b + 1,
        none=tw["without"][-1], diff=tw["without_max_diff"], rope=tw["with"][-1]))


def twins_figure(t, a: int, b: int, tw: dict):
    return plots.cosine_curve({"rotary": tw["with"], "none": tw["without"]},
                              pair_name(t, a, b))


def rope_toys(seed: int) -> list:
    """The tab's toy part: the turned pair, the score grid and the score by distance."""
    turned, g = toy_rotation(), rotary_grid(seed)
    return [rope_intro(), rotation_figure(turned), rotation_text(turned), grid_text(g),
            grid_figure(g), distance_figure(g)]


def rope_model(model, t) -> list:
    """The loaded model's frequencies and the question on the two copies of a word (the
    answer: rope_answer); a note for a model without rotary positions."""
    rot = rotary_of(model)
    if rot is None:
        return [no_rotary_note(model)]
    spec = positions.rope_spectrum(rot["theta"])
    out = [spectrum_text(model, rot, spec, t.n_tokens), *model_notes(model),
           spectrum_figure(spec, t.n_tokens)]
    if first_repeated_pair(t.tokens) is None:
        return out + [Markdown(_("No word repeats in this sentence: type *I saw a saw* to ask "
                                 "about its two *saw*s."), "info")]
    return out + [twins_question()]


def rope_answer(model, t, trace_of: Callable) -> list:
    """The answer: the two copies' cosine per layer with and without rotation, measured."""
    a, b = first_repeated_pair(t.tokens)
    tw = positions.causal_twins(t, trace_of(positions="none"), a, b)
    return [twins_text(t, a, b, tw), twins_figure(t, a, b, tw)]


def rope_download(model, t, seed: int, trace_of: Callable | None = None):
    """The tab's numbers: the toys, the model's frequencies (a rotary model) and, when the
    answer is shown (`trace_of` given), the two copies' cosines."""
    turned, g, rot = toy_rotation(), rotary_grid(seed), rotary_of(model)
    out = {"toy_pair_places": np.array(TOY_PLACES), "toy_pair_q": turned["q"],
           "toy_pair_k": turned["k"], "grid_query": g["q"], "grid_key": g["k"],
           "grid_scores": g["scores"], "distances": g["distances"],
           "score_by_distance": g["means"]}
    if rot is not None:
        spec = positions.rope_spectrum(rot["theta"])
        out |= {"theta": spec["theta"], "wavelength": spec["wavelength"],
                "head_dim": np.array(rot["head_dim"]), "rope_theta": np.array(rot["base"])}
    pair = first_repeated_pair(t.tokens)
    if rot is not None and pair is not None and trace_of is not None:
        tw = positions.causal_twins(t, trace_of(positions="none"), *pair)
        out |= {"tokens": t.tokens, "pair": np.array(pair), "cosine_rotary": tw["with"],
                "cosine_none": tw["without"],
                "max_abs_difference_none": np.array(tw["without_max_diff"])}
    return numbers(_("Download these numbers (.npz)"), out, "attnviz_positions_rope.npz")


# ------------------------------------------------------------------ the page
def page(model, request, trace_of: Callable, seed: int = 0, keep: bool = True,
         report=()) -> list:
    """The page as it opens (tab 1), its widgets left out."""
    t = trace_of()
    head = [*intro(), *report]
    refused = not_bert_like(model, _("This page"))
    if refused:
        return head + refused
    diffs = {}
    for m in ("none", "learned"):  # the same seeded shuffle for both
        perm, diffs[m] = shuffle_check(model, request, trace_of, m, seed, keep)
    return head + shuffle_tab(t, seed, perm, diffs)
