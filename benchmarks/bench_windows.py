"""Full vs truncated (windowed) self-attention as the sequence grows: the lecture's speech case.

At ~100 frames per second, a minute of audio is L = 6000. Three ways, one head, d = 64,
random queries/keys/values on the current device (CUDA when present, else CPU):
  full      the engine's attention(q, k, v): an L×L matrix (time and memory ~ L²)
  masked    the same with window_mask(L, w): still L×L, a mask saves nothing
  windowed  attnviz.engine.windowed_attention: blocks of keys, never L×L (~ L·w)
Time = best of 5 calls after a warm-up (median beside it). Peak memory: torch.cuda.
max_memory_allocated on CUDA; on CPU the PyTorch profiler's allocation records.
Options: WINDOW (default 50 = ±0.5 s), LENGTHS (e.g. "256,1024,8192"), DEVICE.
"""

from __future__ import annotations

import os

import torch

from attnviz.analysis.cost import device_name, measure_sweep

from .report import Table, show

DEFAULT_LENGTHS = (256, 512, 1024, 2048, 4096, 8192)


def main() -> list[Table]:
    w = int(os.environ.get("WINDOW", 50))
    lengths = tuple(int(x) for x in os.environ.get("LENGTHS", "").split(",") if x) or \
        DEFAULT_LENGTHS
    device = torch.device(os.environ.get("DEVICE") or ("cuda" if torch.cuda.is_available()
                                                       else "cpu"))
    ms = measure_sweep(lengths, w, device=device)
    sweep = Table(["L", "method", "best (ms)", "median (ms)", "peak memory (MiB)"],
                  [[m.length, m.method, f"{m.seconds * 1e3:.2f}",
                    f"{m.median_seconds * 1e3:.2f}", f"{m.peak_bytes / 2**20:.2f}"] for m in ms],
                  title=f"One head, d = 64, float32, window w = {w}, on "
                        f"{device_name(device)}",
                  note=f"Peak memory from {ms[0].memory_method}.")
    by = {(m.length, m.method): m for m in ms}
    ratio = Table(["L", "full / windowed, time", "full / windowed, memory"],
                  [[L, f"{by[(L, 'full')].seconds / by[(L, 'windowed')].seconds:.1f}x",
                    f"{by[(L, 'full')].peak_bytes / by[(L, 'windowed')].peak_bytes:.1f}x"]
                   for L in lengths], title="Full attention over windowed attention")
    return show(sweep, ratio)


if __name__ == "__main__":
    main()
