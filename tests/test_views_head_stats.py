"""views.head_stats without Streamlit: the statistics, their table and the maps of rollout and
flow, each against analysis (itself checked against Clark et al.'s code and the formulas in
test_analysis_head_stats, _rollout and _flow) and against the trace."""

import numpy as np
import pytest

from attnviz.analysis.flow import attention_flow
from attnviz.analysis.head_stats import STATS, head_stats
from attnviz.analysis.words import words_view
from attnviz.export.html import Markdown, Numbers, Table
from attnviz.views import head_stats as view
from tests.test_views_common import decode, heatmaps, spec


@pytest.fixture(scope="module")
def t(model):
    return model.trace("I saw a saw")


def test_page_as_it_opens(t):
    blocks = view.page(t, layer=3, head=4)
    kinds = [type(b).__name__ for b in blocks]
    assert kinds == ["Heading", "Markdown", "Markdown", "Figure", "Figure", "Table", "Markdown",
                     "Numbers", "Markdown"]
    assert "**attnviz** conventions" in blocks[2].text and blocks[2].style == "caption"
    assert blocks[-1].style == "info" and "not not Explanation" in blocks[-1].text
    s = head_stats(t.weights, t.tokens)
    for tr in heatmaps(blocks[3]):
        np.testing.assert_allclose(decode(tr["z"]), s[tr["name"]], atol=1e-12)
    np.testing.assert_array_equal(decode(spec(blocks[4])["data"][0]["z"]), t.weights[3, 4])
    table: Table = blocks[5]
    assert len(table.columns["layer"]) == t.n_layers * t.n_heads
    row = 3 * t.n_heads + 4
    assert (table.columns["layer"][row], table.columns["head"][row]) == (3, 4)
    assert table.columns[STATS["sep"]][row] == pytest.approx(s["sep"][3, 4], abs=1e-12)
    got = blocks[7].make()
    assert str(got["conventions"]) == "attnviz" and not got["word_level"]
    np.testing.assert_array_equal(got["entropy"], s["entropy"])


def test_entropy_is_the_rows_entropy_written_out(t):
    s = view.stats_of(t, "attnviz", False)
    w = t.weights.astype(np.float64)
    ref = -(w * np.log(np.where(w > 0, w, 1))).sum(-1).mean(-1)  # mean over queries
    np.testing.assert_allclose(s["entropy"], ref, atol=1e-6)


def test_clark_conventions_and_word_level(model):
    text = "Transformers use embeddings, I saw."
    t = model.trace(text)
    notes = view.conventions_note(t, "clark")
    assert "**clark** conventions" in notes[0].text
    w, words, _ = words_view(t.weights, t.tokens, t.word_pieces)
    assert len(words) < t.n_tokens
    s = view.stats_of(t, "clark", True)
    for k, v in head_stats(w, words, "clark").items():
        np.testing.assert_allclose(s[k], v, atol=1e-12)
    one = spec(view.one_head_figure(t, True, 1, 2))["data"][0]
    assert len(one["x"]) == len(words)


def test_rollout_and_flow(t):
    maps = view.maps_of(t, 2, False, attention_flow(t.weights, 2))
    blocks = view.rollout_and_flow(t, maps, 2, False)
    assert [type(b).__name__ for b in blocks] == ["Markdown", "Figure", "Markdown", "Numbers"]
    heat = heatmaps(blocks[1])
    assert len(heat) == 3
    np.testing.assert_allclose(decode(heat[0]["z"]), t.weights[2].mean(0), atol=1e-6)
    # rollout written out: A_l = (mean of heads + I) / 2, R = A_2 A_1 A_0
    a = [(t.weights[i].astype(np.float64).mean(0) + np.eye(t.n_tokens)) / 2 for i in range(3)]
    a = [m / m.sum(-1, keepdims=True) for m in a]
    np.testing.assert_allclose(decode(heat[1]["z"]), a[2] @ a[1] @ a[0], atol=1e-6)
    np.testing.assert_allclose(decode(heat[2]["z"]), attention_flow(t.weights, 2), atol=1e-6)
    np.testing.assert_allclose(decode(heat[2]["z"]).sum(-1), 1, atol=1e-6)
    got = blocks[3].make()
    assert int(got["layer"]) == 2 and blocks[3].file_name == "attnviz_rollout_flow_l2.npz"


def test_without_flow_says_so(t):
    blocks = view.rollout_and_flow(t, view.maps_of(t, 1, False, None), 1, False)
    assert isinstance(blocks[1], Markdown) and blocks[1].style == "info"
    assert "computed up to 128 tokens" in blocks[1].text
    assert len(heatmaps(blocks[2])) == 2 and isinstance(blocks[-1], Numbers)


@pytest.mark.parametrize("words", [False, True])
def test_a_long_decoder_trace_without_weights_has_the_same_page_numbers(monkeypatch, words,
                                                                        tmp_path):
    """Past KEEP_WEIGHTS_BYTES a decoder's trace holds no weights (a long input): the page's
    statistics (token and word level), one head's map and the windows page's sink figure read
    it a layer at a time and show the numbers of the same input's held weights."""
    import attnviz
    from attnviz.engine.families import llama
    from attnviz.engine.random_models import save_random_checkpoint
    from attnviz.views import windows as win_view

    folder = save_random_checkpoint("llama", tmp_path / "llama", positions=64, seed=3,
                                    heads=4, kv_heads=2, layers=3)
    decoder = attnviz.load_model(folder, device="cpu")
    text = "I saw a saw, and the saw saw me. Transformers use embeddings!"
    held = decoder.trace(text)
    monkeypatch.setattr(llama, "KEEP_WEIGHTS_BYTES", 0)
    long = decoder.trace(text)
    assert long.weights is None and held.weights is not None
    for conventions in ("attnviz", "clark"):
        got, ref = (view.stats_of(tr, conventions, words) for tr in (long, held))
        assert set(got) == set(ref) == set(STATS)
        for name in STATS:
            np.testing.assert_allclose(got[name], ref[name], atol=1e-5, rtol=0, err_msg=name)
    maps = [decode(spec(view.one_head_figure(tr, words, 2, 3))["data"][0]["z"])
            for tr in (long, held)]
    np.testing.assert_allclose(maps[0], maps[1], atol=1e-6)
    sinks = [decode(spec(next(b for b in win_view.sink_part(decoder, tr)
                              if type(b).__name__ == "Figure"))["data"][0]["z"])
             for tr in (long, held)]
    np.testing.assert_allclose(sinks[0], sinks[1], atol=1e-6)
