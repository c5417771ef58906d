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

DEFAULT_LENGTHS = (256, 512, 1024, 2048, 4096, 8192)


def main() -> None:
    w = int(os.environ.get("WINDOW", 50))
    lengths = tuple(int(x) for x in os.environ.get("LENGTHS", "").split(",") if x) or \
        DEFAULT_LENGTHS
    device = torch.device(os.environ.get("DEVICE") or ("cuda" if torch.cuda.is_available()
                                                       else "cpu"))
    print(f"device: {device_name(device)}, torch {torch.__version__}")
    print(f"window w = {w}, 1 head, d = 64, float32")
    ms = measure_sweep(lengths, w, device=device)
    print(f"peak memory from: {ms[0].memory_method}")
    print(f"{'L':>6} {'method':>9} {'best ms':>10} {'median ms':>10} {'peak MiB':>10}")
    for m in ms:
        print(f"{m.length:>6} {m.method:>9} {m.seconds * 1e3:>10.2f} "
              f"{m.median_seconds * 1e3:>10.2f} {m.peak_bytes / 2**20:>10.2f}")
    by = {(m.length, m.method): m for m in ms}
    print("\n   L   full/windowed time   full/windowed memory")
    for L in lengths:
        f, wd = by[(L, "full")], by[(L, "windowed")]
        print(f"{L:>6} {f.seconds / wd.seconds:>14.1f}x {f.peak_bytes / wd.peak_bytes:>18.1f}x")


if __name__ == "__main__":
    main()
