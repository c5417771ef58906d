"""AppTest of the first page: heatmaps from the engine's numbers, distinct repeated tokens."""


import numpy as np
import pytest

from attnviz.plotting.summary import grid_panels
from tests.apptest import open_page
from tests.plotly_json import charts, decode, figures_all_tabs, specs

TABS = ["Weights, all heads", "Scores, all heads", "One head, exact"]


def figures(at) -> list[dict]:
    """The three tabs' figures in page order (the tabs are lazy: each is opened in turn)."""
    figs = figures_all_tabs(at, "lh_tab", TABS)
    return [figs[k] for k in ("grid_w", "grid_s", "one_s", "one_w")]



@pytest.fixture
def at():
    return open_page(timeout=180)


def test_default_sentence_heatmaps_match_the_trace(at, model):
    t = model.trace("I saw a saw")
    figs = figures(at)
    assert len(figs) == 4  # weights grid, scores grid, one head's scores and weights
    grid_w, grid_s, one_s, one_w = figs
    weights, scores = grid_panels(grid_w), grid_panels(grid_s)  # one heatmap, a block a head
    assert len(weights) == len(scores) == model.n_heads
    labels = ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]
    for h in (0, 5, 11):
        title, z, keys, queries = weights[h]
        assert title == f"head {h}" and keys == queries == labels
        np.testing.assert_allclose(z, t.weights[0, h], atol=1e-7)
        np.testing.assert_allclose(scores[h][1], t.scores[0, h], atol=1e-6)
    np.testing.assert_allclose(decode(one_w["data"][0]["z"]), t.weights[0, 0], atol=1e-7)
    assert "query" in one_w["data"][0]["hovertemplate"]


def test_layer_change_redraws_from_cache(at, model):
    at.selectbox(key="layer").set_value(4).run()
    assert not at.exception
    t = model.trace("I saw a saw")
    grid_w = figures(at)[0]
    np.testing.assert_allclose(grid_panels(grid_w)[3][1], t.weights[4, 3], atol=1e-7)


def test_only_the_open_tab_is_built(at):
    assert [key for key, _ in charts(at)] == ["grid_w"]
    at.session_state["lh_tab"] = TABS[2]
    at.run()
    assert [key for key, _ in charts(at)] == ["one_s", "one_w"]


@pytest.mark.parametrize("text", ["", "   \n\t ", "\x00\x00"])
def test_blank_input_shows_a_message_and_no_figure(at, text):
    at.session_state["text"] = text
    at.run()
    assert not at.exception
    assert at.info and not charts(at)


def test_html_is_literal_and_unicode_works(at):
    at.session_state["text"] = "<script>alert(1)</script> 我看见一把锯 😀 مرحبا"
    at.run()
    assert not at.exception and not at.error
    spec = specs(at)[0]
    assert "<script>" not in spec and "&lt;" in spec


def test_too_long_input_is_truncated_with_a_warning(at):
    at.session_state["text"] = "saw " * 600
    at.run()
    assert not at.exception
    assert any("dropped" in w.value for w in at.warning)
    assert charts(at)


def test_head_slider_only_where_one_head_is_shown(at, model):
    """The default tab shows every head: no head control there; the text names the tabs."""
    assert not [s for s in at.select_slider if s.key == "head"]
    assert "left" not in at.markdown[0].value and "tab *Scores, all heads*" in at.markdown[0].value
    at.session_state["lh_tab"] = TABS[2]
    at.run()
    at.select_slider(key="head").set_value(7).run()
    assert not at.exception
    t = model.trace("I saw a saw")
    one_w = figures(at)[3]
    np.testing.assert_allclose(decode(one_w["data"][0]["z"]), t.weights[0, 7], atol=1e-7)


def test_default_page_alias_switches_to_root():
    from attnviz.ui import router

    assert router.DEFAULT_ALIAS == router.DEFAULT_PAGE.removeprefix("pages/").removesuffix(".py")


def test_the_decoder_note_is_in_the_pages_language():
    """With SmolLM2 on a Chinese page, the engine's note on the causal mask is Chinese (the
    engine's notes are N_-marked msgids, translated where the page shows them)."""
    from attnviz import i18n
    from attnviz.engine.bundled import SMOLLM2

    english = ("This model is a decoder: each token attends only to itself and the tokens "
               "before it (a causal mask, always on).")
    with i18n.use("zh"):
        chinese = i18n.gettext(english)
    assert chinese != english and "因果掩码" in chinese
    at = open_page(timeout=300, lang="zh", model=SMOLLM2)
    shown = [c.value.replace("\\", "") for c in at.caption]
    assert any(chinese in c for c in shown), shown
    assert not any("This model is a decoder" in c for c in shown)
