"""Attention weighted by the size of what it moves (Kobayashi et al. 2020, "Attention is Not
Only a Weight: Analyzing Transformers with Vector Norms").

A layer's attention output for token i is, before its bias b_O,

    y_i = sum_h sum_j  alpha^h_ij f^h(x_j),      f^h(x_j) = v^h_j W_O^h

with v^h_j = x_j W^V_h + b^V_h the head's value vector (Trace.values) and W_O^h the rows of
the output projection that multiply head h's slice of the concatenation (columns
h*d .. (h+1)*d - 1 of the torch weight `out_w` [hidden_out, hidden_in]). A weight alpha^h_ij is
only half the story: what token j contributes to token i is the vector alpha^h_ij f^h(x_j),
whose size is

    N^h_ij = || alpha^h_ij f^h(x_j) || = alpha^h_ij || f^h(x_j) ||          (alpha >= 0)

and, for the layer as a whole, N_ij = || sum_h alpha^h_ij f^h(x_j) ||.

Kobayashi et al. found that the large weights on [CLS], [SEP] and punctuation often carry
vectors of small norm: the head "parks" its attention there. To compare the two pictures, each
row of N is also shown as shares, N_ij / sum_k N_ik, beside the weights (which sum to 1).
A head's picture *changes* here when, for at least half of its queries, the key with the
largest norm is not the key with the largest weight.
"""

from __future__ import annotations

import numpy as np

from .common import special_mask


def output_projections(model) -> np.ndarray:
    """W_O of every layer as [layers, hidden_out, hidden_in] float64 (the torch Linear
    weights `Model.layers[l].out_w`)."""
    return np.stack([layer.out_w.detach().cpu().double().numpy() for layer in model.layers])


def transformed_values(values: np.ndarray, w_o: np.ndarray) -> np.ndarray:
    """f^h(x_j) = v^h_j W_O^h for values [L, H, n, d] and W_O [L, hidden, H*d]:
    [L, H, n, hidden] (float64)."""
    v = np.asarray(values, dtype=np.float64)
    L, H, n, d = v.shape
    w = np.asarray(w_o, dtype=np.float64).reshape(L, -1, H, d)  # [L, out, H, d]
    return np.einsum("lhjd,lohd->lhjo", v, w)  # [L, H, n, hidden]


def value_norms(values: np.ndarray, w_o: np.ndarray) -> np.ndarray:
    """|| f^h(x_j) ||: [L, H, n]."""
    return np.linalg.norm(transformed_values(values, w_o), axis=-1)


def weighted_norms(weights: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """N^h_ij = alpha^h_ij || f^h(x_j) || for weights [L, H, n, n], norms [L, H, n]."""
    return np.asarray(weights, dtype=np.float64) * np.asarray(norms, np.float64)[..., None, :]


def layer_norms(weights: np.ndarray, values: np.ndarray, w_o: np.ndarray) -> np.ndarray:
    """N_ij = || sum_h alpha^h_ij f^h(x_j) ||: [L, n, n], through the heads' Gram matrices
    G_j[h, h'] = f^h(x_j) . f^h'(x_j), N_ij^2 = sum_h,h' alpha^h_ij alpha^h'_ij G_j[h, h']
    (never the [n, n, hidden] array of the vectors themselves)."""
    f = transformed_values(values, w_o)  # [L, H, n, hidden]
    gram = np.einsum("lhjo,lkjo->ljhk", f, f)  # [L, n, H, H]
    w = np.asarray(weights, np.float64)  # [L, H, n, n]
    squared = np.einsum("lhij,ljhk,lkij->lij", w, gram, w, optimize=True)  # [L, n, n]
    return np.sqrt(np.maximum(squared, 0.0))


def row_shares(matrix: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (rows of zeros stay zero)."""
    m = np.asarray(matrix, dtype=np.float64)
    total = m.sum(axis=-1, keepdims=True)
    return np.divide(m, total, out=np.zeros_like(m), where=total > 0)


def top_key_changes(weights: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """Share of queries whose largest-norm key differs from their largest-weight key,
    weights and norms [..., n, n] -> [...]."""
    return (np.argmax(weights, axis=-1) != np.argmax(norms, axis=-1)).mean(axis=-1)


def special_shares(matrix: np.ndarray, tokens: list[str]) -> np.ndarray:
    """Mean over queries of the row share on [CLS]/[SEP] (rows normalised first): [...]."""
    return (row_shares(matrix) * special_mask(tokens)).sum(axis=-1).mean(axis=-1)


def comparison(weights: np.ndarray, vnorms: np.ndarray, tokens: list[str]) -> dict[str,
                                                                                np.ndarray]:
    """Per head [L, H], from weights [L, H, n, n] and value norms ||f^h(x_j)|| [L, H, n]:
    'special_weight' and 'special_norm' (mean share on [CLS]/[SEP] under each picture),
    'top_changes' (top_key_changes) and 'changed' (top_changes >= 1/2). One layer at a time,
    so a 512-token input never holds all the heads' norms at once."""
    rows: dict[str, list] = {"special_weight": [], "special_norm": [], "top_changes": []}
    for layer in range(len(weights)):
        w = np.asarray(weights[layer], dtype=np.float64)  # [H, n, n]
        n = weighted_norms(w, vnorms[layer])
        rows["special_weight"].append(special_shares(w, tokens))
        rows["special_norm"].append(special_shares(n, tokens))
        rows["top_changes"].append(top_key_changes(w, n))
    out = {k: np.stack(v) for k, v in rows.items()}
    out["changed"] = out["top_changes"] >= 0.5
    return out
