"""A figure's numbers as text (plotting.summary): what a screen reader gets instead of the
picture. The heatmap tables are checked against the trace the figure was drawn from, with the
top keys found by a formula written out here (a stable argsort of each row, largest first),
and named as the figure's axis names them ('saw #2', 'saw #4' stay two)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz import i18n
from attnviz.plotting import summary
from attnviz.plotting.heatmaps import attention_heatmap, heads_grid

LAYER, HEAD = 2, 5


def names(tokens: list[str]) -> list[str]:
    """How the table names a token: bare when it occurs once, '<token> #<position>' when the
    sentence repeats it (the figure's tick text)."""
    return [t if tokens.count(t) == 1 else f"{t} #{i}" for i, t in enumerate(tokens)]


def expected_top(row: np.ndarray, k: int = 3) -> list[int]:
    """The k largest entries of a row, largest first, the lower index first on ties."""
    return [int(j) for j in np.argsort(-row.astype(np.float64), kind="stable")[:k]]


def check_rows(table: summary.Table, w: np.ndarray, tokens: list[str]) -> None:
    label = names(tokens)
    assert [r[0] for r in table.rows] == label[:len(table.rows)]
    for r, row in enumerate(table.rows):
        top = expected_top(w[r])
        assert list(row[1::2]) == [label[c] for c in top], (r, row)
        for cell, c in zip(row[2::2], top, strict=True):  # 4 significant digits
            assert float(cell) == pytest.approx(float(w[r, c]), rel=5e-4, abs=1e-12)


@pytest.fixture(scope="module")
def trace(model):
    return model.trace("I saw a saw")


def test_a_heads_top_keys_are_the_largest_weights_of_each_query(trace):
    w = np.asarray(trace.weights[LAYER, HEAD])
    s = summary.summarise(attention_heatmap(w, trace.tokens, "weights"))
    (table,) = s.tables
    assert table.columns[:3] == ("queries", "top 1", "value 1") and len(table.columns) == 7
    assert len(table.rows) == len(trace.tokens) == 6 and table.note == ""
    check_rows(table, w, trace.tokens)
    rows = [r[0] for r in table.rows]
    assert "saw #2" in rows and "saw #4" in rows  # the two 'saw' stay two
    assert "3 largest" in s.text


def test_top_keys_gives_the_exact_values(trace):
    w = np.asarray(trace.weights[LAYER, HEAD])
    idx, vals = summary.top_keys(w, 3)
    for r in range(w.shape[0]):
        assert list(idx[r]) == expected_top(w[r])
        np.testing.assert_array_equal(vals[r], w[r, idx[r]])
    assert np.all(np.diff(vals, axis=1) <= 0)  # largest first


def test_a_heads_grid_has_one_table_per_panel_named_by_its_title(trace):
    w = np.asarray(trace.weights[LAYER])  # [heads, n, n]
    s = summary.summarise(heads_grid(w, trace.tokens, "weights"))
    assert [t.title for t in s.tables] == [f"head {h}" for h in range(12)]
    for h, table in enumerate(s.tables):
        check_rows(table, w[h], trace.tokens)
    assert "12 panels" in s.text


def test_scores_grid_too(trace):
    s_ = np.asarray(trace.scores[LAYER])
    s = summary.summarise(heads_grid(s_, trace.tokens, "scores"))
    check_rows(s.tables[7], s_[7], trace.tokens)


def test_masked_cells_never_count():
    z = np.array([[0.2, np.nan, np.nan], [0.1, 0.9, np.nan], [0.3, 0.3, 0.4]])
    idx, vals = summary.top_keys(z, 3)
    assert idx.tolist() == [[0, -1, -1], [1, 0, -1], [2, 0, 1]]
    table = summary.heatmap_table(dict(type="heatmap", z=z, x=["a", "b", "c"],
                                       y=["a", "b", "c"]), {}, "")
    assert table.rows[0] == ("a", "a", "0.2", "—", "—", "—", "—")


def test_long_inputs_are_capped_and_say_so():
    rng = np.random.default_rng(0)
    w = rng.random((64, 64)).astype(np.float32)
    tokens = [f"t{i}" for i in range(64)]
    (table,) = summary.summarise(attention_heatmap(w, tokens, "weights")).tables
    assert len(table.rows) == summary.MAX_ROWS
    assert "30" in table.note and "64" in table.note
    check_rows(table, w, tokens)  # thinned tick text: the trace's own unique labels
    assert table.rows[0][0] == "t0"
    grid = summary.summarise(heads_grid(rng.random((12, 200, 200)), ["x"] * 200))
    assert len(grid.tables) == 12 and all(len(t.rows) == summary.MAX_ROWS for t in grid.tables)


def test_tokens_show_as_typed():
    tokens = ["<b>bold</b>", "a&b", "<b>bold</b>"]
    (table,) = summary.summarise(attention_heatmap(np.eye(3), tokens, "weights")).tables
    assert [r[0] for r in table.rows] == ["<b>bold</b> #1", "a&b", "<b>bold</b> #3"]


def test_bars_and_lines():
    fig = go.Figure([go.Bar(x=["a", "b", "c"], y=[1.0, 2.5, 0.125], name="learned"),
                     go.Bar(x=["a", "b", "c"], y=[0.0, 1e-6, 3.0], name="none")])
    (table,) = summary.summarise(fig).tables
    assert table.columns == ("label", "learned", "none")
    assert table.rows == (("a", "1", "0"), ("b", "2.5", "1e-06"), ("c", "0.125", "3"))
    fig = go.Figure(go.Bar(y=["x", "y"], x=[3.0, 4.0], orientation="h"))
    assert summary.summarise(fig).tables[0].rows == (("x", "3"), ("y", "4"))

    layers = [f"layer {i}" for i in range(7)]
    fig = go.Figure([go.Scatter(x=layers, y=np.linspace(0, 1, 7), name="saw"),
                     go.Scatter(x=layers, y=np.linspace(1, 0, 7), name="a")])
    (table,) = summary.summarise(fig).tables
    assert table.columns == ("x", "saw", "a") and table.rows[-1] == ("layer 6", "1", "0")

    y = np.sin(np.arange(100) / 7.0)
    fig = go.Figure([go.Scatter(x=np.arange(100) * 2, y=y, name="sin"),
                     go.Scatter(y=np.arange(100.0), name="ramp"),
                     go.Scatter(x=[0, 1], y=[0, 1], hoverinfo="skip", name="guide")])
    (table,) = summary.summarise(fig).tables
    assert [r[0] for r in table.rows] == ["sin", "ramp"]  # a decoration is left out
    lo, hi = int(np.argmin(y)), int(np.argmax(y))
    assert table.rows[0] == ("sin", 100, summary.number(y[lo]), f"#{2 * lo}",
                             summary.number(y[hi]), f"#{2 * hi}", summary.number(y[-1]),
                             "#198")


def test_points_on_a_category_axis_are_named():
    fig = go.Figure(go.Scatter(x=[0.5, 0.25], y=["query saw #2", "query a"], mode="markers",
                               name="picked"))
    (table,) = summary.summarise(fig).tables
    assert table.rows == (("#0.5", "query saw #2"), ("#0.25", "query a"))
    many = go.Figure([go.Scatter(x=np.arange(30), y=[f"t{i}" for i in range(30)], name=n)
                      for n in "abcd"])
    rows = summary.summarise(many).tables[0].rows
    assert rows[0] == ("a", 30, "—", "", "—", "", "—", "")


def test_tables_images_and_the_cap_on_tables():
    fig = go.Figure(go.Table(header=dict(values=["<b>word</b>", "tag"]),
                             cells=dict(values=[["I", "saw"], ["PRON", "VERB"]])))
    (table,) = summary.summarise(fig).tables
    assert table.columns == ("word", "tag") and table.rows == (("I", "PRON"), ("saw", "VERB"))
    words = go.Figure(go.Table(header=dict(values=["", "I", "saw", "a", "saw"]),
                               cells=dict(values=[["gold"], ["PRON"], ["VERB"], ["DET"],
                                                  ["NOUN"]])))
    assert summary.summarise(words).tables[0].columns == ("", "I", "saw #2", "a", "saw #4")
    img = go.Figure(go.Image(z=np.zeros((20, 30, 3), dtype=np.uint8)))
    assert "30 × 20" in summary.summarise(img).text
    many = heads_grid(np.random.default_rng(1).random((20, 4, 4)), list("abcd"), cols=5)
    s = summary.summarise(many)
    assert len(s.tables) == summary.MAX_TABLES and "16 of 20" in s.text


def test_summary_in_chinese(trace):
    w = np.asarray(trace.weights[LAYER, HEAD])
    fig = heads_grid(w[None], trace.tokens, "weights")
    with i18n.use("zh"):
        s = summary.summarise(fig)
    assert s.tables[0].columns[0] == i18n.messages("zh")["query"]
    assert "最大" in s.text


def test_number_formatting():
    assert summary.number(0.41234567) == "0.4123" and summary.number(3.0) == "3"
    assert summary.number(float("nan")) == "—" and summary.number(1.5e-7) == "1.5e-07"
    assert summary.unique(["at", "x", "at"]) == ("at", "x", "at (2)")
