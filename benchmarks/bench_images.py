"""The Images page's cost: a convolution computed exactly by k^2 attention heads (Cordonnier
et al. 2020) against torch's conv2d on the shipped picture, and one pixel study.

Medians of a few runs. The attention layer computes every weight of every head (k^2 x pixels
x (pixels + padding ring)), the convolution only k^2 x pixels taps. The pixel study is an
attention stack and a convolution stack with their input gradients, in float64.
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F

from attnviz.analysis import conv_attention as ca
from attnviz.analysis import image_attention as ia

from .report import Table, show

CASES = ((16, 3), (32, 3), (32, 5), (48, 5))


def _median(repeats: int, fn, *args):
    """(median seconds, last result) of fn(*args) over `repeats` runs."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> list[Table]:
    exact = Table(["size", "k", "attention weights", "attention (s)", "conv2d (ms)",
                   "max abs difference"],
                  title="A random k x k convolution as k^2 attention heads, against conv2d")
    for size, k in CASES:
        img = torch.from_numpy(ia.load_image(size)).permute(2, 0, 1).contiguous()
        kernel, bias = ca.make_kernel("random", k)
        w, b = torch.from_numpy(kernel), torch.from_numpy(bias)
        repeats = 3 if size <= 32 else 1
        t_att, r = _median(repeats, ca.conv_as_attention, img, kernel, bias)
        t_conv, _ = _median(20, F.conv2d, img[None], w, b, 1, k // 2)
        n_keys = (size + 2 * (k // 2)) ** 2
        exact.rows.append([f"{size} x {size}", k, f"{k * k * size * size * n_keys:,}",
                           f"{t_att:.3f}", f"{t_conv * 1e3:.3f}", f"{r.max_abs_diff:.1e}"])
    study = Table(["size", "depth", "seconds"],
                  title="One pixel's study: attention and convolution stacks with their input "
                        "gradients (float64)")
    for size, depth in ((32, 1), (32, 4), (48, 4)):
        img = ia.load_image(size)
        t, _ = _median(1, ia.study_pixel, img, size // 3, size // 2, 3, depth)
        study.rows.append([f"{size} x {size}", depth, f"{t:.2f}"])
    return show(exact, study)


if __name__ == "__main__":
    main()
