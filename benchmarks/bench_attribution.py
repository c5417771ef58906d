"""Integrated gradients of a sentence similarity (the similarity page): path points encoded in
batches (attnviz.analysis.attribution) against one point at a time (a forward and backward
per point, as the first version did and as the usual IG loop does), same quadrature, same
values; two short sentences (the page's default B and a class's typical A) and a paragraph.

Prints the median wall seconds per attribution (both sentences, 32 steps, Gauss-Legendre) on
the default torch threads and on one thread (a shared server's session), and the largest
difference between the two ways' attributions. Speed is measured here, never in tests.
"""

from __future__ import annotations

import os
import platform

import numpy as np
import torch

from attnviz.analysis import attribution as A
from attnviz.engine import load_model
from benchmarks.bench_engine import median_ms

PAIRS = {
    "short (6 + 10 tokens)": ("I saw a saw", "She cut the wood with a saw."),
    "paragraph (~120 + 10 tokens)": (
        " ".join(["The teacher saw the students saw the board while the class watched."] * 8),
        "She cut the wood with a saw."),
}
STEPS = 32


def one_point_at_a_time(model, x, x0, other, steps):
    """The reference: one forward and backward per quadrature point."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    acc = torch.zeros_like(x, dtype=torch.float64)
    for a, w in zip((nodes + 1) / 2, weights / 2, strict=True):
        _, g = A._grad(model, x0 + float(a) * (x - x0), other)
        acc += float(w) * g.double()
    return ((x - x0).double() * acc).sum(dim=-1).cpu().numpy()


def measure(model, label: str, a: str, b: str) -> None:
    """Both ways on one pair of sentences, on the default threads and on one thread."""
    xa, xa0, _ = A._inputs(model, a)
    xb, xb0, _ = A._inputs(model, b)
    with torch.no_grad():
        eb = A.sentence_embedding(model, xb)
        ea = A.sentence_embedding(model, xa)

    def batched():
        return (A.integrated_gradients(model, xa, xa0, eb, STEPS),
                A.integrated_gradients(model, xb, xb0, ea, STEPS))

    def looped():
        return (one_point_at_a_time(model, xa, xa0, eb, STEPS),
                one_point_at_a_time(model, xb, xb0, ea, STEPS))

    diff = max(float(np.abs(p - q).max()) for p, q in zip(batched(), looped(), strict=True))
    threads = torch.get_num_threads()
    for n in sorted({threads, 1}, reverse=True):
        torch.set_num_threads(n)
        ms = median_ms({"batched": batched, "looped": looped}, repeats=3, device=model.device)
        fast, slow = ms["batched"], ms["looped"]
        print(f"{label}, {n} thread(s): batched {fast / 1000:.3f} s, one point at a time "
              f"{slow / 1000:.3f} s ({slow / fast:.1f}x); largest difference {diff:.1e}",
              flush=True)
    torch.set_num_threads(threads)


def main() -> None:
    model = load_model()
    print(f"CPU {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch "
          f"{torch.__version__}, device {model.device}; load {os.getloadavg()[0]:.1f}; "
          f"{STEPS} steps, both sentences")
    for label, (a, b) in PAIRS.items():
        measure(model, label, a, b)


if __name__ == "__main__":
    main()
