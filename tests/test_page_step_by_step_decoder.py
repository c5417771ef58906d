"""AppTest of step by step's real mode on the bundled decoder SmolLM2 (Llama: a causal mask,
RoPE, 9 query heads sharing 3 key/value heads, no biases): every step draws, the numbers shown
are the engine trace's (q and k after RoPE; masked scores blank, their weights 0), and the
rotation step shows q and k before and after the turn. One AppTest session for the module:
every widget a test reads is set by that test."""

import re

import numpy as np
import pytest

from attnviz.analysis import walkthrough as wt
from attnviz.engine.bundled import SMOLLM2
from tests.apptest import open_page
from tests.plotly_json import decode
from tests.plotly_json import figures_by_key as figures

PAGE = "pages/step_by_step.py"
SENTENCE = "I saw a saw"
KEYS = {1: ["s1_A"], 2: ["s2_q", "s2_k", "s2_v", "s2_rope_q", "s2_rope_k"],
        3: ["s3_terms", "s3_S"], 4: ["s4_m", "s4_bar", "s4_T", "s4_dk"], 5: ["s5_W"],
        6: ["s6_arrows", "s6_bars", "s6_O"], 7: ["s7_h", "s7_O"], 8: ["s8_S", "s8_W"]}


@pytest.fixture(scope="module")
def at():
    return open_page(PAGE, timeout=300, model=SMOLLM2, text=SENTENCE)


@pytest.fixture(scope="module")
def smol():
    import attnviz

    model = attnviz.load_model(SMOLLM2, device="cpu")
    return model, model.trace(SENTENCE)


def go(at, step, layer=0, head=0, query=None):
    at.session_state["text"] = SENTENCE
    at.session_state["sbs_mode"] = "real"
    at.session_state["sbs_step"] = step
    at.session_state["sbs_layer"] = layer
    at.session_state["sbs_head"] = head
    if query is not None:
        at.session_state["sbs_query"] = query
    at.session_state["sbs_conv"] = "queries"
    at.session_state["sbs_temp"] = 1.0
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return figures(at)


def text_of(at) -> str:
    return " ".join(m.value for m in (*at.markdown, *at.caption, *at.info)).replace("\\", "")


def test_every_step_draws_on_smollm2(at):
    for step, expected in KEYS.items():
        figs = go(at, step, layer=3, head=4)
        assert list(figs) == expected, step
        assert not at.error
        assert at.get("download_button"), "numbers offered for download"
        if step == 7:  # the layer's real heads, each group's shared key/value head named
            assert "query heads 3, 4, 5 read key/value head 1" in text_of(at)


def test_real_check_names_the_shared_head_and_is_within_1e_5(at, smol):
    model, t = smol
    go(at, 1, layer=13, head=7)
    said = text_of(at)
    assert "rows 448:512 of W^q (query head 7)" in said
    assert "128:192 of W^k and W^v (key/value head 2, which query heads 6, 7, 8 share" in said
    assert "no biases" in said
    diff = float(re.search(r"trace\| = ([0-9.]+e[+-][0-9]+)", said).group(1))
    assert diff <= 1e-5
    w = wt.real_walkthrough(model, t, 13, 7)
    assert max(wt.trace_differences(w, t).values()) <= 1e-5


def test_rope_step_shows_q_and_k_before_and_after(at, smol):
    model, t = smol
    figs = go(at, 2, layer=5, head=2)
    w = wt.real_walkthrough(model, t, 5, 2)
    for name, before, after in (("q", w.queries_unrotated, t.queries[5, 2]),
                                ("k", w.keys_unrotated, t.head_keys(5, 2))):
        data = figs[f"s2_rope_{name}"]["data"]
        np.testing.assert_allclose(decode(data[0]["z"]), before.T, atol=1e-6)
        np.testing.assert_allclose(decode(data[1]["z"]), after.T, atol=1e-5)
        # step 2's projection shows W a before the turn: its last panel is the unrotated one
        proj = figs[f"s2_{name}"]["data"]
        np.testing.assert_allclose(decode(proj[-1]["z"]), before.T, atol=1e-6)
    np.testing.assert_allclose(decode(figs["s2_rope_q"]["data"][0]["z"])[:, 0],
                               decode(figs["s2_rope_q"]["data"][1]["z"])[:, 0], atol=1e-6)
    assert "RoPE" in text_of(at)


def test_masked_scores_are_blank_and_their_weights_zero(at, smol):
    model, t = smol
    figs = go(at, 3, layer=0, head=4)
    s = decode(figs["s3_S"]["data"][2]["z"]).astype(float)
    n = t.n_tokens
    upper = np.triu(np.ones((n, n), bool), 1)
    assert np.isnan(s[upper]).all()
    np.testing.assert_allclose(s[~upper], t.scores[0, 4][~upper], atol=1e-4)
    assert f"The {int(upper.sum())} scores of later keys" in text_of(at)
    from attnviz.views.step_by_step import first_number

    first = first_number(wt.real_walkthrough(model, t, 0, 4))  # 1 when no start token leads
    figs = go(at, 5, layer=0, head=4, query=first + 1)  # the second token: row 1
    weights = decode(figs["s5_W"]["data"][0]["z"])
    np.testing.assert_allclose(weights, t.weights[0, 4], atol=1e-6)
    assert (weights[upper] == 0).all()
    table = at.dataframe[0].value
    w_col = [c for c in table.columns if "weight" in c][0]
    np.testing.assert_allclose(table[w_col].to_numpy(), t.weights[0, 4, 1], atol=1e-6)
    assert (table[w_col].to_numpy()[2:] == 0).all()


def test_a_decoder_without_llamas_attention_is_refused(tmp_path):
    """Qwen3 (q/k norms) in real mode: one sentence saying why, no figure, no traceback."""
    from attnviz.engine.random_models import save_random_checkpoint

    folder = save_random_checkpoint("qwen3", tmp_path / "qwen3", heads=4, kv_heads=2,
                                    positions=32)
    at = open_page(PAGE, timeout=300, model_dir=str(folder), text=SENTENCE, sbs_mode="real")
    assert not at.exception
    assert not figures(at)
    assert any("norm q and k" in i.value for i in at.info)


def test_step_7_shows_the_layers_real_heads_and_b(at, smol):
    """Step 7 in real mode on SmolLM2: the layer's 9 heads are the engine's weights (3 groups
    of 3 sharing a key/value head), B is W^O times the concatenated head outputs, and the
    layer's output recomputed from B is the engine's."""
    model, t = smol
    figs = go(at, 7, layer=5, head=2)
    mh = wt.decoder_multihead(model, t, 5)
    np.testing.assert_allclose(mh.weights, t.weights[5], atol=1e-6, rtol=0)
    said = text_of(at)
    assert "9 query heads share 3 key/value heads, 3 each" in said
    assert "query heads 6, 7, 8 read key/value head 2" in said
    # the step's text says what this decoder does after B (not BERT's LayerNorm(I + B))
    assert "grouped-query attention" in said and "RMSNorm}(x + B)" in said
    assert "a BERT layer" not in said and "LayerNorm}(I + B)" not in said
    gap = float(re.search(r"engine.s layer 5 output\| = ([0-9.]+e[+-][0-9]+)", said).group(1))
    assert gap <= 1e-5  # the page's recomputation is the engine's (SmolLM2 against float64 and
    #                     transformers: tests/test_analysis_decoder_layer_f64.py)
    b = [decode(tr["z"]) for tr in figs["s7_O"]["data"] if tr["type"] == "heatmap"][-1]
    np.testing.assert_allclose(b, mh.projected.T, atol=1e-3)  # drawn: float32, as rounded
    assert at.table and "2 x (192 x" in str(at.table[0].value)


def test_real_mode_opens_on_the_last_token_and_keeps_the_link(smol):
    """Under a causal mask the first token sees only itself: real mode opens on the last
    token (saw #4, whose row reaches every key), as the all-heads page does for a decoder; a
    link naming a query token still opens on it. BERT keeps its first token
    (tests/test_page_step_by_step.py)."""
    from streamlit.testing.v1 import AppTest

    from tests.apptest import APP

    _, t = smol
    n = t.n_tokens
    fresh = open_page(PAGE, timeout=300, model=SMOLLM2, text=SENTENCE, sbs_mode="real",
                      sbs_step=5)
    box = fresh.number_input(key="sbs_query")
    assert (box.min, box.max, box.value) == (1, n, n)
    assert "Query: **saw #4**" in text_of(fresh)
    assert box.proto.query_param_key == "sbs_query"  # the browser writes it into the link
    linked = AppTest.from_file(APP, default_timeout=300)
    linked.query_params["sbs_query"] = "2"
    for key, value in (("model", SMOLLM2), ("text", SENTENCE), ("sbs_mode", "real")):
        linked.session_state[key] = value
    linked.run()
    linked.switch_page(PAGE).run()
    assert not linked.exception and linked.number_input(key="sbs_query").value == 2
    bert = open_page(PAGE, timeout=300, text=SENTENCE, sbs_mode="real", sbs_step=5)
    assert bert.number_input(key="sbs_query").value == 0  # [CLS] #0, as before
