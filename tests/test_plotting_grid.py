"""plotting.common.Grid builds the same figure as make_subplots + add_trace(row=, col=)."""

import numpy as np
import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from attnviz.plotting.common import Grid


@pytest.mark.parametrize("rows,cols", [(1, 1), (1, 3), (3, 4), (2, 2)])
def test_grid_matches_make_subplots(rows, cols):
    args = dict(subplot_titles=[f"p{i}" for i in range(rows * cols)], horizontal_spacing=0.05)
    ref = make_subplots(rows=rows, cols=cols, **args)
    g = Grid(rows=rows, cols=cols, **args)
    rng = np.random.default_rng(rows * 10 + cols)
    for r in range(1, rows + 1):
        for c in range(1, cols + 1):
            z = rng.random((3, 3))
            ref.add_trace(go.Heatmap(z=z, name=f"{r},{c}"), row=r, col=c)
            ref.update_xaxes(tickangle=-45, row=r, col=c)
            ref.update_yaxes(autorange="reversed", row=r, col=c)
            g.add(go.Heatmap(z=z, name=f"{r},{c}"), r, c)
            g.xaxis(r, c)["tickangle"] = -45
            g.yaxis(r, c)["autorange"] = "reversed"
    ref.update_layout(title="t", height=300)
    assert g.figure(title="t", height=300).to_dict() == ref.to_dict()


def test_grid_layouts_are_not_shared():
    a, b = Grid(rows=1, cols=2), Grid(rows=1, cols=2)
    a.xaxis(1, 2)["title"] = "changed"
    assert "title" not in b.xaxis(1, 2)


def test_grid_refuses_a_cell_outside():
    with pytest.raises(ValueError):
        Grid(rows=1, cols=2).add(go.Heatmap(z=[[1]]), 2, 1)


def test_titles_do_not_key_the_cached_layout():
    """Two grids of one shape with other titles (one empty: no annotation) are make_subplots'
    layouts exactly, and the second is built from the cached one."""
    from attnviz.plotting.common import _grid_layout_of

    for titles in (["a <b>x</b>", "", "c"], ["layer 3", "", "saw #4"]):
        before = _grid_layout_of.cache_info()
        got = Grid(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.07).figure()
        ref = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.07)
        assert got.to_dict() == ref.to_dict()
        assert [a.text for a in got.layout.annotations] == [titles[0], titles[2]]
    assert _grid_layout_of.cache_info().hits > before.hits  # the second grid hit the cache
