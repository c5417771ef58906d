"""What the positions page costs per sentence: one trace per position mode, the shuffled runs,
the permutation check and the per-head Jensen-Shannon distances (attnviz.analysis.positions).

Medians of repeated runs at 16, 128 and 512 tokens, on the bundled model. The page caches all
of it per (sentence, seed), so this is the cost of the first visit with a new sentence.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

import attnviz
from attnviz.analysis import positions as P

from .bench_engine import random_ids
from .report import Table, rows_table, show

LENGTHS = (16, 128, 512)
MODES = ("learned", "none", "sinusoidal", "shuffled")


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def run(repeats: int = 5) -> list[dict]:
    model = attnviz.load_model(device="cpu")
    rng = np.random.default_rng(0)
    rows = []
    for n in LENGTHS:
        ids = random_ids(rng, n)
        text = " ".join(model.tokens_of(ids[1:-1])).replace(" ##", "")
        traces = {m: model.trace_ids(ids, positions=m) for m in MODES}
        perm, shuffled = P.shuffled_run(model, text, positions="none")
        original = model.trace(text, positions="none")
        rows.append(dict(
            tokens=n,
            traces_4_modes_ms=median_ms(
                lambda ids=ids: [model.trace_ids(ids, positions=m) for m in MODES], repeats),
            shuffled_run_ms=median_ms(
                lambda text=text: P.shuffled_run(model, text, positions="none"), repeats),
            permuted_differences_ms=median_ms(
                lambda o=original, s=shuffled, p=perm: P.permuted_differences(o, s, p), repeats),
            mode_divergences_ms=median_ms(lambda t=traces: P.mode_divergences(t), repeats),
        ))
    return rows


COLUMNS = {"tokens": "tokens", "traces_4_modes_ms": "traces, 4 position modes (ms)",
           "shuffled_run_ms": "shuffled run (ms)",
           "permuted_differences_ms": "permutation check (ms)",
           "mode_divergences_ms": "per-head Jensen-Shannon distances (ms)"}


def main() -> list[Table]:
    return show(rows_table(run(), columns=COLUMNS,
                           title="The positions page's work for a new sentence, bundled model, "
                                 "CPU; medians of 5"))


if __name__ == "__main__":
    main()
