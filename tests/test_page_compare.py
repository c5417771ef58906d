"""AppTest of Compare two sentences: the three panels come from analysis.compare."""


import re

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


def test_a_word_a_repeats_keeps_its_number_when_one_copy_is_aligned(at):
    """"I saw a saw" against "Yesterday I saw a dog": only saw #2 is aligned; its tick, and
    the largest change's words, still say which saw (never a bare "saw")."""
    fig = figures(at)[0]
    ticks = fig["layout"]["xaxis"]["ticktext"]
    assert "saw #2" in ticks and "saw" not in ticks, ticks
    assert fig["layout"]["yaxis"]["ticktext"] == ticks
    change = next(c.value for c in at.caption if c.value.startswith("Largest change"))
    assert re.search(r"query \S+ #\d reading key \S+ #\d", change.replace("\\", "")), change


def test_a_url_in_a_sentence_is_shown_as_text_not_as_a_link():
    """Typed text is never Markdown: a URL inside a sentence (GFM would make it a link, its
    escapes notwithstanding) is shown in a text block, as typed."""
    typed = "see https://evil.example/x?a=1 and www.evil.example now"
    at = open_page("pages/compare.py", timeout=180, text=typed, cmp_b="I saw a dog")
    for block in [*at.markdown, *at.caption, *at.info, *at.warning]:
        assert "evil" not in block.value, block.value
    assert any(c.value == f"A: {typed}\nB: I saw a dog" for c in at.code)


def test_a_decoder_looks_for_the_largest_change_after_the_first_difference():
    """SmolLM2 (causal): the tokens before the first difference see the same keys in A and B,
    so their weights agree (checked here on the engine's traces) and the page says so; the
    largest change it names is the largest |A - B| among the aligned queries after the first
    difference, and where there are none it names no change (it named query I reading key I,
    1.000 in A and 1.000 in B)."""
    import attnviz
    from attnviz.engine.bundled import SMOLLM2

    model = attnviz.load_model(SMOLLM2, device="cpu")
    a, b = "I saw a saw today", "I saw a dog today"
    ta, tb = model.trace(a), model.trace(b)
    pairs = align_tokens(ta.tokens, tb.tokens)
    wa, wb, d = aligned_difference(ta.weights[0, 0], tb.weights[0, 0], pairs)
    prefix = 3  # I, saw, a
    assert ta.tokens[:prefix] == tb.tokens[:prefix] and ta.tokens[prefix] != tb.tokens[prefix]
    after = [p for p, (i, _) in enumerate(pairs) if i >= prefix]
    assert after and np.abs(d[:len(pairs) - len(after)]).max() < 1e-5  # the prefix's rows
    q, k = np.unravel_index(np.abs(d[after]).argmax(), (len(after), d.shape[1]))
    at = open_page("pages/compare.py", timeout=600, model=SMOLLM2, text=a, cmp_b=b)
    said = " ".join(c.value for c in at.caption)
    assert f"so the {prefix} tokens before the first difference have the same weights" in said
    assert (f"{wa[after[q], k]:.3f} in A, {wb[after[q], k]:.3f} in B") in said
    assert f"{wa[after[q], k]:.3f}" != f"{wb[after[q], k]:.3f}"
    short = open_page("pages/compare.py", timeout=600, model=SMOLLM2, text="I saw a saw",
                      cmp_b="I saw a dog")
    said = " ".join(c.value for c in short.caption)
    assert "No aligned token comes after the first difference" in said
    assert "Largest change" not in said
