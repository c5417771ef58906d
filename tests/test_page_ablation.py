"""AppTest of Switch it off and see: the figures' numbers are analysis.ablation's (itself checked
against intervened traces, and those against hooks on HF's eager modules)."""

import json

import numpy as np
import pytest

from attnviz.analysis import ablation
from attnviz.engine.request import TraceRequest
from tests.apptest import open_page
from tests.plotly_json import decode

pytestmark = pytest.mark.apptest


@pytest.fixture
def at():
    return open_page("pages/ablation.py", timeout=180, text="I saw a saw")


def heatmaps(at):
    figs = [json.loads(x.proto.spec) for x in at.get("plotly_chart")]
    return [(f["layout"].get("title", {}).get("text", ""), tr) for f in figs for tr in f["data"]
            if tr["type"] == "heatmap"]


def test_lesson_map_and_patching(at, model):
    assert not at.exception
    req = TraceRequest("I saw a saw")
    imp = ablation.head_importance(model, req, "repeat", "zero")
    maps = heatmaps(at)
    first = maps[0][1]  # the lesson's ranking: removing each head, the saws' cosine
    np.testing.assert_allclose(decode(first["z"]), imp.effect, atol=1e-6)
    p = ablation.patching(model, req, TraceRequest("I saw a dog"))
    restored = [tr for title, tr in maps if "token" in title.lower() or "词元" in title]
    np.testing.assert_allclose(decode(restored[-1]["z"]), p.residual, atol=1e-6)
    assert at.get("download_button")


def test_measure_mode_and_plain_messages(at, model):
    at.selectbox(key="abl_measure").set_value("change").run()
    at.radio(key="abl_mode").set_value("mean").run()
    assert not at.exception
    imp = ablation.head_importance(model, TraceRequest("I saw a saw"), "change", "mean")
    effects = [decode(tr["z"]) for _t, tr in heatmaps(at)]
    assert any(np.allclose(z, imp.effect, atol=1e-6) for z in effects if z.shape == (6, 12))
    at.text_input(key="abl_corrupted").input("I saw a big dog").run()
    assert not at.exception and any("same length" in m.value for m in at.info)
    at.selectbox(key="abl_measure").set_value("pair").run()
    assert not at.exception and any("second sentence" in m.value for m in at.info)


def test_one_head_removed(at, model):
    at.selectbox(key="abl_layer").set_value(2).run()
    at.selectbox(key="abl_head").set_value(7).run()
    assert not at.exception
    from attnviz.engine.intervene import Ablation

    plain = model.trace("I saw a saw")
    cut = model.trace("I saw a saw", ablate=Ablation(heads=((2, 7),)))
    a, b = cut.hidden_states[-1].astype(float), plain.hidden_states[-1].astype(float)
    want = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    bars = [tr for x in at.get("plotly_chart") for tr in json.loads(x.proto.spec)["data"]
            if tr["type"] == "bar" and len(decode(tr["y"])) == len(want)]
    assert any(np.allclose(decode(tr["y"]), want, atol=1e-6) for tr in bars)
    dw = np.abs(cut.weights.astype(float) - plain.weights).mean(axis=(-1, -2))
    assert (dw[:3] == 0).all() and dw[3:].max() > 0  # only later layers change
    assert any(np.allclose(z, dw, atol=1e-9) for z in (decode(tr["z"]) for _t, tr in heatmaps(at))
               if z.shape == dw.shape)
