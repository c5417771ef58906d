"""AppTest of Heads across many sentences: map, statistics and behaviours from
analysis.corpus_heads (itself checked against formulas and scipy in its tests)."""


import numpy as np
import pytest

from attnviz.analysis import corpus_heads as ch
from tests.apptest import open_page
from tests.plotly_json import decode, figures, specs
from tests.test_ui_recorder import assert_file_holds_the_screen

TEXT = "I saw a saw. The dog barked at the mailman, twice!\nIt rained. We stayed in."


@pytest.fixture
def at():
    return open_page("pages/corpus_heads.py", timeout=300, text=TEXT)


def test_pasted_text(at, model):
    c = ch.corpus_heads(model, ch.split_sentences(TEXT))
    map_fig, one, stats_fig = figures(at)
    first = model.trace("I saw a saw.")  # the picked head (0, 0) on sentence 1
    np.testing.assert_array_equal(decode(one["data"][0]["z"]), first.weights[0, 0])
    np.testing.assert_allclose(decode(map_fig["data"][0]["x"]), c.coords[:, 0], atol=1e-9)
    np.testing.assert_allclose(decode(map_fig["data"][0]["y"]), c.coords[:, 1], atol=1e-9)
    heat = [tr for tr in stats_fig["data"] if tr["type"] == "heatmap"]
    for tr in heat:
        np.testing.assert_allclose(decode(tr["z"]), c.mean[tr["name"]], atol=1e-12)
    (dots,) = [tr for tr in stats_fig["data"] if tr["type"] == "scatter" and tr["name"] == "cls"]
    np.testing.assert_allclose(np.asarray(decode(dots["customdata"]))[:, 1],
                               c.spread["cls"].ravel(), atol=1e-12)
    assert any("4 sentences" in x.value for x in at.caption)
    at.selectbox(key="ch_layer").set_value(3).run()
    assert any(f"head 0: **{c.behaviour[3, 0]}**" in x.value for x in at.caption)
    assert_file_holds_the_screen(at)


def test_sample_empty_and_too_long(at):
    at.radio(key="ch_src").set_value("sample").run()
    assert not at.exception
    assert len(specs(at)) == 3
    at.radio(key="ch_src").set_value("sidebar").run()
    at.session_state["text"] = "   "
    at.run()
    assert not at.exception and any("sidebar's box" in i.value for i in at.info)
    at.session_state["text"] = "word " * 300  # one sentence, longer than the corpus takes
    at.run()
    assert not at.exception and not specs(at)
    assert any("Nothing to analyse" in w.value for w in at.warning)
    at.session_state["text"] = "<b>x</b> $y$ " * 3
    at.run()
    assert not at.exception and len(specs(at)) == 3
