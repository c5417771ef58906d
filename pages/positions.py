"""What positional encoding does: self-attention with and without positions, rotary positions.
Numbers: cached Traces under each `positions=` mode; what it shows: views.positions."""

import streamlit as st

from attnviz import ui
from attnviz.engine import POSITION_MODES
from attnviz.i18n import _
from attnviz.ui.render import render
from attnviz.views import positions as view


def shuffle_check(ctx: ui.Context, mode: str, seed: int, keep: bool):  # computed once
    request = ctx.request.with_options(positions=mode)
    return ui.cached("results", ("pos_shuffle", ctx.model.key, request, seed, keep), lambda: (
        view.shuffle_check(ctx.model, ctx.request, ctx.trace, mode, seed, keep)))


def shuffle_tab(ctx: ui.Context, t, seed: int) -> None:
    render(view.toy_note())
    render(ui.cached_figure(("pos_toy", seed), lambda: view.toy_figure(seed)), key="pos_fig_toy")
    keep = st.checkbox(_("Keep [CLS] and [SEP] in place (shuffle only the words)"), True,
                       key="pos_keep", bind="query-params", help=_(
                           "Off: every token moves, the markers too. Without positions "
                           "the property holds either way."))
    diffs = {}
    for m in ("none", "learned"):  # the same seeded shuffle for both
        perm, diffs[m] = shuffle_check(ctx, m, seed, keep)
    render(view.nothing_to_shuffle(t, perm))
    # Built once per server for this trace and these choices: a rerun draws the cached figures
    at = (t.key, seed, keep)
    render(ui.cached_figure(("pos_perm", *at), lambda: view.permutation_figure(t, perm)),
           key="pos_fig_perm")
    render(view.shuffle_text(diffs))
    render(ui.cached_figure(("pos_equi", *at), lambda: view.equivariance_figure(diffs)),
           key="pos_fig_equi")
    render(view.log_scale_note())
    render(view.shuffle_download(t, perm, diffs), key="pos_dl_shuffle")


def pair_tab(ctx: ui.Context, t, seed: int) -> None:
    labels, (pair, notes) = t.labels, view.default_pair(t)
    render(notes)
    c1, c2, c3, c4 = st.columns(4)
    a = labels.index(c1.selectbox(_("First token"), labels, pair[0], key="pos_i",
                                  bind="query-params"))
    b = labels.index(c2.selectbox(_("Second token"), labels, pair[1], key="pos_j",
                                  bind="query-params"))
    layer = c3.selectbox(_("Layer"), range(t.n_layers), key="pos_layer", bind="query-params")
    head = c4.selectbox(_("Head"), range(t.n_heads), key="pos_head", bind="query-params")
    with st.spinner(_("Running the encoder with each kind of position...")):
        runs = {m: ctx.trace(positions=m, seed=seed) for m in POSITION_MODES}
    curves = view.pair_curves(runs, a, b)
    render(view.pair_text(t, a, b, curves))
    render(ui.cached_figure(("pos_cos", t.key, seed, a, b),
                            lambda: view.cosine_figure(t, a, b, curves)), key="pos_fig_cos")
    render(view.sinusoid_caveat(ctx.model))
    render(ui.cached_figure(("pos_rows", t.key, seed, a, b, layer, head),
                            lambda: view.rows_figure(t, runs, a, b, layer, head)),
           key="pos_fig_rows")
    render(ui.cached_figure(("pos_wcmp", t.key, seed, layer, head),
                            lambda: view.weights_figure(t, runs, layer, head)),
           key="pos_fig_wcmp")
    render(view.pair_download(t, runs, a, b, layer, head, curves), key="pos_dl_pair")


def encodings_tab(ctx: ui.Context) -> None:
    model, top = ctx.model, ctx.model.max_positions
    count = st.slider(_("Positions shown"), min(8, top), top, min(128, top), key="pos_n",
                      bind="query-params")
    pe, learned, coords, ratio = ui.cached("results", ("pos_encodings", model.key, count),
                                           lambda: view.encodings(model, count))
    render(view.sinusoids_note())
    ids, segments, _offsets = model.tokenize(ctx.request.text, ctx.request.pair)
    sc = ui.cached("results", ("pos_sin_scale", model.key, tuple(ids), tuple(segments)),
                   lambda: view.sinusoid_scaling(model, ids, segments))
    render(view.scaling_text(sc))
    def show(name: str, build, where=None) -> None:  # depends on the model only: built once
        render(ui.cached_figure(("pos_enc", model.key, count, name), build), where=where,
               key=f"pos_fig_{name}")

    c1, c2 = st.columns(2)
    show("sin", lambda: view.sinusoid_figure(model, pe), c1)
    show("sindot", lambda: view.sinusoid_dots_figure(pe), c2)
    render(view.learned_note(model))
    c1, c2 = st.columns(2)
    show("learned", lambda: view.learned_figure(learned), c1)
    show("lcos", lambda: view.learned_cosines_figure(learned), c2)
    render(view.position_zero_note())
    show("pca", lambda: view.pca_figure(coords, ratio))
    render(view.encodings_download(pe, learned, coords, sc), key="pos_dl_enc")


def compare_tab(ctx: ui.Context, t, seed: int) -> None:
    ref = st.selectbox(_("Compare with"), POSITION_MODES, key="pos_ref", bind="query-params",
                       format_func=lambda m: _(view.MODE_NAMES[m]))
    with st.spinner(_("Comparing every head under each choice...")):
        div, final = ui.cached("results", ("pos_compare", ctx.model.key, ctx.request, seed, ref),
                               lambda: view.compare_modes(ctx.trace, seed, ref))
    render(view.compare_text(div, ref))
    render(view.sinusoid_caveat(ctx.model))
    render(ui.cached_figure(("pos_dist", t.key, seed, ref),
                            lambda: view.divergence_figure(div, ref)), key="pos_fig_dist")
    render(ui.cached_figure(("pos_final", t.key, seed, ref),
                            lambda: view.final_figure(t, final, ref)), key="pos_fig_final")
    render(view.compare_download(t, div, final, ref), key="pos_dl_compare")


def rope_tab(ctx: ui.Context, t, seed: int) -> None:
    render(view.rope_toys(seed), keys=("pos_fig_rot", "pos_fig_grid", "pos_fig_rdist"))
    render(view.rope_model(ctx.model, t), keys=("pos_fig_spec",))
    shown = view.rotary_of(ctx.model) and view.first_repeated_pair(t.tokens) and st.toggle(
        _("Show the answer"), key="pos_rope_answer", bind="query-params")
    if shown:
        render(view.rope_answer(ctx.model, t, ctx.trace), keys=("pos_fig_twins",))
    render(view.rope_download(ctx.model, t, seed, ctx.trace if shown else None),
           key="pos_dl_rope")


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    seed = int(st.number_input(_("Shuffle seed"), 0, 10_000, 0, key="pos_seed",
                               bind="query-params", help=_("Chooses the toy vectors, the word "
                                                           "shuffle and the 'shuffled' mode.")))
    tabs_view(ctx, seed)


@ui.fragment  # the tabs and the choices inside them rerun only this part of the page
def tabs_view(ctx: ui.Context, seed: int) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    tabs = st.tabs([_(tab) for tab in view.TABS], key="pos_tab", on_change="rerun",
                   bind="query-params")
    # lazy tabs: only the open one computes; tabs 1-4 are written for BERT-like models
    bert = lambda: ui.require_bert_like(ctx, _("This tab"))
    draws = (lambda: bert() and shuffle_tab(ctx, t, seed),
             lambda: bert() and pair_tab(ctx, t, seed), lambda: bert() and encodings_tab(ctx),
             lambda: bert() and compare_tab(ctx, t, seed), lambda: rope_tab(ctx, t, seed))
    for tab, draw in zip(tabs, draws, strict=True):
        if tab.open:
            with tab:
                draw()


main()
