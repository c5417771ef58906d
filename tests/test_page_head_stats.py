"""AppTest of head statistics, rollout and flow: heatmaps, table and maps from the analysis."""


import numpy as np
import pytest

from attnviz.analysis.flow import attention_flow
from attnviz.analysis.head_stats import STATS, head_stats
from attnviz.analysis.rollout import rollout
from attnviz.analysis.words import words_view
from tests import plotly_json as pj
from tests.apptest import open_page
from tests.plotly_json import decode


@pytest.fixture
def at():
    return open_page("pages/head_stats.py", timeout=180)


def charts(at):
    return pj.figures(at)


def test_default_sentence(at, model):
    t = model.trace("I saw a saw")
    s = head_stats(t.weights, t.tokens)
    stats_fig, one = charts(at)
    np.testing.assert_array_equal(decode(one["data"][0]["z"]), t.weights[0, 0])
    assert "saw #4" in one["data"][0]["x"]
    heat = [tr for tr in stats_fig["data"] if tr["type"] == "heatmap"]
    for tr in heat:
        np.testing.assert_allclose(decode(tr["z"]), s[tr["name"]], atol=1e-12)
    table = at.dataframe[0].value
    assert len(table) == t.n_layers * t.n_heads
    row = table[(table["layer"] == 3) & (table["head"] == 4)].iloc[0]
    assert row[STATS["sep"]] == pytest.approx(s["sep"][3, 4], abs=1e-12)
    assert any("not not Explanation" in i.value for i in at.info)
    assert any("**attnviz** conventions" in c.value for c in at.caption)
    assert at.get("download_button")


def test_clark_conventions_and_word_level(at, model):
    t = model.trace("Transformers use embeddings, I saw.")
    at.session_state["text"] = "Transformers use embeddings, I saw."
    at.radio(key="hs_conv").set_value("clark").run()
    assert not at.exception
    assert any("**clark** conventions" in c.value for c in at.caption)
    heat = [tr for tr in charts(at)[0]["data"] if tr["type"] == "heatmap"]
    s = head_stats(t.weights, t.tokens, "clark")
    for tr in heat:
        np.testing.assert_allclose(decode(tr["z"]), s[tr["name"]], atol=1e-12)
    at.toggle(key="hs_words").set_value(True).run()
    w, words, _ = words_view(t.weights, t.tokens, t.word_pieces)
    assert len(words) < t.n_tokens  # some pieces really merged
    s = head_stats(w, words, "clark")
    heat = [tr for tr in charts(at)[0]["data"] if tr["type"] == "heatmap"]
    (prev,) = [tr for tr in heat if tr["name"] == "prev"]
    np.testing.assert_allclose(decode(prev["z"]), s["prev"], atol=1e-12)


def test_rollout_and_flow_tab(at, model):
    t = model.trace("I saw a saw")
    at.session_state["hs_tab"] = "Rollout and flow"
    at.run()
    at.select_slider(key="hs_roll").set_value(2).run()
    assert not at.exception
    (fig,) = charts(at)
    heat = [tr for tr in fig["data"] if tr["type"] == "heatmap"]
    assert len(heat) == 3
    np.testing.assert_allclose(decode(heat[0]["z"]), t.weights[2].mean(0), atol=1e-6)
    np.testing.assert_allclose(decode(heat[1]["z"]), rollout(t.weights)[2], atol=1e-6)
    np.testing.assert_allclose(decode(heat[2]["z"]), attention_flow(t.weights, 2), atol=1e-6)


def test_flow_beyond_its_cap_says_so(at):
    at.session_state["text"] = "saw, " * 80
    at.session_state["hs_tab"] = "Rollout and flow"
    at.run()
    assert not at.exception
    assert any("computed up to 128 tokens" in i.value for i in at.info)
    assert len([tr for tr in charts(at)[0]["data"] if tr["type"] == "heatmap"]) == 2


def test_pair_512_and_refused_folder(at):
    at.session_state["pair"] = "It cut the wood"
    at.run()
    assert not at.exception and len(pj.charts(at)) == 2
    at.session_state["pair"] = ""
    at.session_state["text"] = "saw, " * 300
    at.run()
    assert not at.exception and any("dropped" in w.value for w in at.warning)
    at.session_state["hs_tab"] = "Rollout and flow"
    at.run()
    assert not at.exception and len(pj.specs(at)[0]) < 5_000_000
    at.session_state["model_dir"] = "/nonexistent"
    at.run()
    assert not at.exception and any("refused" in w.value for w in at.warning)


def test_a_decoder_draws_no_map_of_the_weight_on_cls_and_sep():
    """SmolLM2 adds no [CLS]/[SEP]: the weight on them is 0 in every head (checked here on the
    trace), so the page says so in one sentence and neither draws those maps nor tables their
    columns, nor those of the weight on the next token (causal: 0 by construction); every
    other statistic is drawn, with head_stats' numbers."""
    import attnviz
    from attnviz.engine.bundled import SMOLLM2

    t = attnviz.load_model(SMOLLM2, device="cpu").trace("I saw a saw")
    s = head_stats(t.weights, t.tokens)
    assert not (s["cls"].any() or s["sep"].any())
    at = open_page("pages/head_stats.py", timeout=600, model=SMOLLM2, text="I saw a saw")
    assert any("This model has no [CLS]/[SEP] tokens" in c.value for c in at.caption)
    stats_fig, _ = charts(at)
    heat = [tr for tr in stats_fig["data"] if tr["type"] == "heatmap"]
    assert any("the weight on the next token is 0 by construction" in c.value
               for c in at.caption)
    assert not s["next"].any()  # causal: no token sees the one after it
    assert sorted(tr["name"] for tr in heat) == sorted(
        k for k in STATS if k not in ("cls", "sep", "next"))
    for tr in heat:
        np.testing.assert_allclose(decode(tr["z"]), s[tr["name"]], atol=1e-12)
    columns = set(at.dataframe[0].value.columns)
    assert not columns & {STATS["cls"], STATS["sep"], STATS["next"]}
    assert STATS["entropy"] in columns
