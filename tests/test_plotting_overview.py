"""The all-heads mosaic and the enlarged head: values spot-checked against the trace."""

import json

import numpy as np
import pytest

from attnviz.analysis.views import mean_maps, shown_weights
from attnviz.plotting.common import block_reduce
from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.plotting.overview import overview_mosaic, pick_head


@pytest.fixture(scope="module")
def saw(model):
    return model.trace("I saw a saw")


def test_mosaic_tiles_are_the_exact_weights_and_means(saw):
    t = saw
    fig = overview_mosaic(t.weights, mean_maps(t.weights), t.tokens)
    z = np.asarray(fig.data[0].z)
    n, step = t.n_tokens, t.n_tokens + 1
    L, H = t.n_layers, t.n_heads
    assert z.shape == ((L + 1) * step - 1, (H + 1) * step - 1)
    for layer, head in [(0, 0), (2, 5), (5, 11)]:
        tile = z[layer * step:layer * step + n, head * step:head * step + n]
        np.testing.assert_array_equal(tile, t.weights[layer, head])
    np.testing.assert_allclose(z[3 * step:3 * step + n, H * step:], t.weights[3].mean(0),
                               atol=1e-7)
    np.testing.assert_allclose(z[L * step:, 4 * step:4 * step + n], t.weights[:, 4].mean(0),
                               atol=1e-7)
    np.testing.assert_allclose(z[L * step:, H * step:], t.weights.mean((0, 1)), atol=1e-7)
    assert np.isnan(z[n, 0]) and np.isnan(z[0, n])  # the gaps between tiles
    # Repeated tokens stay distinct: both saws have their own column label in head 0.
    assert "head 0 · key saw #2" in fig.data[0].x and "head 0 · key saw #4" in fig.data[0].x
    assert len(set(fig.data[0].x)) == len(fig.data[0].x)
    assert "weight = %{z:.4f}" in fig.data[0].hovertemplate


def test_mosaic_click_targets_name_their_head(saw):
    fig = overview_mosaic(saw.weights, mean_maps(saw.weights), saw.tokens)
    dots = fig.data[1]
    i = 2 * 13 + 5  # layer 2, head 5 in a 7 x 13 grid of dots
    assert pick_head({"x": dots.x[i], "y": dots.y[i]}) == (2, 5)
    assert pick_head({"x": dots.x[12], "y": dots.y[12]}) == (0, None)  # the mean column
    assert pick_head({"x": fig.data[0].x[3], "y": fig.data[0].y[10]}) == (1, 0)


def test_mosaic_at_512_tokens_is_block_max_and_small(model):
    t = model.trace("saw " * 600)
    assert t.n_tokens == 512
    fig = overview_mosaic(t.weights, mean_maps(t.weights), t.tokens, max_cells=64)
    z = np.asarray(fig.data[0].z)
    assert z.shape == (7 * 65 - 1, 13 * 65 - 1)
    expected, factor = block_reduce(t.weights[4, 7], 64)
    assert factor == 8
    np.testing.assert_array_equal(z[4 * 65:4 * 65 + 64, 7 * 65:7 * 65 + 64], expected)
    np.testing.assert_array_equal(expected[1, 2], t.weights[4, 7][8:16, 16:24].max())
    assert "block max" in fig.data[0].hovertemplate and "8x8" in fig.layout.title.text
    assert len(fig.to_json()) < 5_000_000


def test_head_heatmap_is_exact_with_original_positions(model):
    t = model.trace("I saw a saw", "It cut")
    w, toks, pos = shown_weights(t.weights[1], t.tokens, t.segments, hide=True)
    fig = attention_heatmap(w[3], toks, "weights", indices=pos)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), t.weights[1, 3][np.ix_(pos, pos)])
    assert fig.data[0].x[0] == "i #1" and fig.data[0].x[-1] == "cut #7"
    assert "%{z:.6f}" in fig.data[0].hovertemplate


def test_tokens_are_escaped(model):
    t = model.trace("<b>bold</b>")
    spec = json.dumps(overview_mosaic(t.weights, mean_maps(t.weights), t.tokens)
                      .to_plotly_json(), default=str)
    assert "<b>" not in spec and "&lt;" in spec


def test_long_inputs_thin_ticks_and_name_their_positions(model):
    t = model.trace("the quick brown fox " * 40)  # 162 tokens: rows thinned to every 7th
    fig = attention_heatmap(t.weights[0, 0], t.tokens, "weights")
    ticks = fig.layout.yaxis.ticktext
    assert ticks[1] == f"#7 {t.tokens[7]}" and len(ticks) <= 24
    assert fig.layout.yaxis.tickvals[1] == f"{t.tokens[7]} #7"
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), t.weights[0, 0])


def test_mark_head_is_the_mosaic_with_one_outline_added(saw):
    """mark_head rebuilds the figure from the mosaic's dict: the same figure as plotly's copy
    with add_shape (the same JSON up to the order of the layout's keys); the mosaic itself is
    left as it was."""
    import plotly.graph_objects as go
    import plotly.io

    from attnviz.plotting.overview import OPEN_COLOUR, mark_head

    fig = overview_mosaic(saw.weights, mean_maps(saw.weights), saw.tokens)
    meta = fig.layout.meta
    c, step = int(meta["tile"]), int(meta["step"])
    want = go.Figure(fig)
    want.add_shape(type="rect", xref="x", yref="y", x0=5 * step - 0.5, x1=5 * step + c - 0.5,
                   y0=2 * step - 0.5, y1=2 * step + c - 0.5,
                   line=dict(color=OPEN_COLOUR, width=3), fillcolor="rgba(0,0,0,0)",
                   name="open: layer 2, head 5")
    before = plotly.io.to_json(fig)
    want = json.loads(plotly.io.to_json(want))
    assert json.loads(plotly.io.to_json(mark_head(fig, 2, 5))) == want
    assert plotly.io.to_json(fig) == before  # the mosaic itself is untouched
