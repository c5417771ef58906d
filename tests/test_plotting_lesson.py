"""The lesson's figures show exactly the numbers they are given, with safe, distinct labels."""

import numpy as np

from attnviz.analysis.taggers import Scores
from attnviz.plotting import lesson as P

WORDS = ["i", "saw", "a", "saw"]
GOLD = ("PRON", "VERB", "DET", "NOUN")


def test_tag_table_colours_right_and_wrong():
    fig = P.tag_table(WORDS, {"(a)": ["PRON", "NOUN", "DET", "NOUN"], "hidden": ["?"] * 4}, GOLD)
    t = fig.data[0]
    assert list(t.header.values) == ["", *WORDS]
    assert list(t.cells.values[0]) == ["gold", "(a)", "hidden"]
    assert [list(c) for c in t.cells.values[1:]] == [
        ["PRON", "PRON", "?"], ["VERB", "NOUN", "?"], ["DET", "DET", "?"], ["NOUN", "NOUN", "?"]]
    fill = t.cells.fill.color
    assert fill[2] == [P.RIGHT, P.WRONG, P.NEUTRAL]  # the first saw: (a) says NOUN
    assert fill[4] == [P.RIGHT, P.RIGHT, P.NEUTRAL]
    no_gold = P.tag_table(WORDS, {"(d)": list(GOLD)}).data[0]
    assert all(c == [P.NEUTRAL] for c in no_gold.cells.fill.color)


def test_tag_table_escapes_typed_html():
    fig = P.tag_table(["<b>", "saw"], {"x": ["NOUN", "VERB"]})
    assert fig.data[0].header.values[1] == "&lt;b&gt;"
    big = P.tag_table(WORDS, {"x": list(GOLD)}, big=True)
    assert big.data[0].cells.font.size > fig.data[0].cells.font.size


def test_receptive_field_shows_the_masks_with_distinct_labels():
    masks = {"per word": np.eye(4, dtype=bool), "window": np.ones((4, 4), dtype=bool)}
    fig = P.receptive_field(WORDS, masks)
    assert len(fig.data) == 2
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), np.eye(4))
    assert list(fig.data[0].x) == ["i #0", "saw #1", "a #2", "saw #3"]  # two saws, two columns


def test_accuracy_bars_carry_the_scores():
    scores = {"(a)": Scores(0.9, 0.55, 0.46, 10, 5, 4), "(d)": Scores(1.0, 0.99, 1.0, 10, 5, 4)}
    fig = P.accuracy_bars(scores, baseline=0.58)
    bars = [d for d in fig.data if d.type == "bar"]
    assert [d.name for d in bars] == ["all words", "ambiguous words", "double-role words"]
    np.testing.assert_allclose(bars[0].y, [90.0, 100.0])
    np.testing.assert_allclose(bars[1].y, [55.0, 99.0])
    np.testing.assert_allclose(bars[2].y, [46.0, 100.0])
    line = [d for d in fig.data if d.type == "scatter"][0]
    np.testing.assert_allclose(line.y, [58.0, 58.0])


def test_cosine_by_layer_plots_the_curves():
    cos = {"learned positions": np.array([0.9, 0.7, 0.66]), "no positions": np.ones(3)}
    fig = P.cosine_by_layer(cos, "saw")
    np.testing.assert_allclose(fig.data[0].y, [0.9, 0.7, 0.66])
    np.testing.assert_allclose(fig.data[1].y, [1, 1, 1])
    assert fig.layout.yaxis.range[0] < 0.66 and fig.layout.yaxis.range[1] >= 1.0
    assert "saw" in fig.layout.title.text
    assert "'saw' #2 and 'saw' #4" in P.cosine_by_layer(cos, "saw", pair=(2, 4)).layout.title.text


def test_loss_curves():
    fig = P.loss_curves({"(a)": [1.0, 0.5], "(b)": [0.9, 0.1]})
    assert list(fig.data[1].y) == [0.9, 0.1] and list(fig.data[0].x) == [1, 2]


def test_projector_enlarges_type_only_when_asked():
    fig = P.loss_curves({"(a)": [1.0]})
    assert P.projector(fig, False).layout.font.size == 14
    assert P.projector(fig, True).layout.font.size == 22
