"""RoPE (engine.rope) against its defining property and against transformers' Llama rotary."""

import math

import pytest
import torch

from attnviz.engine.rope import cos_sin, frequencies, rope, rotate, wavelengths


def test_a_turned_dot_product_depends_only_on_the_distance():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 64, generator=g, dtype=torch.float64)
    n = 40
    positions = torch.arange(n)
    qs = rope(q.expand(n, 64).clone(), positions)  # the same word at every position
    ks = rope(k.expand(n, 64).clone(), positions)
    scores = qs @ ks.T  # [m, n]: q at m, k at n
    for distance in range(-n + 1, n):
        diagonal = torch.diagonal(scores, offset=-distance)
        assert diagonal.max() - diagonal.min() < 1e-4 * scores.abs().max(), distance
    # ... and the score does change with the distance (the property is not a constant)
    assert abs(scores[10, 0] - scores[10, 9]).item() > 1e-3 * scores.abs().max().item()


def test_position_zero_is_not_turned_and_norms_are_kept():
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    y = rope(x, torch.arange(5))
    assert torch.equal(y[:, 0], x[:, 0])
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1), rtol=1e-6, atol=1e-6)


def test_a_two_dimensional_pair_is_a_plane_rotation():
    x = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    for m in (0, 1, 3, 7):
        y = rope(x, torch.tensor([m]), base=10000.0)  # d = 2: one pair, θ_0 = 1
        expected = torch.tensor([math.cos(m), math.sin(m)], dtype=torch.float64)
        torch.testing.assert_close(y[0], expected)


def test_frequencies_and_wavelengths_follow_the_formula():
    f = frequencies(64, base=10000.0)
    for i in (0, 5, 31):
        assert f[i].item() == pytest.approx(10000.0 ** (-2 * i / 64), rel=1e-6)
    assert wavelengths(f)[0].item() == pytest.approx(2 * math.pi)
    with pytest.raises(ValueError):
        frequencies(7)


def test_matches_transformers_llama_rotary():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    config = LlamaConfig(hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=4096, rope_theta=500000.0)
    hf = LlamaRotaryEmbedding(config)
    n, d = 2048, 16
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 4, n, d, generator=g), torch.randn(1, 2, n, d, generator=g)
    positions = torch.arange(n)
    cos_hf, sin_hf = hf(q, positions[None])
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos_hf, sin_hf)
    cos, sin = cos_sin(positions, frequencies(d, 500000.0))
    torch.testing.assert_close(rotate(q, cos, sin), q_hf, rtol=0, atol=1e-6)
    torch.testing.assert_close(rotate(k, cos, sin), k_hf, rtol=0, atol=1e-6)
