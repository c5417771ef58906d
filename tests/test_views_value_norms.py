"""views.value_norms without Streamlit: the summary, the per-head maps and one head's maps,
against ||alpha_ij v_j W_O^h|| written out here from the trace and the model's weights."""

import numpy as np
import pytest

from attnviz.analysis import norms
from attnviz.export.html import Metric
from attnviz.views import value_norms as view
from tests.test_views_common import decode, heatmaps

TEXT = "The cat sat on the mat, and the dog slept."


@pytest.fixture(scope="module")
def t(model):
    return model.trace(TEXT)


def f_norms(model, t) -> np.ndarray:
    """||v_j W_O^h|| [L, H, n]: each head's value through its columns of the output
    projection, written out one layer and head at a time."""
    out = np.zeros(t.values.shape[:3])
    for layer in range(t.n_layers):
        w_o = model.layers[layer].out_w.detach().double().numpy()  # [hidden, H * d]
        for h in range(t.n_heads):
            cols = w_o[:, h * t.head_dim:(h + 1) * t.head_dim]
            out[layer, h] = np.linalg.norm(t.values[layer, h].astype(np.float64) @ cols.T,
                                           axis=-1)
    return out


def test_page_against_the_formula(model, t):
    vn = f_norms(model, t)
    blocks = view.page(model, t, layer=2, head=7)
    kinds = [type(b).__name__ for b in blocks]
    assert kinds == ["Heading", "Markdown", "Metric", "Markdown", "Figure", "Figure",
                     "Markdown", "Numbers"]
    nb = view.numbers_of(model, t)
    np.testing.assert_allclose(nb["value_norms"], vn, rtol=1e-9)
    metric: Metric = blocks[2]
    changed = int(nb["changed"].sum())
    assert metric.value == f"{changed} of 72 ({changed / 72:.0%})"
    for tr in heatmaps(blocks[4]):
        np.testing.assert_allclose(decode(tr["z"]), nb[tr["name"]], atol=1e-12)
    maps = heatmaps(blocks[5])
    w = t.weights[2, 7].astype(np.float64)
    np.testing.assert_allclose(decode(maps[0]["z"]), w, atol=1e-7)
    shares = w * vn[2, 7][None, :]
    np.testing.assert_allclose(decode(maps[1]["z"]), shares / shares.sum(-1, keepdims=True),
                               atol=1e-6)
    whole = norms.layer_norms(t.weights, t.values, norms.output_projections(model))[2]
    np.testing.assert_allclose(decode(maps[2]["z"]), norms.row_shares(whole), atol=1e-6)
    got = blocks[-1].make()
    assert int(got["layer"]) == 2 and int(got["head"]) == 7
    np.testing.assert_allclose(got["norm_shares_layer"], norms.row_shares(whole), atol=1e-12)


def test_layer_norms_is_the_norm_of_the_heads_sum(model, t):
    """One query's row written out: || sum_h alpha^h_ij f^h(x_j) ||."""
    layer, i = 1, 3
    w_o = model.layers[layer].out_w.detach().double().numpy()
    f = np.stack([t.values[layer, h].astype(np.float64)
                  @ w_o[:, h * t.head_dim:(h + 1) * t.head_dim].T for h in range(t.n_heads)])
    ref = np.linalg.norm((t.weights[layer, :, i, :, None] * f).sum(0), axis=-1)  # [n]
    np.testing.assert_allclose(view.layer_norms(model, t, layer)[i], ref, rtol=1e-6)


def test_word_level_merges_pieces(model):
    from attnviz.analysis.words import word_attention, word_groups

    t = model.trace("Transformers use embeddings.")
    maps = view.head_maps(t, view.numbers_of(model, t), view.layer_norms(model, t, 0), 0, 0)
    weights = heatmaps(view.maps_figure(t, maps, 0, 0, True))[0]
    groups = word_groups(t.word_pieces)
    assert len(weights["x"]) == len(groups) < t.n_tokens  # pieces really merged
    np.testing.assert_allclose(decode(weights["z"]), word_attention(maps[0], groups),
                               atol=1e-12)
