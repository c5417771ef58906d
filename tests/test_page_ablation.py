"""AppTest of Switch it off and see: the figures' numbers are analysis.ablation's (itself checked
against intervened traces, and those against hooks on HF's eager modules)."""

import numpy as np
import pytest

from attnviz.analysis import ablation
from attnviz.engine.request import TraceRequest
from tests.apptest import open_page
from tests.plotly_json import decode, figures

pytestmark = pytest.mark.apptest


@pytest.fixture
def at():
    return open_page("pages/ablation.py", timeout=180, text="I saw a saw")


def heatmaps(at):
    figs = figures(at)
    return [(f["layout"].get("title", {}).get("text", ""), tr) for f in figs for tr in f["data"]
            if tr["type"] == "heatmap"]


def test_lesson_map_and_patching(at, model):
    assert not at.exception
    req = TraceRequest("I saw a saw")
    imp = ablation.head_importance(model, req, "repeat", "zero")
    maps = heatmaps(at)
    first = maps[0][1]  # the lesson's ranking: removing each head, the saws' cosine
    np.testing.assert_allclose(decode(first["z"]), imp.effect, atol=1e-6)
    p = ablation.patching(model, req, TraceRequest("I saw a dog"))
    restored = [tr for title, tr in maps if "token" in title.lower() or "词元" in title]
    np.testing.assert_allclose(decode(restored[-1]["z"]), p.residual, atol=1e-6)
    assert at.get("download_button")


def test_measure_mode_and_plain_messages(at, model):
    at.selectbox(key="abl_measure").set_value("change").run()
    at.radio(key="abl_mode").set_value("mean").run()
    assert not at.exception
    imp = ablation.head_importance(model, TraceRequest("I saw a saw"), "change", "mean")
    effects = [decode(tr["z"]) for _t, tr in heatmaps(at)]
    assert any(np.allclose(z, imp.effect, atol=1e-6) for z in effects if z.shape == (6, 12))
    at.text_input(key="abl_corrupted").input("I saw a big dog").run()
    assert not at.exception and any("same length" in m.value for m in at.info)
    at.selectbox(key="abl_measure").set_value("pair").run()
    assert not at.exception and any("second sentence" in m.value for m in at.info)


def test_one_head_removed(at, model):
    at.selectbox(key="abl_layer").set_value(2).run()
    at.selectbox(key="abl_head").set_value(7).run()
    assert not at.exception
    from attnviz.engine.request import Ablation

    plain = model.trace("I saw a saw")
    cut = model.trace("I saw a saw", ablate=Ablation(heads=((2, 7),)))
    a, b = cut.hidden_states[-1].astype(float), plain.hidden_states[-1].astype(float)
    want = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    bars = [tr for f in figures(at) for tr in f["data"]
            if tr["type"] == "bar" and len(decode(tr["y"])) == len(want)]
    assert any(np.allclose(decode(tr["y"]), want, atol=1e-6) for tr in bars)
    dw = np.abs(cut.weights.astype(float) - plain.weights).mean(axis=(-1, -2))
    assert (dw[:3] == 0).all() and dw[3:].max() > 0  # only later layers change
    assert any(np.allclose(z, dw, atol=1e-9) for z in (decode(tr["z"]) for _t, tr in heatmaps(at))
               if z.shape == dw.shape)

    # every later layer's weights, ablated minus plain: the layer's mean, then one head
    nb = ablation.one_head(model, TraceRequest("I saw a saw"), 2, 7)
    got = [decode(tr["z"]) for title, tr in heatmaps(at) if title.startswith("Later layers")]
    assert len(got) == 3  # layers 3, 4, 5
    for z, (_layer, want_map) in zip(got, nb.later(), strict=True):
        np.testing.assert_allclose(z, want_map, atol=1e-6)
    np.testing.assert_allclose(got[0], (cut.weights[3].astype(float) - plain.weights[3]).mean(0),
                               atol=1e-6)
    at.selectbox(key="abl_shown").set_value(4).run()
    assert not at.exception
    got = [decode(tr["z"]) for title, tr in heatmaps(at) if title.startswith("Later layers")]
    np.testing.assert_allclose(got[-1], cut.weights[5, 4].astype(float) - plain.weights[5, 4],
                               atol=1e-6)


@pytest.mark.parametrize(("link", "head"), [("h4", 4), ("head 4", 4), ("第 4 个头", 4),
                                             ("mean", -1), ("h99", -1)])
def test_the_shown_head_has_a_link_that_reads_the_same_in_both_languages(link, head):
    """?abl_shown=h4 (what the page writes), and the shown labels older links hold."""
    from attnviz.views.ablation import shown_from_link, shown_in_link

    assert shown_from_link(link, 12) == head
    assert shown_from_link(shown_in_link(head), 12) == head
    assert shown_in_link(None) == "mean" and shown_from_link(None, 12) == -1


def test_the_shown_head_is_written_to_and_read_from_the_link():
    from streamlit.testing.v1 import AppTest

    from tests.apptest import APP

    at = open_page("pages/ablation.py", timeout=180, text="I saw a saw")
    at.selectbox(key="abl_shown").set_value(7).run()
    assert not at.exception and at.query_params["abl_shown"] in ("h7", ["h7"])
    at.selectbox(key="abl_shown").set_value(-1).run()
    assert "abl_shown" not in at.query_params  # the mean is the default
    fresh = AppTest.from_file(APP, default_timeout=180)
    fresh.query_params["abl_shown"] = "head 5"  # a link written before, in English
    fresh.session_state["text"] = "I saw a saw"
    fresh.run()
    fresh.switch_page("pages/ablation.py").run()
    assert not fresh.exception and fresh.selectbox(key="abl_shown").value == 5


def test_importance_beside_statistics(at, model):
    imp = ablation.head_importance(model, TraceRequest("I saw a saw"), "repeat", "zero")
    b = ablation.beside_stats(model, TraceRequest("I saw a saw"), imp)
    panels = [f for f in figures(at) if sum(tr["type"] == "scatter" and tr.get("mode") ==
                                            "markers" and len(decode(tr["x"])) == 72
                                            for tr in f["data"]) == len(b.stats)]
    assert len(panels) == 1
    for tr, (name, stat) in zip(panels[0]["data"], b.stats.items(), strict=True):
        np.testing.assert_allclose(decode(tr["x"]), stat.ravel(), atol=1e-9, err_msg=name)
        np.testing.assert_allclose(decode(tr["y"]), np.abs(imp.effect).ravel(), atol=1e-9)
    titles = [a["text"] for a in panels[0]["layout"]["annotations"]]
    assert f"ρ = {b.rho['prev']:+.2f}" in titles[list(b.stats).index("prev")]
    assert any("Spearman" in str(c) for t in at.dataframe for c in t.value.columns)


def test_bart_decoder_heads_on_the_page(tmp_path):
    """With BART loaded, the one-head section offers the decoder's self-attention and
    cross-attention heads; the difference maps are analysis.one_head's (checked against HF)."""
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    folder = str(save_random_checkpoint("bart", tmp_path / "bart", seed=2))
    at = open_page("pages/ablation.py", timeout=180, text="I saw a saw", model_dir=folder)
    at.radio(key="abl_part").set_value("cross").run()
    assert not at.exception
    bart = attnviz.load_model(folder, device="cpu")
    nb = ablation.one_head(bart, TraceRequest("I saw a saw"), 0, 0, part="cross")
    got = [decode(tr["z"]) for title, tr in heatmaps(at) if title.startswith("Later layers")]
    assert len(got) == bart.n_decoder_layers - 1
    for z, (_layer, m) in zip(got, nb.later(), strict=True):
        np.testing.assert_allclose(z, m, atol=1e-6)
    # patching the decoder's heads: both maps are analysis.decoder_patching's
    p = ablation.decoder_patching(bart, TraceRequest("I saw a saw"), TraceRequest("I saw a dog"))
    got = [decode(tr["z"]) for title, tr in heatmaps(at) if title.startswith("Patching one head")]
    assert len(got) == 3  # the encoder's, then the decoder's masked self-attention and cross
    np.testing.assert_allclose(got[1], p.decoder, atol=1e-6)
    np.testing.assert_allclose(got[2], p.cross, atol=1e-6)
    # the decoder's heads get the encoder's maps too: importance, layers removed, pruning curve
    for part, name in (("decoder", "masked self-attention"), ("cross", "cross-attention")):
        imp = ablation.decoder_importance(bart, TraceRequest("I saw a saw"), part)
        (z,) = [decode(tr["z"]) for title, tr in heatmaps(at)
                if title.startswith("Change of cos(") and title.endswith(name)]
        np.testing.assert_allclose(z, imp.effect, atol=1e-6)
        base, layers = ablation.decoder_layer_removal(bart, TraceRequest("I saw a saw"), part)
        (bars,) = [f for f in figures(at) if f["layout"]["title"]["text"]
                   == f"Removing a whole layer's attention: {name}"]
        np.testing.assert_allclose(decode(bars["data"][0]["customdata"]), layers, atol=1e-6)
        order, curve = ablation.decoder_pruning_curve(bart, TraceRequest("I saw a saw"), imp,
                                                      part)
        (line,) = [f for f in figures(at) if f["layout"]["title"]["text"]
                   == f"Pruning curve: {name}"]
        np.testing.assert_allclose(decode(line["data"][0]["y"]), curve, atol=1e-6)


def test_one_head_removed_with_a_pair_shows_the_similarity(model):
    a, b = "A man is playing a guitar.", "Someone plays music."
    at = open_page("pages/ablation.py", timeout=180, text=a, pair=b)
    nb = ablation.one_head(model, TraceRequest(a, b), 0, 0)
    shown = [m.value for m in at.metric]
    assert f"{nb.pair_similarity[1]:.4f}" in shown, shown


def test_a_paragraph_past_the_maps_limit(model):
    """A 169-token paragraph: one note (not one per section), one head removed shown for the
    whole text, no progress bar left once the work is done; the maps on its first 128 tokens
    when asked, their numbers analysis.ablation's on those tokens."""
    from tests.test_analysis_ablation import LONG

    t = model.trace(LONG)
    assert t.n_tokens == 169
    at = open_page("pages/ablation.py", timeout=300, text=LONG)
    notes = [m.value for m in at.info]
    assert sum("This text has 169 tokens" in m for m in notes) == 1
    assert not any("shorten it" in m for m in [*notes, *(w.value for w in at.warning)])
    assert not at.get("progress")
    nb = ablation.one_head(model, TraceRequest(LONG), 0, 0)
    got = [decode(tr["z"]) for title, tr in heatmaps(at) if title.startswith("Later layers")]
    assert len(got) == model.n_layers - 1
    for z, (_layer, want) in zip(got, nb.later(), strict=True):
        np.testing.assert_allclose(z, want, atol=1e-6)
    assert not [title for title, _tr in heatmaps(at) if title.startswith("Change of")]
    at.toggle(key="abl_first").set_value(True).run()
    assert not at.exception and not at.get("progress")
    first = ablation.first_tokens(t)
    imp = ablation.head_importance(model, first, "repeat", "zero")
    assert imp.tokens == t.tokens[:128]
    maps = [decode(tr["z"]) for title, tr in heatmaps(at) if title.startswith("Change of")]
    assert any(np.allclose(z, imp.effect, atol=1e-6) for z in maps)


def test_the_pruning_summary_lists_heads_in_each_language():
    """The heads removed last, as the pruning summary lists them: English joins them with
    ", ", Chinese with "、" (each head "第 l 层第 h 个头", no comma inside an item) and ends a
    cut list with 等, never an English comma."""
    from attnviz.i18n import use
    from attnviz.views.ablation import pruning_said

    two = ablation.PruningSummary(70, 0.626, 0.680, [(0, 3), (0, 5)], 0.65, 0.1)
    five = ablation.PruningSummary(67, 0.6, 0.7, [(0, 3), (0, 5), (1, 2), (2, 7), (3, 1)],
                                   0.65, 0.1)
    with use("en"):
        assert "(layer 0, head 3, layer 0, head 5)" in pruning_said(two, "cosine")
        assert "(layer 0, head 3, layer 0, head 5, layer 1, head 2, …)" in pruning_said(
            five, "cosine")
    with use("zh"):
        said, cut = pruning_said(two, "余弦"), pruning_said(five, "余弦")
    assert "（第 0 层第 3 个头、第 0 层第 5 个头）" in said, said
    assert "（第 0 层第 3 个头、第 0 层第 5 个头、第 1 层第 2 个头等）" in cut, cut
    assert ", " not in said + cut and "," not in said + cut
