"""Training time of the lesson's taggers and of its overfitting sweep, and the numbers they give.

Trains the seven taggers ((a) per-word MLP, (b) windows of 3, 5, 9 and 39 words, (c)
self-attention without and (d) with positions) with the page's default Settings, `REPEATS`
times with the seeds the page offers, then the overfitting sweep once; prints the median wall
and CPU seconds per tagger and in total, and the held-out accuracies the lesson quotes. The
CPU seconds (this process only) are the better guide on a machine shared with other work.
Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import os
import platform
import statistics
import time

import torch

from attnviz.analysis import taggers as T

REPEATS = 3


def main() -> None:
    print(f"CPU {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"torch {torch.__version__}; training runs on 1 thread; load {os.getloadavg()[0]:.1f}")
    walls, cpus, per = [], [], {k: [] for k in T.NAMES}
    for seed in range(REPEATS):
        w0, c0 = time.perf_counter(), time.process_time()
        tr = T.train_all(T.Settings(seed=seed))
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        for k, v in tr.seconds.items():
            per[k].append(v)
        out = T.report(tr)
        base = out["majority_tag"]
        print(f"seed {seed}: wall {walls[-1]:.1f} s, cpu {cpus[-1]:.1f} s; held-out accuracy "
              f"near / far / double-role (majority tag {100 * base['near']:.1f} / "
              f"{100 * base['far']:.1f} / {100 * base['double_role']:.1f}):", flush=True)
        for name, row in out["taggers"].items():
            h = row["held_out"]
            print(f"    {row['label']:<36} {row['parameters']:>8,} parameters  "
                  f"{100 * h['near']:5.1f} {100 * h['far']:5.1f} {100 * h['double_role']:5.1f}  "
                  f"({tr.seconds[name]:.1f} s)")
    print(f"median total: wall {statistics.median(walls):.1f} s, cpu "
          f"{statistics.median(cpus):.1f} s; per tagger (wall): " + ", ".join(
              f"{k} {statistics.median(v):.1f}" for k, v in per.items()))
    c0 = time.process_time()
    sw = T.overfitting(T.Settings())
    print(f"overfitting sweep ({len(sw.train)} taggers x sizes {sw.sizes}, {sw.steps} steps "
          f"each): wall {sw.seconds:.1f} s, cpu {time.process_time() - c0:.1f} s")
    for name in sw.train:
        print(f"    {T.NAMES[name]:<36} train - held-out (points): " + ", ".join(
            f"{n}: {100 * g:.1f}" for n, g in zip(sw.sizes, sw.gap(name), strict=True)))


if __name__ == "__main__":
    main()
