"""AppTest of head statistics and rollout: heatmaps, table and rollout from the analysis."""

import json

import numpy as np
import pytest

from attnviz.analysis.head_stats import STATS, head_stats
from attnviz.analysis.rollout import rollout
from tests.apptest import open_page

from .test_page_explore import decode


@pytest.fixture
def at():
    return open_page("pages/head_stats.py", timeout=180)


def test_default_sentence(at, model):
    t = model.trace("I saw a saw")
    s, r = head_stats(t.weights, t.tokens), rollout(t.weights)
    stats_fig, roll_fig = (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
    heat = [tr for tr in stats_fig["data"] if tr["type"] == "heatmap"]
    for tr in heat:
        np.testing.assert_allclose(decode(tr["z"]), s[tr["name"]], atol=1e-12)
    np.testing.assert_allclose(decode(roll_fig["data"][1]["z"]), r[-1], atol=1e-7)
    np.testing.assert_allclose(decode(roll_fig["data"][0]["z"]), t.weights[-1].mean(0),
                               atol=1e-7)
    table = at.dataframe[0].value
    assert len(table) == t.n_layers * t.n_heads
    row = table[(table["layer"] == 3) & (table["head"] == 4)].iloc[0]
    assert row[STATS["sep"]] == pytest.approx(s["sep"][3, 4], abs=1e-12)
    assert any("not explanation" in i.value for i in at.info)
    assert at.get("download_button")


def test_rollout_layer_and_selected_head(at, model):
    t = model.trace("I saw a saw")
    at.select_slider(key="hs_roll").set_value(2).run()
    at.session_state["hs_layer"] = 4
    at.session_state["hs_head"] = 1
    at.run()
    assert not at.exception
    stats_fig, roll_fig = (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
    np.testing.assert_allclose(decode(roll_fig["data"][1]["z"]), rollout(t.weights)[2],
                               atol=1e-7)
    shape = stats_fig["layout"]["shapes"][0]
    assert (shape["x0"], shape["y0"]) == (0.5, 3.5)  # head 1, layer 4 outlined


def test_pair_512_and_refused_folder(at):
    at.session_state["pair"] = "It cut the wood"
    at.run()
    assert not at.exception and len(at.get("plotly_chart")) == 2
    at.session_state["pair"] = ""
    at.session_state["text"] = "saw, " * 300
    at.run()
    assert not at.exception and any("dropped" in w.value for w in at.warning)
    assert len(at.get("plotly_chart")[1].proto.spec) < 5_000_000
    at.session_state["model_dir"] = "/nonexistent"
    at.run()
    assert not at.exception and any("refused" in w.value for w in at.warning)
