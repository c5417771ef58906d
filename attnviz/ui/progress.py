"""Long work (training, sweeps, timings, long traces) computed once per server, taking turns.

The session that starts the work waits for its turn in one of the server's heavy-work lines
(ui.worklist.heavy_turn: one computation at a time by default, light work never waits), seeing
how many jobs are ahead of it, then sees a progress bar. Sessions asking for the same key
meanwhile see a spinner and get the same result when it is done (the cache registry computes a
key once).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

import streamlit as st

from ..i18n import _
from .cache import cached
from .worklist import LONG_WORK, QUICK_WORK, heavy_turn

Progress = Callable[[float, str], None]


EVERY_S = 0.1  # a progress bar is redrawn at most this often
CLOCK = time.monotonic  # what `throttled` reads by default (a test sets its own)


def throttled(update: Progress, every_s: float = EVERY_S,
              clock: Callable[[], float] | None = None) -> Progress:
    """update(f, msg), passed on at most once every `every_s` seconds by `clock` (default
    CLOCK); the calls between are dropped. Integrated gradients report their 26 path
    points at once, after the batch that computes them; each report is a message the server
    builds and sends and the browser draws, for a bar shown a few ms. A passed-on report is
    also where Streamlit stops a script whose page was left or rerun (flow's jobs end there),
    so such a stop waits up to `every_s` longer."""
    clock = clock or CLOCK
    last = [clock()]  # the bar was just drawn empty

    def report(f: float, msg: str) -> None:
        now = clock()
        if now - last[0] >= every_s:
            last[0] = now
            update(f, msg)

    return report


def with_progress(kind: str, key: Hashable, label: str, compute: Callable[[Progress], object],
                  quick: bool = False):
    """cached(kind, key, ...) where compute(progress) reports (fraction done, message), shown at
    most every EVERY_S seconds; the computation takes its turn in the heavy-work line first
    (quick=True: the line of short computations, which never waits behind long ones)."""
    def run():
        with heavy_turn(label, QUICK_WORK if quick else LONG_WORK):
            bar = st.progress(0.0, text=label)
            try:
                return compute(throttled(lambda f, msg: bar.progress(min(1.0, max(0.0, f)),
                                                                     text=f"{label} {msg}")))
            finally:  # the bar goes when the work ends, a refusal (ValueError) included
                bar.empty()

    return cached(kind, key, run, waiting=lambda: st.spinner(
        _("{label} another session started this; it is shared when done.").format(label=label)))
