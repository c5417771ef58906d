"""AppTest of the all-heads page: figures from the engine's numbers, pair filter, 512 tokens,
a refused model folder."""

import json

import numpy as np
import pytest

from attnviz.analysis.views import shown_weights
from tests.apptest import open_page
from tests.plotly_json import decode, figures, specs
from tests.test_ui_recorder import assert_file_holds_the_screen


@pytest.fixture
def at():
    return open_page("pages/explore.py", timeout=180)


def test_default_sentence(at, model):
    t = model.trace("I saw a saw")
    mosaic, one, lines = figures(at)
    z = decode(mosaic["data"][0]["z"])
    np.testing.assert_array_equal(z[2 * 7:2 * 7 + 6, 5 * 7:5 * 7 + 6], t.weights[2, 5])
    np.testing.assert_array_equal(decode(one["data"][0]["z"]), t.weights[0, 0])
    assert one["data"][0]["x"] == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]
    assert any(tr.get("name") == "head 0" for tr in lines["data"])
    assert at.get("download_button")


def test_choosing_a_head_and_more_heads(at, model):
    t = model.trace("I saw a saw")
    at.session_state["ex_layer"] = 3
    at.session_state["ex_head"] = 7
    at.session_state["ex_more"] = [1, 2]
    at.run()
    assert not at.exception
    _, one, lines = figures(at)
    np.testing.assert_array_equal(decode(one["data"][0]["z"]), t.weights[3, 7])
    legend = {tr["name"] for tr in lines["data"] if tr.get("legendgroup")}
    assert legend == {"head 7", "head 1", "head 2"}


def test_sentence_pair_filters_and_hiding(at, model):
    at.session_state["pair"] = "It cut the wood"
    at.run()
    at.radio(key="ex_seg").set_value("across").run()
    at.toggle(key="ex_hide").set_value(True).run()
    assert not at.exception
    t = model.trace("I saw a saw", "It cut the wood")
    w, toks, pos = shown_weights(t.weights[0], t.tokens, t.segments, True, False, "across")
    _, one, _ = figures(at)
    np.testing.assert_array_equal(decode(one["data"][0]["z"]), w[0])
    assert "[CLS]" not in " ".join(one["data"][0]["x"])
    assert any("not" in c.value and "renormalised" in c.value for c in at.caption)
    at.toggle(key="ex_renorm").set_value(True).run()
    _, one, _ = figures(at)
    np.testing.assert_allclose(decode(one["data"][0]["z"]).sum(1), 1.0, atol=1e-6)
    assert any("are renormalised" in c.value for c in at.caption)
    assert any("Share of this head's weight" in c.value for c in at.caption)
    assert_file_holds_the_screen(at)


def test_512_tokens(at, model):
    at.session_state["text"] = "the quick brown fox jumps over the lazy dog . " * 60
    at.run()
    assert not at.exception
    assert any("dropped" in w.value for w in at.warning)
    shown = specs(at)
    assert len(shown[0]) < 5_000_000  # the overview stays under the 5 MB goal
    one = json.loads(shown[1])
    z = decode(one["data"][0]["z"])
    assert z.shape == (512, 512)  # the enlarged head is exact, not pooled
    t = model.trace("the quick brown fox jumps over the lazy dog . " * 60)
    np.testing.assert_array_equal(z, t.weights[0, 0])


def test_refused_model_folder_falls_back_with_a_message(at):
    at.session_state["model_dir"] = "/nonexistent"
    at.run()
    assert not at.exception
    assert any("refused" in w.value for w in at.warning)
    assert len(specs(at)) == 3


def test_directed_pair_filters_and_word_level(at, model):
    at.session_state["text"] = "Transformers use embeddings"
    at.session_state["pair"] = "It works"
    at.run()
    t = model.trace("Transformers use embeddings", "It works")
    for which in ("A->B", "B->A"):
        at.radio(key="ex_seg").set_value(which).run()
        assert not at.exception
        w, _, _ = shown_weights(t.weights[0], t.tokens, t.segments, False, False, which)
        _, one, _ = figures(at)
        np.testing.assert_array_equal(decode(one["data"][0]["z"]), w[0])
    assert any("A → B" in c.value and "B → A" in c.value for c in at.caption)
    at.toggle(key="ex_words").set_value(True).run()
    assert not at.exception
    w, toks, pos = shown_weights(t.weights[0], t.tokens, t.segments, False, False, "B->A",
                                 words=True, pieces=t.word_pieces)
    mosaic, one, _ = figures(at)
    np.testing.assert_allclose(decode(one["data"][0]["z"]), w[0], atol=1e-7)
    assert "embeddings #3" in one["data"][0]["x"]  # one word, labelled at its first piece


def test_mosaic_outlines_the_open_head(at):
    at.session_state["ex_layer"] = 4
    at.session_state["ex_head"] = 9
    at.run()
    assert not at.exception
    mosaic, _, _ = figures(at)
    (rect,) = mosaic["layout"]["shapes"]
    step = 6 + 1  # "I saw a saw": 6 tokens a tile, one blank cell between tiles
    assert (rect["x0"], rect["y0"]) == (9 * step - 0.5, 4 * step - 0.5)
    assert mosaic["data"][1]["marker"]["opacity"] == 0


TOKEN_BOX = "Token lines for one query token"


def token_box(at):
    (box,) = [s for s in at.selectbox if s.label == TOKEN_BOX]
    return box


def test_long_input_offers_no_all_tokens_wall(at):
    at.session_state["text"] = "the cat sat on the mat " * 20  # 122 tokens
    at.run()
    assert not at.exception
    box = token_box(at)
    assert None not in box.options and "all tokens" not in box.options
    assert any("one query token at a time" in c.value for c in at.caption)


def test_another_sentence_gets_a_new_token_choice(at, model):
    """A browser keeps what a widget of the same key showed, whatever the script decides: the
    choice of a sentence of other tokens is a widget of its own (another key, another id),
    shown at its default, and the lines drawn are that token's."""
    short = token_box(at)
    assert short.value is None and short.options[0] == "all tokens"
    text = "I saw a saw " * 20
    n = model.trace(text).n_tokens
    assert n > 64
    at.session_state["text"] = text
    at.run()
    assert not at.exception
    long = token_box(at)
    assert long.key == f"ex_token_{n}" != short.key and long.id != short.id
    assert long.value == 2 and long.options[long.index] == "saw #2"
    _, _, lines = figures(at)
    (chosen,) = [tr for tr in lines["data"] if tr.get("name") == "query"]
    assert list(decode(chosen["y"])) == [2]



@pytest.mark.parametrize("words, moves", [(22, True), (23, False)])
def test_past_the_outline_limit_a_head_change_leaves_the_mosaic_as_it_was(at, model, words,
                                                                          moves):
    """Moving the outline makes a new mosaic, which Streamlit re-sends and the browser draws
    again whole (2.3 MB at 512 tokens). Up to OUTLINE_MAX shown tokens it moves; past it the
    spec sent for another head is byte for byte the one before, and a caption says why."""
    text = "the " * words
    n = model.trace(text).n_tokens
    assert n == words + 2  # [CLS] and [SEP]
    at.session_state["text"] = text
    at.run()
    before = specs(at)[0]
    at.button_group(key="ex_head").set_value(7).run()
    assert not at.exception
    after = specs(at)[0]
    _, one, _ = figures(at)
    assert one["layout"]["title"]["text"] == "Layer 0, head 7"
    note = [c.value for c in at.caption if "not outlined" in c.value]
    if moves:
        assert before != after and not note
        (rect,) = json.loads(after)["layout"]["shapes"]
        assert rect["x0"] == 7 * (n + 1) - 0.5
    else:
        assert before == after and "shapes" not in json.loads(after)["layout"]
        assert note == [f"{n} tokens shown: past 24 the open head is not outlined here (moving "
                        "the outline would send and draw the whole mosaic again at every head "
                        "change); its layer and head are named above its enlarged view below."]
