"""views.positions without Streamlit: the page as it opens (tab 1) and each tab's parts, their
numbers against the engine run here (a shuffled sentence, cosines written out with torch)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis.common import rounding_tolerance
from attnviz.engine import POSITION_MODES, TraceRequest
from attnviz.views import positions as view
from tests.test_views_common import decode, spec

TEXT = "I saw a saw"


@pytest.fixture(scope="module")
def run(model):
    traces = {}

    def trace_of(**options):
        request = TraceRequest(TEXT).with_options(**options)
        if request not in traces:
            traces[request] = model.trace(request)
        return traces[request]

    return trace_of


def test_page_opens_on_the_shuffle(model, run):
    blocks = view.page(model, TraceRequest(TEXT), run)
    kinds = [type(b).__name__ for b in blocks]
    assert kinds == ["Heading", "Markdown", "Markdown", "Figure", "Figure", "Markdown",
                     "Figure", "Markdown", "Numbers"]
    perm = decode(spec(blocks[4])["data"][-1]["customdata"]).astype(int)
    ids, _segments, _offsets = model.tokenize(TEXT)
    assert perm[0] == 0 and perm[-1] == len(ids) - 1 and (perm != np.arange(len(ids))).any()
    none, learned = [t for t in spec(blocks[6])["data"] if t["type"] == "bar"]
    a = model.trace_ids(ids, positions="learned")
    b = model.trace_ids([ids[k] for k in perm], positions="learned")
    expected = np.abs(b.hidden_states - a.hidden_states[:, perm]).max(axis=(1, 2))
    np.testing.assert_allclose(decode(learned["y"]), expected, atol=1e-6)
    tol = rounding_tolerance(run(positions="none").hidden_states)
    assert np.nanmax(decode(none["y"])) <= tol
    shown = float(blocks[5].text.split("every layer is **")[1].split("**")[0])
    assert shown == float(f"{np.nanmax(decode(none['y'])):.2e}")
    got = blocks[-1].make()
    np.testing.assert_array_equal(got["permutation"], perm)
    np.testing.assert_allclose(got["max_diff_learned"], expected, atol=1e-6)


def test_pair_tab_two_saws(model, run):
    t = run()
    pair, notes = view.default_pair(t)
    assert pair == (2, 4) and notes == []
    runs = {m: run(positions=m) for m in POSITION_MODES}
    curves = view.pair_curves(runs, *pair)
    h = torch.from_numpy(t.hidden_states.astype(np.float64))
    np.testing.assert_allclose(curves["learned"],
                               F.cosine_similarity(h[:, 2], h[:, 4], dim=-1).numpy(), atol=1e-6)
    np.testing.assert_allclose(curves["none"], 1.0, atol=1e-6)
    (text,) = view.pair_text(t, *pair, curves)
    assert "Same word" in text.text and f"{curves['learned'][-1]:.3f}" in text.text
    w = spec(view.weights_figure(t, runs, 1, 3))["data"]
    np.testing.assert_allclose(decode(w[0]["z"]), t.weights[1, 3], atol=1e-7)
    np.testing.assert_allclose(decode(w[1]["z"]), runs["none"].weights[1, 3], atol=1e-7)
    assert view.pair_text(t, 2, 2, curves)[0].style == "info"  # one token twice


def test_no_repeat_falls_back_with_a_note(model):
    t = model.trace("The cat sat.")
    _pair, (note,) = view.default_pair(t)
    assert note.style == "info" and "No word repeats" in note.text


def test_encodings_are_the_checkpoints(model):
    pe, learned, coords, ratio = view.encodings(model, 32)
    np.testing.assert_allclose(learned, model.position_embeddings[:32].cpu().numpy(), atol=0)
    p, i = np.arange(32)[:, None], np.arange(model.hidden // 2)[None, :]
    angle = p / 10000 ** (2 * i / model.hidden)
    np.testing.assert_allclose(pe[:, 0::2], np.sin(angle), atol=1e-6)
    np.testing.assert_allclose(pe[:, 1::2], np.cos(angle), atol=1e-6)
    z = decode(spec(view.learned_figure(learned))["data"][0]["z"])
    np.testing.assert_allclose(z, learned, atol=1e-7)
    assert coords.shape == (31, 2) and 0 < ratio.sum() <= 1


def test_compare_against_learned(model, run):
    div, final = view.compare_modes(run, 0, "learned")
    assert (div["learned"] == 0).all() and div["none"].shape == (model.n_layers, model.n_heads)
    assert div["none"].max() > 0
    text = view.compare_text(div, "learned").text
    assert f"{div['none'].mean():.3f} bits" in text
    np.testing.assert_allclose(final["learned"], 1.0, atol=1e-6)
