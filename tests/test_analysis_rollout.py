"""Attention rollout (Abnar & Zuidema 2020) against a hand-computed example and a loop."""

import numpy as np

from attnviz.analysis.rollout import residual_attention, rollout


def test_hand_computed_two_layers_two_tokens():
    # Layer 0: one head always looks at token 1; layer 1: heads disagree, mean is uniform.
    w0 = np.array([[[0.0, 1.0], [0.0, 1.0]]])  # [heads=1, 2, 2]
    w1 = np.array([[[1.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [0.0, 1.0]]])  # [2, 2, 2]
    weights = np.stack([np.repeat(w0, 2, axis=0), w1])  # [layers=2, heads=2, 2, 2]
    a0 = np.array([[0.5, 0.5], [0.0, 1.0]])  # (W + I) / 2
    a1 = np.array([[0.75, 0.25], [0.25, 0.75]])
    r = rollout(weights)
    np.testing.assert_allclose(r[0], a0, atol=1e-15)
    np.testing.assert_allclose(r[1], a1 @ a0, atol=1e-15)
    np.testing.assert_allclose(r[1], [[0.375, 0.625], [0.125, 0.875]], atol=1e-15)


def test_against_a_written_out_loop(model):
    t = model.trace("Attention is not explanation, but it is a start.")
    r = rollout(t.weights)
    n = t.n_tokens
    expected = np.eye(n)
    for layer in range(t.n_layers):
        a = t.weights[layer].astype(np.float64).mean(axis=0) + np.eye(n)
        a = a / a.sum(axis=1, keepdims=True)
        expected = a @ expected
        np.testing.assert_allclose(r[layer], expected, atol=1e-12)
    np.testing.assert_allclose(r.sum(axis=-1), 1.0, atol=1e-6)  # rows still sum to 1
    assert residual_attention(t.weights).shape == (t.n_layers, n, n)
