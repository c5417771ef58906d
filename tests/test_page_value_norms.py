"""AppTest of Weights vs value norms: the summary, the per-head maps and the maps of one head
come from analysis.norms (itself checked against the formula and HF in test_analysis_norms)."""


import numpy as np
import pytest

from attnviz.analysis import norms
from tests.apptest import open_page
from tests.plotly_json import decode, figures, specs


@pytest.fixture
def at():
    return open_page("pages/value_norms.py", timeout=180,
                     text="The cat sat on the mat, and the dog slept.")


def test_summary_and_maps(at, model):
    t = model.trace("The cat sat on the mat, and the dog slept.")
    vn = norms.value_norms(t.values, norms.output_projections(model))
    c = norms.comparison(t.weights, vn, t.tokens)
    metric = at.metric[0]
    assert metric.value == f"{int(c['changed'].sum())} of 72 ({c['changed'].sum() / 72:.0%})"
    stats_fig, maps_fig = figures(at)
    heat = [tr for tr in stats_fig["data"] if tr["type"] == "heatmap"]
    for tr in heat:
        np.testing.assert_allclose(decode(tr["z"]), c[tr["name"]], atol=1e-12)
    at.selectbox(key="vn_layer").set_value(2).run()
    at.selectbox(key="vn_head").set_value(7).run()
    maps = [tr for tr in figures(at)[1]["data"]
            if tr["type"] == "heatmap"]
    w = t.weights[2, 7].astype(np.float64)
    np.testing.assert_allclose(decode(maps[0]["z"]), w, atol=1e-7)
    np.testing.assert_allclose(decode(maps[1]["z"]),
                               norms.row_shares(norms.weighted_norms(w, vn[2, 7])), atol=1e-6)
    whole = norms.layer_norms(t.weights, t.values, norms.output_projections(model))[2]
    np.testing.assert_allclose(decode(maps[2]["z"]), norms.row_shares(whole), atol=1e-6)
    assert at.get("download_button")


def test_word_level_and_long_input(at):
    at.session_state["text"] = "Transformers use embeddings."
    at.toggle(key="vn_words").set_value(True).run()
    assert not at.exception
    maps = figures(at)[1]
    assert len(maps["data"][0]["x"]) < 8  # pieces merged
    at.session_state["text"] = "saw, " * 300
    at.toggle(key="vn_words").set_value(False).run()
    assert not at.exception and any("dropped" in w.value for w in at.warning)
    assert len(specs(at)[1]) < 10_000_000


def test_the_download_holds_the_head_shown(monkeypatch, model):
    """The .npz (made on click) holds the open head's norm shares and its layer's, as drawn."""
    import io

    from tests.test_determinism import Recorder

    rec = Recorder(monkeypatch)
    text = "The cat sat on the mat, and the dog slept."
    at = open_page("pages/value_norms.py", timeout=180, text=text, vn_layer=2, vn_head=7)
    button = next(b for b in at.get("download_button") if "vn_download" in b.proto.id)
    name, data = rec.content(button)
    got = np.load(io.BytesIO(data))
    t = model.trace(text)
    vn = norms.value_norms(t.values, norms.output_projections(model))
    w = t.weights[2, 7].astype(np.float64)
    assert name == "attnviz_value_norms.npz" and int(got["layer"]) == 2 and int(got["head"]) == 7
    np.testing.assert_allclose(got["norm_shares_head"],
                               norms.row_shares(norms.weighted_norms(w, vn[2, 7])), atol=1e-6)
    whole = norms.layer_norms(t.weights, t.values, norms.output_projections(model))[2]
    np.testing.assert_allclose(got["norm_shares_layer"], norms.row_shares(whole), atol=1e-6)


def test_a_decoder_draws_no_map_of_the_shares_on_cls_and_sep():
    """SmolLM2 adds no [CLS]/[SEP]: their shares are 0 in every head (checked here), so the
    page says so in one sentence instead of '0.0% of the weights' and draws only the queries
    whose top key changes (analysis.norms' numbers)."""
    import attnviz
    from attnviz.engine.bundled import SMOLLM2

    model = attnviz.load_model(SMOLLM2, device="cpu")
    t = model.trace("I saw a saw")
    vn = norms.value_norms(t.values_per_head, norms.output_projections(model))
    c = norms.comparison(t.weights, vn, t.tokens)
    assert not (c["special_weight"].any() or c["special_norm"].any())
    at = open_page("pages/value_norms.py", timeout=600, model=SMOLLM2, text="I saw a saw")
    said = " ".join(m.value for m in (*at.caption, *at.markdown))
    assert "This model has no [CLS]/[SEP] tokens, so their shares are not drawn." in said
    assert "Mean share on [CLS]/[SEP]" not in said
    heat = [tr for tr in figures(at)[0]["data"] if tr["type"] == "heatmap"]
    assert [tr["name"] for tr in heat] == ["top_changes"]
    np.testing.assert_allclose(decode(heat[0]["z"]), c["top_changes"], atol=1e-12)
