"""What positional encoding does: self-attention with and without positions.

Numbers: analysis.positions (shuffles, Jensen-Shannon divergences between modes, encodings, what
the sinusoids' scale does) and analysis.common (cosines) on cached Traces of the sidebar's
sentence under each `positions=` mode; figures: plotting.positions."""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis import positions
from attnviz.analysis.common import cosine_matrix, cosine_per_layer, first_repeated_pair
from attnviz.engine import POSITION_MODES
from attnviz.engine.positions import sinusoid_scale
from attnviz.i18n import _
from attnviz.plotting import positions as positions_plots
from attnviz.plotting.common import escape
from attnviz.ui.context import shown_name
from attnviz.ui.text import literal

MODE_NAMES = positions_plots.MODE_NAMES


def shuffle_check(ctx: ui.Context, mode: str, seed: int, keep: bool):
    """(perm, max difference per layer) of the shuffled sentence against the original one
    shuffled the same way, for one position mode: small results only, computed once."""
    request = ctx.request.with_options(positions=mode)

    def compute():
        perm, shuffled = positions.shuffled_request(ctx.model, request, seed=seed,
                                                    keep_special=keep)
        diffs = positions.permuted_differences(ctx.trace(positions=mode),
                                               ctx.model.trace(shuffled), perm)
        return perm, diffs["hidden_states"]

    return ui.cached("results", ("pos_shuffle", ctx.model.key, request, seed, keep), compute)


def compare_modes(ctx: ui.Context, seed: int, ref: str):
    """({mode: per-head JS divergence from ref}, {mode: final-vector cosines with ref})."""
    def compute():
        traces = {m: ctx.trace(positions=m, seed=seed) for m in POSITION_MODES}
        return positions.mode_divergences(traces, ref), positions.final_cosines(traces, ref)

    return ui.cached("results", ("pos_compare", ctx.model.key, ctx.request, seed, ref), compute)


def encodings(model, count: int):
    """(sinusoidal table, learned table, PCA of the learned one, explained ratio): they depend
    on the model and the count only. Position 0 (always [CLS]) is far from all the others,
    so the projection leaves it out."""
    def compute():
        learned = positions.learned_table(model, count)
        return (positions.sinusoidal_table(count, model.hidden), learned,
                *positions.pca(learned[1:]))

    return ui.cached("results", ("pos_encodings", model.key, count), compute)


def sinusoid_caveat(model) -> str:
    """The caveat that goes wherever a sinusoidal curve appears (numbers from the engine)."""
    learned = model.position_embeddings
    c = sinusoid_scale(learned)
    mean = float(learned.norm(dim=1).mean())
    return _("Sinusoids: the engine adds $c\\,PE$ with $c = {c:.4f}$, so each has the mean norm "
             "of the learned position vectors ({mean:.2f}) instead of "
             "$\\sqrt{{d/2}} = {root:.1f}$. This BERT was trained with its learned vectors only: "
             "the sinusoidal curve shows how it copes with a position signal it never saw.").format(
        c=c, mean=mean, root=np.sqrt(model.hidden / 2))


def shuffle_tab(ctx: ui.Context, t, seed: int) -> None:
    tok, n = t.tokens, t.n_tokens
    st.markdown(_("**Toy vectors first** (the lecture's $a^i \\to q^i, k^i, v^i$, $d = 4$): both "
                  "*saw*s start from the same vector $a$, so without positions they get the same "
                  "output $b^i$; adding $e^i$ makes them differ."))
    toy_words = ["I", "saw", "a", "saw"]
    ui.show_figure(ui.cached_figure(("pos_toy", seed), lambda: positions_plots.toy_outputs(
        positions.toy_self_attention(toy_words, d=4, seed=seed), toy_words)), key="pos_fig_toy")
    keep = st.checkbox(_("Keep [CLS] and [SEP] in place (shuffle only the words)"), True,
                       key="pos_keep", bind="query-params", help=_(
                           "Off: every token moves, the markers too. Without positions the "
                           "property holds either way."))
    diffs = {}
    for m in ("none", "learned"):  # the same seeded shuffle for both
        perm, diffs[m] = shuffle_check(ctx, m, seed, keep)
    if (perm == np.arange(n)).all():
        st.info(_("This sentence has fewer than two tokens that can move: nothing to shuffle. "
                  "Untick *Keep [CLS] and [SEP]* or type a longer sentence."))
    # Built once per server for this trace and these choices: a rerun draws the cached figures
    at = (t.key, seed, keep)
    ui.show_figure(ui.cached_figure(("pos_perm", *at), lambda: positions_plots.permutation_figure(
        tok, perm)), key="pos_fig_perm")
    st.markdown(_(
        "Run BERT on the shuffled tokens and shuffle the original outputs the same way. "
        "**Without positions** they are the same vectors, equal up to float rounding: the "
        "largest difference over every layer is **{none:.2e}**. **With learned positions** it "
        "is **{learned:.2f}**: the words now know where they stand.").format(
        none=diffs["none"].max(), learned=diffs["learned"].max()))
    ui.show_figure(ui.cached_figure(("pos_equi", *at), lambda: (
        positions_plots.equivariance_figure(diffs))), key="pos_fig_equi")
    st.caption(_("Log scale: the no-positions bars are float rounding, about a million times "
                 "smaller than the learned ones, and would be invisible on a linear axis. An "
                 "exact 0 has no bar; it reads 0 on the floor."))
    ui.download_arrays(_("Download these numbers (.npz)"), {
        "tokens": tok, "permutation": perm, **{f"max_diff_{m}": d for m, d in diffs.items()}},
        file_name="attnviz_positions_shuffle.npz", key="pos_dl_shuffle")


def pair_tab(ctx: ui.Context, t, seed: int) -> None:
    tok, n, labels = t.tokens, t.n_tokens, t.labels
    pair = first_repeated_pair(tok)
    if pair is None:
        st.info(_("No word repeats in this sentence (try *I saw a saw*). Pick any two tokens "
                  "to compare."))
        pair = positions.fallback_pair(n)
    c1, c2, c3, c4 = st.columns(4)
    a = labels.index(c1.selectbox(_("First token"), labels, pair[0], key="pos_i",
                                  bind="query-params"))
    b = labels.index(c2.selectbox(_("Second token"), labels, pair[1], key="pos_j",
                                  bind="query-params"))
    layer = c3.selectbox(_("Layer"), range(t.n_layers), key="pos_layer", bind="query-params")
    head = c4.selectbox(_("Head"), range(t.n_heads), key="pos_head", bind="query-params")
    with st.spinner(_("Running the encoder with each kind of position...")):
        runs = {m: ctx.trace(positions=m, seed=seed) for m in POSITION_MODES}
    curves = {m: cosine_per_layer(runs[m].hidden_states, a, b) for m in POSITION_MODES}
    name = _("'{a_token}' #{a} and '{b_token}' #{b}").format(  # goes into figure text
        a_token=escape(tok[a]), a=a, b_token=escape(tok[b]), b=b)
    same = tok[a] == tok[b] and t.segments[a] == t.segments[b] and a != b
    if a == b:
        st.info(_("Both choices are the same token: pick two different ones to compare."))
    st.markdown(_("Layer by layer, the cosine similarity of {pair} under each choice.").format(
        pair=name) + " " + (_(
            "Same word: without positions both are fed the same vector, so every layer gives "
            "them the same vector again, equal up to float rounding (last layer: cosine "
            "{none:.6f}); with BERT's learned positions they drift apart ({learned:.3f}). That "
            "is what lets a tagger tell them apart (the lecture: in *I saw a saw* one is a verb, "
            "the other a noun). The sinusoids, a signal this BERT never learned to read, leave "
            "them at {sinusoidal:.3f}.").format(
            none=curves["none"][-1], learned=curves["learned"][-1],
            sinusoidal=curves["sinusoidal"][-1])
        if same else _("These tokens differ (word, or sentence A/B segment), so they differ "
                       "even without positions.")))
    ui.show_figure(ui.cached_figure(("pos_cos", t.key, seed, a, b), lambda: (
        positions_plots.cosine_curve(curves, name))), key="pos_fig_cos")
    st.caption(sinusoid_caveat(ctx.model))
    rows = {m: runs[m].weights[layer, head][[a, b]] for m in ("learned", "none")}
    ui.show_figure(ui.cached_figure(("pos_rows", t.key, seed, a, b, layer, head), lambda: (
        positions_plots.attention_rows(rows, tok, a, b, title=_(
            "Layer {layer}, head {head}: their attention rows (each sums to 1)").format(
                layer=layer, head=head)))), key="pos_fig_rows")
    ui.show_figure(ui.cached_figure(("pos_wcmp", t.key, seed, layer, head), lambda: (
        positions_plots.weights_comparison(
            runs["learned"].weights[layer, head], runs["none"].weights[layer, head], tok,
            title=_("Layer {layer}, head {head}: weights with and without positions").format(
                layer=layer, head=head)))), key="pos_fig_wcmp")
    ui.download_arrays(_("Download these numbers (.npz)"), {
        "tokens": tok, "pair": np.array([a, b]),
        **{f"cosine_{m}": c for m, c in curves.items()},
        **{f"weights_L{layer}H{head}_{m}": runs[m].weights[layer, head]
           for m in ("learned", "none")}},
        file_name="attnviz_positions_pair.npz", key="pos_dl_pair")


def encodings_tab(ctx: ui.Context) -> None:
    model = ctx.model
    top = model.max_positions
    count = st.slider(_("Positions shown"), min(8, top), top, min(128, top), key="pos_n",
                      bind="query-params")
    pe, learned, coords, ratio = encodings(model, count)
    st.markdown(_("**Hand-crafted** (Vaswani et al. 2017): "
                  "$PE_{p,2i} = \\sin(p/10000^{2i/d})$, $PE_{p,2i+1} = \\cos(p/10000^{2i/d})$. "
                  "Early dimensions wave fast, late ones slowly; the dot product "
                  "$e^p\\cdot e^q$ depends only on the distance $p-q$. Drawn below unscaled."))
    ids, segments, _offsets = model.tokenize(ctx.request.text, ctx.request.pair)
    sc = ui.cached("results", ("pos_sin_scale", model.key, tuple(ids), tuple(segments)),
                   lambda: positions.sinusoid_scaling(model, ids, segments))
    st.markdown(_(
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
    base = ("pos_enc", model.key, count)  # these figures depend on the model only: built once
    c1, c2 = st.columns(2)
    with c1:
        ui.show_figure(ui.cached_figure((*base, "sin"), lambda: positions_plots.encoding_heatmap(
            pe, _("Sinusoidal PE (unscaled), d = {d}").format(d=model.hidden))),
            key="pos_fig_sin")
    with c2:
        ui.show_figure(ui.cached_figure((*base, "sindot"), lambda: positions_plots.position_matrix(
            positions.dot_products(pe), _("Sinusoidal (unscaled): PE_p · PE_q"), _("dot"))),
            key="pos_fig_sindot")
    st.markdown(_("**Learned from data**: {model}'s own table of {count} vectors, one per "
                  "position, trained with the model. Nobody told it to, yet neighbouring "
                  "positions end up similar.").format(model=literal(shown_name(model)),
                                                      count=model.max_positions))
    c1, c2 = st.columns(2)
    with c1:
        ui.show_figure(ui.cached_figure((*base, "learned"), lambda: (
            positions_plots.encoding_heatmap(
                learned, _("Learned e^p (colours clipped at the 99th percentile)"), clip=99))),
            key="pos_fig_learned")
    with c2:
        ui.show_figure(ui.cached_figure((*base, "lcos"), lambda: positions_plots.position_matrix(
            cosine_matrix(learned), _("Learned: cos(e^p, e^q)"), _("cosine"))),
            key="pos_fig_lcos")
    st.caption(_("Position 0, always [CLS] here, lies far from every other position (see its "
                 "row above), so the projection leaves it out."))
    ui.show_figure(ui.cached_figure((*base, "pca"), lambda: positions_plots.pca_scatter(
        coords, ratio, first=1)), key="pos_fig_pca")
    ui.download_arrays(_("Download these numbers (.npz)"), {
        "sinusoidal_unscaled": pe, "sinusoid_scale": sc["scale"], "learned_positions": learned,
        "pca": coords, "word_norm": sc["word_norm"], "kept_raw": sc["kept_raw"],
        "kept_scaled": sc["kept_scaled"], "kept_learned": sc["kept_learned"]},
        file_name="attnviz_positions_encodings.npz", key="pos_dl_enc")


def compare_tab(ctx: ui.Context, t, seed: int) -> None:
    ref = st.selectbox(_("Compare with"), POSITION_MODES, key="pos_ref", bind="query-params",
                       format_func=lambda m: _(MODE_NAMES[m]))
    with st.spinner(_("Comparing every head under each choice...")):
        div, final = compare_modes(ctx, seed, ref)
    st.markdown(_(
        "For each head, how different are its weights under another choice of positions? "
        "The mean over queries of the Jensen-Shannon divergence between the two weight rows "
        "(0 = identical, 1 bit = no overlap); a choice against itself is exactly 0. A "
        "divergence, not a distance: its square root is one. Mean over heads: {means}.").format(
        means=_("; ").join(_("{mode} {bits:.3f} bits").format(mode=_(MODE_NAMES[m]), bits=d.mean())
                          for m, d in div.items() if m != ref)))
    st.caption(sinusoid_caveat(ctx.model))
    ui.show_figure(ui.cached_figure(("pos_dist", t.key, seed, ref), lambda: (
        positions_plots.mode_divergence_grid(div, ref))), key="pos_fig_dist")
    ui.show_figure(ui.cached_figure(("pos_final", t.key, seed, ref), lambda: (
        positions_plots.final_change_figure(final, t.tokens, ref))), key="pos_fig_final")
    ui.download_arrays(_("Download these numbers (.npz)"), {
        "tokens": t.tokens, **{f"js_divergence_{m}_vs_{ref}": d for m, d in div.items()},
        **{f"final_cosine_{m}_vs_{ref}": c for m, c in final.items()}},
        file_name="attnviz_positions_compare.npz", key="pos_dl_compare")


def main() -> None:
    st.title(_("What positional encoding does"))
    st.markdown(_(
        "Self-attention compares every query $q^i$ with every key $k^j$, and nothing in "
        "$\\mathrm{softmax}(q^i\\cdot k^j/\\sqrt{d_k})$ says *where* token $j$ is: **there is no "
        "position information in self-attention**. So each position gets its own vector $e^i$, "
        "hand-crafted or learned from data, added to the input: $e^i + a^i \\to q^i, k^i, v^i$. "
        "Below, the same BERT runs with its learned $e^i$, with none, with the sinusoids of "
        "Vaswani et al. (scaled to the size of its learned vectors, tab 3), and with its learned "
        "vectors shuffled."
    ))
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None or not ui.require_bert_like(ctx, _("This page")):
        return
    seed = int(st.number_input(_("Shuffle seed"), 0, 10_000, 0, key="pos_seed",
                               bind="query-params", help=_(
                                   "Chooses the toy vectors, the word shuffle and the "
                                   "'shuffled' mode.")))
    tabs_view(ctx, seed)


@ui.fragment  # the tabs and the choices inside them rerun only this part of the page
def tabs_view(ctx: ui.Context, seed: int) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    # Lazy tabs: only the open one computes (a class on one server pays for what it looks at).
    tabs = st.tabs([_("1 · Shuffle the words"), _("2 · I saw a saw"), _("3 · The encodings"),
                    _("4 · Compare the choices")], key="pos_tab", on_change="rerun",
                   bind="query-params")
    draws = (lambda: shuffle_tab(ctx, t, seed), lambda: pair_tab(ctx, t, seed),
             lambda: encodings_tab(ctx), lambda: compare_tab(ctx, t, seed))
    for tab, draw in zip(tabs, draws, strict=True):
        if tab.open:
            with tab:
                draw()


main()
