"""views.step_by_step without Streamlit: every toy step's blocks as the page opens, and the
numbers they show recomputed here (Q = W^q A, SDPA on the shown Q, K, V, the softmax written
out); a real head's check against the engine's trace."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis import walkthrough as wt
from attnviz.export.html import Heading, Numbers, Table, Tex
from attnviz.views import step_by_step as view
from tests.test_views_common import decode, spec

TEXT = "I saw a saw"


@pytest.fixture(scope="module")
def walk():
    return wt.toy_walkthrough(TEXT, 5, 4, 3, 42)


@pytest.mark.parametrize("step", range(1, 9))
def test_every_step_as_the_page_opens(step):
    blocks = view.page(TEXT, step)
    head, caption, query, title = blocks[:4]
    assert isinstance(head, Heading) and head.level == 1 and caption.style == "caption"
    assert query.text == "Query: **I #1**, i.e. $q^{1}$."
    assert title == Heading(f"Step {step}: {view.STEPS[step]}", 3)
    figures = [b for b in blocks if hasattr(b, "to_plotly_json")]
    assert len(figures) == len(view.FIGURES[step])
    numbers = blocks[-1]
    assert isinstance(numbers, Numbers) and numbers.file_name == f"attnviz_steps_toy_step{step}.npz"
    assert set(wt.toy_walkthrough(TEXT).arrays()) <= set(numbers.make())


def test_shown_numbers_are_sdpa_of_the_shown_numbers(walk):
    q_fig, k_fig, v_fig = view.projections(walk, "toy")[1:]
    q, k, v = (decode(spec(f)["data"][2]["z"]).T for f in (q_fig, k_fig, v_fig))  # [n, d]
    a = decode(spec(q_fig)["data"][1]["z"]).T  # [n, m]
    w_q = decode(spec(q_fig)["data"][0]["z"])
    np.testing.assert_allclose(a @ w_q.T, q, atol=1e-12)  # Q = W^q A, as printed
    ref = F.scaled_dot_product_attention(*(torch.as_tensor(x.copy())[None] for x in (q, k, v)))[0]
    o = decode(spec(view.weighted_sum(walk, 0)[-1])["data"][2]["z"]).T
    np.testing.assert_allclose(o, ref.numpy(), atol=1e-12)


def test_softmax_table_written_out(walk):
    text, fig, table, sums = view.softmax(walk, 1)
    assert isinstance(table, Table)
    z = walk.scores[1] / np.sqrt(walk.d_k)
    e = np.exp(z - z.max())
    np.testing.assert_allclose(table.columns["z = α/√d_k"], z, atol=1e-12)
    np.testing.assert_allclose(table.columns["exp(z − max z)"], e, atol=1e-12)
    np.testing.assert_allclose(table.columns["weight α'"], e / e.sum(), atol=1e-12)
    np.testing.assert_allclose(decode(spec(fig)["data"][1]["z"]).ravel(), 1.0, atol=1e-12)
    # the sums written with the table's digits: Σ exp independently computed, Σ weights = 1
    digits = view.SOFTMAX_DIGITS
    assert digits == 4 and f"Σ exp = {e.sum():.4f}" in sums.text
    assert f"Σ weights = {1:.4f}" in sums.text
    assert set(table.formats.values()) == {f"%.{digits}f"} and len(table.formats) == 4


def test_similarity_latex_and_terms(walk):
    blocks = view.similarity(walk, 1, 3, "toy")
    assert blocks[0].text.startswith("Key: **saw #4**")
    tex = [b for b in blocks if isinstance(b, Tex)]
    assert len(tex) == walk.n
    assert tex[3].source.endswith(f"&= {walk.queries[1] @ walk.keys[3]:.4f}\\end{{aligned}}")
    terms = decode(spec(blocks[-1])["data"][0]["y"])
    np.testing.assert_allclose(terms, walk.queries[1] * walk.keys[3], atol=1e-12)


def test_temperature(walk):
    blocks, extra = view.temperature(walk, 0, 0.5, "toy")
    z = walk.scores / (0.5 / walk.scale)
    w = np.exp(z - z.max(-1, keepdims=True))
    np.testing.assert_allclose(extra["weights_at_T"], w / w.sum(-1, keepdims=True), atol=1e-12)
    assert extra["temperature"] == 0.5 and len(blocks) == 5


def test_multihead_asks_for_the_trend_only_in_toy_mode(walk):
    asked = []
    mh = view.toy_multihead(walk, 1, 42)
    blocks, extra = view.multihead(walk, mh, 42, lambda: asked.append(1) or {
        "seeds": 40, "m": [4], "flatter": [19]}, None)
    assert asked == [1] and "flatter in 19 (m = 4) of 40" in blocks[3].text
    assert isinstance(blocks[0], Table) and "multihead_w_o" in extra


def test_real_head_check_against_the_trace(model):
    t = model.trace(TEXT)
    walk = wt.real_walkthrough(model, t, 2, 5)
    note = view.real_check(walk, t, 2, 5)
    assert "W[160:192]" in note.text
    shown = float(note.text.rsplit("= ", 1)[1].rstrip("."))
    assert shown < 1e-4
    np.testing.assert_allclose(walk.weights, t.weights[2, 5], atol=1e-6)


def test_blank_text_says_what_to_do():
    blocks = view.page("   ", 1)
    assert blocks[-1].style == "info" and "Type a sentence" in blocks[-1].text
