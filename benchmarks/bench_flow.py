"""Attention flow: attnviz's max-flows against the authors' formulation (networkx Edmonds-Karp,
one max-flow per (output, input) pair), on the same inputs: the bundled model's attention for a
text cut to 17 and 32 tokens (64 and 128 on the command line), the last layer's n x n flow
matrix.

attnviz is timed three ways: the default (the bound-and-certify pass, then the per-pair
max-flows left, both in one worker process per core, flow_workers.default_workers(), from
flow.PARALLEL_PAIRS pairs on), the same in this process only (workers=1) and solving every pair
in this process (certify=False, workers=1: no bounds), with the split: the
bounds' small max-flows, the pairs they certify, the per-pair max-flows left. The workers are
started (and timed) once before the table, as a server keeps them. CPU: this process's CPU
time, for the default plus the workers' (from /proc). networkx runs the whole matrix at 17
tokens; beyond, it runs a sample of pairs (8; 2 at 128 tokens) and the full time is extrapolated
(marked "~"). Values are compared where both ran (max |difference| of the row-normalised flows,
or raw on the sample). `python -m benchmarks.bench_flow 64 128` runs those sizes.
"""

from __future__ import annotations

import random
import sys
import time

import networkx as nx
import numpy as np
import scipy.sparse.csgraph  # noqa: F401  (imported before any timing)

import attnviz
from attnviz.analysis import flow_workers
from attnviz.analysis.flow import max_flows_stats, normalise_rows
from attnviz.analysis.rollout import residual_attention, rollout

from .report import Table, show

QUICK_SIZES = (17, 32)  # make bench's sizes; 64 and 128 on the command line
COST = ("networkx's flow on 17 and 32 tokens (on 64 and 128, even on a sample of pairs, more "
        "than ten minutes on a shared 2-core machine: `python -m benchmarks.bench_flow 64 128`).")
TEXT = ("The quick brown fox jumps over the lazy dog while the old cat watches from the wooden "
        "fence, and the farmer, tired after a long day in the fields, walks slowly home. ") * 8


def nx_graph(a: np.ndarray, layer: int) -> nx.DiGraph:
    n = a.shape[-1]
    g = nx.DiGraph()
    for lay in range(layer + 1):
        for i in range(n):
            for k in range(n):
                g.add_edge((lay + 1, i), (lay, k), capacity=float(a[lay, i, k]))
    return g


def nx_flow(g: nx.DiGraph, layer: int, i: int, j: int) -> float:
    return nx.maximum_flow_value(g, (layer + 1, i), (0, j),
                                 flow_func=nx.algorithms.flow.edmonds_karp)


def main() -> list[Table]:
    workers = flow_workers.default_workers()
    model = attnviz.load_model(device="cpu")
    ids, _, _ = model.tokenize(TEXT)
    rng = random.Random(0)
    # A server keeps its workers: start them all and give each work once before timing (24
    # tokens: 576 pairs, past flow.PARALLEL_PAIRS, so the pairs are spread over the workers).
    warm = residual_attention(np.random.default_rng(0).dirichlet(np.ones(24), size=(4, 1, 24)))
    t0 = time.perf_counter()
    flow_workers.prestart(workers)
    max_flows_stats(warm, 3, workers=workers)
    started = (f"{flow_workers.running_workers()} flow workers, started in "
               f"{time.perf_counter() - t0:.2f} s")
    table = Table(["tokens", "attnviz (s)", "CPU, with the workers' (s)", "bounds (s)",
                   "max-flows solved", "in this process only (s)", "certified pairs",
                   "every pair solved here (s)", "networkx (s)", "max abs difference",
                   "rollout, all layers (ms)"],
                  title=f"The last layer's n x n flow matrix, bundled model, networkx "
                        f"{nx.__version__}; {started}",
                  note="~: networkx timed on a sample of pairs and extrapolated; the difference "
                       "is then of raw flows on that sample.")
    sizes = [int(a) for a in sys.argv[1:] if a.isdigit()] or list(QUICK_SIZES)
    if sizes == list(QUICK_SIZES):
        table.note += (f" Sizes {', '.join(map(str, QUICK_SIZES))} (quick: make bench); "
                       "`python -m benchmarks.bench_flow 64 128` runs the longer ones.")
    for n in sizes:
        t = model.trace_ids(ids[:n - 1] + [ids[-1]])
        a = residual_attention(t.weights)
        layer = a.shape[0] - 1
        t0, c0, w0 = time.perf_counter(), time.process_time(), flow_workers.workers_cpu_seconds()
        ours, stats = max_flows_stats(a, layer)
        ours_s = time.perf_counter() - t0
        ours_cpu = time.process_time() - c0 + flow_workers.workers_cpu_seconds() - w0
        t0, c0 = time.perf_counter(), time.process_time()
        here, here_stats = max_flows_stats(a, layer, workers=1)
        here_s, here_cpu = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        every, _ = max_flows_stats(a, layer, certify=False, workers=1)
        every_s, every_cpu = time.perf_counter() - t0, time.process_time() - c0
        assert np.array_equal(every, ours) and np.array_equal(here, ours)
        t0 = time.perf_counter()
        rollout(t.weights)
        roll_ms = (time.perf_counter() - t0) * 1e3
        g = nx_graph(a, layer)
        if n <= 17:
            t0 = time.perf_counter()
            ref = np.array([[nx_flow(g, layer, i, j) for j in range(n)] for i in range(n)])
            nx_s, mark = time.perf_counter() - t0, ""
            diff = f"{np.abs(normalise_rows(ref) - normalise_rows(ours)).max():.1e}"
        else:
            pairs = [(rng.randrange(n), rng.randrange(n)) for _ in range(8 if n <= 64 else 2)]
            t0 = time.perf_counter()
            vals = [nx_flow(g, layer, i, j) for i, j in pairs]
            nx_s, mark = (time.perf_counter() - t0) / len(pairs) * n * n, "~"
            diff = f"{max(abs(v - ours[i, j]) for v, (i, j) in zip(vals, pairs, strict=True)):.1e}"
            diff += " (sampled)"
        table.rows.append([
            n, f"{ours_s:.2f}", f"{ours_cpu:.2f}", f"{stats.bound_seconds:.2f}",
            f"{stats.solved} ({stats.solved_in_workers} in {stats.workers} workers)",
            f"{here_s:.2f} (CPU {here_cpu:.2f})", f"{stats.certified} of {stats.pairs}",
            f"{every_s:.2f} (CPU {every_cpu:.2f})",
            f"{mark}{nx_s:.1f}", diff, f"{roll_ms:.2f}"])
        print(table.rows[-1], flush=True)
    return show(table)


if __name__ == "__main__":
    main()
