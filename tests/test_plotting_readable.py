"""Figures that read right: repeated tokens stay apart in tick labels, the mosaic outlines
the open head without covering tiles, long rollout maps keep their structure visible, and
narrow matrix panels keep room for their labels."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.analysis.views import mean_maps
from attnviz.plotting import common, summary
from attnviz.plotting.common import block_reduce
from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.plotting.overview import mark_head, overview_mosaic
from attnviz.plotting.stats import CLIP_PERCENTILE, colour_top, maps_side_by_side


def test_repeated_tokens_show_their_unique_label():
    tokens = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    vals, text = common.tick_labels(tokens)
    assert text == ["[CLS]", "i", "saw #2", "a", "saw #4", "[SEP]"]
    assert vals == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]


def test_heatmap_axes_tell_the_two_saws_apart(model):
    t = model.trace("I saw a saw")
    fig = attention_heatmap(t.weights[0, 0], t.tokens)
    assert list(fig.layout.xaxis.ticktext).count("saw") == 0
    assert {"saw #2", "saw #4"} <= set(fig.layout.yaxis.ticktext)


def test_mosaic_marks_the_open_head_and_hides_its_click_targets(model):
    t = model.trace("I saw a saw")
    fig = overview_mosaic(t.weights, mean_maps(t.weights), t.tokens)
    dots = fig.data[1]
    assert dots.marker.opacity == 0  # nothing drawn over the tiles
    marked = mark_head(fig, 2, 5)
    assert len(fig.layout.shapes) == 0  # the cached figure is not changed
    (rect,) = marked.layout.shapes
    n, step = t.n_tokens, t.n_tokens + 1
    # the outline spans exactly tile (2, 5): categories [5 * step, 5 * step + n) and rows
    assert (rect.x0, rect.x1) == (5 * step - 0.5, 5 * step + n - 0.5)
    assert (rect.y0, rect.y1) == (2 * step - 0.5, 2 * step + n - 0.5)
    x = list(fig.data[0].x)
    assert x[5 * step].startswith("head 5 ·") and x[5 * step + n - 1].startswith("head 5 ·")
    z = np.asarray(fig.data[0].z)
    np.testing.assert_array_equal(z[2 * step:2 * step + n, 5 * step:5 * step + n],
                                  t.weights[2, 5])
    with pytest.raises(ValueError):
        mark_head(fig, t.n_layers, 0)


def test_long_maps_colour_up_to_a_percentile():
    rng = np.random.default_rng(0)
    m = rng.uniform(0, 0.004, size=(200, 200))
    np.fill_diagonal(m, 0.9)  # a few large cells, as rollout's diagonal
    top, clipped = colour_top(m)
    assert clipped and top == pytest.approx(np.percentile(m, CLIP_PERCENTILE))
    short = m[:10, :10]
    assert colour_top(short) == (pytest.approx(0.9), False)
    fig = maps_side_by_side([m, m], ["raw", "rollout"], [f"t{i}" for i in range(200)])
    assert fig.layout.coloraxis.cmax == pytest.approx(top)
    assert "99%" not in fig.layout.coloraxis.colorbar.title.text
    assert "top 1%" in fig.layout.coloraxis.colorbar.title.text
    assert fig.layout.yaxis.ticktext[1].startswith("#6 ")  # thinned ticks name positions


def test_narrow_panels_keep_room_for_labels():
    from attnviz.plotting.steps import MIN_PANEL, matrices_figure

    toks = ["a #0", "b #1", "c #2", "d #3", "e #4", "f #5"]
    dims = [f"k_{i}" for i in range(32)]
    z = np.zeros((32, 6))
    fig = matrices_figure([(np.zeros((6, 32)), toks, dims, "Q", "values"),
                           (z, dims, toks, "K", "values")], ["·"], "t")
    d1, d2 = fig.layout.xaxis.domain, fig.layout.xaxis2.domain
    assert (d2[1] - d2[0]) / (d1[1] - d1[0]) == pytest.approx(MIN_PANEL / 24, rel=1e-6)


def test_long_single_head_keeps_square_cells_and_few_key_labels(model):
    from attnviz.plotting.heatmaps import MAX_X_TICKS, SQUARE_FROM

    t = model.trace("the cat sat on the mat " * 10)  # 62 tokens
    assert t.n_tokens > SQUARE_FROM
    fig = attention_heatmap(t.weights[0, 0], t.tokens)
    assert fig.layout.yaxis.scaleanchor == "x"
    assert len(fig.layout.xaxis.ticktext) <= MAX_X_TICKS
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), t.weights[0, 0])
    short = attention_heatmap(t.weights[0, 0, :6, :6], t.tokens[:6])
    assert short.layout.yaxis.scaleanchor is None


def test_heads_grid_of_52_tokens_keeps_thinned_token_labels(model):
    from attnviz.plotting.heatmaps import GRID_TICKS, PANEL_MARK, heads_grid

    t = model.trace("the cat sat on the mat " * 8 + "and so")  # 52 tokens
    assert t.n_tokens == 52
    fig = heads_grid(t.weights[0], t.tokens)
    y = fig.layout.yaxis
    per_row = len(y.ticktext) // 3  # three rows of panels, each row labelled alike
    assert 0 < per_row <= GRID_TICKS and list(y.ticktext) == list(y.ticktext[:per_row]) * 3
    assert y.ticktext[1].startswith("#5 ")  # thinned: the position is named
    assert PANEL_MARK not in "".join(y.ticktext)  # the panel marks never show
    assert set(y.tickvals) <= set(y.categoryarray)


def test_pooled_heads_grid_labels_its_blocks(model):
    from attnviz.plotting.heatmaps import GRID_TICKS, heads_grid

    w = np.random.default_rng(0).random((12, 200, 200)).astype(np.float32)
    fig = heads_grid(w, ["t"] * 200)
    # 67 blocks of 3; a block's tick names its first token (words count from 1): every 6th
    # block down (GRID_TICKS a panel), every 12th across (GRID_PANEL_X_TICKS a panel)
    for axis, panels, second in ((fig.layout.xaxis, 4, "#37 t"), (fig.layout.yaxis, 3, "#19 t")):
        assert len(axis.ticktext) % panels == 0
        assert 0 < len(axis.ticktext) // panels <= GRID_TICKS
        assert axis.ticktext[0] == "#1 t" and axis.ticktext[1] == second
    assert "queries from %{y}" in fig.data[0].hovertemplate
    title, z, xs, ys = summary.grid_panels(fig)[5]  # head 5: row 1, column 1
    np.testing.assert_array_equal(z, block_reduce(w[5], 96)[0])
    assert title == "head 5" and xs[:2] == ys[:2] == ["t #1 – t #3", "t #4 – t #6"]


def test_heads_grid_is_one_heatmap_its_heads_as_blocks(model):
    """One heatmap on one pair of category axes: each head's exact matrix a block of it, its
    cells' customdata that head (the hover says it), blank NaN categories between the
    panels, each panel titled above its centre."""
    from attnviz.plotting.common import axis_labels
    from attnviz.plotting.heatmaps import PANEL_MARK, heads_grid

    t = model.trace("I saw a saw")
    fig = heads_grid(t.weights[0], t.tokens)
    layout = fig.layout.to_plotly_json()
    assert len(fig.data) == 1 and not [k for k in layout if k.startswith(("xaxis", "yaxis"))
                                       and k[5:]]
    (tr,) = fig.data
    assert tr.hovertemplate.startswith("head %{customdata}<br>query %{y}<br>key %{x}<br>")
    labels = axis_labels(t.tokens)  # 'saw #2', 'saw #4': two columns, two rows
    xcat, ycat = list(fig.layout.xaxis.categoryarray), list(fig.layout.yaxis.categoryarray)
    assert xcat == list(tr.x) and ycat == list(tr.y)
    assert len(set(xcat)) == len(xcat) == 4 * 6 + 3 and len(set(ycat)) == len(ycat) == 3 * 6 + 2
    z, head = np.asarray(tr.z), np.asarray(tr.customdata)
    for h in range(12):
        r, c = divmod(h, 4)
        rows, cols = slice(r * 7, r * 7 + 6), slice(c * 7, c * 7 + 6)
        np.testing.assert_array_equal(z[rows, cols], t.weights[0, h])
        assert (head[rows, cols] == h).all()
        assert xcat[cols] == [lab + PANEL_MARK * c for lab in labels]
        assert ycat[rows] == [lab + PANEL_MARK * r for lab in labels]
        note = fig.layout.annotations[h]  # over the panel's centre, on its top edge
        assert note.text == f"head {h}" and note.x == pytest.approx((c * 7 + 3) / len(xcat))
        assert note.y == pytest.approx(1 - r * 7 / len(ycat))
    gaps = np.isnan(z)
    assert gaps.sum() == z.size - 12 * 36 and (head[gaps] == -1).all()
    assert [p[0] for p in summary.grid_panels(fig)] == [f"head {h}" for h in range(12)]
    two = heads_grid(t.weights[0, :2], t.tokens)  # two heads keep a panel's size
    assert two.layout.xaxis.domain[1] == pytest.approx((2 * 6 + 1) / (4 * 6 + 3))


def test_big_unprinted_panels_clip_their_colours(model):
    """B (384 x 6) is too big to print: a few large entries must not wash it out."""
    from attnviz.analysis import walkthrough as wt
    from attnviz.plotting import steps as sp

    t = model.trace("I saw a saw")
    mh = wt.real_multihead(model, t, 0)
    fig = sp.output_projection_figure(mh)
    b = np.abs(np.asarray(mh.projected, dtype=np.float64))
    assert fig.data[2].zmax == pytest.approx(np.percentile(b, 99), rel=1e-5)
    assert fig.data[2].zmax < b.max() / 2
