"""AppTest of the families page: each figure's numbers against transformers' eager models
(the bundled BERT, and the random demo GPT-2 / BART / ViT the page shows when no trained one
is given, rebuilt here from the same seed), a cached model chosen by default, bad model
names refused with the neutral message."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.engine.random_models import save_random_checkpoint
from attnviz.ui.context import DEFAULT_MAX_TOKENS, DEMO
from tests.apptest import open_page
from tests.plotly_json import decode, figures_by_key
from tests.test_ui_recorder import assert_file_holds_the_screen

PAGE = "pages/families.py"
TABS = ["Decoder vs encoder", "Encoder-decoder: cross-attention", "Vision: [CLS] over the image"]
CONTEXT_MESSAGES = ("random weights", ":material/info:")  # drawn by ui.context


def demo_folder(kind: str, root):
    """The page's random demo checkpoint of `kind`, made again from the same seed."""
    family, sizes = DEMO[kind]
    return save_random_checkpoint(family, root / family, seed=0, hidden=64, heads=4,
                                  intermediate=128, positions=DEFAULT_MAX_TOKENS, **sizes)


def hf(folder, cls_name):
    import transformers

    return getattr(transformers, cls_name).from_pretrained(
        folder, local_files_only=True, attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def at():
    return open_page(PAGE)


def open_tab(at, label):
    at.session_state["fam_tab"] = label
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return figures_by_key(at)


def later_by_hand(att: np.ndarray) -> np.ndarray:
    """Per layer: mean over heads and rows i of sum_{j > i} W_ij (loops, from HF's tensors)."""
    L, H, n, _ = att.shape
    return np.array([np.mean([np.mean([att[li, h, i, i + 1:].sum() for i in range(n)])
                              for h in range(H)]) for li in range(L)])


def test_decoder_vs_encoder(at, hf_model, tmp_path):
    figs = open_tab(at, TABS[0])
    assert any("random weights" in i.value for i in at.info)  # no trained GPT-2 here
    with torch.no_grad():
        bert = torch.stack(hf_model(torch.tensor([[101, 1045, 2387, 1037, 2387, 102]]),
                                    output_attentions=True).attentions)[:, 0].numpy()
    np.testing.assert_allclose(decode(figs["fam_enc_fig"]["data"][0]["z"]), bert[0, 0],
                               atol=1e-5)
    gpt_ref = hf(demo_folder("decoder", tmp_path), "GPT2Model")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(demo_folder("decoder", tmp_path / "again"),
                                        local_files_only=True)
    ids = tok("I saw a saw")["input_ids"]
    with torch.no_grad():
        gpt = torch.stack(gpt_ref(torch.tensor([ids]), output_attentions=True).attentions)
    gpt = gpt[:, 0].numpy()
    z = decode(figs["fam_dec_fig"]["data"][0]["z"])
    np.testing.assert_allclose(z, gpt[0, 0], atol=1e-5)
    assert (z[np.triu_indices(len(ids), 1)] == 0.0).all()  # exactly zero above the diagonal
    curves = {d["name"]: decode(d["y"]) for d in figs["fam_later"]["data"]}
    b = next(v for k, v in curves.items() if k.startswith("BERT"))
    g = next(v for k, v in curves.items() if k.startswith("GPT-2"))
    np.testing.assert_allclose(b, later_by_hand(bert), atol=1e-6)
    assert (g == 0.0).all() and len(g) == gpt.shape[0]
    text = " ".join(m.value for m in at.markdown)
    assert f"{100 * later_by_hand(bert).mean():.1f}%" in text
    assert_file_holds_the_screen(at, besides=CONTEXT_MESSAGES)


def test_cross_attention(at, tmp_path):
    at.session_state["fam_target"] = "the saw"
    figs = open_tab(at, TABS[1])
    folder = demo_folder("encoder-decoder", tmp_path)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    src, tgt = tok("I saw a saw")["input_ids"], tok("the saw")["input_ids"]
    dec = [2] + tgt[:-1]
    with torch.no_grad():
        out = hf(folder, "BartModel")(torch.tensor([src]), decoder_input_ids=torch.tensor([dec]),
                                      output_attentions=True)
    cross = out.cross_attentions[0][0, 0].numpy()
    z = decode(figs["fam_cross"]["data"][0]["z"])
    assert z.shape == (len(dec), len(src))  # rows decoder, columns encoder
    np.testing.assert_allclose(z, cross, atol=1e-5)
    np.testing.assert_allclose(decode(figs["fam_dself"]["data"][0]["z"]),
                               out.decoder_attentions[0][0, 0].numpy(), atol=1e-5)
    table = at.dataframe[0].value
    assert table["weight"].tolist() == pytest.approx(cross.max(axis=1).tolist(), abs=1e-6)
    assert table["source token it weighs most"].iloc[0].endswith(f"#{int(cross[0].argmax())}")
    assert_file_holds_the_screen(at, besides=CONTEXT_MESSAGES)  # the table and the caption


def test_vision(at, tmp_path):
    from transformers import ViTImageProcessorPil

    from attnviz.engine import demo_image

    at.session_state["fam_vit_head"] = 1
    figs = open_tab(at, TABS[2])
    folder = demo_folder("vision", tmp_path)
    pixels = ViTImageProcessorPil.from_pretrained(folder, local_files_only=True)(
        images=demo_image(), return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        att = hf(folder, "ViTModel")(pixel_values=pixels, output_attentions=True).attentions
    heat = figs["fam_vit_fig"]["data"][1]
    np.testing.assert_allclose(decode(heat["z"]), att[0][0, 1, 0, 1:].reshape(14, 14).numpy(),
                               atol=1e-5)
    assert decode(figs["fam_vit_fig"]["data"][0]["z"]).shape == (224, 224, 3)


def test_a_cached_model_is_used_by_default(tmp_path, monkeypatch):
    from tests.test_engine_hub import put_in_cache

    made = save_random_checkpoint("gpt2", tmp_path / "made", layers=2)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    put_in_cache(tmp_path / "hf" / "hub", "openai-community/gpt2", made, "e" * 40)
    at = open_page(PAGE)
    assert at.text_input(key="fam_dec_model").value == "openai-community/gpt2"
    assert not any("random weights" in i.value for i in at.info)
    assert decode(figures_by_key(at)["fam_later"]["data"][1]["y"]).shape == (2,)


@pytest.mark.parametrize("typed", ["/definitely/missing", "/etc", "[x](javascript:alert(1))"])
def test_a_bad_model_name_gets_the_neutral_message_and_the_demo(typed):
    at = open_page(PAGE, run=False)
    at.session_state["fam_dec_model"] = typed
    at.run()
    assert not at.exception
    [w] = [w.value for w in at.warning]
    assert w.startswith("Model refused: “") and "this server can open" in w
    assert "](" not in w.replace("\\](", "")  # the typed link is escaped, not a link
    assert any("random weights" in i.value for i in at.info) and figures_by_key(at)


def test_long_inputs_put_the_two_heatmaps_one_under_the_other():
    """Past SQUARE_FROM tokens a head's heatmap keeps square cells; in half a page its rows
    would be a few pixels high and their labels on top of each other (the demo GPT-2 reads a
    paragraph as ~80 character tokens). Then the two heatmaps of each two-model tab stand one
    under the other, each the page's width; short inputs keep them side by side."""
    from attnviz.plotting.heatmaps import SQUARE_FROM

    def outer_columns(text: str, tab: str) -> tuple[int, int]:
        """(columns that are not a layer/head choice's pair, the demo model's rows)"""
        at = open_page(PAGE, text=text, fam_tab=tab)
        fig = figures_by_key(at)["fam_dec_fig" if tab == TABS[0] else "fam_dself"]
        rows = decode(fig["data"][0]["z"]).shape[0]
        pairs = len([s for s in at.selectbox if s.key.endswith("_layer")])
        return len(at.columns) - 2 * pairs, rows

    long = "My sister saw the rusty saw in the shed. The shed was cold. She left the saw there."
    for tab in TABS[:2]:
        columns, rows = outer_columns("I saw a saw", tab)
        assert columns == 2 and rows <= SQUARE_FROM
        columns, rows = outer_columns(long, tab)
        assert columns == 0 and rows > SQUARE_FROM
