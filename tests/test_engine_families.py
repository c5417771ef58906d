"""Every family's forward pass against the independent reference: transformers' eager
implementation of that family, on small randomly initialised checkpoints saved with
save_pretrained (engine.random_models). Hidden states and every attention tensor (encoder,
decoder self-attention, cross-attention) within 1e-5, float32, at several lengths including
the model's maximum."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz
from attnviz.engine.random_models import save_random_checkpoint
from attnviz.engine.tokens import BYTE_BPE, SENTENCEPIECE, WORDPIECE, display_token

TOL = 1e-5
POSITIONS = 64  # every text checkpoint here takes 64 tokens
LENGTHS = (1, 7, POSITIONS)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    made = {f: save_random_checkpoint(f, root / f, positions=POSITIONS, seed=i)
            for i, f in enumerate(("bert", "roberta", "distilbert", "gpt2", "bart"))}
    made["bart3"] = save_random_checkpoint("bart", root / "bart3", positions=POSITIONS,
                                           decoder_layers=3, hidden_act="gelu", seed=7)
    made["gpt2_tanh"] = save_random_checkpoint("gpt2", root / "gpt2_tanh", positions=POSITIONS,
                                               activation_function="gelu_pytorch_tanh", seed=8)
    made["vit"] = save_random_checkpoint("vit", root / "vit", image_size=32, patch_size=8)
    made["vit48"] = save_random_checkpoint("vit", root / "vit48", image_size=48, patch_size=16,
                                           layers=3, heads=2, seed=3)
    return made


HF_CLASSES = {"bert": "BertModel", "roberta": "RobertaModel", "distilbert": "DistilBertModel",
              "gpt2": "GPT2Model", "bart": "BartModel", "vit": "ViTModel"}


def hf_model(folder, family, device: str = "cpu"):
    import transformers

    cls = getattr(transformers, HF_CLASSES[family])
    return cls.from_pretrained(folder, local_files_only=True,
                               attn_implementation="eager").to(device).eval()


def stack(tensors) -> np.ndarray:
    """[layers, ...] host array of one batch item from per-layer tensors on any device."""
    return torch.stack(tensors)[:, 0].float().cpu().numpy()


def check(ours: np.ndarray, ref: np.ndarray, what: str, tol: float = TOL) -> None:
    assert ours.shape == ref.shape, (what, ours.shape, ref.shape)
    np.testing.assert_allclose(ours, ref, atol=tol, rtol=0, err_msg=what)


def random_ids(model, n: int, seed: int = 0) -> list[int]:
    """n ids from the tokenizer's vocabulary, none of them a control token."""
    special = set(model.tokenizer.all_special_ids)
    pool = [i for i in range(len(model.tokenizer)) if i not in special]
    return [int(i) for i in np.random.default_rng(seed).choice(pool, n)]


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "gpt2", "gpt2_tanh"])
@pytest.mark.parametrize("n", LENGTHS)
def test_text_families_match_hf_eager(folders, family, n):
    name = family.split("_")[0]
    model = attnviz.load_model(folders[family], device="cpu")
    ref = hf_model(folders[family], name)
    ids = random_ids(model, n, seed=n)
    t = model.trace_ids(ids)
    with torch.no_grad():
        out = ref(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)
    check(t.hidden_states, stack(out.hidden_states), f"{family} hidden states")
    check(t.weights, stack(out.attentions), f"{family} attentions")
    assert t.n_tokens == n and t.family == name
    if not model.pre_norm:  # post-LN: each layer projects Q, K, V from its input as it is
        assert t.layer_inputs is None and t.attention_inputs.shape[0] == model.n_layers


def test_gpt2_is_causal_and_pre_layernorm(folders):
    model = attnviz.load_model(folders["gpt2"], device="cpu")
    ref = hf_model(folders["gpt2"], "gpt2")
    t = model.trace("I saw a saw")
    assert t.request.causal and t.kind == "decoder" and t.mask.tolist() == np.tril(
        np.ones((t.n_tokens,) * 2, dtype=bool)).tolist()
    above = np.triu(np.ones((t.n_tokens,) * 2, dtype=bool), 1)
    assert (t.weights[..., above] == 0.0).all()  # exactly zero, not just small
    assert t.tokens == ["I", "saw", "a", "saw"] and t.pieces == ["I", "Ġsaw", "Ġa", "Ġsaw"]
    # what each layer's Q, K, V are projected from: ln_1 of the layer's input (HF's module)
    with torch.no_grad():
        for li, block in enumerate(ref.h):
            a = block.ln_1(torch.from_numpy(t.hidden_states[li])).numpy()
            check(t.attention_inputs[li], a, f"ln_1 of layer {li}")
    # the same request asked without causal=True is the same trace
    assert np.array_equal(model.trace("I saw a saw", causal=True).weights, t.weights)


def test_roberta_positions_follow_the_padding_index(folders):
    """RoBERTa numbers positions from padding_idx + 1, and a typed <pad> keeps row padding_idx
    (transformers' create_position_ids_from_input_ids): the engine does the same."""
    model = attnviz.load_model(folders["roberta"], device="cpu")
    ref = hf_model(folders["roberta"], "roberta")
    t = model.trace("I saw <pad> a saw", "and a second <mask> one")
    assert "<pad>" in t.tokens and t.typed_control_tokens == ("<pad>", "<mask>")
    assert t.segments.tolist() == [0] * t.tokens.index("</s>") + [0, 0] + [1] * (
        t.n_tokens - t.tokens.index("</s>") - 2)
    with torch.no_grad():
        out = ref(torch.tensor([t.token_ids.tolist()]), output_attentions=True,
                  output_hidden_states=True)
    check(t.hidden_states, stack(out.hidden_states), "roberta with a typed <pad>")
    check(t.weights, stack(out.attentions), "roberta attentions")


@pytest.mark.parametrize("family", ["bart", "bart3"])
@pytest.mark.parametrize("n", LENGTHS)
def test_bart_encoder_decoder_and_cross_attention_match_hf(folders, family, n):
    model = attnviz.load_model(folders[family], device="cpu")
    ref = hf_model(folders[family], "bart")
    t = model.trace_ids(random_ids(model, n, seed=n))
    m = t.decoder_token_ids.shape[0]
    assert m == n and t.decoder_token_ids[0] == model.config.decoder_start_token_id
    with torch.no_grad():
        out = ref(torch.tensor([t.token_ids.tolist()]),
                  decoder_input_ids=torch.tensor([t.decoder_token_ids.tolist()]),
                  output_attentions=True, output_hidden_states=True)
    check(t.hidden_states, stack(out.encoder_hidden_states), "encoder hidden states")
    check(t.weights, stack(out.encoder_attentions), "encoder attentions")
    check(t.decoder_hidden_states, stack(out.decoder_hidden_states), "decoder hidden states")
    check(t.decoder_weights, stack(out.decoder_attentions), "decoder self-attention")
    check(t.cross_weights, stack(out.cross_attentions), "cross-attention")
    L = model.n_decoder_layers
    assert t.cross_weights.shape == (L, model.n_heads, m, n)  # rows decoder, cols encoder


def test_bart_source_and_target_texts(folders):
    model = attnviz.load_model(folders["bart"], device="cpu")
    ref = hf_model(folders["bart"], "bart")
    t = model.trace("I saw a saw", target="the saw was sharp")
    target = model.tokenizer("the saw was sharp")["input_ids"]
    assert t.decoder_token_ids.tolist() == [model.config.decoder_start_token_id] + target[:-1]
    assert t.cross_weights.shape[-2:] == (len(target), t.n_tokens)
    with torch.no_grad():
        out = ref(torch.tensor([t.token_ids.tolist()]),
                  decoder_input_ids=torch.tensor([t.decoder_token_ids.tolist()]),
                  output_attentions=True, output_hidden_states=True)
    check(t.cross_weights, stack(out.cross_attentions), "cross-attention, texts")
    np.testing.assert_allclose(t.cross_weights.sum(-1), 1.0, atol=1e-5)
    above = np.triu(np.ones((len(target),) * 2, dtype=bool), 1)
    assert (t.decoder_weights[..., above] == 0.0).all()
    # no target: the decoder reads the source, as in BART's pre-training
    t2 = model.trace("I saw a saw")
    assert t2.decoder_token_ids.tolist()[1:] == t2.token_ids.tolist()[:-1]
    assert any("reads the source" in note for note in t2.notes)


def test_vit_preprocessing_matches_transformers_image_processor(folders):
    from transformers import ViTImageProcessorPil

    model = attnviz.load_model(folders["vit"], device="cpu")
    proc = ViTImageProcessorPil.from_pretrained(folders["vit"], local_files_only=True)
    rng = np.random.default_rng(0)
    for shape in ((32, 32, 3), (50, 37, 3), (9, 120, 3)):
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        ours = model.processing.pixels(attnviz.ImageInput.of(img))
        ref = proc(images=img, return_tensors="np")["pixel_values"][0]
        check(ours, ref, f"pixels of a {shape} image")


@pytest.mark.parametrize("family", ["vit", "vit48"])
def test_vit_matches_hf_eager(folders, family):
    from PIL import Image
    from transformers import ViTImageProcessorPil

    model = attnviz.load_model(folders[family], device="cpu")
    ref = hf_model(folders[family], "vit")
    proc = ViTImageProcessorPil.from_pretrained(folders[family], local_files_only=True)
    img = np.random.default_rng(1).integers(0, 256, (61, 45, 3), dtype=np.uint8)
    for image in (img, Image.fromarray(img)):  # an array and a PIL image: the same input
        t = model.trace(image)
        pixels = torch.from_numpy(proc(images=img, return_tensors="np")["pixel_values"])
        with torch.no_grad():
            out = ref(pixel_values=pixels, output_attentions=True, output_hidden_states=True)
        check(t.hidden_states, stack(out.hidden_states), f"{family} hidden states")
        check(t.weights, stack(out.attentions), f"{family} attentions")
    side = model.config.image_size // model.config.patch_size
    assert t.patch_grid == (side, side) and t.n_tokens == 1 + side * side
    assert t.tokens[0] == "[CLS]" and t.tokens[1] == "patch 0,0"
    assert t.image.shape == (model.config.image_size,) * 2 + (3,)
    assert model.trace(image).key == t.key  # the image's digest keys the trace


def test_typed_control_tokens_are_reported(model):
    t = model.trace("I saw [SEP] a [MASK] saw [sep]")
    assert t.typed_control_tokens == ("[SEP]", "[MASK]")
    assert t.tokens.count("[SEP]") == 2 and "[MASK]" in t.tokens  # read as control tokens
    assert any("control token" in note for note in t.notes)
    assert model.trace("I saw a saw").notes == ()


def test_subword_markers_are_dropped_for_display(model, folders):
    t = model.trace("unbelievably playful")
    assert any(p.startswith("##") for p in t.pieces)
    assert t.tokens == [p[2:] if p.startswith("##") else p for p in t.pieces]
    gpt = attnviz.load_model(folders["gpt2"], device="cpu")
    g = gpt.trace("I saw a saw é")
    assert g.pieces[:4] == ["I", "Ġsaw", "Ġa", "Ġsaw"] and g.tokens[:4] == ["I", "saw", "a", "saw"]
    assert g.labels[1] != g.labels[3]  # the two saws stay distinct
    assert g.tokens[-2:] == ["\\xc3", "\\xa9"]  # é is two byte tokens: each shows its byte
    assert display_token("Ã©", BYTE_BPE) == "é" and display_token("Ġ", BYTE_BPE) == "␣"
    assert display_token("▁saw", SENTENCEPIECE) == "saw" and display_token("##", WORDPIECE) == "##"


@pytest.mark.parametrize(("family", "kwargs", "message"), [
    ("gpt2", dict(pair="a second sentence"), "one text"),
    ("gpt2", dict(target="x"), "no decoder"),
    ("bert", dict(target="x"), "no decoder"),
    ("vit", dict(window=1), "2-D grid"),
    ("vit", dict(causal=True), "2-D grid"),
])
def test_what_a_family_cannot_do_is_one_plain_sentence(folders, family, kwargs, message):
    model = attnviz.load_model(folders[family], device="cpu")
    if family == "vit":
        request = attnviz.TraceRequest(image=np.zeros((8, 8, 3), np.uint8), **kwargs)
    else:
        request = attnviz.TraceRequest("I saw a saw", **kwargs)
    with pytest.raises(ValueError, match=message):
        model.trace(request)


def test_images_and_text_are_refused_by_the_other_kind(folders, model):
    vit = attnviz.load_model(folders["vit"], device="cpu")
    with pytest.raises(ValueError, match="reads an image"):
        vit.trace("I saw a saw")
    with pytest.raises(ValueError, match="not images"):
        model.trace(np.zeros((8, 8, 3), np.uint8))


@pytest.mark.parametrize("bad", [np.zeros((8, 8, 3), np.float32), np.zeros((8, 8, 4), np.uint8),
                                 np.zeros((0, 8, 3), np.uint8), "not an image"])
def test_bad_images_are_refused(bad):
    with pytest.raises(ValueError):
        attnviz.TraceRequest(image=bad)


def test_image_requests_are_hashable_values():
    a = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    r1, r2 = attnviz.TraceRequest(image=a), attnviz.TraceRequest(image=a.copy())
    assert r1 == r2 and hash(r1) == hash(r2)
    b = a.copy()
    b[0, 0, 0] += 1  # one value changed: another request
    assert attnviz.TraceRequest(image=b) != r1
    assert r1.as_dict()["image"]["height"] == 4


def test_every_family_has_one_file_and_is_listed():
    from attnviz.engine.families import FAMILIES

    assert set(FAMILIES) == {"bert", "roberta", "distilbert", "gpt2", "vit", "bart", "llama",
                             "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text"}
    assert len({cls.__module__ for cls in FAMILIES.values()}) == 11  # Gemma 2 and 3: one file
