"""Attention flow (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").

The attention graph has one node per (layer boundary l, token i), l = 0 (the input tokens)
to L (the last layer's outputs). Each layer's heads are averaged and the residual connection
added, as in rollout (analysis.rollout.residual_attention):

    Â_l = (mean_h W_l,h + I) / 2          rows sum to 1

and node (l + 1, i) has an edge to node (l, k) of capacity Â_l[i, k]. The flow from input token
j into output token i after layer l is the maximum flow from node (l + 1, i) to node (0, j):

    F_l[i, j] = maxflow((l + 1, i) -> (0, j)),     flow_l[i, j] = F_l[i, j] / sum_k F_l[i, k]

(each output's row normalised to sum to 1, as the authors' code does). Where rollout multiplies
the layers (every path's weights multiplied, then summed), flow treats the weights as pipe
capacities: a path carries at most its narrowest edge, and paths compete for shared edges.

The authors solve one networkx Edmonds-Karp max-flow per (output, input) pair. The graph is a
layered DAG, which gives two closed forms and a small, fixed graph for the rest:
- layer 0 (one edge per path):      F_0[i, j] = Â_0[i, j]
- layer 1 (paths i -> k -> j, each through its own middle node):
                                    F_1[i, j] = sum_k min(Â_1[i, k], Â_0[k, j])
- layer l >= 2: a max-flow on the l + 2 layers of the graph, built once per layer and solved
  per pair with scipy's Dinic algorithm, which takes integer capacities: each capacity is
  rounded to a multiple of 2^-30, so a flow is exact up to (edges in its minimum cut) x 2^-31,
  far below the 1e-6 at which the values are compared with the authors' code in the tests.

Like rollout, flow ignores the values, the feed-forward blocks and LayerNorm.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .rollout import residual_attention

SCALE = 2**30  # capacities become integers c * SCALE (scipy's max-flow takes int32)
MAX_TOKENS = 128  # the longest input whose full flow matrix a page computes (see README)


def flow_graph(attention: np.ndarray, layer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The attention graph up to the outputs of `layer`, as integer-capacity edges.

    attention: Â [L, n, n] (residual_attention). Nodes are numbered l * n + i for boundary l
    = 0..layer + 1 and token i. Returns (tails, heads, capacities) of the edges
    (l + 1, i) -> (l, k) with capacity round(Â_l[i, k] * SCALE).
    """
    n = attention.shape[-1]
    tails, heads, caps = [], [], []
    i, k = np.divmod(np.arange(n * n), n)
    for lay in range(layer + 1):
        tails.append((lay + 1) * n + i)
        heads.append(lay * n + k)
        caps.append(np.rint(attention[lay].ravel() * SCALE).astype(np.int64))
    return np.concatenate(tails), np.concatenate(heads), np.concatenate(caps)


def max_flows(attention: np.ndarray, layer: int,
              progress: Callable[[float, str], None] | None = None) -> np.ndarray:
    """F_layer[i, j]: the maximum flow from output i after `layer` to input j, [n, n] float64.

    attention: Â [L, n, n]. Unnormalised (a row sums to more than 1: each input is asked for
    the whole of the output's flow on its own). `progress(fraction, message)` is called per
    output token for the max-flow layers.
    """
    a = np.asarray(attention, dtype=np.float64)
    n = a.shape[-1]
    if layer == 0:
        return a[0].copy()
    if layer == 1:
        return np.minimum(a[1][:, :, None], a[0][None, :, :]).sum(axis=1)  # [i, k, j] -> [i, j]
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_flow

    tails, heads, caps = flow_graph(a, layer)
    size = (layer + 2) * n
    graph = sp.csr_array((caps.astype(np.int32), (tails, heads)), shape=(size, size))
    top = (layer + 1) * n
    out = np.empty((n, n), dtype=np.float64)
    for i in range(n):
        for j in range(n):
            out[i, j] = maximum_flow(graph, top + i, j).flow_value
        if progress is not None:
            progress((i + 1) / n, f"output token {i + 1} of {n}")
    return out / SCALE


def normalise_rows(flows: np.ndarray) -> np.ndarray:
    """Each output's flows divided by their sum: flow[i, j] = F[i, j] / sum_k F[i, k]."""
    f = np.asarray(flows, dtype=np.float64)
    total = f.sum(axis=-1, keepdims=True)
    return np.divide(f, total, out=np.zeros_like(f), where=total > 0)


def attention_flow(weights: np.ndarray, layer: int | None = None,
                   progress: Callable[[float, str], None] | None = None) -> np.ndarray:
    """flow_layer [n, n] from weights [layers, heads, n, n]: rows = outputs after `layer`
    (default: the last), columns = input tokens; each row sums to 1 (float64)."""
    a = residual_attention(weights)  # [L, n, n]
    layer = a.shape[0] - 1 if layer is None else int(layer)
    if not 0 <= layer < a.shape[0]:
        raise ValueError(f"layer must lie in 0..{a.shape[0] - 1}; got {layer}")
    return normalise_rows(max_flows(a, layer, progress))
