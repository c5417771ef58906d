"""AppTest of Compare two sentences: the three panels come from analysis.compare."""


import numpy as np
import pytest

from attnviz.analysis.compare import align_tokens, aligned_difference
from tests.apptest import open_page
from tests.plotly_json import decode, figures
from tests.test_ui_recorder import assert_file_holds_the_screen


@pytest.fixture
def at():
    return open_page("pages/compare.py", timeout=180, cmp_b="Yesterday I saw a dog")


def test_aligned_panels(at, model):
    ta, tb = model.trace("I saw a saw"), model.trace("Yesterday I saw a dog")
    at.selectbox(key="cmp_layer").set_value(4).run()
    at.selectbox(key="cmp_head").set_value(9).run()
    pairs = align_tokens(ta.tokens, tb.tokens)
    wa, wb, d = aligned_difference(ta.weights[4, 9], tb.weights[4, 9], pairs)
    fig = figures(at)[0]
    heat = [tr for tr in fig["data"] if tr["type"] == "heatmap"]
    for tr, ref in zip(heat, (wa, wb, d), strict=True):
        np.testing.assert_allclose(decode(tr["z"]), ref, atol=1e-7)
        # the aligned tokens carry A's numbers, as every label does ([CLS] #0, saw #2)
        assert tr["x"] == ["[CLS] #0", "i #1", "saw #2", "a #3", "[SEP] #5"]
    assert any("5 aligned tokens" in m.value for m in at.markdown)
    assert_file_holds_the_screen(at)
    assert at.get("download_button")


def test_long_and_hostile_inputs(at):
    at.session_state["text"] = "saw " * 600
    at.session_state["cmp_b"] = "<script>x</script> $a$ " * 3
    at.run()
    assert not at.exception
    at.session_state["text"] = "Totally different words"
    at.run()
    assert not at.exception
