"""views.windows without Streamlit: masks and weights against the engine's own masks, the
receptive fields blank outside the analytic field, the context sweep's sentences and curves,
the cost table as shown."""

import numpy as np
import pytest
import torch

from attnviz.analysis import cost, receptive
from attnviz.analysis import windows as win
from attnviz.engine import TraceRequest, window_mask
from attnviz.views import windows as view
from tests.test_views_common import decode, heatmaps, spec

TEXT = "I saw a saw"


@pytest.fixture(scope="module")
def trace_of(model):
    return lambda **options: model.trace(TraceRequest(TEXT, **options))


def test_page_opens_on_masks_and_weights(model, trace_of):
    blocks = view.page(model, trace_of, w=1, layer=2, head=5)
    assert [type(b).__name__ for b in blocks] == ["Heading", "Markdown", "Figure", "Markdown",
                                                   "Numbers"]
    data = spec(blocks[2])["data"]
    np.testing.assert_array_equal(decode(data[2]["z"]), window_mask(6, 1).numpy())
    # the window mask written out: |i - j| <= 1
    i, j = np.indices((6, 6))
    np.testing.assert_array_equal(decode(data[2]["z"]).astype(bool), abs(i - j) <= 1)
    np.testing.assert_allclose(decode(data[3]["z"]), trace_of(window=1).weights[2, 5], atol=1e-7)
    np.testing.assert_allclose(decode(data[5]["z"]), trace_of(causal=True).weights[2, 5],
                               atol=1e-7)
    got = blocks[-1].make()
    assert list(got["names"]) == ["full", "window ±1", "causal"]
    np.testing.assert_array_equal(got["mask_2"], np.tril(np.ones((6, 6), bool)))
    np.testing.assert_allclose(got["weights_1"].sum(-1), 1, atol=1e-6)
    assert blocks[-1].file_name == "attnviz_windows_L2H5.npz"


def test_receptive_fields_blank_outside_the_analytic_field(model):
    ids, segments, _offsets = model.tokenize(TEXT)
    toks = model.tokens_of(ids)
    f = receptive.all_fields(model, ids, segments, 3, 1)
    fig = view.fields_figure(f, toks, 3, 1)
    for h, kind in zip(heatmaps(fig), receptive.KINDS, strict=True):
        z = decode(h["z"]).astype(float)
        assert (np.isnan(z) == ~receptive.analytic_field(kind, 6, model.n_layers, 3, 1)).all()
    note = view.fields_note(model.n_layers, f, 6, 3, 1).text
    assert f"At depth {model.n_layers}:" in note and "#0..#5" in note
    assert view.fields_request(TraceRequest(TEXT), view.SOURCES["passage"]).text == view.PASSAGE


def test_context_sweep_sentences_and_curves(model, trace_of):
    t = trace_of()
    s = view.context_sweeps(model, TraceRequest(TEXT), lambda f, msg: None)
    ids, seg, _ = model.tokenize(TEXT)
    kept = win.context_sweep(model, ids, seg, range(6), keep_special=True)
    plain = win.context_sweep(model, ids, seg, range(6))
    data = spec(view.context_figure(t, s, True, 1))["data"]
    np.testing.assert_allclose(decode(data[0]["y"]), kept.mean_cosine, atol=1e-6)
    np.testing.assert_allclose(decode(data[3]["y"]), plain.mean_cosine, atol=1e-6)
    text, pair, caveat = view.context_text(t, s, True, 1)
    a, b = kept.mean_cosine[1], plain.mean_cosine[1]
    assert f"**{a:.2f}**" in text.text and f"**{b:.2f}**" in text.text
    assert f"removes **{(a - b) / (1 - b):.0%}** of the drop" in text.text
    assert pair.style == "caption" and "saw \\#2 and saw \\#4" in pair.text
    assert "outside its training distribution" in caveat.text
    got = view.context_download(t, s, True).make()
    np.testing.assert_allclose(got["kept_mean_cosine"], kept.mean_cosine, atol=1e-6)


def test_cost_table_as_shown():
    ms = [cost.measure_attention(n, 8, m) for n in (64, 128) for m in ("full", "windowed")]
    table = view.cost_table(ms)
    assert list(table.columns) == ["length", "window", "method", "seconds", "median seconds",
                                   "peak MiB"]
    raw = cost.measurements_table(ms)
    np.testing.assert_array_equal(table.columns["peak MiB"], raw["peak_bytes"] / 2**20)
    assert view.cost_download(ms).make() is not None


def test_fields_note_numbers_tokens_as_every_label():
    """The fields' reach in the labels' numbers: with a start token ([CLS] #0) a position is
    its number; without one (GPT-2's 'i' is #1) every number is one more."""
    from attnviz.analysis import receptive

    f = {"window": receptive.analytic_field("window", 6, 2, 3, 1)}  # reaches 1..5 at depth 2
    bert = view.fields_note(2, f, 6, 3, 1, ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]).text
    gpt2 = view.fields_note(2, f, 6, 3, 1, ["i", "saw", "a", "saw", "it", "."]).text
    assert "#1..#5" in bert and "#2..#6" in gpt2


def test_decoders_tab_masks_and_reach():
    from transformers.masking_utils import causal_mask_function, sliding_window_overlay

    blocks = view.sliding_tab(4)
    assert [type(b).__name__ for b in blocks] == ["Markdown", "Figure", "Figure", "Markdown",
                                                   "Numbers"]
    masks = spec(blocks[1])["data"]
    n = view.DECODER_TOKENS
    over = sliding_window_overlay(4)
    ref = np.array([[causal_mask_function(0, 0, i, j) and over(0, 0, i, j) for j in range(n)]
                    for i in range(n)])
    np.testing.assert_array_equal(decode(masks[0]["z"]).astype(bool), ref)
    np.testing.assert_array_equal(decode(masks[1]["z"]).astype(bool),
                                  np.tril(np.ones((n, n), bool)))
    reach = spec(blocks[2])["data"]
    mistral = decode(reach[0]["z"]).astype(bool)  # [layers + 1, n] for the last token
    last = n - 1
    for depth in range(view.DECODER_LAYERS + 1):  # l (W - 1) back, written out
        assert np.flatnonzero(mistral[depth]).tolist() == list(range(max(0, last - 3 * depth),
                                                                    n))
    gemma2 = decode(reach[2]["z"]).astype(bool)
    assert gemma2[2].all() and not gemma2[1, : last - 3].any()  # full after layer 2
    assert "**131,040**" in blocks[3].text and "15 after 6 layers" not in blocks[3].text
    assert f"here {6 * 3} after 6 layers" in blocks[3].text
    got = blocks[-1].make()
    np.testing.assert_array_equal(got["mask_sliding"], ref)
    assert list(got["layer_types_gemma3"]) == ["sliding"] * 5 + ["full"]


def test_sink_part_needs_a_decoder(model, trace_of):
    (note,) = view.sink_part(model, trace_of())
    assert note.style == "info"


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    from attnviz import load_model
    from attnviz.engine.random_models import save_random_checkpoint

    folder = save_random_checkpoint("llama", tmp_path_factory.mktemp("llama") / "tiny",
                                    kv_heads=2, seed=6, layers=3, positions=256,
                                    tie_word_embeddings=True)
    return folder, load_model(str(folder))


def test_streaming_against_transformers_with_the_same_masks(llama):
    """The next-word distributions under the full context and each window are transformers'
    LlamaForCausalLM (eager) given the same masks as a 4-D additive mask."""
    from transformers import LlamaForCausalLM

    folder, m = llama
    ids = m.tokenize(view.STREAM_TEXT)[0]
    n = len(ids)
    res = win.streaming_next_word(m, ids, 16)
    hf = LlamaForCausalLM.from_pretrained(folder, attn_implementation="eager",
                                          local_files_only=True).eval()
    for key in ("full", *win.STREAM_SINKS):
        allowed = (win.streaming_mask(n, 16, key) if key != "full"
                   else torch.tril(torch.ones(n, n, dtype=torch.bool)))
        bias = torch.zeros(1, 1, n, n).masked_fill(~allowed, torch.finfo(torch.float32).min)
        with torch.no_grad():
            logits = hf(torch.tensor([ids]), attention_mask=bias).logits[0, -1]
        np.testing.assert_allclose(res[key], torch.softmax(logits.double(), -1).numpy(),
                                   atol=1e-5)
    part = view.streaming_part(m, {"ids": ids, **res}, 16)
    kl = [float(np.sum(res["full"] * np.log(res["full"] / res[s]))) for s in win.STREAM_SINKS]
    for k in kl:
        assert f"{k:.3f}" in part[0].text
    verdict = "brings the prediction closer" if kl[1] < kl[0] else "does not bring"
    assert verdict in part[0].text


def test_sink_part_on_a_decoder(llama):
    _folder, m = llama
    t = m.trace(TraceRequest(TEXT))
    blocks = view.sink_part(m, t)
    share = decode(spec(blocks[1])["data"][0]["z"])
    w = t.weights
    np.testing.assert_allclose(share, w[:, :, 1:, 0].mean(-1), atol=1e-6)
    assert f"**{share.mean():.0%}**" in blocks[0].text
