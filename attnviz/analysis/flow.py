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
- layer l >= 2: only the source's own edges, the middle layers and the sink's own edges
  matter (the other outputs and inputs are dead ends): one graph of 2n + (l - 1) n^2 edges,
  built once, whose source and sink edges are overwritten per pair and solved with scipy's
  Dinic algorithm. Dinic takes integer capacities: each capacity is rounded to a multiple of
  2^-30, so a flow is exact up to (edges in its minimum cut) x 2^-31, far below the 1e-6 at
  which the values are compared with the authors' code in the tests.

Like rollout, flow ignores the values, the feed-forward blocks and LayerNorm.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .rollout import residual_attention

SCALE = 2**30  # capacities become integers c * SCALE (scipy's max-flow takes int32)
MAX_TOKENS = 128  # the longest input whose full flow matrix a page computes (see README)


def flow_graph(attention: np.ndarray, layer: int):
    """The graph of one (output, input) problem after `layer` >= 2, as a scipy CSR matrix with
    integer capacities round(c * SCALE), and its sink's number.

    Nodes: 0 = the source (the output token), then the middle boundaries layer, ..., 1
    (n nodes each), then the sink (the input token). The source's n edges (capacities Â_layer[i])
    come first in `.data` and the sink's n edges (Â_0[:, j]) last, so one graph serves every
    pair: max_flows overwrites those two slices. The middle edges never change.
    """
    import scipy.sparse as sp

    n = attention.shape[-1]
    sink = 1 + layer * n
    heads = [np.arange(1, n + 1)]  # source -> top middle boundary
    caps = [np.zeros(n)]
    for b in range(layer - 1):  # boundary layer - b -> layer - b - 1: capacities Â_{layer-1-b}
        heads.append(np.tile(1 + (b + 1) * n + np.arange(n), n))
        caps.append(attention[layer - 1 - b].ravel())
    heads.append(np.full(n, sink))  # boundary 1 -> the sink
    caps.append(np.zeros(n))
    counts = [n] + [n] * ((layer - 1) * n) + [1] * n + [0]  # edges per node, node by node
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    data = np.rint(np.concatenate(caps) * SCALE).astype(np.int32)
    return sp.csr_array((data, np.concatenate(heads).astype(np.int32), indptr),
                        shape=(sink + 1, sink + 1)), sink


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
    from scipy.sparse.csgraph import maximum_flow

    graph, sink = flow_graph(a, layer)
    sources = np.rint(a[layer] * SCALE).astype(np.int32)  # [i, k]
    sinks = np.rint(a[0].T * SCALE).astype(np.int32)  # [j, k]
    out = np.empty((n, n), dtype=np.float64)
    for i in range(n):
        graph.data[:n] = sources[i]
        for j in range(n):
            graph.data[-n:] = sinks[j]
            out[i, j] = maximum_flow(graph, 0, sink).flow_value
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
