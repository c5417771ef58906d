"""Figures of the windows page: values drawn are the inputs, labels stay distinct and escaped,
analytic edges sit at t ± l·w."""

import numpy as np

from attnviz.analysis import receptive as rf
from attnviz.plotting import windows as wp

TOKENS = ["[CLS]", "i", "saw", "a", "saw", "<b>", "[SEP]"]


def test_masks_and_weights_draws_each_mask_and_weights():
    n = len(TOKENS)
    rng = np.random.default_rng(0)
    masks = {"full": np.ones((n, n), bool), "window ±1": np.abs(np.subtract.outer(
        np.arange(n), np.arange(n))) <= 1}
    weights = {k: rng.random((n, n)) * m for k, m in masks.items()}
    fig = wp.masks_and_weights(TOKENS, masks, weights, "t")
    assert len(fig.data) == 4
    np.testing.assert_array_equal(fig.data[2].z, masks["window ±1"].astype(np.float32))
    np.testing.assert_allclose(fig.data[3].z, weights["window ±1"], rtol=1e-6)
    x = list(fig.data[0].x)
    assert x[2] == "saw #2" and x[4] == "saw #4" and len(set(x)) == n  # repeated tokens distinct
    assert "&lt;b&gt; #5" in x and "<b>" not in str(fig.to_dict()["data"])


def test_relative_log_field():
    f = np.array([[0.0, 2.0, 1.0], [1e-9, 1.0, 0.0]])
    rel = wp.relative_log_field(f)
    assert np.isnan(rel[0, 0]) and np.isnan(rel[1, 2])
    assert rel[0, 1] == 0 and rel[0, 2] == np.log10(0.5)
    assert rel[1, 0] == -6  # clipped at the floor, not blank: it is inside the field


def test_receptive_fields_edges_at_t_plus_minus_lw():
    n, depth, w, t = 15, 4, 2, 6
    fields = {k: rf.analytic_field(k, n, depth, t, w).astype(float) for k in rf.KINDS}
    fig = wp.receptive_fields(fields, [f"tok{i}" for i in range(n)], t, w, "rf")
    heat = [d for d in fig.data if d.type == "heatmap"]
    assert len(heat) == 4
    for h, k in zip(heat, rf.KINDS, strict=True):
        np.testing.assert_array_equal(np.isnan(h.z), fields[k] == 0)  # blank = outside
    edges = [d for d in fig.data if d.type == "scatter" and d.name == "analytic t ± l·w"]
    assert len(edges) == 4  # window and conv, both sides
    layers = np.arange(depth + 1)
    xs = sorted(tuple(np.round(e.x, 6)) for e in edges)
    assert tuple(t - layers * w - 0.5) in xs and tuple(t + layers * w + 0.5) in xs
    assert fig.layout.annotations[1].text == "window ±2"
    assert fig.layout.annotations[3].text == "1-D CNN, kernel 5"


def test_context_curve():
    ws = np.arange(1, 6)
    curves = {"[CLS]/[SEP] kept": {"mean": ws / 5, "worst": ws / 6, "pair": ws / 7},
              "plain window": {"mean": ws / 8, "worst": ws / 9, "pair": ws / 10}}
    fig = wp.context_curve(ws, curves, "[CLS]/[SEP] kept", 0.658, "saw #2 and saw #4",
                           current=2, title="c")
    # the main mask: mean, worst, pair; the other: mean and pair (no worst), dashed
    assert len(fig.data) == 5
    np.testing.assert_allclose(fig.data[2].y, ws / 7)
    np.testing.assert_allclose(fig.data[3].y, ws / 8)
    assert fig.data[0].line.dash == "solid" and fig.data[3].line.dash == "dash"
    assert "plain window" in fig.data[3].name and "kept" in fig.data[0].name
    assert "0.658" in fig.layout.annotations[0].text
    assert fig.layout.shapes[1].x0 == 2 and fig.layout.annotations[1].text == "w = 2"


def test_cost_chart_log_axes_and_device():
    table = {"length": np.array([256, 256, 512, 512]),
             "method": np.array(["full", "windowed", "full", "windowed"]),
             "seconds": np.array([1e-3, 2e-3, 4e-3, 3e-3]),
             "peak_bytes": np.array([2**20, 2**19, 2**22, 2**20])}
    fig = wp.cost_chart(table, "CPU test", "tensor sizes")
    assert "CPU test" in fig.layout.title.text
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis2.type == "log"
    mem_full = [d for d in fig.data if d.legendgroup == "full" and d.xaxis == "x2"][0]
    np.testing.assert_allclose(mem_full.y, [1.0, 4.0])
    time_win = [d for d in fig.data if d.legendgroup == "windowed" and d.xaxis == "x"][0]
    np.testing.assert_allclose(time_win.y, [2.0, 3.0])


def test_on_a_phone_each_mask_stays_with_its_weights():
    """Three masks on a 390 px phone (ui.phone_layout under Node): each mask followed by its
    own weights (beside or under it), pair after pair, not all masks then all weights; the
    mask's keys named under it."""
    from tests.test_plotting_screens import PHONE_FRAME, _panels, _phone_shaped

    n = len(TOKENS)
    band = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    masks = {"full": band >= 0, "window ±1": band <= 1, "window ±2": band <= 2}
    fig = wp.masks_and_weights(TOKENS, masks, {k: m * 0.5 for k, m in masks.items()}, "t")
    (res,), (wide,) = _phone_shaped([fig], PHONE_FRAME), _phone_shaped([fig], 900)
    assert wide["same"]
    layout = res["figure"]["layout"]
    boxes = _panels(layout, res["figure"]["data"])
    assert len(boxes) == 6 and not res["wide"]
    order = sorted(boxes, key=lambda r: (-round(boxes[r][1][1], 6), boxes[r][0][0]))
    assert order == ["x", "x4", "x2", "x5", "x3", "x6"]  # mask, its weights, mask, ...
    for i, a in enumerate(order):  # inside the frame, none on another
        (xa, ya) = boxes[a]
        assert 0 <= xa[0] < xa[1] <= 1 and 0 <= ya[0] < ya[1] <= 1
        for b in order[i + 1:]:
            xb, yb = boxes[b]
            assert xa[1] <= xb[0] or xb[1] <= xa[0] or ya[1] <= yb[0] or yb[1] <= ya[0]
    for ref in ("xaxis", "xaxis2", "xaxis3"):  # a mask's keys under it
        assert layout[ref]["showticklabels"] is True
