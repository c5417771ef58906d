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
    assert "Same word" in text.text and f"({curves['learned'][-1]:.6f})" in text.text
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


def test_pair_name_uses_the_labels_of_every_page(model, run):
    t = run()
    assert view.pair_name(t, 2, 4) == "saw #2 and saw #4"  # not 'saw' #2: one convention
    fig = spec(view.cosine_figure(t, 2, 4, view.pair_curves(
        {m: run(positions=m) for m in POSITION_MODES}, 2, 4)))
    assert "saw #2 and saw #4" in fig["layout"]["title"]["text"]


def test_rope_tab_toys_are_the_analysis_numbers():
    from attnviz.analysis import positions as P
    from attnviz.engine.rope import frequencies

    blocks = view.rope_toys(0)
    assert [type(b).__name__ for b in blocks] == ["Markdown", "Figure", "Markdown", "Markdown",
                                                  "Figure", "Figure"]
    turned = view.toy_rotation()
    rot = spec(blocks[1])["data"]
    np.testing.assert_allclose(decode(rot[1]["x"]), turned["q"][:, 0], atol=1e-12)
    np.testing.assert_allclose(decode(rot[3]["y"]), turned["k"][:, 1], atol=1e-12)
    # q at 1 with k at 0 and q at 3 with k at 2: the formula of one pair, written out here
    q, k, th = np.array(view.TOY_Q), np.array(view.TOY_K), P.TOY_THETA
    one_apart = (q @ k) * np.cos(th) + (q[0] * k[1] - q[1] * k[0]) * np.sin(th)
    assert f"**{one_apart:.4f}**; $q$ at 3" in blocks[2].text
    assert blocks[2].text.count(f"**{one_apart:.4f}**") == 2
    g = view.rotary_grid(0)
    qv, kv = P.toy_query_key(view.GRID_DIM, 0)
    np.testing.assert_allclose(decode(spec(blocks[4])["data"][0]["z"]),
                               P.rotary_scores(qv, kv, view.GRID_PLACES,
                                               frequencies(view.GRID_DIM, view.GRID_BASE)),
                               atol=1e-12)
    assert f"**{g['spread']:.1e}**" in blocks[3].text and g["spread"] < 1e-4
    assert f"{float(qv @ kv):.3f}" in blocks[3].text



def test_rope_download_holds_what_the_tab_shows(model, run):
    g = view.rotary_grid(0)
    got = view.rope_download(model, run(), 0).make()
    np.testing.assert_array_equal(got["grid_scores"], g["scores"])
    np.testing.assert_array_equal(got["toy_pair_q"], view.toy_rotation()["q"])
    assert "theta" not in got and "cosine_none" not in got  # BERT: no rotation to show


def test_rope_model_part_for_bert_says_it_has_no_rotation(model, run):
    (note,) = view.rope_model(model, run())
    assert note.style == "info" and "no rotary positions" in note.text
    assert view.rotary_of(model) is None


# ------------------------------------------------------------------ a rotary decoder
@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from attnviz import load_model
    from attnviz.engine.random_models import save_random_checkpoint

    folder = save_random_checkpoint("llama", tmp_path_factory.mktemp("llama") / "tiny",
                                    kv_heads=2, seed=5, layers=3, positions=64)
    return folder, load_model(str(folder))


def test_rope_part_on_a_rotary_decoder_against_transformers(llama):
    """The frequencies are engine.rope.frequencies of the config's rope_theta; the two saws'
    cosines with and without rotation equal transformers' LlamaModel run here, its rotation
    switched off by giving every position cos = 1 and sin = 0."""
    from transformers import LlamaModel

    from attnviz.analysis.common import first_repeated_pair
    from attnviz.engine.rope import frequencies

    folder, m = llama
    rot = view.rotary_of(m)
    assert rot["head_dim"] == m.head_dim and rot["base"] == 10000.0
    torch.testing.assert_close(rot["theta"], frequencies(m.head_dim, 10000.0), atol=0, rtol=0)
    t = m.trace(TraceRequest(TEXT))
    head = view.rope_model(m, t)
    assert [type(b).__name__ for b in head] == ["Markdown", "Figure", "Markdown"]
    assert "Predict first" in head[-1].text
    a, b = first_repeated_pair(t.tokens)
    ans = view.rope_answer(m, t, lambda **o: m.trace(TraceRequest(TEXT, **o)))
    curves = {d["name"]: decode(d["y"]) for d in spec(ans[1])["data"]}
    hf = LlamaModel.from_pretrained(folder, attn_implementation="eager",
                                    local_files_only=True).eval()
    ids = torch.tensor([t.token_ids.tolist()])
    with torch.no_grad():
        with_rope = hf(ids, output_hidden_states=True).hidden_states
        hook = hf.rotary_emb.register_forward_hook(  # cos 1, sin 0: no turn at all
            lambda mod, inp, out: (torch.ones_like(out[0]), torch.zeros_like(out[1])))
        without = hf(ids, output_hidden_states=True).hidden_states
        hook.remove()
    for name, hs in (("rotary positions (RoPE)", with_rope), ("no positions", without)):
        h = torch.stack([x[0] for x in hs]).double()
        np.testing.assert_allclose(curves[name], F.cosine_similarity(h[:, a], h[:, b], dim=-1),
                                   atol=1e-5)
    assert curves["no positions"][0] == pytest.approx(1.0, abs=1e-6)
    assert curves["no positions"][-1] < 1 - 1e-4  # the causal mask alone tells them apart
    assert f"**{curves['no positions'][-1]:.6f}**" in ans[0].text
    got = view.rope_download(m, t, 0, lambda **o: m.trace(TraceRequest(TEXT, **o))).make()
    np.testing.assert_allclose(got["cosine_none"], curves["no positions"], atol=1e-12)
    torch.testing.assert_close(torch.from_numpy(got["theta"]).float(), rot["theta"])
