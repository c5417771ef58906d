"""Training time of the lesson's seven taggers and of its overfitting sweep, with the
held-out accuracies the lesson quotes.

The taggers ((a) per-word MLP, (b) windows of 3, 5, 9 and 39 words, (c) self-attention without
and (d) with positions) are trained with the page's default Settings, once per seed the page
offers; the overfitting sweep once. Times are medians over the seeds; CPU seconds are this
process's (training runs on one thread), the better guide on a machine shared with other work.
"""

from __future__ import annotations

import statistics
import time

from attnviz.analysis import taggers as T

from .report import Table, show

REPEATS = 3


def main() -> list[Table]:
    walls, cpus, per, acc = [], [], {k: [] for k in T.NAMES}, {}
    for seed in range(REPEATS):
        w0, c0 = time.perf_counter(), time.process_time()
        tr = T.train_all(T.Settings(seed=seed))
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        for k, v in tr.seconds.items():
            per[k].append(v)
        out = T.report(tr)
        rows = {"majority_tag": ("majority tag (baseline)", None, out["majority_tag"])}
        rows.update({name: (row["label"], row["parameters"], row["held_out"])
                     for name, row in out["taggers"].items()})
        for name, (label, params, held) in rows.items():
            acc.setdefault(name, (label, params, []))[2].append(held)
        print(f"seed {seed}: wall {walls[-1]:.1f} s, cpu {cpus[-1]:.1f} s", flush=True)

    def pct(values: list[dict], key: str) -> str:
        return f"{100 * statistics.median(v[key] for v in values):.1f}"

    taggers = Table(
        ["tagger", "parameters", "training (s)", "held-out: words near (%)",
         "far (%)", "double-role (%)"],
        title=f"The seven taggers, the page's default settings: medians over {REPEATS} seeds",
        note=f"All seven: {statistics.median(walls):.1f} s wall, "
             f"{statistics.median(cpus):.1f} s CPU (medians).")
    for name, (label, params, held) in acc.items():
        taggers.rows.append([label, "-" if params is None else f"{params:,}",
                             f"{statistics.median(per[name]):.1f}" if name in per else "-",
                             pct(held, "near"), pct(held, "far"), pct(held, "double_role")])
    c0 = time.process_time()
    sw = T.overfitting(T.Settings())
    sweep = Table(["tagger", *(f"{n} sentences" for n in sw.sizes)],
                  title=f"Overfitting sweep: train minus held-out accuracy (points), "
                        f"{sw.steps} steps each",
                  note=f"The sweep: {sw.seconds:.1f} s wall, "
                       f"{time.process_time() - c0:.1f} s CPU.")
    for name in sw.train:
        sweep.rows.append([T.NAMES[name], *(f"{100 * g:.1f}" for g in sw.gap(name))])
    return show(taggers, sweep)


if __name__ == "__main__":
    main()
