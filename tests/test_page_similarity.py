"""AppTest of Why are two sentences similar?: the cosine, the completeness line and the bars
come from analysis.attribution (checked against HF in test_analysis_attribution)."""


import numpy as np
import pytest

from attnviz.analysis.attribution import DEFAULT_STEPS, attribute, pooled_importance
from attnviz.analysis.flow import attention_flow
from attnviz.analysis.occlusion import occlude
from tests import plotly_json as pj
from tests.apptest import open_page
from tests.plotly_json import decode
from tests.test_ui_recorder import assert_file_holds_the_screen

A, B = "I saw a saw.", "A saw cuts wood."


@pytest.fixture
def at():
    return open_page("pages/similarity.py", timeout=240, text=A, sim_b=B)


def test_numbers_from_the_analysis(at, model):
    res = attribute(model, A, B, steps=DEFAULT_STEPS)  # the page's default
    assert at.metric[0].value == f"{res.score:.4f}"
    text = " ".join(m.value for m in at.markdown)
    assert f"completeness gap **{res.gap('a'):.3%}** (within 1%)" in text
    assert f"completeness gap **{res.gap('b'):.3%}** (within 1%)" in text
    bars_a, occ_a, bars_b, occ_b = pj.figures(at)
    names = [tr["name"] for tr in bars_a["data"]]
    assert names == ["integrated gradients", "gradient × input", "raw attention (last layer)",
                     "rollout", "flow"]
    np.testing.assert_allclose(decode(bars_a["data"][0]["customdata"]), res.ig_a, atol=1e-6)
    np.testing.assert_allclose(decode(bars_b["data"][1]["customdata"]), res.gxi_b, atol=1e-6)
    t = model.trace(A)
    np.testing.assert_allclose(decode(bars_a["data"][4]["customdata"]),
                               pooled_importance(attention_flow(t.weights)), atol=1e-9)
    assert "saw #2" in bars_a["data"][0]["x"] and "saw #4" in bars_a["data"][0]["x"]
    ticks = bars_a["layout"]["xaxis"]["ticktext"]  # a repeated word's places apart, as hover
    assert "saw #2" in ticks and "saw #4" in ticks and "a" in ticks
    # occlusion beside IG, in the cosine's units, both sentences (HF loop: test_analysis_occlusion)
    assert [tr["name"] for tr in occ_a["data"]] == [
        "integrated gradients", "occlusion: token removed", "occlusion: token → [MASK]"]
    for fig, text, other, ig in ((occ_a, A, B, res.ig_a), (occ_b, B, A, res.ig_b)):
        want = occlude(model, text, other)
        np.testing.assert_allclose(decode(fig["data"][0]["y"]), ig, atol=1e-6)
        for k, mode in ((1, "remove"), (2, "mask")):
            got = np.asarray(decode(fig["data"][k]["y"]), dtype=float)
            np.testing.assert_allclose(got, getattr(want, mode), atol=1e-6)  # nan: [CLS]/[SEP]
    assert "saw #2" in occ_a["data"][1]["x"] and "saw #4" in occ_a["data"][1]["x"]
    assert_file_holds_the_screen(at)  # the metric and the rank tables too
    assert at.get("download_button")


def test_the_mask_blank_gives_its_own_credits(at, model):
    at.radio(key="sim_blank").set_value("mask").run()
    assert not at.exception
    res = attribute(model, A, B, steps=DEFAULT_STEPS, baseline="mask")
    pad = attribute(model, A, B, steps=DEFAULT_STEPS)
    text = " ".join(m.value for m in at.markdown)
    assert f"blanked = {res.score:.5f} - {res.baseline_a:.5f}" in text
    assert f"completeness gap **{res.gap('a'):.3%}** (within 1%)" in text
    bars_a = pj.figures(at)[0]
    np.testing.assert_allclose(decode(bars_a["data"][0]["customdata"]), res.ig_a, atol=1e-6)
    assert np.abs(res.ig_a - pad.ig_a).max() > 1e-2  # another blank, other credits


def test_pair_from_the_sidebar_and_blank_b(at):
    at.session_state["pair"] = "<b>bold</b> $x$"
    at.session_state["sim_steps"] = 8
    at.run()
    assert not at.exception
    assert any("second sentence" in c.value for c in at.caption)
    at.session_state["pair"] = "   ?  "
    at.run()
    assert not at.exception


def test_the_prepared_default_b_gives_the_same_numbers(model, monkeypatch):
    """A class server's warm-up prepares B's half (attnviz.ui.preload); the page then encodes
    only A's path and shows the numbers both paths give."""
    from attnviz.analysis import attribution
    from attnviz.ui.cache import cached, forget

    a = "The carpenter saw the old saw."
    key = attribution.side_key(model.key, B, DEFAULT_STEPS)
    cached("results", key, lambda: attribution.prepare_side(model, B, DEFAULT_STEPS))
    try:
        check_the_prepared_side(model, monkeypatch, a)
    finally:  # other tests of B get both paths, as a server without the warm-up
        forget("results", key)


def check_the_prepared_side(model, monkeypatch, a):
    import re

    from attnviz.analysis import attribution

    res = attribute(model, a, B, steps=DEFAULT_STEPS)  # both paths, outside the page
    paths = []
    real = attribution._path
    monkeypatch.setattr(attribution, "_path", lambda *args, **kw: paths.append(1) or
                        real(*args, **kw))
    at = open_page("pages/similarity.py", timeout=240, text=a, sim_b=B)
    assert not at.exception
    assert len(paths) == 1  # A's path only
    assert at.metric[0].value == f"{res.score:.4f}"
    bars_a, _, bars_b, _ = pj.figures(at)
    np.testing.assert_allclose(decode(bars_b["data"][0]["customdata"]), res.ig_b, atol=1e-6)
    np.testing.assert_allclose(decode(bars_b["data"][1]["customdata"]), res.gxi_b, atol=1e-6)
    np.testing.assert_allclose(decode(bars_a["data"][0]["customdata"]), res.ig_a, atol=1e-6)
    text = " ".join(m.value for m in at.markdown)
    gaps = [float(g) / 100 for g in re.findall(r"completeness gap \*\*([0-9.]+)%", text)]
    assert gaps == pytest.approx([res.gap("a"), res.gap("b")], abs=2e-5)  # shown to .001%


def test_a_url_in_a_sentence_is_shown_as_text_not_as_a_link():
    """The two sentences are a text block (views.compare.typed_pair), never Markdown, where a
    URL inside a sentence would become a link."""
    from types import SimpleNamespace

    from attnviz.views import similarity as view
    from attnviz.views.blocks import Code, Markdown

    typed = "see https://evil.example/x and www.evil.example\nnow"
    blocks = view.score(SimpleNamespace(score=0.5), typed, "B")
    assert Code("A: see https://evil.example/x and www.evil.example now\nB: B") in blocks
    assert not [b for b in blocks if isinstance(b, Markdown) and "evil" in b.text]
