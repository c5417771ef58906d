"""Value-norm weighting (Kobayashi et al. 2020) against the formula written out per head and
per pair, and the decomposition y_i = sum_h sum_j alpha_ij f^h(x_j) against Hugging Face's
eager BertModel (the input of each layer's attention output projection, hooked)."""

import numpy as np
import pytest
import torch

from attnviz.analysis.norms import (
    comparison,
    layer_norms,
    output_projections,
    row_shares,
    transformed_values,
    value_norms,
    weighted_norms,
)

TEXTS = ["I saw a saw", "The cat sat on the mat, and the dog slept. Then it rained."]


@pytest.mark.parametrize("text", TEXTS)
def test_weighted_norms_against_the_formula(model, text):
    t = model.trace(text)
    w_o = output_projections(model)
    norms = weighted_norms(t.weights, value_norms(t.values, w_o))
    d = t.head_dim
    for layer, head, i, j in [(0, 0, 1, 2), (2, 5, 0, t.n_tokens - 1), (5, 11, 3, 1)]:
        w_slice = model.layers[layer].out_w[:, head * d:(head + 1) * d].double().numpy()
        f = w_slice @ t.values[layer, head, j].astype(np.float64)  # [hidden] = W_O^h v_j
        expected = np.sqrt(((t.weights[layer, head, i, j] * f) ** 2).sum())
        assert norms[layer, head, i, j] == pytest.approx(expected, rel=1e-10, abs=1e-14)
    layer = 3
    f = transformed_values(t.values, w_o)[layer]  # [H, n, hidden]
    i = 1
    for j in range(t.n_tokens):
        vec = sum(float(t.weights[layer, h, i, j]) * f[h, j] for h in range(t.n_heads))
        assert layer_norms(t.weights, t.values, w_o)[layer, i, j] == pytest.approx(
            np.linalg.norm(vec), rel=1e-10)


def test_decomposition_matches_hugging_face(model, hf_model):
    """sum_h sum_j alpha^h_ij f^h(x_j) is what HF's attention.output.dense receives times W_O."""
    text = TEXTS[1]
    t = model.trace(text)
    captured = {}
    hooks = [layer.attention.output.dense.register_forward_hook(
        lambda mod, args, out, li=li: captured.__setitem__(li, out - mod.bias))
        for li, layer in enumerate(hf_model.encoder.layer)]
    try:
        ids = torch.tensor([t.token_ids.tolist()])
        with torch.no_grad():
            hf_model(input_ids=ids, attention_mask=torch.ones_like(ids))
    finally:
        for h in hooks:
            h.remove()
    f = transformed_values(t.values, output_projections(model))  # [L, H, n, hidden]
    ours = np.einsum("lhij,lhjo->lio", t.weights.astype(np.float64), f)
    for layer in range(t.n_layers):
        np.testing.assert_allclose(ours[layer], captured[layer][0].double().numpy(), atol=2e-5)


def test_comparison_against_loops(model):
    t = model.trace(TEXTS[1])
    vn = value_norms(t.values, output_projections(model))
    norms = weighted_norms(t.weights, vn)
    c = comparison(t.weights, vn, t.tokens)
    special = [0, t.n_tokens - 1]
    for layer, head in [(0, 3), (4, 7)]:
        w, nm = t.weights[layer, head].astype(np.float64), norms[layer, head]
        shares = nm / nm.sum(axis=1, keepdims=True)
        assert c["special_weight"][layer, head] == pytest.approx(w[:, special].sum(1).mean())
        assert c["special_norm"][layer, head] == pytest.approx(shares[:, special].sum(1).mean())
        changed = np.mean([w[i].argmax() != nm[i].argmax() for i in range(t.n_tokens)])
        assert c["top_changes"][layer, head] == pytest.approx(changed)
        assert c["changed"][layer, head] == (changed >= 0.5)
    np.testing.assert_allclose(row_shares(norms).sum(-1), 1.0, atol=1e-12)


def test_kobayashi_finding_on_a_sentence(model):
    """Their finding, measured here: the weight on [CLS]/[SEP] carries far less norm."""
    t = model.trace(TEXTS[1])
    c = comparison(t.weights, value_norms(t.values, output_projections(model)), t.tokens)
    assert c["special_norm"].mean() < 0.5 * c["special_weight"].mean()
