"""Training time of the lesson's four taggers (issue 7: "under 30 s on this machine").

Trains (a) per-word MLP, (b) window CNN, (c) self-attention without positions and (d) with
positions with the page's default Settings, `REPEATS` times with fresh seeds, and prints the
median seconds per tagger and in total, plus the held-out accuracies the lesson quotes.
Speed is measured here, never asserted in tests.
"""

from __future__ import annotations

import os
import platform
import statistics

import torch

from attnviz.analysis import taggers as T

REPEATS = 3


def main() -> None:
    print(f"CPU {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"torch {torch.__version__}; training runs on 1 thread; load {os.getloadavg()[0]:.1f}")
    runs = []
    for r in range(REPEATS):
        out = T.measure(T.Settings(seed=r))
        runs.append(out)
        print(f"seed {r}: total {out['total_seconds']:.2f} s  " + "  ".join(
            f"{k} {v:.2f}" for k, v in out["seconds"].items()), flush=True)
        for name in T.NAMES:
            h, d = out[name]["held_out"], out[name]["double_role"]
            print(f"    {T.NAMES[name]:<36} all {100 * h.overall:5.1f}%  ambiguous "
                  f"{100 * h.ambiguous:5.1f}%  double-role {100 * d.double_role:5.1f}%  "
                  f"'I saw a saw' -> {' '.join(out[name]['i saw a saw'])}")
        print(f"    best one-tag-per-word on ambiguous words: "
              f"{100 * out['baseline']['best_possible']:.1f}%")
    med = statistics.median(r["total_seconds"] for r in runs)
    per = {k: statistics.median(r["seconds"][k] for r in runs) for k in T.NAMES}
    print(f"median total {med:.2f} s (goal < 30 s); per tagger: " +
          ", ".join(f"{k} {v:.2f} s" for k, v in per.items()))


if __name__ == "__main__":
    main()
