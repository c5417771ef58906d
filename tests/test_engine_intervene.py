"""Interventions (engine.intervene) against an independent implementation: forward hooks on
Hugging Face's own eager modules of every family, within 1e-5 float32. A head is switched off
by a pre-hook on the attention's output projection (its input is concat_h Y_h), a layer's
attention by a hook on that projection's output, a residual patch by a pre-hook on the layer.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz
from attnviz.engine.random_models import save_random_checkpoint
from attnviz.engine.request import REFERENCE_SENTENCES, Ablation, Patch, TraceRequest

TOL = 1e-5
HF_CLASSES = {"bert": "BertModel", "roberta": "RobertaModel", "distilbert": "DistilBertModel",
              "gpt2": "GPT2Model", "bart": "BartModel", "vit": "ViTModel"}


def out_proj(ref, family: str, layer: int):
    """HF's module whose input is the heads' outputs side by side, and whose output is Z."""
    if family == "vit":
        return ref.layers[layer].attention.o_proj
    if family in ("bert", "roberta"):
        return ref.encoder.layer[layer].attention.output.dense
    if family == "distilbert":
        return ref.transformer.layer[layer].attention.out_lin
    if family == "gpt2":
        return ref.h[layer].attn.c_proj
    return ref.encoder.layers[layer].self_attn.out_proj  # bart's encoder


def layer_module(ref, family: str, layer: int):
    return {"bert": lambda: ref.encoder.layer, "roberta": lambda: ref.encoder.layer,
            "vit": lambda: ref.layers, "distilbert": lambda: ref.transformer.layer,
            "gpt2": lambda: ref.h, "bart": lambda: ref.encoder.layers}[family]()[layer]


def hooked(ref, family, heads=(), fill=None, layers=(), residual=(), source_states=None,
           head_dim=None):
    """Register the hooks of an intervention on HF's model; returns the handles."""
    handles = []
    by_layer: dict[int, list[int]] = {}
    for layer, head in heads:
        by_layer.setdefault(layer, []).append(head)
    for layer, hs in by_layer.items():
        def pre(module, args, layer=layer, hs=hs):
            x = args[0].clone()  # [1, n, hidden]
            for h in hs:
                s = slice(h * head_dim, (h + 1) * head_dim)
                x[..., s] = 0.0 if fill is None else fill[layer, h]
            return (x, *args[1:])
        handles.append(out_proj(ref, family, layer).register_forward_pre_hook(pre))
    for layer in layers:
        handles.append(out_proj(ref, family, layer).register_forward_hook(
            lambda m, a, out: torch.zeros_like(out)))
    for layer, token in residual:
        def pre_layer(module, args, kwargs, token=token, layer=layer):
            x = (args[0] if args else kwargs["hidden_states"]).clone()
            x[0, token] = torch.as_tensor(source_states[layer][token])
            if args:
                return (x, *args[1:]), kwargs
            return args, {**kwargs, "hidden_states": x}
        handles.append(layer_module(ref, family, layer).register_forward_pre_hook(
            pre_layer, with_kwargs=True))
    return handles


def hf_states(ref, family, ids, **hooks) -> np.ndarray:
    handles = hooked(ref, family, **hooks)
    try:
        with torch.no_grad():
            if family == "bart":
                out = ref.encoder(torch.tensor([ids]), output_hidden_states=True)
            else:
                out = ref(torch.tensor([ids]), output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()
    return torch.stack(out.hidden_states)[:, 0].numpy()


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("intervene")
    return {f: save_random_checkpoint(f, root / f, positions=32, seed=i)
            for i, f in enumerate(("bert", "roberta", "distilbert", "gpt2", "bart", "vit"))}


def hf(folder, family):
    import transformers

    return getattr(transformers, HF_CLASSES[family]).from_pretrained(
        folder, local_files_only=True, attn_implementation="eager").eval()


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "gpt2", "bart"])
def test_zero_ablation_layer_removal_and_patching_match_hf_hooks(folders, family):
    model = attnviz.load_model(folders[family], device="cpu")
    ref = hf(folders[family], family)
    t = model.trace("I saw a saw today")
    ids = t.token_ids.tolist()
    heads = ((0, 1), (1, 0))
    a = model.trace("I saw a saw today", ablate=Ablation(heads=heads))
    ref_states = hf_states(ref, family, ids, heads=heads, head_dim=model.head_dim)
    np.testing.assert_allclose(a.hidden_states, ref_states, atol=TOL, rtol=0)
    assert np.abs(a.hidden_states[-1] - t.hidden_states[-1]).max() > 1e-3  # it did something
    assert (a.outputs[0, 1] == 0).all() and (a.outputs[1, 0] == 0).all()

    off = model.trace("I saw a saw today", ablate=Ablation(layers=(1,)))
    np.testing.assert_allclose(off.hidden_states, hf_states(ref, family, ids, layers=(1,)),
                               atol=TOL, rtol=0)

    src = model.trace("I saw a dog today")
    assert src.n_tokens == t.n_tokens
    p = model.trace("I saw a saw today", ablate=Patch("I saw a dog today", heads=((1, 1),),
                                                      residual=((1, 2),)))
    np.testing.assert_allclose(p.outputs[1, 1], src.outputs[1, 1], atol=0, rtol=0)
    handles_fill = torch.as_tensor(src.outputs)  # [L, H, n, d]: per token
    ref_p = hf_states(ref, family, ids, heads=((1, 1),), fill=handles_fill,
                      residual=((1, 2),), source_states=src.hidden_states,
                      head_dim=model.head_dim)
    # HF records layer 1's input before the pre-hook replaces token 2; the trace reports what
    # layer 1 read there: the source run's vector (test_a_residual_patch_reports_the_value...)
    ref_p[1, 2] = src.hidden_states[1, 2]
    np.testing.assert_allclose(p.hidden_states, ref_p, atol=TOL, rtol=0)


def test_vit_zero_ablation_matches_hf_hooks(folders):
    from transformers import ViTImageProcessorPil

    model = attnviz.load_model(folders["vit"], device="cpu")
    ref = hf(folders["vit"], "vit")
    img = np.random.default_rng(1).integers(0, 256, (40, 40, 3), dtype=np.uint8)
    a = model.trace(TraceRequest(image=img, ablate=Ablation(heads=((0, 0),), layers=(1,))))
    proc = ViTImageProcessorPil.from_pretrained(folders["vit"], local_files_only=True)
    pixels = torch.from_numpy(proc(images=img, return_tensors="np")["pixel_values"])
    handles = hooked(ref, "vit", heads=((0, 0),), layers=(1,), head_dim=model.head_dim)
    with torch.no_grad():
        out = ref(pixel_values=pixels, output_hidden_states=True)
    for h in handles:
        h.remove()
    np.testing.assert_allclose(a.hidden_states, torch.stack(out.hidden_states)[:, 0].numpy(),
                               atol=TOL, rtol=0)
    with pytest.raises(ValueError, match="zero ablation"):
        model.trace(TraceRequest(image=img, ablate=Ablation(heads=((0, 0),), mode="mean")))


def test_mean_ablation_matches_hf_hooks(model, hf_model):
    """The mean is computed independently too: HF's eager model over the reference set, the
    projection's input averaged over every token."""
    seen = []
    proj = hf_model.encoder.layer[2].attention.output.dense
    handle = proj.register_forward_pre_hook(lambda m, a: seen.append(a[0][0]))
    with torch.no_grad():
        for text in REFERENCE_SENTENCES:
            hf_model(torch.tensor([model.tokenize(text)[0]]))
    handle.remove()
    mean = torch.cat(seen).mean(0)  # [hidden]
    d = model.head_dim
    fill = torch.zeros(model.n_layers, model.n_heads, d)
    fill[2, 5] = mean[5 * d:6 * d]
    t = model.trace("I saw a saw", ablate=Ablation(heads=((2, 5),), mode="mean"))
    ids = t.token_ids.tolist()
    ref = hf_states(hf_model, "bert", ids, heads=((2, 5),), fill=fill, head_dim=d)
    np.testing.assert_allclose(t.hidden_states, ref, atol=TOL, rtol=0)
    np.testing.assert_allclose(t.outputs[2, 5], np.broadcast_to(fill[2, 5].numpy(), (6, d)),
                               atol=1e-6, rtol=0)


def test_ablating_nothing_is_the_plain_trace_bit_for_bit(model):
    plain = model.trace("I saw a saw")
    for nothing in (Ablation(), Ablation(mode="mean"), Patch("I saw a dog")):
        t = model.trace("I saw a saw", ablate=nothing)
        assert t.key == plain.key and t.request.ablate is None
        for name in ("hidden_states", "weights", "scores", "outputs"):
            assert np.array_equal(getattr(t, name), getattr(plain, name)), name
    # an Edit that keeps every head, given to encode directly: the same bits
    from attnviz.engine.intervene import Edit

    x, _ = model.embed(plain.token_ids.tolist(), plain.segments.tolist())
    keep = torch.ones(model.n_layers, model.n_heads, dtype=torch.bool)
    with torch.inference_mode():
        enc = model.encode(x, record=False, edit=Edit(keep=keep))
    assert np.array_equal(enc.hidden_states[-1].numpy(), plain.hidden_states[-1])


def test_interventions_are_hashable_keys_and_checked(model):
    a = TraceRequest("I saw a saw", ablate=Ablation(heads=[(1, 2), (0, 3), (1, 2)]))
    b = TraceRequest("I saw a saw", ablate=Ablation(heads=((0, 3), (1, 2))))
    assert a == b and hash(a) == hash(b) and a.ablate.heads == ((0, 3), (1, 2))
    assert a != TraceRequest("I saw a saw", ablate=Ablation(heads=((0, 3), (1, 2)), mode="mean"))
    assert a.as_dict()["ablate"]["heads"] == [[0, 3], [1, 2]]
    assert "ablate" not in TraceRequest("I saw a saw").as_dict()
    assert model.trace("I saw a saw", ablate=Ablation(heads=((0, 3),))).request.ablate.heads
    with pytest.raises(ValueError, match="no head"):
        model.trace("I saw a saw", ablate=Ablation(heads=((6, 0),)))
    with pytest.raises(ValueError, match="mode"):
        Ablation(heads=((0, 0),), mode="half")
    with pytest.raises(ValueError, match="same length"):
        model.trace("I saw a saw", ablate=Patch("I saw a big dog", heads=((0, 0),)))
    with pytest.raises(ValueError, match="Ablation or a Patch"):
        TraceRequest("I saw a saw", ablate=((0, 0),))


def test_positions_off_make_the_two_saws_one_vector_in_every_layer(model):
    t = model.trace("I saw a saw", positions="none")
    i, j = [k for k, tok in enumerate(t.tokens) if tok == "saw"]
    h = t.hidden_states  # [layers + 1, n, hidden]
    cos = (h[:, i] * h[:, j]).sum(-1) / np.linalg.norm(h[:, i], axis=-1) / np.linalg.norm(
        h[:, j], axis=-1)
    np.testing.assert_allclose(cos, 1.0, atol=1e-6)
    on = model.trace("I saw a saw")
    assert ((on.hidden_states[-1, i] - on.hidden_states[-1, j]) ** 2).sum() > 1.0


def bart_proj(ref, part: str, layer: int):
    """HF BART's output projection of an attention: "encoder", "decoder" or "cross"."""
    if part == "encoder":
        return ref.encoder.layers[layer].self_attn.out_proj
    if part == "decoder":
        return ref.decoder.layers[layer].self_attn.out_proj
    return ref.decoder.layers[layer].encoder_attn.out_proj


def hf_bart_states(t, ref, ids, dec, handles):
    """HF's eager BART run with `handles` (its hooks, removed after), its outputs returned
    once the trace's encoder and decoder hidden states are checked against them."""
    try:
        with torch.no_grad():
            out = ref(ids, decoder_input_ids=dec, output_attentions=True,
                      output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()
    stack = lambda xs: torch.stack(xs)[:, 0].numpy()  # noqa: E731
    np.testing.assert_allclose(t.hidden_states, stack(out.encoder_hidden_states), atol=TOL,
                               rtol=0)
    np.testing.assert_allclose(t.decoder_hidden_states, stack(out.decoder_hidden_states),
                               atol=TOL, rtol=0)
    return out


def hf_bart_heads(ref, heads, head_dim, fill=None):
    """Pre-hooks on HF BART's output projections: {(part, layer): [head, ...]} with part one of
    "encoder", "decoder" (masked self-attention), "cross" (encoder_attn); a head's slice of the
    projection's input := 0, or fill[(part, layer, head)]."""
    handles = []
    for (part, layer), hs in heads.items():
        module = bart_proj(ref, part, layer)

        def pre(m, args, part=part, layer=layer, hs=hs):
            x = args[0].clone()
            for h in hs:
                x[..., h * head_dim:(h + 1) * head_dim] = (
                    0.0 if fill is None else fill[(part, layer, h)])
            return (x, *args[1:])
        handles.append(module.register_forward_pre_hook(pre))
    return handles


def bart_inputs(ids, config):
    from transformers.models.bart.modeling_bart import shift_tokens_right

    src = torch.tensor([ids])
    return src, shift_tokens_right(src, config.pad_token_id, config.decoder_start_token_id)


@pytest.mark.parametrize("mode", ["zero", "mean"])
def test_bart_decoder_and_cross_attention_heads_match_hf_hooks(folders, mode):
    """BART's encoder, decoder self-attention and cross-attention heads, zero or mean ablated,
    against pre-hooks on HF's eager BartModel; the means averaged independently, by hooks on
    HF's projections over the reference sentences (each decoder reading its own sentence)."""
    model = attnviz.load_model(folders["bart"], device="cpu")
    ref = hf(folders["bart"], "bart")
    assert model.n_decoder_layers >= 2
    d = model.head_dim
    abl = Ablation(heads=((0, 1),), decoder_heads=((0, 1), (1, 0)), cross_heads=((1, 1),),
                   mode=mode)
    heads = {("encoder", 0): [1], ("decoder", 0): [1], ("decoder", 1): [0], ("cross", 1): [1]}
    fill = None
    if mode == "mean":
        seen: dict = {}
        handles = []
        for part, layer in heads:
            handles.append(bart_proj(ref, part, layer).register_forward_pre_hook(
                lambda m, a, key=(part, layer): seen.setdefault(key, []).append(a[0][0])))
        with torch.no_grad():
            for text in REFERENCE_SENTENCES:
                src, dec = bart_inputs(model.tokenize(text)[0], ref.config)
                ref(src, decoder_input_ids=dec)
        for h in handles:
            h.remove()
        fill = {(part, layer, h): torch.cat(seen[(part, layer)]).mean(0)[h * d:(h + 1) * d]
                for (part, layer), hs in heads.items() for h in hs}
    text = "I saw a saw today"
    t = model.trace(text, ablate=abl)
    src, dec = bart_inputs(t.token_ids.tolist(), ref.config)
    assert t.decoder_token_ids.tolist() == dec[0].tolist()
    out = hf_bart_states(t, ref, src, dec, hf_bart_heads(ref, heads, d, fill))
    stack = lambda xs: torch.stack(xs)[:, 0].numpy()  # noqa: E731
    np.testing.assert_allclose(t.decoder_weights, stack(out.decoder_attentions), atol=TOL,
                               rtol=0)
    np.testing.assert_allclose(t.cross_weights, stack(out.cross_attentions), atol=TOL, rtol=0)
    plain = model.trace(text)
    assert np.abs(t.decoder_hidden_states[-1] - plain.decoder_hidden_states[-1]).max() > 1e-3
    if mode == "zero":
        assert (t.decoder_outputs[1, 0] == 0).all() and (t.cross_outputs[1, 1] == 0).all()
    # only the decoder's cross-attention heads: the encoder is the plain one, bit for bit
    c = model.trace(text, ablate=Ablation(cross_heads=((0, 2),), mode=mode))
    assert np.array_equal(c.hidden_states, plain.hidden_states)
    assert np.array_equal(c.decoder_weights[0], plain.decoder_weights[0])
    assert np.abs(c.decoder_hidden_states[-1] - plain.decoder_hidden_states[-1]).max() > 1e-4


def test_decoder_heads_are_checked_and_keyed(folders, model):
    a = Ablation(decoder_heads=[(1, 0), (0, 1)])
    assert a.decoder_heads == ((0, 1), (1, 0)) and not a.empty
    assert a.as_dict()["decoder_heads"] == [[0, 1], [1, 0]]
    assert "cross_heads" not in a.as_dict() and "decoder_heads" not in Ablation(
        heads=((0, 0),)).as_dict()
    assert TraceRequest("x", ablate=a) != TraceRequest(
        "x", ablate=Ablation(cross_heads=a.decoder_heads))
    with pytest.raises(ValueError, match="has no decoder"):
        model.trace("I saw a saw", ablate=Ablation(decoder_heads=((0, 0),)))
    bart = attnviz.load_model(folders["bart"], device="cpu")
    with pytest.raises(ValueError, match="no decoder head"):
        bart.trace("I saw a saw", ablate=Ablation(cross_heads=((bart.n_decoder_layers, 0),)))


def test_bart_decoder_and_cross_attention_patching_match_hf_hooks(folders):
    """Patch(decoder_heads=, cross_heads=): the clean run's head outputs, token by token, copied
    into the corrupted run's decoder, against pre-hooks on HF's eager BartModel that put the
    same slices into the projections' inputs."""
    model = attnviz.load_model(folders["bart"], device="cpu")
    ref = hf(folders["bart"], "bart")
    d = model.head_dim
    clean, corrupted = "I saw a dog today", "I saw a saw today"
    src = model.trace(clean)
    patch = Patch(clean, heads=((0, 1),), decoder_heads=((0, 1), (1, 0)), cross_heads=((1, 1),))
    t = model.trace(corrupted, ablate=patch)
    assert patch.as_dict()["cross_heads"] == [[1, 1]] and "decoder_heads" not in Patch(
        clean, heads=((0, 0),)).as_dict()
    fields = {"encoder": "outputs", "decoder": "decoder_outputs", "cross": "cross_outputs"}
    heads = {("encoder", 0): [1], ("decoder", 0): [1], ("decoder", 1): [0], ("cross", 1): [1]}
    fill = {(part, layer, h): torch.as_tensor(getattr(src, fields[part])[layer, h])  # [m, d]
            for (part, layer), hs in heads.items() for h in hs}
    ids, dec = bart_inputs(t.token_ids.tolist(), ref.config)
    out = hf_bart_states(t, ref, ids, dec, hf_bart_heads(ref, heads, d, fill))
    stack = lambda xs: torch.stack(xs)[:, 0].numpy()  # noqa: E731
    np.testing.assert_allclose(t.cross_weights, stack(out.cross_attentions), atol=TOL, rtol=0)
    assert np.array_equal(t.decoder_outputs[1, 0], src.decoder_outputs[1, 0])
    assert np.array_equal(t.cross_outputs[1, 1], src.cross_outputs[1, 1])
    plain = model.trace(corrupted)
    assert np.abs(t.decoder_hidden_states[-1] - plain.decoder_hidden_states[-1]).max() > 1e-3
    # only a cross-attention head: the encoder is the plain one, bit for bit
    c = model.trace(corrupted, ablate=Patch(clean, cross_heads=((0, 2),)))
    assert np.array_equal(c.hidden_states, plain.hidden_states)
    with pytest.raises(ValueError, match="same length"):
        model.trace(corrupted, ablate=Patch("I saw a big dog today", cross_heads=((0, 0),)))
    bert = attnviz.load_model(folders["bert"], device="cpu")
    with pytest.raises(ValueError, match="has no decoder"):
        bert.trace(corrupted, ablate=Patch(clean, decoder_heads=((0, 0),)))


def test_mean_ablation_follows_the_weights_loaded(tmp_path):
    """A checkpoint saved again into the same folder and loaded again: another Model.key, its
    own means (not the first weights' means, kept under the folder's name), each the float64
    mean of the head outputs over the reference sentences."""
    from attnviz.engine.intervene import mean_outputs

    folder = tmp_path / "bert"
    reference = REFERENCE_SENTENCES[:3]

    def means_of(model) -> np.ndarray:  # the reference's head outputs, averaged in float64
        outputs = [model.trace(text).outputs.astype(np.float64) for text in reference]
        return np.concatenate(outputs, axis=2).mean(axis=2)[:, :, None, :]

    save_random_checkpoint("bert", folder, seed=0)
    first = attnviz.load_model(folder, device="cpu")
    a = first.trace("I saw a saw", ablate=Ablation(heads=((1, 2),), mode="mean",
                                                    reference=reference))
    np.testing.assert_allclose(mean_outputs(first, reference).numpy(), means_of(first),
                               rtol=1e-7, atol=1e-9)
    save_random_checkpoint("bert", folder, seed=1)  # other weights, the same folder
    second = attnviz.load_model(folder, device="cpu")
    assert second.key != first.key and second.source == first.source
    got = mean_outputs(second, reference).numpy()
    np.testing.assert_allclose(got, means_of(second), rtol=1e-7, atol=1e-9)
    assert np.abs(got - means_of(first)).max() > 1e-3
    b = second.trace("I saw a saw", ablate=Ablation(heads=((1, 2),), mode="mean",
                                                     reference=reference))
    np.testing.assert_allclose(b.outputs[1, 2], np.broadcast_to(got[1, 2], b.outputs[1, 2].shape),
                               atol=0, rtol=0)
    assert b.key != a.key  # the trace cache's key (Model.key, request) names the weights too
    plain_a, plain_b = first.trace("I saw a saw"), second.trace("I saw a saw")
    assert plain_a.key != plain_b.key and plain_a.request == plain_b.request
    assert np.abs(plain_a.hidden_states[-1] - plain_b.hidden_states[-1]).max() > 1e-3
    save_random_checkpoint("bert", folder, seed=0)  # the first weights again: the same key
    assert attnviz.load_model(folder, device="cpu").key == first.key


def test_a_residual_patch_reports_the_value_the_layer_read(folders):
    """Patch(residual=((l, t),)): the patched trace's hidden_states[l][t] is the source run's
    vector (what layer l read, as docs/ablation.md says), not the corrupted run's; the rest of
    layer l's input and every earlier layer's are the run's own."""
    model = attnviz.load_model(folders["bert"], device="cpu")
    clean, corrupted = "I saw a dog today", "I saw a saw today"
    src, plain = model.trace(clean), model.trace(corrupted)
    p = model.trace(corrupted, ablate=Patch(clean, residual=((1, 4),)))
    np.testing.assert_array_equal(p.hidden_states[1, 4], src.hidden_states[1, 4])
    assert np.abs(plain.hidden_states[1, 4] - src.hidden_states[1, 4]).max() > 1e-3
    np.testing.assert_array_equal(np.delete(p.hidden_states[1], 4, axis=0),
                                  np.delete(plain.hidden_states[1], 4, axis=0))
    np.testing.assert_array_equal(p.hidden_states[:1], plain.hidden_states[:1])
