"""Long work (training, sweeps, timings, long traces) computed once per server, taking turns.

The session that starts the work waits for its turn in one of the server's heavy-work lines
(ui.worklist: one computation at a time by default, light work never waits), seeing how many
jobs are ahead of it, then sees a progress bar. Sessions asking for the same key meanwhile see a
spinner and get the same result when it is done (the cache registry computes a key once).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

import streamlit as st

from ..i18n import _
from .cache import cached
from .worklist import BIG_TRACES, LONG_WORK, QUICK_WORK, WorkLine, holds_turn

Progress = Callable[[float, str], None]


def waiting_message(label: str, ahead: int) -> str:
    """What a session waiting in the heavy-work line reads."""
    if ahead == 1:
        return _("{label} Waiting for the server: 1 heavy job is ahead of this one. Long texts, "
                 "sweeps and training take turns, so that everyone else's pages stay fast."
                 ).format(label=label)
    return _("{label} Waiting for the server: {n} heavy jobs are ahead of this one. Long texts, "
             "sweeps and training take turns, so that everyone else's pages stay fast."
             ).format(label=label, n=ahead)


class _Box:
    """The info box a waiting session reads, updated when its place in line changes; between
    updates it lets Streamlit stop or rerun the script (leaving the page gives the place up)."""

    def __init__(self, label: str) -> None:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        self.label, self.ctx, self.box, self.shown = label, get_script_run_ctx(), None, None

    def tell(self, ahead: int) -> None:
        if self.ctx is None:
            return
        if ahead != self.shown:
            self.box = self.box or st.empty()
            self.box.info(waiting_message(self.label, ahead), icon=":material/hourglass_top:")
            self.shown = ahead
        elif callable(getattr(self.ctx, "yield_check", None)):
            self.ctx.yield_check()  # a stop or rerun request ends the wait here

    def clear(self) -> None:
        if self.box is not None:
            self.box.empty()
            self.box = None


@contextmanager
def heavy_turn(label: str, line: WorkLine = LONG_WORK) -> Iterator[None]:
    """Hold a turn in one of the server's heavy-work lines for the block, showing the place in
    line while waiting (an info box, removed when the turn comes)."""
    if holds_turn() and not line.holds():  # nested in a turn: no second line
        yield
        return
    box = _Box(label)
    try:
        with line.turn(box.tell):
            box.clear()
            yield
    finally:
        box.clear()


def heavy_lease(label: str, line: WorkLine = BIG_TRACES) -> None:
    """Take this run's lease in a heavy-work line (kept until the run ends, see ui.worklist),
    showing the place in line while waiting. Outside a Streamlit run it does nothing: only
    page runs take turns."""
    box = _Box(label)
    if box.ctx is None:
        return
    try:
        line.hold(box.tell)
    finally:
        box.clear()


EVERY_S = 0.1  # a progress bar is redrawn at most this often
CLOCK = time.monotonic  # what `throttled` reads by default (a test sets its own)


def throttled(update: Progress, every_s: float = EVERY_S,
              clock: Callable[[], float] | None = None) -> Progress:
    """update(f, msg), passed on at most once every `every_s` seconds by `clock` (default
    CLOCK); the calls between are dropped. Integrated gradients report their 26 path
    points at once, after the batch that computes them; each report is a message the server
    builds and sends and the browser draws, for a bar shown a few ms. A passed-on report is
    also where Streamlit stops a script whose page was left or rerun (flow's jobs end there),
    so such a stop now waits up to `every_s` longer."""
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
            result = compute(throttled(lambda f, msg: bar.progress(min(1.0, max(0.0, f)),
                                                                   text=f"{label} {msg}")))
            bar.empty()
        return result

    return cached(kind, key, run, waiting=lambda: st.spinner(
        _("{label} another session started this; it is shared when done.").format(label=label)))
