"""Heavy work takes turns on a shared server: three lines per server, light work never waits.

One link can ask for seconds of CPU or hundreds of MB: a window sweep, a timing run or the
lesson's training take seconds of full CPU; a 512-token trace holds every layer's and head's
512 x 512 weights, and a page may hold four of them while it draws. Run side by
side for a class, such requests starve each other and their memory adds up with the number of
students. So heavy work waits in one of the server's lines:

    LONG_WORK    each `with_progress` computation (sweeps, timings, training) takes a turn:
                 a slot for the computation (settings().heavy_slots at once, default 1)
    BIG_TRACES   a page run that reads a trace of a long input (`heavy_trace`), computed or
                 cached, first takes a lease: a slot until the run ends
                 (settings().trace_slots at once, default 1). A page waiting for its lease
                 holds no long trace yet, so the memory of long traces in use is bounded by
                 the leases, not the class size.

    QUICK_WORK   a `with_progress` computation the page knows is short (`quick=True`: a
                 short sentence's attribution, flow or sweep): settings().quick_slots at
                 once (default: the machine's cores), so it never waits behind a long
                 training or a corpus (in one line, a class's many small requests would wait
                 behind every long job).

Separate lines, so that a minute-long sweep never holds up a page of long traces or a student's
short computation; a computation nested in another's turn never waits in the other line. In
each line: first come, first served, except that a script run which already had a turn goes
ahead of runs that have not (`new_run()` marks a run's start). A thread that already holds a
slot re-enters without waiting. Whoever waits, for a turn in any line or for a value another
session is computing in the cache, first gives back its lease (`release_leases`), and takes it
again, ahead of new runs, at its next long trace: a lease is never held while waiting, so the
lines cannot deadlock with each other or with the cache's compute-once locks.

    with LONG_WORK.turn(tell):       wait for a slot; tell(n) says how many are ahead
        compute()
    BIG_TRACES.hold(tell)            wait for a slot kept until end_run() or release()

Light work (short sentences, cache hits of short traces) never enters a line: it stays fast
while heavy work runs.

A page run waiting in a line sees an info box with its place (`heavy_turn`, `heavy_lease`),
redrawn while it waits: each redraw is where Streamlit ends a run whose page was left or
rerun, so the place in line is given up. Only script runs wait in a line (`script_run`: the
router's page run, or a fragment that reruns alone); other threads, such as the preload's,
never do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

import streamlit as st

from attnviz.i18n import _
from attnviz.settings import settings

HEAVY_CHARS = 500  # characters of text (+ second sentence): ~100-500 tokens and more
HEAVY_TOKENS = 128  # token ids given directly


class WorkLine:
    """At most `slots` holders at once; the others wait in line, polled every `poll` s.

    A semaphore (threading's, or a library's) bounds the holders but keeps no line: it tells a
    waiter neither its place nor lets a run that already had a turn go first, a thread that
    holds a slot cannot re-enter without counting twice, and a lease cannot outlive the block
    that took it. This class adds those four; the holders are threads of one process."""

    def __init__(self, slots: int, poll: float = 1.0):
        self.slots = max(1, int(slots))
        self.poll = poll
        self._cond = threading.Condition()
        self._waiting: list[tuple[bool, object]] = []  # (no turn yet this run, ticket)
        self._holders: dict[int, int] = {}  # thread id -> depth (turns, plus 1 for a lease)
        self._leases: set[int] = set()  # threads holding a lease
        self._local = threading.local()
        self.served = 0
        self.most_waiting = 0

    def new_run(self) -> None:
        """A script run starts on this thread: it has had no turn yet."""
        self._local.had_turn = False

    @property
    def running(self) -> int:
        return len(self._holders)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def holds(self) -> bool:
        return threading.get_ident() in self._holders

    @contextmanager
    def turn(self, tell: Callable[[int], None] | None = None) -> Iterator[None]:
        """Hold a slot for the block; wait first, calling tell(ahead) every poll while waiting
        (it may raise, e.g. when Streamlit stops the script: the place in line is given up)."""
        self._enter(tell)
        try:
            yield
        finally:
            self._leave()

    def hold(self, tell: Callable[[int], None] | None = None) -> None:
        """Take a lease: a slot kept by this thread until release() (no wait if it has one)."""
        me = threading.get_ident()
        with self._cond:
            if me in self._leases:
                return
        self._enter(tell)
        with self._cond:
            self._leases.add(me)

    def release(self) -> None:
        """Give back this thread's lease, if it holds one."""
        me = threading.get_ident()
        with self._cond:
            if me not in self._leases:
                return
            self._leases.discard(me)
        self._leave()

    def _enter(self, tell: Callable[[int], None] | None) -> None:
        me = threading.get_ident()
        with self._cond:
            if me in self._holders:  # nested: already holding a slot
                self._holders[me] += 1
                return
        self._wait_for_slot(me, tell)

    def _leave(self) -> None:
        me = threading.get_ident()
        with self._cond:
            self._holders[me] -= 1
            if self._holders[me]:
                return
            del self._holders[me]
            self._cond.notify_all()

    def _ahead(self, ticket: object) -> int:
        """Holders plus tickets waiting before this one."""
        return self.running + [t for _, t in self._waiting].index(ticket)

    def _wait_for_slot(self, me: int, tell: Callable[[int], None] | None) -> None:
        ticket = object()
        first = not getattr(self._local, "had_turn", False)
        with self._cond:
            # Runs that already had a turn go before every run that has not (FIFO within).
            at = len(self._waiting) if first else sum(not f for f, _ in self._waiting)
            self._waiting.insert(at, (first, ticket))
            self.most_waiting = max(self.most_waiting, len(self._waiting))
        try:
            released = False
            while True:
                with self._cond:
                    ahead = self._ahead(ticket)
                    if ahead < self.slots:
                        self._waiting = [w for w in self._waiting if w[1] is not ticket]
                        self._holders[me] = 1
                        self.served += 1
                        self._local.had_turn = True
                        return
                if not released:  # about to wait: never hold a lease meanwhile
                    release_leases()
                    released = True
                if tell is not None:
                    tell(ahead - self.slots + 1)
                with self._cond:
                    if self._ahead(ticket) >= self.slots:
                        self._cond.wait(self.poll)
        except BaseException:
            with self._cond:
                self._waiting = [w for w in self._waiting if w[1] is not ticket]
                self._cond.notify_all()
            raise


LONG_WORK = WorkLine(settings().heavy_slots)
BIG_TRACES = WorkLine(settings().trace_slots)
QUICK_WORK = WorkLine(settings().quick_slots_or_cores)


def lines() -> tuple[WorkLine, ...]:
    return LONG_WORK, BIG_TRACES, QUICK_WORK


def holds_turn() -> bool:
    """Whether this thread holds a computation's turn (LONG_WORK or QUICK_WORK): a
    computation nested in another never waits in the other line."""
    return LONG_WORK.holds() or QUICK_WORK.holds()


def release_leases() -> None:
    """Give back every lease this thread holds (it is about to wait for something)."""
    for line in lines():
        line.release()


_RUN = threading.local()  # this thread's script run: .active (inside script_run), .state


def new_run() -> None:
    """A script run starts on this thread (the router calls this first on every run)."""
    release_leases()
    for line in lines():
        line.new_run()
    _RUN.state = {}


def end_run() -> None:
    """The script run on this thread ended (the router calls this last, however it ended)."""
    release_leases()


@contextmanager
def script_run() -> Iterator[None]:
    """One script run on this thread: the router's whole page, or an st.fragment that reruns
    alone (ui.recorder.fragment). A lease taken in it is given back when it ends, however it
    ends: a fragment's run that read a long trace would otherwise keep its lease after its
    thread is gone, and every later long trace would wait for it forever."""
    new_run()
    _RUN.active = True
    try:
        yield
    finally:
        _RUN.active = False
        end_run()


def in_script_run() -> bool:
    """Whether this thread runs a page inside `script_run` (only such runs wait in a line)."""
    return getattr(_RUN, "active", False)


def run_state() -> dict:
    """A dict of this thread's script run, new at each run's start (`new_run`): what a run
    keeps for itself, such as the expander keys it has given out (ui.figures.numbers_key)."""
    state = getattr(_RUN, "state", None)
    if state is None:
        state = _RUN.state = {}
    return state


def heavy_trace(key: Hashable) -> bool:
    """Whether a trace cache key (model key, TraceRequest) asks for a long input."""
    request = key[1] if isinstance(key, tuple) and len(key) == 2 else None
    if getattr(request, "ids", None) is not None:
        return len(request.ids) >= HEAVY_TOKENS
    text = getattr(request, "text", None) or ""
    return len(text) + len(getattr(request, "pair", None) or "") >= HEAVY_CHARS


def waiting_message(label: str, ahead: int) -> str:
    """What a session waiting in the heavy-work line reads."""
    if ahead == 1:
        return _("{label} Waiting for the server: 1 heavy job is ahead of this one. Long texts, "
                 "sweeps and training take turns, so that everyone else's pages stay fast."
                 ).format(label=label)
    return _("{label} Waiting for the server: {n} heavy jobs are ahead of this one. Long texts, "
             "sweeps and training take turns, so that everyone else's pages stay fast."
             ).format(label=label, n=ahead)


class WaitingBox:
    """The info box a waiting page run reads, redrawn at every poll of its wait: each redraw
    is a message to the browser, where Streamlit stops or reruns a script whose page was left
    or rerun (leaving the page gives the place up). Outside a script run it shows nothing."""

    def __init__(self, label: str) -> None:
        self.label, self.box = label, None
        self.shown = in_script_run()

    def tell(self, ahead: int) -> None:
        if not self.shown:
            return
        self.box = self.box or st.empty()
        self.box.info(waiting_message(self.label, ahead), icon=":material/hourglass_top:")

    def clear(self) -> None:
        if self.box is not None:
            self.box.empty()
            self.box = None


@contextmanager
def heavy_turn(label: str, line: WorkLine | None = None) -> Iterator[None]:
    """Hold a turn in one of the server's heavy-work lines (default LONG_WORK) for the block,
    showing the place in line while waiting (an info box, removed when the turn comes)."""
    line = LONG_WORK if line is None else line
    if holds_turn() and not line.holds():  # nested in a turn: no second line
        yield
        return
    box = WaitingBox(label)
    try:
        with line.turn(box.tell):
            box.clear()
            yield
    finally:
        box.clear()


def heavy_lease(label: str, line: WorkLine | None = None) -> None:
    """Take this run's lease in a heavy-work line (default BIG_TRACES; kept until the run
    ends), showing the place in line while waiting. Outside a script run it does nothing:
    only page runs take turns."""
    if not in_script_run():
        return
    line = BIG_TRACES if line is None else line
    box = WaitingBox(label)
    try:
        line.hold(box.tell)
    finally:
        box.clear()
