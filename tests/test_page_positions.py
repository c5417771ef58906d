"""AppTest of the positions page: its figures carry the engine's numbers, for any sentence."""

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis import positions as P
from attnviz.analysis.common import rounding_tolerance
from tests import plotly_json as pj
from tests.apptest import open_page
from tests.plotly_json import decode, figures_all_tabs

from .test_analysis_positions import make_tiny_bert


def figures(at) -> dict[str, dict]:
    """Every tab's figures by key (the tabs are lazy: each is opened in turn)."""
    return figures_all_tabs(at, "pos_tab")


KEYS = ["pos_fig_toy", "pos_fig_perm", "pos_fig_equi", "pos_fig_cos", "pos_fig_rows",
        "pos_fig_wcmp", "pos_fig_sin", "pos_fig_sindot", "pos_fig_learned", "pos_fig_lcos",
        "pos_fig_pca", "pos_fig_dist", "pos_fig_final", "pos_fig_rot", "pos_fig_grid",
        "pos_fig_rdist"]


@pytest.fixture
def at():
    return open_page("pages/positions.py", timeout=180)


def cos_ref(h, i, j):
    h = torch.from_numpy(np.asarray(h, dtype=np.float64))
    return F.cosine_similarity(h[:, i], h[:, j], dim=-1).numpy()


def test_default_sentence_every_figure(at, model):
    figs = figures(at)
    assert list(figs) == KEYS
    assert not at.error
    # Shuffle: the page's "none" bars are ~0, the "learned" bars are not.
    none, learned = [tr for tr in figs["pos_fig_equi"]["data"] if tr["type"] == "bar"]
    assert np.nanmax(decode(none["y"])) < 1e-5 and decode(learned["y"]).max() > 0.1
    said = next(m.value for m in at.markdown if "equal up to float rounding" in m.value)
    shown = float(said.split("every layer is **")[1].split("**")[0])
    assert shown == float(f"{np.nanmax(decode(none['y'])):.2e}")
    assert shown <= rounding_tolerance(model.trace("I saw a saw", positions="none").hidden_states)
    # The permutation keeps [CLS]/[SEP] and moves the words; recompute the difference here.
    perm = decode(figs["pos_fig_perm"]["data"][-1]["customdata"]).astype(int)
    ids, segs, _ = model.tokenize("I saw a saw")
    assert perm[0] == 0 and perm[-1] == len(ids) - 1 and (perm != np.arange(len(ids))).any()
    a = model.trace_ids(ids, positions="learned")
    b = model.trace_ids([ids[k] for k in perm], positions="learned")
    expected = np.abs(b.hidden_states - a.hidden_states[:, perm]).max(axis=(1, 2))
    np.testing.assert_allclose(decode(learned["y"]), expected, atol=1e-6)
    # Two saws: cosine per layer, learned vs none (equal up to rounding: 1 in every layer).
    curves = {d["name"]: decode(d["y"]) for d in figs["pos_fig_cos"]["data"]}
    np.testing.assert_allclose(curves["no positions"], 1.0, atol=1e-6)
    t = model.trace("I saw a saw")
    np.testing.assert_allclose(curves["learned positions (BERT)"],
                               cos_ref(t.hidden_states, 2, 4), atol=1e-6)
    # The weights of layer 0, head 0 with and without positions, and their difference.
    wn = model.trace("I saw a saw", positions="none").weights[0, 0]
    w = figs["pos_fig_wcmp"]["data"]
    np.testing.assert_allclose(decode(w[0]["z"]), t.weights[0, 0], atol=1e-7)
    np.testing.assert_allclose(decode(w[1]["z"]), wn, atol=1e-7)
    np.testing.assert_allclose(decode(w[2]["z"]), t.weights[0, 0] - wn, atol=1e-6)
    assert w[0]["x"] == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]
    # Distances vs learned: the learned panel is exactly 0.
    dist = figs["pos_fig_dist"]["data"]
    assert len(dist) == 4 and (decode(dist[0]["z"]) == 0).all()
    assert decode(dist[1]["z"]).shape == (model.n_layers, model.n_heads)
    assert decode(dist[1]["z"]).max() > 0
    # The encodings: the learned table is the checkpoint's.
    np.testing.assert_allclose(decode(figs["pos_fig_learned"]["data"][0]["z"]),
                               model.position_embeddings[:128].cpu().numpy(), atol=1e-7)
    assert at.get("download_button")


def test_layer_head_and_reference_choices(at, model):
    at.session_state["pos_tab"] = "2 · I saw a saw"
    at.run()
    at.selectbox(key="pos_layer").set_value(4)
    at.selectbox(key="pos_head").set_value(7).run()
    at.session_state["pos_tab"] = "4 · Compare the choices"
    at.run()
    at.selectbox(key="pos_ref").set_value("none").run()
    assert not at.exception
    figs = figures(at)
    t = model.trace("I saw a saw")
    np.testing.assert_allclose(decode(figs["pos_fig_wcmp"]["data"][0]["z"]), t.weights[4, 7],
                               atol=1e-7)
    rows = figs["pos_fig_rows"]["data"]
    np.testing.assert_allclose(decode(rows[0]["y"]), t.weights[4, 7, 2], atol=1e-7)
    np.testing.assert_allclose(decode(rows[1]["y"]), t.weights[4, 7, 4], atol=1e-7)
    dist = figs["pos_fig_dist"]["data"]
    assert (decode(dist[1]["z"]) == 0).all()  # "none" against itself
    assert decode(dist[0]["z"]).max() > 0


def test_sentence_without_repeats_lets_the_user_pick(at, model):
    at.session_state["text"] = "Dogs bark loudly"
    at.run()
    at.session_state["pos_tab"] = "2 · I saw a saw"
    at.run()
    assert not at.exception and not at.error
    assert any("No word repeats" in i.value for i in at.info)
    assert at.selectbox(key="pos_i").value == "dogs #1"  # first and last word by default
    assert at.selectbox(key="pos_j").value == "loudly #3"
    at.selectbox(key="pos_i").set_value("dogs #1")
    at.selectbox(key="pos_j").set_value("dogs #1").run()
    assert any("same token" in i.value for i in at.info)
    at.selectbox(key="pos_j").set_value("loudly #3").run()
    assert not at.exception
    t = model.trace("Dogs bark loudly")
    curves = {d["name"]: decode(d["y"]) for d in figures(at)["pos_fig_cos"]["data"]}
    np.testing.assert_allclose(curves["learned positions (BERT)"], cos_ref(t.hidden_states, 1, 3),
                               atol=1e-6)


def test_other_repeats_and_a_second_sentence(at, model):
    at.session_state["text"] = "the cat saw the dog"
    at.session_state["pair"] = "it ran"
    at.run()
    assert not at.exception and not at.error
    figs = figures(at)
    curves = {d["name"]: decode(d["y"]) for d in figs["pos_fig_cos"]["data"]}
    np.testing.assert_allclose(curves["no positions"], 1.0, atol=1e-6)  # "the" #1 and #4
    assert np.nanmax(decode(figs["pos_fig_equi"]["data"][0]["y"])) < 1e-5


@pytest.mark.parametrize("text", ["", "  \n "])
def test_blank_input_shows_a_message(at, text):
    at.session_state["text"] = text
    at.run()
    assert not at.exception
    assert at.info and not pj.charts(at)


def test_one_word_and_html_are_handled(at):
    at.session_state["text"] = "<b>hi"
    at.run()
    assert not at.exception and not at.error
    specs = json.dumps(figures(at))  # every tab
    assert "<b>" not in specs and "&lt;" in specs
    at.session_state["text"] = "hello"
    at.run()
    assert not at.exception and not at.error
    assert any("nothing to shuffle" in i.value for i in at.info)


def test_another_checkpoint_folder(at, tmp_path):
    at.session_state["model_dir"] = str(make_tiny_bert(tmp_path))
    at.run()
    assert not at.exception and not at.error
    figs = figures(at)
    assert list(figs) == KEYS
    dist = decode(figs["pos_fig_dist"]["data"][1]["z"])
    assert dist.shape == (2, 4)  # the tiny model's layers x heads
    assert decode(figs["pos_fig_learned"]["data"][0]["z"]).shape == (40, 32)
    curves = {d["name"]: decode(d["y"]) for d in figs["pos_fig_cos"]["data"]}
    np.testing.assert_allclose(curves["no positions"], 1.0, atol=1e-6)
    assert np.nanmax(decode(figs["pos_fig_equi"]["data"][0]["y"])) < 1e-5


def test_sinusoid_scale_and_divergence_wording(model):
    """Tab 3 states the unscaled and scaled sinusoids' effect with the numbers of
    analysis.positions.sinusoid_scaling (checked against HF's tables in its own test); the
    caveat follows every sinusoidal curve; JS is called a divergence, not a distance."""
    at = open_page("pages/positions.py", timeout=300)
    at.session_state["pos_tab"] = "3 · The encodings"
    at.run()
    text = " ".join(m.value for m in at.markdown)
    ids, segs, _ = model.tokenize("I saw a saw")
    sc = P.sinusoid_scaling(model, ids, segs)
    assert f"only **{sc['kept_raw'].mean():.2f}** with the word alone" in text
    assert f"keeps **{sc['kept_scaled'].mean():.2f}**" in text
    assert "= 13.9" in text and "c = 0.0342" in text
    for tab in ("2 · I saw a saw", "4 · Compare the choices"):
        at.session_state["pos_tab"] = tab
        at.run()
        assert any("never saw" in c.value and "0.0342" in c.value for c in at.caption), tab
    text = " ".join(m.value for m in at.markdown)
    assert "divergence, not a distance" in text and "Distance =" not in text


def test_rope_tab_toys_and_the_bert_note(at):
    """Tab 5 on BERT: the toy pair and the score grid (analysis.positions' numbers, checked
    against the formula in test_analysis_positions), and a note instead of the decoder's part;
    the first tab's shuffle figure labels the two saws as every page does."""
    from attnviz.engine.rope import frequencies

    at.session_state["pos_tab"] = "5 · Rotary positions (RoPE)"
    at.run()
    assert not at.exception and not at.error
    figs = pj.figures_by_key(at)
    q, k = P.toy_query_key(16, 0)
    np.testing.assert_allclose(decode(figs["pos_fig_grid"]["data"][0]["z"]),
                               P.rotary_scores(q, k, 32, frequencies(16, 10000.0)), atol=1e-12)
    assert any("no rotary positions" in i.value for i in at.info)
    assert not at.toggle  # no answer to show without a rotary model
    at.session_state["pos_tab"] = "1 · Shuffle the words"
    at.run()
    perm = pj.figures_by_key(at)["pos_fig_perm"]
    texts = [t for d in perm["data"] if d.get("text") for t in d["text"]]
    assert "saw #2" in texts and "saw #4" in texts and "saw" not in texts


def test_cosines_read_to_the_same_six_digits(at, model):
    """Tab 2 writes every cosine of the two saws with six decimals (the 1.000000 of no
    positions beside the learned one's 0.658..., not 0.6580 or 0.658), the values the engine's
    traces give; and every cosine the page's figures hover over reads to six digits too."""
    import re

    figs = figures(at)
    at.session_state["pos_tab"] = pj.tab_labels(at)[1]  # the two saws
    at.run()
    said = next(m.value for m in at.markdown if "drift apart" in m.value)
    numbers = re.findall(r"\d+\.\d+", said)
    assert len(numbers) == 3 and all(len(x.split(".")[1]) == 6 for x in numbers), numbers
    want = {m: cos_ref(model.trace("I saw a saw", positions=m).hidden_states, 2, 4)[-1]
            for m in ("none", "learned", "sinusoidal")}
    assert numbers == [f"{want[m]:.6f}" for m in ("none", "learned", "sinusoidal")], numbers
    hovers = [tr["hovertemplate"] for key in ("pos_fig_cos", "pos_fig_final")
              for tr in figs[key]["data"]]
    assert hovers and all("cosine = %{y:.6f}" in h for h in hovers), hovers
