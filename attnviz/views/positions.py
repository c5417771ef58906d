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
from ..i18n import N_, _
from ..plotting import positions as plots
from ..plotting.common import escape
from .blocks import Heading, Markdown
from .common import literal, not_bert_like, numbers, shown_name

MODE_NAMES = plots.MODE_NAMES
TABS = (N_("1 · Shuffle the words"), N_("2 · I saw a saw"), N_("3 · The encodings"),
        N_("4 · Compare the choices"))
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
    return _("'{a_token}' #{a} and '{b_token}' #{b}").format(  # goes into figure text
        a_token=escape(t.tokens[a]), a=a, b_token=escape(t.tokens[b]), b=b)


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
        "{none:.6f}); with BERT's learned positions they drift apart ({learned:.3f}). That "
        "is what lets a tagger tell them apart (the lecture: in *I saw a saw* one is a verb, "
        "the other a noun). The sinusoids, a signal this BERT never learned to read, leave "
        "them at {sinusoidal:.3f}.").format(
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
