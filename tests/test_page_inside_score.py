"""AppTest of the neuron view: panels and the numbers table come from the trace."""


import numpy as np
import pytest

from tests import plotly_json as pj
from tests.apptest import open_page
from tests.plotly_json import decode
from tests.test_ui_recorder import assert_file_holds_the_screen


@pytest.fixture
def at():
    return open_page("pages/inside_score.py", timeout=180)


def panels(at, i):
    return {tr.get("name"): tr for tr in pj.figures(at)[i]["data"]}


def test_default_sentence_numbers(at, model):
    t = model.trace("I saw a saw")
    at.session_state["ins_layer"] = 2
    at.session_state["ins_head"] = 9
    at.session_state["ins_query"] = 4
    at.run()
    assert not at.exception
    scores, values = panels(at, 0), panels(at, 1)
    np.testing.assert_allclose(decode(scores["q·k"]["z"])[:, 0], t.scores[2, 9, 4], atol=1e-5)
    np.testing.assert_allclose(decode(scores["weight"]["z"])[:, 0], t.weights[2, 9, 4],
                               atol=1e-6)
    np.testing.assert_allclose(decode(values["output o"]["z"])[0], t.outputs[2, 9, 4], atol=1e-5)
    table = at.dataframe[0].value
    assert list(table["key"]) == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]
    np.testing.assert_allclose(table["weight"], t.weights[2, 9, 4], atol=1e-6)
    assert any("matches the engine" in c.value for c in at.caption)
    assert at.get("download_button")


def test_pair_and_512_tokens(at, model):
    at.session_state["pair"] = "It cut the wood"
    at.run()
    assert not at.exception and len(pj.charts(at)) == 2
    at.session_state["text"] = "saw " * 600
    at.session_state["pair"] = ""
    at.run()
    assert not at.exception
    assert any("dropped" in w.value for w in at.warning)
    assert len(at.dataframe[0].value) == 512


def test_refused_model_folder(at):
    at.session_state["model_dir"] = "/nonexistent"
    at.run()
    assert not at.exception
    assert any("refused" in w.value for w in at.warning)
    assert len(pj.charts(at)) == 2


def test_word_level_weights(at, model):
    from attnviz.analysis.words import word_attention, word_groups

    text = "Transformers use embeddings"
    t = model.trace(text)
    at.session_state["text"] = text
    query = t.word_pieces.index("##bed")  # a piece of "embeddings"
    at.session_state["ins_query"] = query
    at.run()
    from attnviz.ui.cache import CACHES

    figures = CACHES["figures"]
    assert all(("en", (name, t.key, 0, 0, query)) in figures for name in ("ins_scores",
                                                                          "ins_values"))
    misses, specs = figures.misses, pj.specs(at)
    at.toggle(key="ins_words").set_value(True).run()
    assert not at.exception
    # same trace, head and query: the two figures are the cached ones, not built again
    assert figures.misses == misses
    assert pj.specs(at)[:2] == specs
    groups = word_groups(t.word_pieces)
    word = next(u for u, g in enumerate(groups) if query in g)
    table = at.dataframe[1].value
    np.testing.assert_allclose(table["weight"].to_numpy(),
                               word_attention(t.weights[0, 0], groups)[word], atol=1e-9)
    assert table["word"].iloc[word] == f"embeddings #{groups[word][0]}"
    assert_file_holds_the_screen(at)  # both tables, the captions, the output line
