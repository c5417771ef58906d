"""The step-by-step page's cost: each walkthrough and its heaviest figures.

Toy walkthrough (float64, m = d_k = p = 8, 8 words), real head recomputation and real
multi-head (all 12 heads + W_O) at 16 / 128 / 512 tokens, and the Plotly JSON payload of the
real page's widest figures (W^q · A = Q and W_O · concat = B). Medians of repeated runs.
"""

from __future__ import annotations

import statistics
import time

import attnviz
from attnviz.analysis import walkthrough as wt
from attnviz.plotting import steps as sp

from .report import Table, show


def median_ms(fn, repeat: int = 15) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> list[Table]:
    text8 = "I saw a saw with a big saw"
    walk = wt.toy_walkthrough(text8, 8, 8, 8)
    toy = Table(["computation", "median (ms)"], [
        ["toy walkthrough, m = d_k = p = 8, 8 words",
         f"{median_ms(lambda: wt.toy_walkthrough(text8, 8, 8, 8)):.2f}"],
        ["toy multi-head sweep, h = 1, 2, 4, 8", f"{median_ms(lambda: wt.heads_sweep(walk)):.2f}"],
    ], title="Toy mode (float64)")
    real = Table(["tokens", "one head (ms)", "all heads + W_O (ms)", "figure W^q · A = Q (KiB)",
                  "figure W_O · concat = B (KiB)"],
                 title="Real mode: layer 3 of the bundled model, head 7")
    model = attnviz.load_model(device="cpu")
    for n in (16, 128, 512):
        t = model.trace_ids([101] + [2000] * (n - 2) + [102])
        one = median_ms(lambda t=t: wt.real_walkthrough(model, t, 3, 7))
        multi = median_ms(lambda t=t: wt.real_multihead(model, t, 3), repeat=5)
        w = wt.real_walkthrough(model, t, 3, 7)
        labels = sp.token_axis(w.tokens)
        fig_q = sp.matrices_figure([
            (w.w_q, sp.dim_labels("q", 32), sp.dim_labels("a", 384), "W^q", "values"),
            (w.inputs.T, sp.dim_labels("a", 384), labels, "A", "values"),
            (w.queries.T, sp.dim_labels("q", 32), labels, "Q", "values")], ["·", "="], "Q")
        mh = wt.real_multihead(model, t, 3)
        fig_o = sp.matrices_figure([
            (mh.w_o, sp.dim_labels("b", 384), sp.dim_labels("o", 384), "W_O", "values"),
            (mh.concat.T, sp.dim_labels("o", 384), labels, "concat", "values"),
            (mh.projected.T, sp.dim_labels("b", 384), labels, "B", "values")], ["·", "="], "B")
        kb = [len(f.to_json()) / 1024 for f in (fig_q, fig_o)]
        real.rows.append([n, f"{one:.2f}", f"{multi:.1f}", f"{kb[0]:.0f}", f"{kb[1]:.0f}"])
    return show(toy, real)


if __name__ == "__main__":
    main()
