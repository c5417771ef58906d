"""Attention flow: attnviz's max-flows against the authors' formulation (networkx Edmonds-Karp,
one max-flow per (output, input) pair), on the same inputs: the bundled model's attention for a
text cut to 17, 32, 64 and 128 tokens, the last layer's n x n flow matrix.

networkx runs the whole matrix at 17 tokens; beyond, it runs a sample of pairs and the full
time is extrapolated (marked "~"). Values are compared where both ran (max |difference| of the
row-normalised flows).
"""

from __future__ import annotations

import os
import random
import time

import networkx as nx
import numpy as np
import torch

import attnviz
from attnviz.analysis.flow import max_flows, normalise_rows
from attnviz.analysis.rollout import residual_attention, rollout

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


def main() -> None:
    print(f"CPU, {os.cpu_count()} cores, torch {torch.__version__}, networkx {nx.__version__}")
    model = attnviz.load_model(device="cpu")
    ids, _, _ = model.tokenize(TEXT)
    rng = random.Random(0)
    print("tokens | attnviz flow, last layer | networkx, same | speed-up | max |diff| | "
          "rollout, all layers")
    for n in (17, 32, 64, 128):
        t = model.trace_ids(ids[:n - 1] + [ids[-1]])
        a = residual_attention(t.weights)
        layer = a.shape[0] - 1
        t0 = time.perf_counter()
        ours = max_flows(a, layer)
        ours_s = time.perf_counter() - t0
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
            pairs = [(rng.randrange(n), rng.randrange(n)) for _ in range(8)]
            t0 = time.perf_counter()
            vals = [nx_flow(g, layer, i, j) for i, j in pairs]
            nx_s, mark = (time.perf_counter() - t0) / len(pairs) * n * n, "~"
            diff = f"{max(abs(v - ours[i, j]) for v, (i, j) in zip(vals, pairs, strict=True)):.1e}"
            diff += " (raw, sampled pairs)"
        print(f"{n:6d} | {ours_s:8.2f} s | {mark}{nx_s:9.1f} s | {nx_s / ours_s:6.0f}x | {diff} | "
              f"{roll_ms:.2f} ms", flush=True)


if __name__ == "__main__":
    main()
