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
layered DAG, which gives two closed forms, a bound-and-certify pass and a small, fixed graph
for the rest:
- layer 0 (one edge per path):      F_0[i, j] = Â_0[i, j]
- layer 1 (paths i -> k -> j, each through its own middle node):
                                    F_1[i, j] = sum_k min(Â_1[i, k], Â_0[k, j])
- layer l >= 2: only the source's own edges, the middle layers and the sink's own edges
  matter (the other outputs and inputs are dead ends). Capacities become integers: each row of
  Â is rounded to multiples of 2^-30 that sum to exactly 1 (largest remainders), so a capacity
  moves by less than 2^-30 and every max-flow below is exact on the rounded graph.
- Upper bound: F[i, j] <= U[i, j] = min(1, c_j), the source's out-capacity (its row sums to 1)
  and the sink's in-capacity c_j = sum_k Â_0[k, j].
- Lower bound (certify, layer l >= 3): cut the graph at a middle boundary b = l // 2 + 1 and
  pick a vector w over that boundary's nodes (sum 1: the mean of the sinks' demand pulled up to
  b in proportion to the capacities, and its mix with the mean of the sources' rollout down to
  b). One max-flow per output i into w (capped by w) gives y_i, delivered at b; one per input j
  out of w gives x_j, absorbed by j. Both are feasible flows on disjoint edge sets, and any
  smaller vector is still feasible, so min(y_i, x_j) joins them into a flow from i to j:

        F[i, j] >= L[i, j] = max over w of sum_k min(y_i[k], x_j[k])

  2n small max-flows per w bound all n^2 pairs. Where L[i, j] = U[i, j] (as integers) the bounds
  meet and F[i, j] = U[i, j] exactly; no max-flow is solved for that pair.
- The other pairs (and every pair at l = 2): one graph of 2n + (l - 1) n^2 edges, built once,
  whose source and sink edges are overwritten per pair and solved with scipy's Dinic algorithm.
- From PARALLEL_PAIRS pairs on, the bounds' small max-flows and the per-pair ones run in one
  worker process per core (analysis.flow_workers: scipy holds the GIL, so threads would not
  help). The results are the same wherever a max-flow is solved.

Like rollout, flow ignores the values, the feed-forward blocks and LayerNorm.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attnviz.i18n import _

from .flow_workers import (
    default_workers,
    solve_batch,
    solve_batches_in_workers,
    solve_in_workers,
    solve_values,
)
from .rollout import residual_attention

SCALE = 2**30  # capacities become integers: each row of Â sums to exactly SCALE
MAX_TOKENS = 128  # the longest input whose full flow matrix a page computes (bench_flow)
MIXES = (0.1, 0.2)  # candidate middle vectors w: (1 - mix) * sinks' demand + mix * rollout
PARALLEL_PAIRS = 512  # n² below this: solved in-process (a job's round trip costs more)


@dataclass
class FlowStats:
    """How one flow matrix was computed: pairs certified by the bounds, pairs solved, times."""

    pairs: int = 0
    certified: int = 0  # pairs whose lower bound met the upper bound (no per-pair max-flow)
    solved: int = 0  # pairs given one full max-flow each
    bound_flows: int = 0  # the small max-flows of the lower-bound pass
    bound_seconds: float = 0.0
    solver_seconds: float = 0.0
    workers: int = 1  # worker processes asked to solve the pairs (1: none, all in this process)
    solved_in_workers: int = 0  # of `solved`, the pairs a worker process answered


def integer_capacities(attention: np.ndarray) -> np.ndarray:
    """Â [..., n, n] -> integer capacities [..., n, n] (int64): each row rounded to integers
    summing to exactly SCALE (floor, then +1 on the largest remainders), |c - Â SCALE| < 1."""
    x = np.asarray(attention, dtype=np.float64) * SCALE
    base = np.floor(x)
    missing = np.rint(x.sum(axis=-1) - base.sum(axis=-1)).astype(np.int64)  # [...]: 0..n
    rank = np.argsort(np.argsort(base - x, axis=-1, kind="stable"), axis=-1, kind="stable")
    return base.astype(np.int64) + (rank < missing[..., None])


def chain_graph(transitions: list[np.ndarray]):
    """A layered graph as a scipy CSR matrix with zero source and sink edges, and its sink.

    Nodes: 0 = the source, then len(transitions) + 1 boundaries of n nodes, then the sink.
    transitions: integer capacities [n, n], top boundary first; edge (boundary b, p) ->
    (boundary b + 1, q) has capacity transitions[b][p, q]. The source's n edges come first in
    `.data` and the sink's n edges last, so one graph serves every pair: solve overwrites them.
    """
    import scipy.sparse as sp

    n = transitions[0].shape[0]
    levels = len(transitions) + 1
    sink = 1 + levels * n
    heads = [np.arange(1, n + 1)]  # source -> top boundary
    caps = [np.zeros(n, dtype=np.int64)]
    for b, c in enumerate(transitions):
        heads.append(np.tile(1 + (b + 1) * n + np.arange(n), n))
        caps.append(np.asarray(c, dtype=np.int64).ravel())
    heads.append(np.full(n, sink))  # bottom boundary -> the sink
    caps.append(np.zeros(n, dtype=np.int64))
    counts = [n] + [n] * (len(transitions) * n) + [1] * n + [0]  # edges per node, in order
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    data = np.concatenate(caps).astype(np.int32)
    return sp.csr_array((data, np.concatenate(heads).astype(np.int32), indptr),
                        shape=(sink + 1, sink + 1)), sink


def middle_vectors(a: np.ndarray, layer: int, b: int) -> list[np.ndarray]:
    """The candidate vectors w over boundary b (float, each sums to 1), one per MIXES entry.

    demand: each sink's in-edges Â_0[:, j] pulled up to b, each node taking from its in-edges
    in proportion to their capacities, D_{l+1}[m] = sum_k Â_l[m, k] D_l[k] / sum_r Â_l[r, k];
    rollout: each source's row pushed down to b, R = Â_layer[i] Â_{layer-1} ... Â_b.
    """
    demand = a[0].T  # [j, k] at boundary 1
    for lay in range(1, b):
        demand = (demand / a[lay].sum(axis=0)) @ a[lay].T
    demand = demand / demand.sum(axis=1, keepdims=True)
    push = a[layer]
    for lay in range(layer - 1, b - 1, -1):
        push = push @ a[lay]
    return [(1 - mix) * demand.mean(axis=0) + mix * push.mean(axis=0) for mix in MIXES]


def lower_bounds(cap: np.ndarray, a: np.ndarray, layer: int, stats: FlowStats,
                 tick: Callable[[int], None] | None = None, workers: int = 1) -> np.ndarray:
    """L[i, j] (integers [n, n]): flows from output i to input j built from two halves that
    meet at boundary b through a common vector w (see the module docstring). tick(count) is
    called as the small max-flows finish; workers > 1: they run in that many processes."""
    b = layer // 2 + 1
    top, top_sink = chain_graph([cap[lay] for lay in range(layer - 1, b - 1, -1)])
    bottom, bottom_sink = chain_graph([cap[lay] for lay in range(b - 1, 0, -1)])
    n = cap.shape[-1]
    batches = []  # per w: the outputs' top halves into w, then w into the inputs' bottom halves
    for w in middle_vectors(a, layer, b):
        w = np.tile(integer_capacities(w[None]), (n, 1))  # [n, n]: the same w for every pair
        batches.append((top, top_sink, cap[layer], w, "into_sink"))  # -> delivered [i, k]
        batches.append((bottom, bottom_sink, w, cap[0].T, "out_of_source"))  # -> absorbed [j, k]
    results = [np.zeros((n, n), dtype=np.int64) for _ in batches]
    if workers > 1:
        done = solve_batches_in_workers(batches, workers)
    else:
        done = ((k, part, solve_batch(g, sink, src[part], snk[part], want), False)
                for k, (g, sink, src, snk, want) in enumerate(batches)
                for part in (slice(s, s + 8) for s in range(0, n, 8)))
    try:
        for k, part, result, _ in done:
            results[k][part] = result
            if tick is not None:
                tick(len(result))
    finally:
        if workers > 1:
            done.close()
    stats.bound_flows += len(batches) * n
    best = np.zeros((n, n), dtype=np.int64)
    for delivered, absorbed in zip(results[::2], results[1::2], strict=True):
        best = np.maximum(best, np.minimum(delivered[:, None, :], absorbed[None, :, :]).sum(-1))
    return best


def max_flows_stats(attention: np.ndarray, layer: int,
                    progress: Callable[[float, str], None] | None = None,
                    certify: bool = True,
                    workers: int | None = None) -> tuple[np.ndarray, FlowStats]:
    """F_layer[i, j] (the maximum flow from output i after `layer` to input j, [n, n] float64)
    and how it was computed. `progress(fraction, message)` is called as the work advances;
    certify=False skips the bounds and solves every pair (the same values, for comparison).
    workers: processes for the per-pair max-flows (default: flow_workers.default_workers(),
    used from PARALLEL_PAIRS pairs on; 1: in this process)."""
    a = np.asarray(attention, dtype=np.float64)
    n = a.shape[-1]
    stats = FlowStats(pairs=n * n)
    if layer == 0:
        return a[0].copy(), stats
    if layer == 1:
        return np.minimum(a[1][:, :, None], a[0][None, :, :]).sum(axis=1), stats  # [i, k, j]
    cap = integer_capacities(a[: layer + 1])  # [layer + 1, n, n], rows sum to SCALE
    upper = np.minimum(cap[layer].sum(axis=1)[:, None], cap[0].sum(axis=0)[None, :])  # [i, j]
    t0 = time.perf_counter()
    out = np.zeros((n, n), dtype=np.int64)
    todo = np.ones((n, n), dtype=bool)
    certify = certify and layer >= 3
    if workers is None:
        workers = default_workers() if n * n >= PARALLEL_PAIRS else 1
    if certify:
        bound_units = 2 * n * len(MIXES)
        done = [0]

        def tick(count: int) -> None:
            done[0] += count
            if progress is not None:
                progress(0.1 * done[0] / bound_units, _("bounding every pair"))

        lower = lower_bounds(cap, a, layer, stats, tick, workers)
        certified = lower == upper
        out[certified] = upper[certified]
        todo = ~certified
        stats.certified = int(certified.sum())
    stats.bound_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph, sink = chain_graph([cap[lay] for lay in range(layer - 1, 0, -1)])
    pairs = np.argwhere(todo)  # [m, 2]: (output i, input j)
    sources = cap[layer][pairs[:, 0]]  # [m, n]: the output's edges
    sinks = cap[0].T[pairs[:, 1]]  # [m, n]: the input's edges
    start = 0.1 if certify else 0.0
    if workers > 1 and len(pairs) > 0:
        stats.workers = workers
        results = solve_in_workers(graph, sink, sources, sinks, workers)
    else:
        results = ((part, solve_values(graph, sink, sources[part], sinks[part]), False)
                   for part in (slice(s, s + n) for s in range(0, len(pairs), n)))
    done = 0
    try:
        for part, values, in_worker in results:
            out[pairs[part, 0], pairs[part, 1]] = values
            done += len(values)
            stats.solved_in_workers += len(values) if in_worker else 0
            if progress is not None:  # may raise (a page rerun): the jobs not started are dropped
                progress(start + (1 - start) * done / len(pairs),
                         _("max-flow {done:,} of {todo:,} ({certified:,} of {pairs:,} pairs "
                           "certified by the bounds)").format(
                             done=done, todo=len(pairs), certified=stats.certified,
                             pairs=stats.pairs))
    finally:
        results.close()
    stats.solved = len(pairs)
    stats.solver_seconds = time.perf_counter() - t0
    if progress is not None:
        progress(1.0, _("done"))
    return out / SCALE, stats


def max_flows(attention: np.ndarray, layer: int,
              progress: Callable[[float, str], None] | None = None) -> np.ndarray:
    """F_layer[i, j]: the maximum flow from output i after `layer` to input j, [n, n] float64.

    attention: Â [L, n, n]. Unnormalised (a row sums to more than 1: each input is asked for
    the whole of the output's flow on its own). `progress(fraction, message)` is called as the
    work advances.
    """
    return max_flows_stats(attention, layer, progress)[0]


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
