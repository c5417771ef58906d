"""Margins reserved for labels (plotting.common.text_width / label_room / colorbar_room): the
estimate written out here, wide characters counted wider, and the explore page's figures
asking for that room (that Chromium then draws them once: tests/e2e/test_e2e_margins.py)."""

from __future__ import annotations

import math

import pytest

from attnviz.analysis.views import mean_maps
from attnviz.plotting import common
from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.plotting.overview import overview_mosaic
from attnviz.plotting.token_lines import token_lines


def test_text_width_counts_latin_narrow_and_chinese_wide():
    size = common.FONT["size"]
    assert common.text_width("saw #2") == pytest.approx(6 * 0.66 * size)
    assert common.text_width("锯子") == pytest.approx(2 * 1.05 * size)
    assert common.text_width("锯子 #3", size=10) == pytest.approx((2 * 1.05 + 3 * 0.66) * 10)
    assert common.text_width("") == 0


def test_label_room_is_the_longest_label_turned_by_its_angle():
    size = common.FONT["size"]
    w = common.text_width("#162 quick")
    assert common.label_room(["the", "#162 quick"]) == math.ceil(
        w + common.TICK_PAD + common.TITLE_ROOM)
    assert common.label_room(["#162 quick"], titled=False) == math.ceil(w + common.TICK_PAD)
    slanted = w * math.sin(math.radians(45)) + size * math.cos(math.radians(45))
    assert common.label_room(["#162 quick"], angle=-45, across=False) == math.ceil(
        slanted + common.TICK_PAD + common.TITLE_ROOM)
    flat = common.label_room(["#162 quick"], angle=0, across=False, titled=False)
    assert flat == math.ceil(size + common.TICK_PAD)  # unrotated x labels: one line
    assert common.colorbar_room("weights") == int(60 + max(common.text_width("weights"),
                                                           12 + 8 + common.text_width("0.00")))


def test_the_explore_figures_reserve_their_labels_room(model):
    t = model.trace("I saw a saw")
    fig = attention_heatmap(t.weights[0, 0], t.tokens)
    m = fig.layout.margin
    assert m.l == 10 + common.label_room(fig.layout.yaxis.ticktext)
    labels_b = 10 + common.label_room(fig.layout.xaxis.ticktext, angle=-45, across=False)
    assert m.b == labels_b + common.COLORBAR_BELOW  # the colour bar lies under the labels
    assert fig.data[0].colorbar.orientation == "h" and m.r == 20
    right = attention_heatmap(t.weights[0, 0], t.tokens, colorbar="right").layout.margin
    assert right.r == common.colorbar_room("weights") and right.b == labels_b
    longer = attention_heatmap(t.weights[0, 0], ["[CLS]", "i", "sawwwwwwwwww", "a", "saw",
                                                 "[SEP]"])
    assert longer.layout.margin.l > m.l and longer.layout.margin.b > m.b
    mosaic = overview_mosaic(t.weights, mean_maps(t.weights), t.tokens)
    assert mosaic.layout.margin.l == 10 + common.label_room(
        [f"layer {i}" for i in range(t.weights.shape[0])] + ["mean"], titled=False)
    lines = token_lines(t.weights[0, [0]], [0], t.tokens)
    assert lines.layout.margin.b == 10 + common.LEGEND_ROW
