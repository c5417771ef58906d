"""AppTest of the windows page: every figure's numbers come from the engine and analysis."""


import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz.analysis import cost as cost_mod
from attnviz.analysis import receptive as rf
from attnviz.analysis import windows as win
from attnviz.engine import window_mask
from tests import plotly_json as pj
from tests.apptest import APP, open_page
from tests.plotly_json import decode, figures_all_tabs

TABS = ["Masks and weights", "Receptive fields", "How much context?", "Long sequences: cost",
        "Today's decoders: sliding windows and the sink"]
KEYS = ["win_masks", "win_fields", "win_context", "win_cost"]


def figures(at) -> list[dict]:
    """The four tabs' figures (the tabs are lazy: each is opened in turn)."""
    figs = figures_all_tabs(at, "win_tab", TABS)
    return [figs[k] for k in KEYS]


def open_tab(at, i: int) -> None:
    at.session_state["win_tab"] = TABS[i]
    at.run()



@pytest.fixture(scope="module")
def at():
    return open_page("pages/windows.py", timeout=300)


def test_page_draws_four_figures_from_the_engine(at, model):
    masks, fields, context, cost = figures(at)
    text = "I saw a saw"
    n = 6
    # Masks and weights: full, window ±1, causal; layer 0 head 0 of the real model.
    t_w = model.trace(text, window=1)
    np.testing.assert_array_equal(decode(masks["data"][2]["z"]), window_mask(n, 1).numpy())
    np.testing.assert_allclose(decode(masks["data"][3]["z"]), t_w.weights[0, 0], atol=1e-7)
    np.testing.assert_allclose(decode(masks["data"][5]["z"]), model.trace(
        text, causal=True).weights[0, 0], atol=1e-7)
    assert masks["data"][0]["x"][2] == "saw #2" and masks["data"][0]["x"][4] == "saw #4"
    # Receptive fields (sidebar sentence): blank (NaN) exactly outside the analytic field.
    open_tab(at, 1)
    at.radio(key="win_rf_text").set_value("sidebar sentence").run()
    fields = figures(at)[1]
    for h, kind in zip([d for d in fields["data"] if d["type"] == "heatmap"], rf.KINDS,
                       strict=True):
        z = decode(h["z"]).astype(float)
        assert (np.isnan(z) == ~rf.analytic_field(kind, n, model.n_layers, 3, 1)).all()
    # Context sweep: both masks' curves are context_sweep's numbers (w = 0 .. n - 1).
    ids, seg, _ = model.tokenize(text)
    kept = win.context_sweep(model, ids, seg, range(n), keep_special=True)
    plain = win.context_sweep(model, ids, seg, range(n))
    np.testing.assert_allclose(decode(context["data"][0]["y"]), kept.mean_cosine, atol=1e-6)
    np.testing.assert_allclose(decode(context["data"][2]["y"]), kept.pair_cosine, atol=1e-6)
    np.testing.assert_allclose(decode(context["data"][3]["y"]), plain.mean_cosine, atol=1e-6)
    np.testing.assert_allclose(decode(context["data"][4]["y"]), plain.pair_cosine, atol=1e-6)
    # Cost: three methods, lengths up to 2048 by default, device named in the title.
    assert cost_mod.device_name(str(model.device)) in cost["layout"]["title"]["text"]
    lengths = decode([d for d in cost["data"] if d["legendgroup"] == "windowed"][0]["x"])
    assert list(lengths) == [256, 512, 1024, 2048]
    keys = []
    for i in range(len(TABS)):  # each tab offers its numbers
        open_tab(at, i)
        keys += [b.key for b in at.get("download_button") if b.key.startswith("win_dl")]
        assert not at.error
    assert sorted(keys) == ["win_dl_c", "win_dl_l", "win_dl_m", "win_dl_r", "win_dl_s"]


def test_window_layer_head_and_token_change(at, model):
    at.session_state["win_rf_text"] = "sidebar sentence"  # not the longer passage (default)
    open_tab(at, 1)
    at.slider(key="win_w").set_value(2).run()
    at.selectbox(key="win_token").set_value(0).run()
    fields = figures(at)[1]
    win_heat = [d for d in fields["data"] if d["type"] == "heatmap"][1]
    z = decode(win_heat["z"]).astype(float)
    assert (np.isnan(z) == ~rf.analytic_field("window", 6, model.n_layers, 0, 2)).all()
    open_tab(at, 3)  # the cost tab draws neither w nor layer/head ...
    assert not [s for s in at.slider if s.key == "win_w"]
    assert not [s for s in at.selectbox if s.key in ("win_layer", "win_head")]
    open_tab(at, 0)  # ... and w is still 2 when the masks come back
    assert at.slider(key="win_w").value == 2
    at.selectbox(key="win_layer").set_value(3).run()
    at.selectbox(key="win_head").set_value(7).run()
    assert not at.exception
    masks = figures(at)[0]
    t_w = model.trace("I saw a saw", window=2)
    np.testing.assert_allclose(decode(masks["data"][3]["z"]), t_w.weights[3, 7], atol=1e-7)
    assert "window ±2" in masks["layout"]["annotations"][1]["text"]


def test_context_tab_states_both_masks_and_the_sink(model):
    """'I saw a saw', w = 1: 0.88 with [CLS]/[SEP] kept visible, 0.60 without; 71% of the
    weight on [CLS]/[SEP]; keeping them removes 71% of the drop: numbers recomputed here from
    the analysis' own pinned functions (checked against HF in test_analysis_windows)."""
    at = open_page("pages/windows.py", timeout=300, win_tab=TABS[2])
    text = " ".join(m.value for m in at.markdown)
    assert "**0.88**" in text and "**0.60**" in text and "**71%**" in text
    ids, seg, _ = model.tokenize("I saw a saw")
    a = win.context_sweep(model, ids, seg, [1], keep_special=True).mean_cosine[0]
    b = win.context_sweep(model, ids, seg, [1]).mean_cosine[0]
    assert f"removes **{(a - b) / (1 - b):.0%}** of the drop" in text
    assert any("outside its training distribution" in c.value for c in at.caption)
    at.toggle(key="win_keep").set_value(False).run()  # the plain window becomes the solid one
    spec = pj.figures(at)[0]
    main = [d for d in spec["data"] if d["line"]["dash"] == "solid"]
    np.testing.assert_allclose(decode(main[0]["y"])[1], b, atol=1e-6)


def test_cost_tab_offers_few_windows_and_shares_full_runs(at):
    open_tab(at, 3)
    s = [s for s in at.select_slider if s.key == "win_cost_w"][0]
    assert list(s.options) == ["16", "32", "64", "128", "256"] and s.value == 64
    assert list(at.select_slider(key="win_maxlen").options) == ["1024", "2048", "4096", "8192"]
    from attnviz.ui.cache import CACHES
    before = len(CACHES["results"])
    s.set_value(32).run()
    assert not at.exception
    # a new window measures masked and windowed at each of the 4 lengths; full is shared
    assert len(CACHES["results"]) - before == 4 * 2 + 1  # + the sweep's own entry


def test_longer_passage_for_receptive_fields(at, model):
    open_tab(at, 1)
    at.radio(key="win_rf_text").set_value("a longer passage").run()
    at.selectbox(key="win_token").set_value(9).run()
    assert not at.exception
    fields = figures(at)[1]
    heat = [d for d in fields["data"] if d["type"] == "heatmap"]
    n = len(model.tokenize(
        "I saw a saw in the shed, so I took the saw and cut the old board in two "
        "before the rain came.")[0])
    assert decode(heat[0]["z"]).shape == (model.n_layers + 1, n)
    w = at.slider(key="win_w").value
    z = decode(heat[1]["z"]).astype(float)
    assert (np.isnan(z) == ~rf.analytic_field("window", n, model.n_layers, 9, w)).all()


@pytest.mark.parametrize("text", ["", "  \n "])
def test_blank_input_shows_a_message(text):
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/windows.py")
    at.session_state["text"] = text
    at.run()
    assert not at.exception
    assert at.info and not pj.charts(at)


def test_sentence_without_repeats_and_html(at):
    at.session_state["text"] = "<b>bold cat"
    open_tab(at, 2)
    assert not at.exception and not at.error
    assert any("appears twice" in i.value for i in at.info)
    open_tab(at, 0)
    spec = pj.specs(at)[0]
    assert "<b>" not in spec and "&lt; #1" in spec


def test_cost_url_cannot_ask_for_other_windows_or_lengths():
    """A link asking for an unlisted window or length gets the defaults (no new timing runs)."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/windows.py")
    at.query_params.update({"win_tab": TABS[3], "win_cost_w": "77", "win_maxlen": "100000"})
    at.run()
    assert not at.exception and not at.error
    assert at.select_slider(key="win_cost_w").value == 64
    assert at.select_slider(key="win_maxlen").value == 2048


def test_a_short_sentences_sweep_takes_the_quick_line(monkeypatch):
    """The context sweep of a short sentence (~2n encoder passes of n tokens) is short work:
    it waits in the quick line, never behind a class's long sweeps; a longer text's does not."""
    from attnviz import ui
    from attnviz.ui import progress

    seen: dict[tuple, bool] = {}
    real = progress.with_progress

    def spy(kind, key, label, compute, quick=False):
        seen[key[:1] + (key[2].text,)] = quick
        return real(kind, key, label, compute, quick)

    monkeypatch.setattr(ui, "with_progress", spy)
    long_text = "the quick brown fox jumps over the lazy dog " * 4  # 38 tokens with [CLS], [SEP]
    for text in ("I saw a saw", long_text):
        at = open_page("pages/windows.py", run=False, text=text, win_tab=TABS[2])
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    assert seen[("win_sweep", "I saw a saw")] is True
    assert seen[("win_sweep", long_text)] is False


def test_decoders_tab_masks_reach_and_the_bert_note(at):
    at.session_state["win_tab"] = TABS[4]
    at.run()
    at.slider(key="win_slide").set_value(3).run()
    assert not at.exception and not at.error
    figs = pj.figures_by_key(at)
    n = 24
    np.testing.assert_array_equal(decode(figs["win_slide_masks"]["data"][0]["z"]).astype(bool),
                                  win.sliding_mask(n, 3).numpy())
    mistral = decode(figs["win_reach"]["data"][0]["z"]).astype(bool)
    assert [int(np.flatnonzero(r)[0]) for r in mistral] == [n - 1 - 2 * d for d in range(7)]
    assert any("measured on a decoder" in i.value for i in at.info)
    at.session_state["win_tab"] = TABS[0]
    at.run()


@pytest.mark.parametrize("tab", [0, 1, 2])
def test_on_smollm2_the_encoder_tabs_say_so_and_point_to_the_decoders_tab(tab):
    """The first three tabs are an encoder's (windows of ±w both ways): with the bundled
    decoder chosen they draw nothing of its own and name the tab that draws its windows."""
    from attnviz.engine.bundled import SMOLLM2

    at = open_page("pages/windows.py", timeout=300, model=SMOLLM2, win_tab=TABS[tab])
    assert not at.exception and not at.error
    assert not pj.figures_by_key(at)
    said = " ".join(i.value for i in at.info)
    assert "bidirectional text encoder" in said and f"*{TABS[4]}*" in said
