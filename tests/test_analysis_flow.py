"""Attention flow against the authors' formulation, written out here with networkx: one
Edmonds-Karp max-flow per (output, input) pair on the layered attention graph, each output's
row divided by its sum (Abnar & Zuidema 2020, samiraabnar/attention_flow)."""

import networkx as nx
import numpy as np
import pytest

from attnviz.analysis.flow import attention_flow, max_flows, normalise_rows
from attnviz.analysis.rollout import residual_attention


def networkx_flow(weights: np.ndarray, layer: int) -> np.ndarray:
    """Their get_adjmat + compute_flows: heads averaged, identity added, rows renormalised;
    edge (l+1, i) -> (l, k) with capacity A_l[i, k]; flow from each output to each input."""
    att = weights.astype(np.float64).mean(axis=1)
    att = att + np.eye(att.shape[-1])[None]
    att = att / att.sum(axis=-1)[..., None]
    n = att.shape[-1]
    g = nx.DiGraph()
    for lay in range(layer + 1):
        for i in range(n):
            for k in range(n):
                g.add_edge((lay + 1, i), (lay, k), capacity=float(att[lay, i, k]))
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = nx.maximum_flow_value(g, (layer + 1, i), (0, j),
                                              flow_func=nx.algorithms.flow.edmonds_karp)
        out[i] /= out[i].sum()
    return out


def test_every_layer_of_a_sentence(model):
    t = model.trace("I saw a saw")
    for layer in range(t.n_layers):
        np.testing.assert_allclose(attention_flow(t.weights, layer),
                                   networkx_flow(t.weights, layer), atol=1e-6, rtol=0)


def test_a_sentence_pair_last_layer(model):
    t = model.trace("I saw a saw", "It cut wood")
    ours = attention_flow(t.weights)
    np.testing.assert_allclose(ours, networkx_flow(t.weights, t.n_layers - 1), atol=1e-6, rtol=0)
    np.testing.assert_allclose(ours.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.slow
def test_a_paragraph(model):
    t = model.trace("The saw was old. She cut the wood with it, slowly.")
    np.testing.assert_allclose(attention_flow(t.weights, 3), networkx_flow(t.weights, 3),
                               atol=1e-6, rtol=0)


def test_hand_computed_two_layers():
    # Two tokens, two layers, one head each. Â_0 = [[.5, .5], [0, 1]], Â_1 = [[1, 0], [.5, .5]].
    w0 = np.array([[0.0, 1.0], [0.0, 1.0]])
    w1 = np.array([[1.0, 0.0], [1.0, 0.0]])
    weights = np.stack([w0[None], w1[None]])  # [2, 1, 2, 2]
    a = residual_attention(weights)
    np.testing.assert_allclose(a[1], [[1.0, 0.0], [0.5, 0.5]])
    # output 1 -> input 0: paths 1->0->0 (min(.5, .5)) and 1->1->0 (min(.5, 0)) = 0.5
    # output 1 -> input 1: 1->0->1 (min(.5, .5)) + 1->1->1 (min(.5, 1)) = 1.0
    # output 0 -> input 0: 0->0->0 min(1, .5) = .5;  0 -> 1: 0->0->1 min(1, .5) = .5
    np.testing.assert_allclose(max_flows(a, 1), [[0.5, 0.5], [0.5, 1.0]], atol=1e-15)
    np.testing.assert_allclose(attention_flow(weights), [[0.5, 0.5], [1 / 3, 2 / 3]])


def test_random_attention_deeper_layers():
    # Peaked random attention (Dirichlet 0.3) where paths compete for the same narrow edges.
    rng = np.random.default_rng(3)
    w = rng.dirichlet(np.full(5, 0.3), size=(4, 2, 5))  # [layers, heads, n, n]
    for layer in (2, 3):
        np.testing.assert_allclose(attention_flow(w, layer), networkx_flow(w, layer),
                                   atol=1e-6, rtol=0)


def test_bad_layer_and_zero_rows():
    with pytest.raises(ValueError, match="layer"):
        attention_flow(np.full((2, 1, 3, 3), 1 / 3), 2)
    np.testing.assert_array_equal(normalise_rows(np.zeros((2, 2))), np.zeros((2, 2)))
