"""Every public figure builder of attnviz.plotting makes a plotly go.Figure that plotly
validates as it is built (a misspelt property or an invalid value fails at once), and what the
pages read back out of a figure (plotting.summary) leaves it as it was.

Run as a script (`python tests/test_plotting_validation.py OUT.json`) it builds every public
figure builder of attnviz.plotting (overview's aside) on small inputs and writes {name: the
figure's plotly.io.to_json} to OUT.json: two checkouts' files compared say whether a change
moved any figure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SENTENCE = "I saw a saw"
LONG = ("The old man the boat while the young sailors sleep below deck, and the captain "
        "writes a long letter to his daughter about the storms they met near the cold "
        "northern islands last winter, before the ship finally came home to the quiet harbour "
        "in the early spring")  # 52 tokens with [CLS] and [SEP]


def build_figures() -> dict:
    """{name: figure} for every public figure builder in attnviz.plotting."""
    import attnviz
    from attnviz.analysis import conv_attention as ca
    from attnviz.analysis import positions as P
    from attnviz.analysis import receptive as rf
    from attnviz.analysis import walkthrough as wt
    from attnviz.analysis.head_stats import STATS, head_stats
    from attnviz.analysis.rollout import rollout
    from attnviz.analysis.taggers import Scores
    from attnviz.analysis.views import inside_score
    from attnviz.plotting import (
        attribution,
        compare,
        corpus,
        families,
        heatmaps,
        images,
        lesson,
        neuron,
        notebook_views,
        positions,
        stats,
        steps,
        token_lines,
        windows,
    )

    model = attnviz.load_model(device="cpu")
    t, long = model.trace(SENTENCE), model.trace(LONG)
    rng = np.random.default_rng(0)
    figs = {}
    toks, n = t.tokens, t.n_tokens
    words = ["I", "saw", "a", "saw"]

    # heatmaps
    figs["attention_heatmap"] = heatmaps.attention_heatmap(t.weights[0, 0], toks)
    figs["attention_heatmap_scores"] = heatmaps.attention_heatmap(
        t.scores[1, 2], toks, kind="scores", title="<b>scores</b>")
    figs["attention_heatmap_long"] = heatmaps.attention_heatmap(long.weights[3, 1], long.tokens)
    figs["attention_heatmap_updated"] = heatmaps.attention_heatmap(  # as pages/families.py
        t.weights[0, 1], toks, key_tokens=long.tokens[:n], title="cross").update_layout(
        xaxis_title_text="encoder tokens", yaxis_title_text="decoder tokens")
    figs["heads_grid"] = heatmaps.heads_grid(t.weights[3], toks)
    figs["heads_grid_scores"] = heatmaps.heads_grid(t.scores[0, :3], toks, kind="scores")
    figs["heads_grid_long"] = heatmaps.heads_grid(long.weights[3], long.tokens)
    figs["heads_grid_pooled"] = heatmaps.heads_grid(long.weights[3, :4], long.tokens,
                                                   max_cells=16)

    # attribution, compare, corpus, families
    figs["attribution_bars"] = attribution.attribution_bars(
        toks, {"grad <b>": rng.normal(size=n), "skipped": None, "ig": rng.normal(size=n)}, "t")
    w = t.weights[2, 0]
    figs["compare_figure"] = compare.compare_figure(w, t.weights[2, 1], w - t.weights[2, 1],
                                                    toks, ("A", "B", "A - B"))
    kinds = np.array([["[CLS]", "previous"], ["next", "mixed"]])
    coords = rng.normal(size=(4, 2))
    figs["head_map"] = corpus.head_map(coords, kinds)
    figs["head_map_selected"] = corpus.head_map(coords, kinds, selected=(1, 0), title="heads")
    figs["image_attention"] = families.image_attention(
        np.zeros((224, 224, 3), np.uint8), np.arange(196, dtype=np.float32).reshape(14, 14) / 196,
        "t")
    figs["later_weight_chart"] = families.later_weight_chart(
        {"BERT <b>": np.array([0.3, 0.2]), "GPT-2": np.zeros(3)}, "later")

    # images
    img = rng.random((6, 8, 3))
    figs["image_figure"] = images.image_figure(img, pick=(2, 5), title="t")
    figs["image_figure_plain"] = images.image_figure(img, clickable=False)
    vals = np.zeros((5, 5))
    vals[1:4, 1:4] = 2.0
    vals[2, 2] = 20.0
    figs["map_figure"] = images.map_figure(rng.random((6, 8)), (1, 1), "w")
    figs["map_figure_influence"] = images.map_figure(vals, (2, 2), "i", kind="influence",
                                                     field=(1, 3, 1, 3))
    figs["head_maps_figure"] = images.head_maps_figure(
        ca.pixel_head_maps(6, 6, 3, 0, 4), ca.kernel_shifts(3).numpy(), (0, 4), 1, (6, 6))
    figs["images_row"] = images.images_row([np.full((4, 4, 3), -1.0), np.full((4, 4, 3), 3.0)],
                                           ["a", "b"], np.zeros((4, 4)))

    # lesson
    gold = ("PRON", "VERB", "DET", "NOUN")
    figs["tag_table"] = lesson.tag_table(words, {"(a)": ["PRON", "NOUN", "DET", "NOUN"],
                                                 "hidden": ["?"] * 4}, gold)
    figs["tag_table_big"] = lesson.tag_table(["<b>", "saw"], {"x": ["NOUN", "VERB"]}, big=True)
    figs["far_table"] = lesson.far_table(
        ["(1) nouns: fly", "(2) verbs: fly"], ["NOUN", "VERB"],
        {"3": ["NOUN", "NOUN"], "39": ["NOUN", "VERB"], "5": ["?", "?"]})
    masks = {"per word": np.eye(4, dtype=bool), "window": np.ones((4, 4), dtype=bool)}
    for big in (False, True):
        sfx = "_big" if big else ""
        figs["receptive_field" + sfx] = lesson.receptive_field(words, masks, big=big)
        figs["accuracy_by_distance" + sfx] = lesson.accuracy_by_distance(
            {"(b) window 3": {1: 1.0, 3: 0.52}, "(b) window 39": {1: 1.0, 3: 0.95}},
            {1: 0.53, 3: 0.5}, {1: 564, 3: 152}, big=big)
        figs["accuracy_grid" + sfx] = lesson.accuracy_grid(
            {"(a)": Scores(0.9, 0.5, 0.46, 10, 5, 4, near=0.55, far=0.5),
             "(d)": Scores(0.9, 0.5, 1.0, 10, 5, 4, near=1.0, far=0.99)},
            baseline={"near": 0.52, "far": 0.527, "double_role": 0.44}, big=big)
        figs["cost_figure" + sfx] = lesson.cost_figure(
            {"w3": 20937, "w39": 168393}, (50, 200),
            {"w3": (0.121, 0.052), "w39": (0.292, 0.125)}, big=big)
        figs["cosine_by_layer" + sfx] = lesson.cosine_by_layer(
            {"learned positions": np.array([0.9, 0.7, 0.66]), "no positions": np.ones(3)}, "saw",
            big=big, pair=(2, 4))
        figs["loss_curves" + sfx] = lesson.loss_curves({"(a)": [1.0, 0.5], "(b)": [0.9, 0.1]},
                                                       big=big)
    figs["projector_heads_grid"] = lesson.projector(heatmaps.heads_grid(t.weights[0], toks),
                                                    True)
    figs["projector_heatmap"] = lesson.projector(heatmaps.attention_heatmap(
        t.weights[0, 0], toks), True)

    # neuron
    nb = inside_score(t.queries[4, 2], t.keys[4, 2], t.values[4, 2], 4, t.scale, t.mask)
    figs["score_steps"] = neuron.score_steps(nb, toks, 4, title="inside")
    figs["value_steps"] = neuron.value_steps(nb, toks, 4)
    nb_long = inside_score(long.queries[0, 0], long.keys[0, 0], long.values[0, 0], 1,
                           long.scale)
    figs["score_steps_long"] = neuron.score_steps(nb_long, long.tokens, 1)

    # notebook views
    figs["layer_lines"] = notebook_views.layer_lines(t.weights, toks, toks, layer=1,
                                                     heads=[0, 3], title="lines")
    figs["mosaic"] = notebook_views.mosaic(t.weights[:2], toks, toks, title="mosaic")
    figs["mosaic_pooled"] = notebook_views.mosaic(long.weights[:2, :2], long.tokens,
                                                  long.tokens, max_cells=16)

    # positions
    ptoks = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    figs["permutation_figure"] = positions.permutation_figure(ptoks, np.array([0, 3, 1, 2, 4, 5]))
    figs["equivariance_figure"] = positions.equivariance_figure(
        {"none": np.array([0.0, 5.5e-7, 1.2e-6]), "learned": np.array([0.58, 0.96, 1.3])})
    figs["equivariance_figure_zero"] = positions.equivariance_figure(
        {"none": np.zeros(7), "learned": np.linspace(0.5, 3, 7)}, title="eq")
    figs["cosine_curve"] = positions.cosine_curve(
        {"learned": np.array([0.9, 0.8, 0.7]), "none": np.ones(3)}, "saw #2 and saw #4")
    rows = {"learned": rng.dirichlet(np.ones(6), 2), "none": rng.dirichlet(np.ones(6), 2)}
    figs["attention_rows"] = positions.attention_rows(rows, ptoks, 2, 4)
    a, b = rng.dirichlet(np.ones(6), 6), rng.dirichlet(np.ones(6), 6)
    figs["weights_comparison"] = positions.weights_comparison(a, b, ptoks)
    pe = P.sinusoidal_table(16, 8)
    figs["encoding_heatmap"] = positions.encoding_heatmap(pe, "sin")
    figs["encoding_heatmap_clip"] = positions.encoding_heatmap(pe, "sin", clip=0.5)
    figs["position_matrix"] = positions.position_matrix(P.dot_products(pe), "dots", "dot")
    figs["pca_scatter"] = positions.pca_scatter(*P.pca(pe))
    figs["mode_divergence_grid"] = positions.mode_divergence_grid(
        {"learned": np.zeros((6, 12)), "none": rng.random((6, 12)) * 0.3})
    figs["final_change_figure"] = positions.final_change_figure(
        {"learned": np.ones(6), "none": np.full(6, 0.5)}, ptoks)
    figs["toy_outputs"] = positions.toy_outputs(P.toy_self_attention(words), words)

    # stats
    s = head_stats(t.weights, toks)
    figs["stats_heatmaps"] = stats.stats_heatmaps(s, STATS, selected=(2, 3))
    figs["stats_heatmaps_spread"] = stats.stats_heatmaps(
        s, STATS, spread={k: np.abs(v) / 10 for k, v in s.items()})
    r = rollout(t.weights)
    figs["rollout_pair"] = stats.rollout_pair(t.weights[-1].mean(0), r[-1], toks, "raw",
                                              "rollout")
    figs["maps_side_by_side"] = stats.maps_side_by_side([t.weights[-1].mean(0), r[-1]],
                                                        ["raw", "rollout"], toks)
    m200 = rng.random((200, 200))
    figs["maps_side_by_side_long"] = stats.maps_side_by_side(
        [m200, m200], ["raw", "rollout"], [f"t{i}" for i in range(200)], value="flow")

    # steps
    walk = wt.toy_walkthrough(SENTENCE, 4, 3, 3, 0)
    figs["matrix_figure"] = steps.matrix_figure(walk.inputs.T, steps.dim_labels("a", 4),
                                                steps.token_axis(words), "A")
    figs["matrix_figure_big"] = steps.matrix_figure(
        rng.standard_normal((384, 384)), steps.dim_labels("b", 384), steps.dim_labels("o", 384),
        "W_O")
    figs["matrices_figure"] = steps.matrices_figure(
        [(walk.w_q, steps.dim_labels("q", 3), steps.dim_labels("a", 4), "W^q", "values"),
         (walk.inputs.T, steps.dim_labels("a", 4), steps.token_axis(words), "A", "values"),
         (walk.queries.T, steps.dim_labels("q", 3), steps.token_axis(words), "Q", "values")],
        ["·", "="], "Q = W^q A")
    figs["dot_terms_figure"] = steps.dot_terms_figure(wt.dot_terms(walk.queries[0],
                                                                   walk.keys[3]), "a")
    figs["weights_bar_figure"] = steps.weights_bar_figure({"T = 1": walk.weights[2]}, words, "w")
    figs["temperature_figure"] = steps.temperature_figure(
        wt.temperature_sweep(walk.scores[0], walk.scale, np.geomspace(0.02, 100, 5)), 0.5,
        walk.n)
    figs["dk_figure"] = steps.dk_figure(wt.dk_sweep(dims=(2, 32, 512), samples=10), 32)
    c = wt.contributions(walk.weights[1], walk.values)
    figs["weighted_sum_figure"] = steps.weighted_sum_figure(c, words, 1)
    figs["contributions_figure"] = steps.contributions_figure(c, words, 1)
    mh = wt.toy_multihead(walk, 2)
    figs["heads_figure"] = steps.heads_figure(mh.weights, words, "heads")
    figs["entropy_by_heads_figure"] = steps.entropy_by_heads_figure(wt.heads_sweep(walk))
    for name in ("q", "k", "v"):
        figs[f"projection_figure_{name}"] = steps.projection_figure(walk, name)
    figs["scores_figure_queries"] = steps.scores_figure(walk, "queries")
    figs["scores_figure_keys"] = steps.scores_figure(walk, "keys")
    figs["outputs_figure"] = steps.outputs_figure(walk)
    figs["output_projection_figure"] = steps.output_projection_figure(mh)
    real = wt.real_walkthrough(model, t, 0, 0)
    figs["projection_figure_real"] = steps.projection_figure(real, "q")
    figs["scores_figure_real"] = steps.scores_figure(real, "queries", 3, 3)
    figs["output_projection_figure_real"] = steps.output_projection_figure(
        wt.real_multihead(model, t, 0))

    # token lines
    figs["token_lines"] = token_lines.token_lines(t.weights[0, [3, 9]], [3, 9], toks,
                                                  min_weight=0.02, levels=8, title="lines")
    figs["token_lines_query"] = token_lines.token_lines(long.weights[2, [0]], [0], long.tokens,
                                                        query=3)

    # windows
    wtoks = ["[CLS]", "i", "saw", "a", "saw", "<b>", "[SEP]"]
    wn = len(wtoks)
    wmasks = {"full": np.ones((wn, wn), bool),
              "window ±1": np.abs(np.subtract.outer(np.arange(wn), np.arange(wn))) <= 1}
    figs["masks_and_weights"] = windows.masks_and_weights(
        wtoks, wmasks, {k: rng.random((wn, wn)) * m for k, m in wmasks.items()}, "t")
    fields = {k: rf.analytic_field(k, 15, 4, 6, 2).astype(float) for k in rf.KINDS}
    figs["receptive_fields"] = windows.receptive_fields(fields, [f"tok{i}" for i in range(15)],
                                                        6, 2, "rf")
    ws = np.arange(1, 6)
    figs["context_curve"] = windows.context_curve(
        ws, {"[CLS]/[SEP] kept": {"mean": ws / 5, "worst": ws / 6, "pair": ws / 7},
             "plain window": {"mean": ws / 8, "worst": None, "pair": ws / 10}},
        "[CLS]/[SEP] kept", 0.658, "saw #2 and saw #4", current=2, title="c")
    figs["cost_chart"] = windows.cost_chart(
        {"length": np.array([256, 256, 512, 512]),
         "method": np.array(["full", "windowed", "full", "windowed"]),
         "seconds": np.array([1e-3, 2e-3, 4e-3, 3e-3]),
         "peak_bytes": np.array([2**20, 2**19, 2**22, 2**20])}, "CPU test", "tensor sizes")
    # overview: the mosaic (short and block-max) and a copy with the open head outlined
    from attnviz.analysis.views import mean_maps
    from attnviz.plotting import overview
    figs["overview_mosaic"] = overview.overview_mosaic(t.weights, mean_maps(t.weights), toks)
    figs["overview_mosaic_blocks"] = overview.overview_mosaic(
        long.weights, mean_maps(long.weights), long.tokens, max_cells=16)
    figs["mark_head"] = overview.mark_head(figs["overview_mosaic"], 2, 5)
    return figs


def test_every_figure_is_a_validated_plotly_figure():
    import plotly.graph_objects as go
    import plotly.io

    figs = build_figures()
    assert len(figs) > 80
    for name, fig in figs.items():
        assert type(fig) is go.Figure, name
        # validated as built: validating its own JSON again changes nothing
        spec = json.loads(plotly.io.to_json(fig))
        assert json.loads(plotly.io.to_json(go.Figure(spec))) == spec, name


def test_summaries_read_the_figure_in_place_and_change_nothing():
    """summarise() gives the same summary as summarise_parts of the figure's to_plotly_json
    parts, and the figure's JSON is unchanged after it, for every figure."""
    import plotly.io

    from attnviz.plotting.summary import summarise, summarise_parts

    for name, fig in build_figures().items():
        before = plotly.io.to_json(fig)
        copied = summarise_parts(fig.layout.to_plotly_json(), [t.to_plotly_json()
                                                             for t in fig.data])
        assert summarise(fig) == copied, name
        assert plotly.io.to_json(fig) == before, name


def test_a_bad_property_fails_as_the_figure_is_built():
    from attnviz.plotting import common
    from attnviz.plotting.heatmaps import attention_heatmap

    grid = common.Grid(rows=1, cols=2)
    grid.add(dict(type="heatmap", z=[[1]], colorbarr={}))
    with pytest.raises(ValueError, match="colorbarr"):
        grid.figure()
    with pytest.raises(ValueError, match="tickanglee"):
        common.Grid().figure(xaxis=dict(tickanglee=-45))
    with pytest.raises(ValueError):  # an invalid value, not only an invalid name
        common.Grid(rows=1, cols=2).figure(height="tall")
    fig = attention_heatmap(np.eye(3, dtype=np.float32), ["a", "b", "c"])
    with pytest.raises(ValueError):
        fig.update_layout(height="tall")


def _main(path: str) -> None:
    import plotly.io as pio

    figs = build_figures()
    Path(path).write_text(json.dumps({name: pio.to_json(fig) for name, fig in figs.items()}))


def test_a_charts_accessible_name_is_its_summarys_text_without_the_tables():
    """ui.figures names each chart by plotting.summary.describe (no table made on a run):
    for every figure it is summarise()'s text, which only adds how many tables are shown
    when there are more than MAX_TABLES; in Chinese too."""
    import numpy as np

    from attnviz import i18n
    from attnviz.plotting.heatmaps import heads_grid
    from attnviz.plotting.summary import MAX_TABLES, describe, summarise

    figs = build_figures()
    figs["grid of 20"] = heads_grid(np.random.default_rng(1).random((20, 4, 4)), list("abcd"),
                                    cols=5)
    for name, fig in figs.items():
        full, alt = summarise(fig), describe(fig)
        if full.text != alt:  # more tables than shown: the summary says so after the text
            assert len(full.tables) == MAX_TABLES and full.text.startswith(alt + " "), name
    full = summarise(figs["grid of 20"])
    assert "16 of 20" in full.text and "16 of 20" not in describe(figs["grid of 20"])
    with i18n.use("zh"):
        for name in list(figs)[:10]:
            assert describe(figs[name]) == summarise(figs[name]).text, name


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    _main(sys.argv[1])
