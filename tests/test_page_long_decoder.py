"""The pages on a decoder trace that does not hold its weights (a long input on SmolLM2: here
forced on a short one by setting engine.families.llama.KEEP_WEIGHTS_BYTES to 0): All heads
and the rollout tab draw from it a layer at a time; a page that reads every weight at once
says so in one sentence with the length up to which a trace keeps them, and fails nowhere."""

from __future__ import annotations

import pytest

from attnviz.views.common import needs_every_weight, weights_kept_up_to
from tests.apptest import open_page
from tests.plotly_json import charts

pytestmark = pytest.mark.slow

TEXT = "A long paste, cut short for the test: the carpenter's saw, the saw of the carpenter."


@pytest.fixture
def no_kept_weights(monkeypatch):
    from attnviz.engine.families import llama

    monkeypatch.setattr(llama, "KEEP_WEIGHTS_BYTES", 0)


def info_text(at) -> str:
    return " ".join(m.value for m in at.info)


@pytest.mark.parametrize("page,state", [("pages/explore.py", {}),
                                        ("pages/head_stats.py", {"hs_tab": "Rollout and flow"})])
def test_streaming_pages_draw_without_weights(no_kept_weights, page, state):
    from attnviz.engine.bundled import SMOLLM2

    at = open_page(page, timeout=600, model=SMOLLM2, text=TEXT, **state)
    assert not at.exception
    assert charts(at), page
    assert "reads every head's weights at once" not in info_text(at)


@pytest.mark.parametrize("page", ["pages/layer_heads.py", "pages/value_norms.py",
                                  "pages/compare.py", "pages/inside_score.py"])
def test_other_pages_say_why_they_draw_nothing(no_kept_weights, page):
    from attnviz.engine.bundled import SMOLLM2

    at = open_page(page, timeout=600, model=SMOLLM2, text=TEXT)
    assert not at.exception
    said = info_text(at)
    assert "This page reads every head's weights at once" in said
    assert "does not keep them (it keeps them up to " in said


def test_the_length_up_to_which_a_trace_keeps_its_weights():
    """SmolLM2's 30 layers x 9 heads keep scores and weights (2 x 4 bytes each) up to
    KEEP_WEIGHTS_BYTES: n = floor(sqrt(2^30 / (8 x 270))) = 705 tokens; BERT keeps them all."""
    import attnviz
    from attnviz.engine.families import llama

    model = attnviz.load_model("smollm2", device="cpu", max_tokens=2048)
    n = weights_kept_up_to(model)
    assert n == int((llama.KEEP_WEIGHTS_BYTES / (8 * 30 * 9)) ** 0.5) == 705
    assert model.keeps_weights(n) and not model.keeps_weights(n + 1)
    bert = attnviz.load_model(device="cpu")
    assert weights_kept_up_to(bert) == 512
    assert needs_every_weight(bert, bert.trace("I saw a saw")) == []
