"""Today's decoders (Llama, Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3 text) against transformers'
eager implementation of each, on small random checkpoints (engine.random_models): weights and
hidden states within 1e-5 (float32), with grouped keys/values (fewer key/value heads than query
heads), sliding windows shorter than the input, soft-capping, q/k norms and scaled RoPE. And
what the engine adds: the shared key/value heads in the Trace, the rotary frequencies of each
rope_type against transformers', positions "none" and "shuffled", per-layer masks, weights
recomputed from q and k, interventions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz
from attnviz.engine import TraceRequest
from attnviz.engine.random_models import save_random_checkpoint
from attnviz.engine.request import Ablation, Patch

TOL = 1e-5
POSITIONS = 32
LENGTHS = (1, 9, 24)

HF_CLASSES = {"llama": "LlamaModel", "mistral": "MistralModel", "qwen2": "Qwen2Model",
              "qwen3": "Qwen3Model", "gemma2": "Gemma2Model", "gemma3_text": "Gemma3TextModel"}

# name -> (family, options): each a small random config with what the family is about
CONFIGS = {
    "llama_gqa": ("llama", dict(heads=4, kv_heads=2)),
    "llama_bias_llama3": ("llama", dict(heads=4, kv_heads=1, attention_bias=True, mlp_bias=True,
                                        rope_scaling=dict(rope_type="llama3", factor=8.0,
                                                          low_freq_factor=1.0,
                                                          high_freq_factor=4.0,
                                                          original_max_position_embeddings=8))),
    "llama_linear": ("llama", dict(heads=4, kv_heads=4,
                                   rope_scaling=dict(rope_type="linear", factor=4.0))),
    "llama_yarn": ("llama", dict(heads=2, kv_heads=1, hidden=32,
                                 rope_scaling=dict(rope_type="yarn", factor=4.0,
                                                   original_max_position_embeddings=8))),
    "mistral_window": ("mistral", dict(heads=4, kv_heads=2, sliding_window=4)),
    "qwen2_windows": ("qwen2", dict(heads=4, kv_heads=2, layers=3, use_sliding_window=True,
                                    sliding_window=5, max_window_layers=1)),
    "qwen3": ("qwen3", dict(heads=4, kv_heads=2, layers=2)),
    "gemma2": ("gemma2", dict(heads=4, kv_heads=2, layers=3, sliding_window=4,
                              attn_logit_softcapping=3.0, query_pre_attn_scalar=12,
                              hidden_activation="gelu_pytorch_tanh")),
    "gemma3": ("gemma3_text", dict(heads=4, kv_heads=2, layers=3, sliding_window=4,
                                   layer_types=["sliding_attention", "full_attention",
                                                "sliding_attention"],
                                   rope_scaling=dict(rope_type="linear", factor=2.0))),
}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("decoders")
    made = {}
    for i, (name, (family, options)) in enumerate(CONFIGS.items()):
        made[name] = save_random_checkpoint(family, root / name, positions=POSITIONS, seed=i,
                                            **options)
    return made


@pytest.fixture(scope="module")
def models(folders):
    return {name: attnviz.load_model(folder, device="cpu") for name, folder in folders.items()}


def hf_model(folder, family):
    import transformers

    cls = getattr(transformers, HF_CLASSES[family])
    return cls.from_pretrained(folder, local_files_only=True,
                               attn_implementation="eager").eval()


def hf_run(folder, family, ids, position_ids=None):
    ref = hf_model(folder, family)
    kwargs = {} if position_ids is None else {"position_ids": torch.tensor([position_ids])}
    with torch.no_grad():
        return ref(torch.tensor([ids]), output_attentions=True, output_hidden_states=True,
                   **kwargs)


def stack(tensors) -> np.ndarray:
    return torch.stack(tensors)[:, 0].float().numpy()


def check(ours, ref, what, tol=TOL):
    assert ours.shape == ref.shape, (what, ours.shape, ref.shape)
    np.testing.assert_allclose(ours, ref, atol=tol, rtol=0, err_msg=what)


def random_ids(model, n: int, seed: int = 0) -> list[int]:
    """n ids of the vocabulary after <s>: none of them a control token."""
    special = set(model.tokenizer.all_special_ids)
    pool = [i for i in range(len(model.tokenizer)) if i not in special]
    bos = model.tokenizer.bos_token_id
    return [bos] + [int(i) for i in np.random.default_rng(seed).choice(pool, n - 1)]


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("n", LENGTHS)
def test_decoders_match_hf_eager(folders, models, name, n):
    family = CONFIGS[name][0]
    model = models[name]
    ids = random_ids(model, n, seed=n)
    t = model.trace_ids(ids)
    out = hf_run(folders[name], family, ids)
    check(t.hidden_states, stack(out.hidden_states), f"{name} hidden states")
    check(t.weights, stack(out.attentions), f"{name} attentions")
    assert t.family == family and t.kind == "decoder" and t.n_tokens == n
    # the outputs are the weights times the head's (shared) values
    for layer in range(t.n_layers):
        for head in range(t.n_heads):
            check(t.outputs[layer, head], t.weights[layer, head] @ t.head_values(layer, head),
                  f"{name} outputs {layer},{head}")


def test_the_configs_hold_what_they_are_about(models):
    """Each random config really has what its test is for (so the parity above covers it)."""
    caps = {name: m.capabilities for name, m in models.items()}
    assert caps["llama_gqa"]["kv_heads"] == 2 and caps["llama_gqa"]["kv_group"] == 2
    assert caps["llama_bias_llama3"]["kv_group"] == 4
    assert caps["llama_gqa"]["sliding_window"] is None
    assert caps["mistral_window"]["sliding_window"] == [4, 4]
    assert caps["qwen2_windows"]["sliding_window"] == [None, 5, 5]
    assert caps["gemma2"]["sliding_window"] == [4, None, 4]
    assert caps["gemma2"]["logit_cap"] == 3.0
    assert caps["gemma3"]["sliding_window"] == [4, None, 4]
    assert models["qwen3"].layers[0].q_norm is not None
    assert models["gemma3"].layers[0].k_norm is not None
    assert models["llama_bias_llama3"].layers[0].q_b is not None
    assert models["qwen2_windows"].layers[0].q_b is not None
    assert models["qwen2_windows"].layers[0].o_b is None
    for cap in caps.values():
        assert cap["causal"] == "always" and cap["rotary"] is True and cap["pair"] is False
    # Gemma 3's two kinds of layer turn with their own frequencies (local base 10,000; the
    # global one scaled linearly by 2)
    g = models["gemma3"].rotary
    assert not torch.equal(g["sliding_attention"][0], g["full_attention"][0])


def test_a_shared_key_value_head_is_stored_once(models):
    model = models["llama_gqa"]
    t = model.trace("I saw a saw")
    L, H, G, n, d = model.n_layers, model.n_heads, model.n_kv_heads, t.n_tokens, model.head_dim
    assert G < H
    assert t.keys.shape == t.values.shape == (L, G, n, d)
    assert t.queries.shape == (L, H, n, d)
    assert list(t.kv_heads) == [0, 0, 1, 1] == list(model.kv_heads)
    assert t.kv_group(1) == [0, 1] == list(model.kv_group(1))
    for layer in range(L):
        for head in range(H):
            k = t.head_keys(layer, head)
            assert np.shares_memory(k, t.keys[layer, t.kv_heads[head]])
            assert np.shares_memory(t.head_values(layer, head), t.values)
        # heads of one group read the same array; heads of two groups do not
        assert np.shares_memory(t.head_keys(layer, 0), t.head_keys(layer, 1))
        assert not np.shares_memory(t.head_keys(layer, 1), t.head_keys(layer, 2))
    assert t.keys_per_head.shape == (L, H, n, d)
    assert np.array_equal(t.keys_per_head[:, 3], t.keys[:, 1])
    # an encoder's trace: every head its own key (kv_heads the identity, no copy)
    plain = models["llama_linear"].trace("I saw a saw")
    assert list(plain.kv_heads) == [0, 1, 2, 3] and plain.keys_per_head is plain.keys


def test_bundled_encoder_trace_has_identity_kv_heads(cpu_model):
    t = cpu_model.trace("I saw a saw")
    assert list(t.kv_heads) == list(range(cpu_model.n_heads))
    assert t.keys_per_head is t.keys and t.n_kv_heads == t.n_heads


@pytest.mark.parametrize("rope", [
    dict(rope_type="default", rope_theta=10000.0),
    dict(rope_type="default", rope_theta=500000.0),
    dict(rope_type="linear", rope_theta=10000.0, factor=8.0),
    dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
         high_freq_factor=4.0, original_max_position_embeddings=8192),
    dict(rope_type="yarn", rope_theta=10000.0, factor=4.0,
         original_max_position_embeddings=4096),
    dict(rope_type="yarn", rope_theta=1000000.0, factor=32.0, beta_fast=16, beta_slow=2,
         original_max_position_embeddings=4096, truncate=False),
    dict(rope_type="yarn", rope_theta=10000.0, factor=40.0, mscale=1.0, mscale_all_dim=0.5,
         original_max_position_embeddings=4096),
])
@pytest.mark.parametrize("head_dim", [64, 128])
def test_rope_frequencies_match_transformers(rope, head_dim):
    import transformers
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    from attnviz.engine.families.llama import rope_frequencies

    config = transformers.LlamaConfig(hidden_size=head_dim * 4, num_attention_heads=4,
                                      head_dim=head_dim, max_position_embeddings=16384,
                                      rope_parameters=dict(rope))
    kind = rope["rope_type"]
    if kind == "default":
        ref = transformers.models.llama.modeling_llama.LlamaRotaryEmbedding(config)
        ref_freq, ref_factor = ref.inv_freq, ref.attention_scaling
    else:
        ref_freq, ref_factor = ROPE_INIT_FUNCTIONS[kind](config)
    ours, factor = rope_frequencies(dict(config.rope_parameters), head_dim, 16384)
    np.testing.assert_allclose(ours.numpy(), ref_freq.numpy(), rtol=1e-6, atol=0)
    assert factor == pytest.approx(ref_factor, rel=1e-12)
    if kind != "default":  # the scaling changes something
        assert not torch.allclose(ours, 1.0 / (rope["rope_theta"] ** (
            torch.arange(0, head_dim, 2).float() / head_dim)))


@pytest.mark.parametrize("kind", ["dynamic", "longrope", "proportional"])
def test_other_rope_types_are_refused_by_name(tmp_path, kind):
    from attnviz.engine.families.llama import Llama, rope_frequencies

    assert kind in Llama.refuse({"rope_scaling": {"rope_type": kind, "factor": 2.0}})
    assert kind in Llama.refuse({"rope_parameters": {"sliding_attention": {"rope_type": kind}}})
    with pytest.raises(ValueError, match=kind):
        rope_frequencies({"rope_type": kind, "factor": 2.0}, 16, 64)
    folder = save_random_checkpoint("llama", tmp_path / kind, positions=POSITIONS)
    import json

    config = json.loads((folder / "config.json").read_text())
    config.pop("rope_parameters", None)
    config["rope_scaling"] = {"rope_type": kind, "factor": 2.0}
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(attnviz.ModelError, match=kind):
        attnviz.load_model(folder, device="cpu")


@pytest.mark.parametrize("name", ["llama_gqa", "gemma3"])
def test_positions_none_is_no_rotation(folders, models, name):
    """positions="none": q and k are not turned; transformers does the same at position 0 for
    every token (angle 0: cos 1, sin 0)."""
    model = models[name]
    ids = random_ids(model, 12, seed=3)
    t = model.trace(TraceRequest(ids=tuple(ids), positions="none"))
    out = hf_run(folders[name], CONFIGS[name][0], ids, position_ids=[0] * len(ids))
    check(t.hidden_states, stack(out.hidden_states), "no rotation: hidden states")
    check(t.weights, stack(out.attentions), "no rotation: attentions")
    assert (t.position_ids == -1).all()
    # the two saws still differ: the second sees more words (a causal model knows order)
    plain = model.trace(TraceRequest(ids=tuple(ids)))
    assert not np.allclose(plain.weights, t.weights)


def test_positions_shuffled_are_permuted_rotary_positions(folders, models):
    model = models["qwen3"]
    ids = random_ids(model, 10, seed=4)
    t = model.trace(TraceRequest(ids=tuple(ids), positions="shuffled", seed=2))
    perm = [int(p) for p in t.position_ids]
    assert sorted(perm) == list(range(10)) and perm != list(range(10))
    out = hf_run(folders["qwen3"], "qwen3", ids, position_ids=perm)
    check(t.hidden_states, stack(out.hidden_states), "shuffled: hidden states")


def test_position_vectors_are_refused_for_rotary_models(models):
    with pytest.raises(ValueError, match="rotary"):
        models["llama_gqa"].trace("I saw a saw", positions="sinusoidal")
    assert models["llama_gqa"].capabilities["positions"] == ("learned", "none", "shuffled")


def test_rotary_scores_depend_on_distance_only(models):
    """In a real trace: layer 0's q and k of the same token ids, placed at different absolute
    positions with the same distance, give the same score (RoPE's property)."""
    model = models["llama_gqa"]
    bos = model.tokenizer.bos_token_id
    a, b = random_ids(model, 3, seed=9)[1:]
    ids = [bos] + [a, b] * 6
    t = model.trace_ids(ids)
    s = t.scores[0, 0]
    # token b at 2, 4, 6 ... attends to token a at 1, 3, 5 ...: distance 1 each time
    first = s[2, 1]
    for i in range(4, len(ids), 2):
        assert s[i, i - 1] == pytest.approx(first, abs=1e-4)


@pytest.mark.parametrize("name", ["mistral_window", "qwen2_windows", "gemma2", "gemma3"])
def test_sliding_windows_are_per_layer_masks(models, name):
    model = models[name]
    t = model.trace_ids(random_ids(model, 20, seed=5))
    n = t.n_tokens
    idx = np.arange(n)
    assert t.layer_windows is not None and len(t.layer_windows) == t.n_layers
    for layer, w in enumerate(t.layer_windows):
        mask = t.mask_of(layer)
        want = idx[None, :] <= idx[:, None]
        if w >= 0:
            want &= (idx[:, None] - idx[None, :]) < w
            assert w == model.layer_windows[layer] < n
        else:
            assert model.layer_windows[layer] is None
        assert np.array_equal(mask, want)
        assert (t.weights[layer][:, ~mask] == 0).all()
        np.testing.assert_allclose(t.weights[layer].sum(-1), 1.0, atol=1e-5)
        # what a long input keeps: the weights computed again from q and k
        check(t.recompute_weights(layer), t.weights[layer], f"{name} recomputed")
        check(t.recompute_weights(layer, [2])[0], t.weights_of(layer, 2), f"{name} one head")
    plain = models["llama_gqa"].trace("I saw a saw")
    assert plain.layer_windows is None and np.array_equal(plain.mask_of(1), plain.mask)


def test_request_window_combines_with_the_sliding_window(models):
    model = models["gemma2"]
    ids = random_ids(model, 16, seed=6)
    t = model.trace(TraceRequest(ids=tuple(ids), window=2))
    idx = np.arange(16)
    assert np.array_equal(t.mask, (idx[None, :] <= idx[:, None])
                          & (np.abs(idx[:, None] - idx[None, :]) <= 2))
    for layer in range(t.n_layers):
        assert (t.weights[layer][:, ~t.mask_of(layer)] == 0).all()


def test_soft_capping_matters(models):
    """With attn_logit_softcapping 3, weights differ from the uncapped softmax of the same
    scores (so the parity above checks the cap), and equal the capped one."""
    t = models["gemma2"].trace_ids(random_ids(models["gemma2"], 12, seed=7))
    assert t.logit_cap == 3.0
    logits = t.scores[1, 0] * t.scale
    mask = t.mask_of(1)

    def softmax(x):
        x = np.where(mask, x, -np.inf)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    check(t.weights[1, 0], softmax(3.0 * np.tanh(logits / 3.0)), "capped softmax")
    assert np.abs(t.weights[1, 0] - softmax(logits)).max() > 1e-3
    assert t.scale == pytest.approx(12 ** -0.5)


def test_ablation_and_patching_work_on_grouped_heads(models):
    model = models["llama_gqa"]
    plain = model.trace("I saw a saw")
    off = model.trace(TraceRequest("I saw a saw", ablate=Ablation(heads=((0, 1),))))
    assert (off.outputs[0, 1] == 0).all()
    np.testing.assert_array_equal(off.outputs[0, 0], plain.outputs[0, 0])  # shares its key
    assert not np.allclose(off.hidden_states[-1], plain.hidden_states[-1])
    assert any("key/value head" in note for note in off.notes)
    group = Ablation(heads=tuple((0, h) for h in model.kv_group(1)))
    both = model.trace(TraceRequest("I saw a saw", ablate=group))
    assert (both.outputs[0, :2] == 0).all()
    mean = model.trace(TraceRequest("I saw a saw", ablate=Ablation(heads=((1, 3),),
                                                                   mode="mean")))
    assert np.allclose(mean.outputs[1, 3], mean.outputs[1, 3][0])
    patched = model.trace(TraceRequest("I saw a saw", ablate=Patch("I saw a cat",
                                                                   heads=((0, 2),))))
    source = model.trace("I saw a cat")
    if source.n_tokens == plain.n_tokens:
        np.testing.assert_array_equal(patched.outputs[0, 2], source.outputs[0, 2])
    with pytest.raises(ValueError, match="no head"):
        model.trace(TraceRequest("I saw a saw", ablate=Ablation(heads=((0, 4),))))


def test_export_carries_the_shared_heads(models, tmp_path):
    t = models["gemma2"].trace("I saw a saw")
    path = tmp_path / "t.npz"
    t.save_npz(path)
    data = np.load(path)
    assert list(data["kv_heads"]) == [0, 0, 1, 1]
    assert data["keys"].shape[1] == 2
    assert list(data["layer_windows"]) == [4, -1, 4]
    assert float(data["logit_cap"]) == 3.0


def test_next_token_logits_are_the_tied_word_vectors(models):
    model = models["gemma2"]
    t = model.trace("I saw a saw")
    h = torch.as_tensor(t.hidden_states[-1, -1])
    logits = model.next_token_logits(h)
    ref = torch.tanh((h @ model.word_embeddings.T) / 30.0) * 30.0  # final_logit_softcapping
    torch.testing.assert_close(logits, ref)


def test_a_batch_without_recording_matches_the_trace(models):
    """encode on a batch (integrated gradients' path points) gives each sequence's trace."""
    model = models["qwen2_windows"]
    ids = random_ids(model, 10, seed=8)
    t = model.trace_ids(ids)
    x, _ = model.embed(ids, [0] * 10)
    with torch.no_grad():
        last = model.last_hidden(torch.stack([x, x]))
    check(last[1].numpy(), t.hidden_states[-1], "batched last layer")


def test_a_long_input_keeps_q_and_k_and_computes_weights_when_asked(models, monkeypatch,
                                                                     tmp_path):
    """Past KEEP_WEIGHTS_BYTES a trace holds no scores or weights; a layer's or a head's are
    computed again from the kept queries and keys, equal to the held ones of the same input."""
    from attnviz.engine.families import llama

    model = models["gemma2"]  # sliding windows and soft-capping: the recomputation has both
    ids = random_ids(model, 20, seed=10)
    held = model.trace_ids(ids)
    assert held.holds_weights and model.keeps_weights(20)
    monkeypatch.setattr(llama, "KEEP_WEIGHTS_BYTES", 2 * 4 * model.n_layers * model.n_heads
                        * 19 * 19)
    monkeypatch.setattr(llama, "QUERY_BLOCK", 7)  # 20 queries: blocks of 7, 7 and 6 rows
    assert model.keeps_weights(19) and not model.keeps_weights(20)
    long = model.trace_ids(ids)
    assert not long.holds_weights and long.weights is None and long.scores is None
    assert long.n_layers == held.n_layers and long.n_heads == held.n_heads
    check(long.hidden_states, held.hidden_states, "hidden states, attention by blocks")
    check(long.outputs, held.outputs, "outputs, attention by blocks")
    np.testing.assert_array_equal(long.keys[0], held.keys[0])
    for layer in range(held.n_layers):
        check(long.layer_weights(layer), held.weights[layer], "a layer computed again")
        check(long.weights_of(layer, 3), held.weights[layer, 3], "a head computed again")
    long.save_npz(tmp_path / "long.npz")
    with np.load(tmp_path / "long.npz") as f:
        assert "weights" not in f.files and f["keys"].shape == held.keys.shape
