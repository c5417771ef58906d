"""Invariants of the engine: softmax rows, masks, positions, options, the Trace's names."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis.common import equal_up_to_rounding
from attnviz.engine import (
    ARRAY_FIELDS,
    POSITION_MODES,
    build_mask,
    causal_mask,
    sinusoidal,
    window_mask,
)
from attnviz.engine.attention import attention

TEXT = "I saw a saw"


def cosine(a, b):
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_trace_names_and_shapes_are_pinned(model):
    assert list(ARRAY_FIELDS) == [
        "token_ids", "segments", "position_ids", "embeddings", "queries", "keys", "values",
        "kv_heads", "scores", "weights", "outputs", "hidden_states", "mask",
    ]
    t = model.trace(TEXT)
    L, H, n, d = model.n_layers, model.n_heads, 6, model.head_dim
    assert t.tokens == ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    for name in ("queries", "keys", "values", "outputs"):
        assert getattr(t, name).shape == (L, H, n, d)
    assert t.scores.shape == t.weights.shape == (L, H, n, n)
    assert t.hidden_states.shape == (L + 1, n, model.hidden)
    assert t.labels[2] != t.labels[4]  # the two saws are distinct everywhere


@pytest.mark.parametrize("opts", [
    {}, {"window": 1}, {"causal": True}, {"window": 2, "causal": True}, {"positions": "none"},
    {"positions": "sinusoidal"}, {"positions": "shuffled", "seed": 3}])
def test_rows_sum_to_one_and_masked_weights_are_exactly_zero(model, opts):
    t = model.trace("the cat sat on the mat because it was warm", **opts)
    np.testing.assert_allclose(t.weights.sum(-1), 1.0, atol=1e-5)
    blocked = ~t.mask
    assert (t.weights[..., blocked] == 0.0).all()
    expect = build_mask(t.n_tokens, opts.get("window"), opts.get("causal", False))
    assert (t.mask == (np.ones_like(t.mask) if expect is None else expect.numpy())).all()


@pytest.mark.parametrize("opts", [{"window": 1}, {"causal": True}, {"window": 3, "causal": True}])
def test_masked_heads_match_torch_sdpa(model, opts):
    """Each layer's per-head outputs equal scaled_dot_product_attention with the same mask."""
    t = model.trace("a truncated window keeps attention local like a convolution", **opts)
    q, k, v = (torch.from_numpy(getattr(t, n)) for n in ("queries", "keys", "values"))
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(t.mask))
    np.testing.assert_allclose(t.outputs, ref.numpy(), atol=1e-5, rtol=0)


def test_attention_function_matches_sdpa_and_formula():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, 7, 5, generator=g, dtype=torch.float64) for _ in range(3))
    out, w, s = attention(q, k, v)
    np.testing.assert_allclose(out, F.scaled_dot_product_attention(q, k, v), atol=1e-12)
    np.testing.assert_allclose(s, torch.einsum("bhid,bhjd->bhij", q, k), atol=1e-12)
    e = torch.exp(s / np.sqrt(5) - (s / np.sqrt(5)).amax(-1, keepdim=True))
    np.testing.assert_allclose(w, e / e.sum(-1, keepdim=True), atol=1e-12)


def test_mask_builders():
    assert window_mask(5, 1).int().tolist() == [
        [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1], [0, 0, 0, 1, 1]]
    assert causal_mask(3).int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert build_mask(4) is None
    assert (build_mask(4, 0) == torch.eye(4, dtype=torch.bool)).all()


def test_without_positions_the_two_saws_are_equal_up_to_rounding(model, torch_threads):
    t = model.trace(TEXT, positions="none")
    for layer in range(model.n_layers + 1):
        h = t.hidden_states[layer]
        assert equal_up_to_rounding(h[2], h[4]), (layer, np.abs(h[2] - h[4]).max())
    assert (t.position_ids == -1).all()
    learned = model.trace(TEXT)
    c = cosine(learned.hidden_states[-1, 2], learned.hidden_states[-1, 4])
    assert 0.6 < c < 0.72, c  # about 0.66 on the bundled model
    assert np.abs(learned.hidden_states[-1, 2] - learned.hidden_states[-1, 4]).max() > 0.1


def test_without_positions_order_is_invisible(model):
    """Permutation equivariance: permuting the tokens permutes the outputs, nothing else."""
    ids, seg, _ = model.tokenize("the dog chased a red ball")
    perm = np.array([0, 3, 1, 5, 2, 4, 6, 7])  # keep [CLS] first and [SEP] last
    a = model.trace_ids(ids, positions="none")
    b = model.trace_ids([ids[i] for i in perm], positions="none")
    np.testing.assert_allclose(b.hidden_states, a.hidden_states[:, perm], atol=1e-5, rtol=0)
    np.testing.assert_allclose(b.weights, a.weights[..., perm, :][..., perm], atol=1e-5, rtol=0)
    a2 = model.trace_ids(ids)
    b2 = model.trace_ids([ids[i] for i in perm])
    assert np.abs(b2.hidden_states[-1] - a2.hidden_states[-1][perm]).max() > 1e-2


def test_position_modes(model):
    n = 6
    learned = model.position_embeddings[:n].numpy()
    t = model.trace(TEXT, positions="sinusoidal")
    assert t.position_ids.tolist() == list(range(n))
    s = model.trace(TEXT, positions="shuffled", seed=5)
    assert sorted(s.position_ids.tolist()) == list(range(n))
    assert s.position_ids.tolist() != list(range(n))
    assert model.trace(TEXT, positions="shuffled", seed=5).position_ids.tolist() == \
        s.position_ids.tolist()
    # embeddings = LayerNorm(word + position + segment): recompute the shuffled one by hand
    word = model.word_embeddings[torch.as_tensor(s.token_ids)].numpy()
    seg = model.segment_embeddings[0].numpy()
    x = torch.from_numpy(word + learned[s.position_ids] + seg)
    ref = F.layer_norm(x, (model.hidden,), model.emb_ln_w, model.emb_ln_b, model.eps)
    np.testing.assert_allclose(s.embeddings, ref.numpy(), atol=1e-6)
    pe = sinusoidal(50, 16).numpy()
    pos, i = 7, 3
    assert pe[pos, 2 * i] == pytest.approx(np.sin(pos / 10000 ** (2 * i / 16)), abs=1e-7)
    assert pe[pos, 2 * i + 1] == pytest.approx(np.cos(pos / 10000 ** (2 * i / 16)), abs=1e-7)


def test_sinusoidal_mode_is_scaled_to_the_learned_vectors_norm(model, hf_model):
    """positions="sinusoidal" adds c·PE with c = mean ||learned e^p|| / sqrt(d/2): every
    sinusoid gets the learned vectors' mean norm (0.474 for the bundled model) instead of
    sqrt(d/2) = 13.9. Recomputed from HF's own embedding tables with the formula written out."""
    emb = hf_model.embeddings
    learned = emb.position_embeddings.weight.detach().double().numpy()  # [512, 384]
    d = learned.shape[1]
    mean_norm = np.sqrt((learned**2).sum(1)).mean()
    assert mean_norm == pytest.approx(0.474, abs=1e-3)
    assert np.sqrt(d / 2) == pytest.approx(13.856, abs=1e-3)
    t = model.trace(TEXT, positions="sinusoidal")
    n = t.n_tokens
    p, i2 = np.arange(n)[:, None], np.arange(0, d, 2)[None, :]
    pe = np.zeros((n, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(p / 10000 ** (i2 / d)), np.cos(p / 10000 ** (i2 / d))
    e = pe * mean_norm / np.sqrt(d / 2)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), mean_norm, rtol=1e-12)
    word = emb.word_embeddings.weight.detach().double().numpy()[t.token_ids]
    seg = emb.token_type_embeddings.weight.detach().double().numpy()[t.segments]
    x = word + seg + e
    x = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + emb.LayerNorm.eps)
    x = x * emb.LayerNorm.weight.detach().double().numpy() + emb.LayerNorm.bias.detach(
    ).double().numpy()
    np.testing.assert_allclose(t.embeddings, x, atol=1e-5)


@pytest.mark.parametrize("bad", [dict(positions="relative"), dict(window=-1), dict(window=1.5),
                                 dict(causal="yes")])
def test_impossible_options_fail_early(model, bad):
    with pytest.raises(ValueError):
        model.trace(TEXT, **bad)
    assert set(POSITION_MODES) == {"learned", "none", "sinusoidal", "shuffled"}


def test_long_input_is_truncated_and_reported(model):
    t = model.trace("saw " * 700)
    assert t.n_tokens == 512 and t.dropped == 702 - 512
    assert t.tokens[0] == "[CLS]" and t.tokens[-1] == "[SEP]"


def test_trace_is_deterministic(model):
    a, b = model.trace(TEXT), model.trace(TEXT)
    for name in ARRAY_FIELDS:
        assert np.array_equal(getattr(a, name), getattr(b, name))


def test_engine_attention_is_the_module_and_the_function_is_in_it():
    """`attnviz.engine.attention` names the submodule, as any submodule; the function every
    layer calls is `attnviz.engine.attention.attention`."""
    import types

    import attnviz.engine as engine
    from attnviz.engine import attention as module

    assert isinstance(module, types.ModuleType) and engine.attention is module
    assert module.attention is attention and callable(attention)


def test_a_trace_is_what_the_taught_attention_function_returns(model):
    """Each layer's weights, scores and outputs are attention() of its recorded Q, K, V (the
    trace's own numbers, bit for bit), and the layer's input gives those Q, K, V."""
    t = model.trace(TEXT, window=1)
    mask = torch.from_numpy(t.mask)
    for layer in range(model.n_layers):
        q, k, v = (torch.from_numpy(getattr(t, n)[layer]) for n in ("queries", "keys", "values"))
        outputs, weights, scores = attention(q, k, v, mask, t.scale)
        assert torch.equal(scores, torch.from_numpy(t.scores[layer]))
        assert torch.equal(weights, torch.from_numpy(t.weights[layer]))
        assert torch.equal(outputs, torch.from_numpy(t.outputs[layer]))


@pytest.mark.parametrize("n_words, opts", [(3, {}), (60, {"window": 2}), (200, {})])
def test_the_trace_keeps_the_scores_of_the_forward_pass(model, monkeypatch, n_words, opts):
    """A trace's scores are the very scores attention() computed inside the forward pass (on
    the projections' strided views), bit for bit, a plain field counted in its size."""
    from attnviz.engine import model as model_module

    seen = []

    def recording(*args, **kwargs):
        result = attention(*args, **kwargs)
        seen.append(result[2].clone())
        return result

    monkeypatch.setattr(model_module, "attention", recording)
    t = model.trace(" ".join(["saw", "I", "a"] * n_words)[: 6 * n_words], **opts)
    assert len(seen) == model.n_layers
    assert isinstance(t.scores, np.ndarray) and t.scores.dtype == np.float32
    assert t.scores.shape == t.weights.shape
    assert t.nbytes == sum(getattr(t, f).nbytes for f in (
        "token_ids", "segments", "position_ids", "embeddings", "queries", "keys", "values",
        "kv_heads", "scores", "weights", "outputs", "hidden_states", "mask"))
    for layer, scores in enumerate(seen):
        assert torch.equal(torch.from_numpy(t.scores[layer]), scores)


def test_last_hidden_of_a_batch_is_each_sequence_encoded_alone(model):
    """last_hidden: the last layer of encode(), for one sequence or a batch with one mask for
    all or a mask per sequence ([b, 1, n, n]: the context sweep's windows); autograd flows."""
    rng = np.random.default_rng(0)
    n = 11
    xs = torch.stack([model.embed([101, *rng.integers(1000, 30000, n - 2).tolist(), 102],
                                  [0] * n)[0] for _ in range(3)])  # [3, n, hidden]
    idx = torch.arange(n)
    masks = torch.stack([(idx[:, None] - idx[None, :]).abs() <= w for w in (0, 3, 7)])
    with torch.no_grad():
        for i in range(3):
            alone = model.encode(xs[i], masks[i], record=True).hidden_states[-1]
            assert torch.equal(model.last_hidden(xs[i], masks[i]), alone)
            batch = model.last_hidden(xs, masks[:, None])[i]
            np.testing.assert_allclose(batch.numpy(), alone.numpy(), rtol=0, atol=1e-5)
            shared = model.last_hidden(xs, masks[1])[i]
            np.testing.assert_allclose(
                shared.numpy(), model.last_hidden(xs[i], masks[1]).numpy(), rtol=0, atol=1e-5)
    x = xs[0].clone().requires_grad_(True)
    (g,) = torch.autograd.grad(model.last_hidden(x).sum(), x)
    assert g.shape == x.shape and torch.isfinite(g).all() and g.abs().sum() > 0
