"""Integrated gradients of a sentence similarity (the similarity page): the path's points
encoded in batches (attnviz.analysis.attribution) against one forward and backward per point
(the usual IG loop), same quadrature, same values.

Three measures:
- both ways on two short sentences (the page's default B and a class's typical A) and on a
  paragraph: median wall seconds per attribution (both sentences, the page's default points,
  attribution.path_rule) on the default torch threads and on one thread (a shared server's
  session), and the largest difference between the two ways;
- the page's default B prepared once (`prepare_side`, what a class server's warm-up does)
  against encoding both paths, for the load test's sentences A: the one-off cost, each A's
  time and the largest difference;
- the quadrature's accuracy (why path_rule splits the path in two halves): for the first four
  of the load test's sentences (`full`: its 20 sentences and three more), each against the
  similarity page's default B and the tests' B, both sides' IG by 32 points in one
  Gauss-Legendre panel and by 16, 24 and 32 points in two halves, against 128 points in two
  halves (itself checked against 128 in one panel); the error is the largest per-token
  difference over the largest |IG| of the reference. Also where on the path the integrand
  (summed over tokens) peaks;
- occlusion (attnviz.analysis.occlusion: every word removed and masked in turn, in batches)
  of one sentence against the default B, by length;
- the notebook head view (attnviz.head_view) of a 512-token trace by opacity levels: the
  lines drawn, the figure's build time and its JSON size.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from attnviz.analysis import attribution as A
from attnviz.engine import load_model

from .bench_engine import median_ms
from .report import Table, show

COST = ("The quadrature check computes integrated gradients of 16 sentence sides by several "
        "rules each (92 with `python -m benchmarks.bench_attribution full`: more than ten "
        "minutes on a shared 2-core machine).")
QUICK = 4  # sentences in make bench's quadrature check (x 2 B's x both sides)
PAIRS = {
    "short (6 + 10 tokens)": ("I saw a saw", A.DEFAULT_B),
    "paragraph (~120 + 10 tokens)": (
        " ".join(["The teacher saw the students saw the board while the class watched."] * 8),
        A.DEFAULT_B),
}
STEPS = A.DEFAULT_STEPS


def one_point_at_a_time(model, x, x0, other, steps):
    """The reference: one forward and backward per quadrature point."""
    alphas, weights = A.path_rule(steps)
    acc = torch.zeros_like(x, dtype=torch.float64)
    for a, w in zip(alphas, weights, strict=True):
        _, g = A._grad(model, x0 + float(a) * (x - x0), other)
        acc += float(w) * g.double()
    return ((x - x0).double() * acc).sum(dim=-1).cpu().numpy()


def measure(model, label: str, a: str, b: str) -> list[list]:
    """Both ways on one pair of sentences, on the default threads and on one thread: a row
    per thread count."""
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
    threads, rows = torch.get_num_threads(), []
    for n in sorted({threads, 1}, reverse=True):
        torch.set_num_threads(n)
        ms = median_ms({"batched": batched, "looped": looped}, repeats=3, device=model.device)
        fast, slow = ms["batched"], ms["looped"]
        rows.append([label, n, f"{fast / 1000:.3f}", f"{slow / 1000:.3f}", f"{slow / fast:.1f}x",
                     f"{diff:.1e}"])
        print(rows[-1], flush=True)
    torch.set_num_threads(threads)
    return rows


def prepared(model) -> Table:
    """The page's default B prepared once (prepare_side, a class server's warm-up) against
    encoding both paths, for the load test's sentences A on one thread (a shared server's
    session): the one-off cost, the saving per A, and the largest difference."""
    from tests.load.run_load import SENTENCES

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    side = A.prepare_side(model, A.DEFAULT_B, STEPS)
    once = time.perf_counter() - t0
    both, one, diff = [], [], 0.0
    for a in SENTENCES:
        t0 = time.perf_counter()
        r1 = A.attribute(model, a, A.DEFAULT_B, STEPS)
        t1 = time.perf_counter()
        r2 = A.attribute(model, a, A.DEFAULT_B, STEPS, side_b=side)
        both.append(t1 - t0)
        one.append(time.perf_counter() - t1)
        diff = max([diff] + [float(np.abs(getattr(r1, f) - getattr(r2, f)).max())
                             for f in ("ig_a", "ig_b", "gxi_a", "gxi_b")])
    torch.set_num_threads(threads)
    saved = sum(both) - sum(one)
    return Table(
        ["default B prepared once (s)", "both paths, per A (s)", "A's path only, per A (s)",
         "paid back after (sentences)", "largest difference"],
        [[f"{once:.2f}", f"{np.median(both):.3f}", f"{np.median(one):.3f}",
          f"{once / max(saved / len(SENTENCES), 1e-9):.0f}", f"{diff:.1e}"]],
        title=f"The page's default B prepared once, then the load test's {len(SENTENCES)} "
              "sentences A (one thread; medians)")


def one_panel(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre on [0, 1] in one panel (path_rule's alternative)."""
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    return (nodes + 1) / 2, weights / 2


def ig_by(model, x, x0, other, rule) -> np.ndarray:
    alphas, weights = rule
    a = torch.tensor(alphas, dtype=x.dtype)[:, None, None]
    _, g = A._grad(model, x0 + a * (x - x0), other)
    acc = (torch.tensor(weights)[:, None, None] * g.double()).sum(0)
    return ((x - x0).double() * acc).sum(-1).numpy()


EXTRA = ["A man is playing a guitar.",
         "Stock markets fell sharply on Monday after the surprise announcement by the central "
         "bank about interest rates and inflation.",
         "In the beginning God created the heaven and the earth. And the earth was without "
         "form, and void; and darkness was upon the face of the deep."]
TESTS_B = "Someone plays music on an instrument."  # tests/test_analysis_attribution.py's B


def quadrature_accuracy(model, n_sentences: int | None = None) -> Table:
    """Per-token error of each rule against a 128-point reference, over many sentence sides
    (the first `n_sentences` of the load test's sentences and EXTRA; None: all of them)."""
    from tests.load.run_load import SENTENCES

    sentences = (SENTENCES + EXTRA)[:n_sentences]

    rules = {"32 points, one panel": one_panel(32),
             **{f"{k} points, two halves": A.path_rule(k) for k in (16, 24, 32)}}
    errors: dict[str, list[float]] = {name: [] for name in rules}
    peaks, check = [], 0.0
    grid = torch.linspace(0, 1, 101, dtype=torch.float64)
    for b in (A.DEFAULT_B, TESTS_B):
        for a in sentences:
            xa, xa0, _ = A._inputs(model, a)
            xb, xb0, _ = A._inputs(model, b)
            with torch.no_grad():
                ea, eb = A.sentence_embedding(model, xa), A.sentence_embedding(model, xb)
            for x, x0, other in ((xa, xa0, eb), (xb, xb0, ea)):
                ref = ig_by(model, x, x0, other, A.path_rule(128))
                scale = float(np.abs(ref).max())
                check = max(check, float(np.abs(ig_by(model, x, x0, other, one_panel(128))
                                             - ref).max()) / scale)
                for name, rule in rules.items():
                    errors[name].append(float(np.abs(ig_by(model, x, x0, other, rule)
                                                     - ref).max()) / scale)
                _, g = A._grad(model, x0 + grid.float()[:, None, None] * (x - x0), other)
                total = ((x - x0).double() * g.double()).sum((-1, -2)).numpy()
                peaks.append(float(grid[int(np.abs(total).argmax())]))
    return Table(
        ["rule", "max error", "90th percentile", "median"],
        [[name, f"{max(e):.1e}", f"{np.quantile(e, 0.9):.1e}", f"{np.median(e):.1e}"]
         for name, e in errors.items()],
        title=f"Quadrature: {len(peaks)} attributions ({len(sentences)} sentences "
              "x 2 B's x both sides) against 128 points in two halves; error = largest "
              "per-token difference / largest |IG|",
        note=f"The reference against 128 points in one panel: {check:.1e}. The integrand "
             f"(summed over tokens) peaks at a = {min(peaks):.2f} to {max(peaks):.2f} "
             f"(median {np.median(peaks):.2f}; 101 points)."
             + ("" if n_sentences is None else " A quick size: `python -m "
                "benchmarks.bench_attribution full` runs all 23 sentences."))


def occlusion_and_head_view(model) -> list[Table]:
    """Occlusion's wall time by length; the head view's size by opacity levels."""
    import attnviz
    from attnviz.analysis.occlusion import occlude

    occ = Table(["tokens", "variants", "seconds (median of 3)"],
                title="Occlusion of sentence A against the default B (remove and mask)")
    for words in (8, 32, 126):
        text = " ".join(["saw"] * words)
        ms = median_ms({"occlusion": lambda t=text: occlude(model, t, A.DEFAULT_B)}, 3)
        occ.rows.append([words + 2, 2 * words, f"{ms['occlusion'] / 1e3:.2f}"])
    trace = model.trace(" ".join(["the teacher saw the saw"] * 120))
    view = Table(["levels", "opacity within", "lines drawn", "build (s)", "JSON (MB)"],
                 title=f"Notebook head view, {trace.n_tokens} tokens, all layers and heads")
    for levels in (6, 20, 50):
        start = time.perf_counter()
        fig = attnviz.head_view(trace, levels=levels).figure
        built = time.perf_counter() - start
        lines = sum(len(d.x) // 3 for d in fig.data if d.mode == "lines" and d.x[0] is not None)
        view.rows.append([levels, f"{0.5 / levels:.3f}", lines, f"{built:.2f}",
                          f"{len(fig.to_json()) / 1e6:.1f}"])
    return [occ, view]


def main() -> list[Table]:
    full = "full" in sys.argv[1:]  # all 23 sentences in the quadrature check; else QUICK
    model = load_model()
    ways = Table(["sentences", "threads", "batched (s)", "one point at a time (s)", "ratio",
                  "largest difference"],
                 title=f"One attribution of both sentences, {STEPS} points, device "
                       f"{model.device}; medians of 3")
    for label, (a, b) in PAIRS.items():
        ways.rows += measure(model, label, a, b)
    return show(ways, prepared(model), *occlusion_and_head_view(model),
                quadrature_accuracy(model, None if full else QUICK))


if __name__ == "__main__":
    main()
