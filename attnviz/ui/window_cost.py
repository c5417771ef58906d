"""The windows page's cost tab: full vs masked vs windowed attention timed on this server.

Its choices are few on purpose, so a class on one server shares a few cached runs (a new
window costs seconds of full CPU at the longest length); the class warm-up (ui.preload)
measures the page's default choice before the students arrive. Times are the server's own:
taken once per (device, length, method, window) and then shown to everyone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from attnviz.analysis import cost

from .cache import cached

LENGTHS = (256, 512, 1024, 2048, 4096, 8192)
COST_WINDOWS = (16, 32, 64, 128, 256)
METHODS = ("full", "masked", "windowed")
DEFAULT_TOP, DEFAULT_WINDOW = 2048, 64  # the tab's sliders' defaults


def lengths_up_to(top: int) -> tuple[int, ...]:
    return tuple(n for n in LENGTHS if n <= top)


def key(dev: str, lengths: tuple[int, ...], window: int) -> tuple:
    """The results cache's key of one tab view's measurements."""
    return ("win_cost", dev, lengths, window)


def measure(dev: str, lengths: tuple[int, ...], window: int,
            progress: Callable[[float, str], None]) -> list:
    """Every (length, method) measurement, each cached on its own: full attention does not
    depend on the window, so its runs are shared by every window."""
    jobs = [(n, m) for n in lengths for m in METHODS]
    out = []
    for i, (n, m) in enumerate(jobs):
        one = cached("results", ("win_cost_one", dev, n, m, None if m == "full" else window),
                     lambda n=n, m=m: cost.measure_attention(n, window, m, device=dev))
        out.append(dataclasses.replace(one, window=window))
        progress((i + 1) / len(jobs), f"L = {n}, {m}")
    return out
