"""Images page: what exactness costs. The k^2-head attention layer (Cordonnier et al. 2020)
against torch's conv2d on the shipped picture, and one pixel study (attention + conv stacks
with their gradients). Medians of a few runs; the attention layer computes every weight of
every head (k^2 x pixels x (pixels + padding ring)), the convolution only k^2 x pixels taps.
"""

from __future__ import annotations

import statistics
import time

import torch
import torch.nn.functional as F

from attnviz.analysis import conv_attention as ca
from attnviz.analysis import image_attention as ia

from .bench_engine import machine

CASES = ((16, 3), (32, 3), (32, 5), (48, 5))


def _median(repeats: int, fn, *args):
    """(median seconds, last result) of fn(*args) over `repeats` runs."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    print(f"device: {machine(torch.device('cpu'))}")
    print(f"{'size':>5} {'k':>2} {'weights':>11} {'attention s':>12} {'conv2d ms':>10} "
          f"{'max |diff|':>11}")
    for size, k in CASES:
        img = torch.from_numpy(ia.load_image(size)).permute(2, 0, 1).contiguous()
        kernel, bias = ca.make_kernel("random", k)
        w, b = torch.from_numpy(kernel), torch.from_numpy(bias)
        repeats = 3 if size <= 32 else 1
        t_att, r = _median(repeats, ca.conv_as_attention, img, kernel, bias)
        t_conv, _ = _median(20, F.conv2d, img[None], w, b, 1, k // 2)
        n_keys = (size + 2 * (k // 2)) ** 2
        print(f"{size:>5} {k:>2} {k * k * size * size * n_keys:>11,} {t_att:>12.3f} "
              f"{t_conv * 1e3:>10.3f} {r.max_abs_diff:>11.1e}")
    print("\npixel study (float64; attention + conv stacks and their input gradients)")
    print(f"{'size':>5} {'depth':>5} {'seconds':>8}")
    for size, depth in ((32, 1), (32, 4), (48, 4)):
        img = ia.load_image(size)
        t, _ = _median(1, ia.study_pixel, img, size // 3, size // 2, 3, depth)
        print(f"{size:>5} {depth:>5} {t:>8.2f}")


if __name__ == "__main__":
    main()
