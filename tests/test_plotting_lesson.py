"""The lesson's figures show exactly the numbers they are given, with safe, distinct labels."""

import numpy as np

from attnviz.analysis.taggers import Scores
from attnviz.plotting import lesson as P

WORDS = ["i", "saw", "a", "saw"]
GOLD = ("PRON", "VERB", "DET", "NOUN")


def test_tag_table_colours_right_and_wrong():
    rows = {"(a)": ["PRON", "NOUN", "DET", "NOUN"], "hidden": ["?"] * 4, "(c)": list(GOLD)}
    fig = P.tag_table(WORDS, rows, GOLD)  # four tag rows: one column per word
    t = fig.data[0]
    assert fig.layout.meta["words_as_rows"] is False
    assert list(t.header.values) == ["", "i", "saw #2", "a", "saw #4"]  # as a^1..a^4
    assert list(t.cells.values[0]) == ["gold", "(a)", "hidden", "(c)"]
    assert [list(c) for c in t.cells.values[1:]] == [
        ["PRON", "PRON", "?", "PRON"], ["VERB", "NOUN", "?", "VERB"], ["DET", "DET", "?", "DET"],
        ["NOUN", "NOUN", "?", "NOUN"]]
    fill = t.cells.fill.color
    assert fill[2] == [P.RIGHT, P.WRONG, P.NEUTRAL, P.RIGHT]  # the first saw: (a) says NOUN
    assert fill[4] == [P.RIGHT, P.RIGHT, P.NEUTRAL, P.RIGHT]
    no_gold = P.tag_table(WORDS, {"(d)": list(GOLD)}).data[0]
    assert all(c == [P.NEUTRAL] * 4 for c in no_gold.cells.fill.color)


def test_a_short_tag_table_turns_one_row_per_word():
    """Gold and one tagger: one row per word, so the table is three columns wide (a phone's
    width holds it) and both saws are numbered, each with its gold and its tag."""
    fig = P.tag_table(WORDS, {"(a)": ["PRON", "NOUN", "DET", "NOUN"]}, GOLD)
    t = fig.data[0]
    assert fig.layout.meta["words_as_rows"] is True
    assert list(t.header.values) == ["", "gold", "(a)"]
    assert [list(c) for c in t.cells.values] == [
        ["i", "saw #2", "a", "saw #4"], list(GOLD), ["PRON", "NOUN", "DET", "NOUN"]]
    assert t.cells.fill.color[2] == [P.RIGHT, P.WRONG, P.RIGHT, P.RIGHT]


def test_tag_tables_follow_the_theme():
    """No opaque light slab in the dark theme: translucent fills, the theme's text colour."""
    for fig in (P.tag_table(WORDS, {"x": list(GOLD)}, GOLD),
                P.far_table(["(1)"], ["NOUN"], {"3": ["VERB"]})):
        t = fig.data[0]
        fills = [t.header.fill.color, *[c for col in t.cells.fill.color for c in col]]
        assert all(f.startswith("rgba(") and float(f.rsplit(",", 1)[1].strip(" )")) <= 0.5
                   for f in fills), fills
        assert t.cells.font.color is None and t.header.font.color is None


def test_tag_table_escapes_typed_html():
    fig = P.tag_table(["<b>", "saw"], {"x": ["NOUN", "VERB"]})
    assert fig.data[0].cells.values[0][0] == "&lt;b&gt;"
    big = P.tag_table(WORDS, {"x": list(GOLD)}, big=True)
    assert big.data[0].cells.font.size > fig.data[0].cells.font.size


def test_receptive_field_shows_the_masks_with_distinct_labels():
    masks = {"per word": np.eye(4, dtype=bool), "window": np.ones((4, 4), dtype=bool)}
    fig = P.receptive_field(WORDS, masks)
    assert len(fig.data) == 2
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), np.eye(4))
    assert list(fig.data[0].x) == ["i #1", "saw #2", "a #3", "saw #4"]  # two saws, as a^1..a^4
    for axis in (fig.layout.xaxis, fig.layout.yaxis):  # what the axes show: numbered saws
        assert list(axis.ticktext) == ["i", "saw #2", "a", "saw #4"]


def scores(near, far, double_role):
    return Scores(0.9, 0.5, double_role, 10, 5, 4, near=near, far=far)


def test_accuracy_grid_carries_the_scores_in_readable_cells():
    fig = P.accuracy_grid({"(a)": scores(0.55, 0.5, 0.46), "(d)": scores(1.0, 0.99, 1.0)},
                          baseline={"near": 0.52, "far": 0.527, "double_role": 0.44})
    (cells,) = fig.data
    assert list(cells.y) == ["(a)", "(d)", "majority tag per word"]
    np.testing.assert_allclose(np.asarray(cells.z, dtype=float),
                               [[55.0, 50.0, 46.0], [100.0, 99.0, 100.0], [52.0, 52.7, 44.0]])
    assert cells.texttemplate == "%{z:.1f}%"  # one label per cell: none run together
    assert not [d for d in fig.data if d.type == "scatter"]  # no line across the labels
    assert P.accuracy_grid({"x": scores(1, 1, 1)}, big=True).data[0].textfont.size >= 22


def test_far_table_colours_each_window_against_gold():
    fig = P.far_table(["(1) nouns: fly", "(2) verbs: fly"], ["NOUN", "VERB"],
                      {"3": ["NOUN", "NOUN"], "39": ["NOUN", "VERB"], "5": ["?", "?"]})
    t = fig.data[0]
    assert list(t.header.values) == ["", "gold", "3", "39", "5"]
    assert list(t.cells.values[2]) == ["NOUN", "NOUN"]
    fill = t.cells.fill.color
    assert fill[2] == [P.RIGHT, P.WRONG] and fill[3] == [P.RIGHT, P.RIGHT]
    assert fill[4] == [P.NEUTRAL, P.NEUTRAL]


def test_accuracy_by_distance_plots_each_window_and_the_baseline():
    curves = {"(b) window 3": {1: 1.0, 3: 0.52}, "(b) window 39": {1: 1.0, 3: 0.95}}
    fig = P.accuracy_by_distance(curves, {1: 0.53, 3: 0.5}, {1: 564, 3: 152})
    base, w3, w39 = fig.data
    np.testing.assert_allclose(base.y, [53.0, 50.0])
    np.testing.assert_allclose(w3.y, [100.0, 52.0])
    np.testing.assert_allclose(w39.y, [100.0, 95.0])
    assert list(w3.x) == [1, 3] and list(fig.layout.xaxis.ticktext) == ["1<br>(564)",
                                                                         "3<br>(152)"]


def test_cost_figure_rows_carry_parameters_and_gaps():
    fig = P.cost_figure({"w3": 20937, "w39": 168393}, (50, 200),
                        {"w3": (0.121, 0.052), "w39": (0.292, 0.125)})
    assert [d.name for d in fig.data] == ["50 sentences", "200 sentences"]
    assert list(fig.data[0].y) == ["w3<br>20,937 parameters", "w39<br>168,393 parameters"]
    np.testing.assert_allclose(fig.data[0].x, [12.1, 29.2])
    np.testing.assert_allclose(fig.data[1].x, [5.2, 12.5])
    assert not fig.data[0].error_x.visible


def test_cost_figure_over_seeds_is_the_mean_with_the_spread():
    gaps = {"w39": [[0.292, 0.125], [0.276, 0.109], [0.272, 0.130]]}  # [seeds, sizes]
    fig = P.cost_figure({"w39": 168393}, (50, 200), gaps)
    bar = fig.data[0]
    np.testing.assert_allclose(bar.x, [(29.2 + 27.6 + 27.2) / 3])
    err = bar.error_x
    assert err.visible
    np.testing.assert_allclose(err.array, [29.2 - bar.x[0]])
    np.testing.assert_allclose(err.arrayminus, [bar.x[0] - 27.2])
    assert list(bar.customdata) == ["29.2, 27.6, 27.2"]
    assert bar.text is None  # a label would sit on the whisker
    assert "mean of 3 seeds" in fig.layout.xaxis.title.text


def test_cosine_by_layer_plots_the_curves():
    cos = {"learned positions": np.array([0.9, 0.7, 0.66]), "no positions": np.ones(3)}
    fig = P.cosine_by_layer(cos, "saw")
    np.testing.assert_allclose(fig.data[0].y, [0.9, 0.7, 0.66])
    np.testing.assert_allclose(fig.data[1].y, [1, 1, 1])
    assert fig.layout.yaxis.range[0] < 0.66 and fig.layout.yaxis.range[1] >= 1.0
    assert "saw" in fig.layout.title.text
    title = P.cosine_by_layer(cos, "saw", pair=(2, 4)).layout.title.text
    assert "saw #2 and saw #4" in title and "'" not in title  # the labels of every page


def test_loss_curves():
    fig = P.loss_curves({"(a)": [1.0, 0.5], "(b)": [0.9, 0.1]})
    assert list(fig.data[1].y) == [0.9, 0.1] and list(fig.data[0].x) == [1, 2]


def test_projector_enlarges_type_only_when_asked():
    fig = P.loss_curves({"(a)": [1.0]})
    assert P.projector(fig, False).layout.font.size == 14
    assert P.projector(fig, True).layout.font.size == 22


def test_projector_enlarges_the_token_ticks_not_only_the_colour_bar():
    from attnviz.plotting import attention_heatmap, heads_grid

    m = np.full((4, 4), 0.25, dtype=np.float32)
    for fig in (attention_heatmap(m, WORDS, "weights"), heads_grid(np.stack([m, m]), WORDS)):
        big = P.projector(fig, True)
        axes = [k for k in big.layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]
        assert axes
        for name in axes:
            assert big.layout[name].tickfont.size == P.LARGE, name
    assert P.receptive_field(WORDS, {"w": np.eye(4)}, big=True).layout.xaxis.tickfont.size \
        == P.LARGE


def test_length_figure_bars_are_the_seed_means_with_their_spread():
    values = {"learned": {"held out": np.array([0.99, 0.98]), "past 20": np.array([0.4, 0.5])},
              "rotary": {"held out": np.array([1.0, 0.99]), "past 20": np.array([0.7, 0.6])}}
    f = P.length_figure(values)
    held, past = f.data
    assert list(held.x) == ["learned", "rotary"] and held.name == "held out"
    np.testing.assert_allclose(past.y, [45.0, 65.0])
    np.testing.assert_allclose(past.error_y.array, [5.0, 5.0])
    np.testing.assert_allclose(past.error_y.arrayminus, [5.0, 5.0])
    assert list(past.text) == ["45.0", "65.0"] and past.customdata[0] == "40.0, 50.0"
