"""The heavy-work lines (ui.worklist) and how the caches use them: at most `slots` heavy
computations at once, first come first served except that a run which already had a turn goes
first, a waiting session told its place and able to leave, light work never waiting."""

from __future__ import annotations

import threading
import time

import pytest

from attnviz.engine import TraceRequest
from attnviz.ui import worklist
from attnviz.ui.cache import SharedCache
from attnviz.ui.worklist import WorkLine, heavy_trace


def together(fns) -> None:
    threads = [threading.Thread(target=f) for f in fns]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)


class Meter:
    def __init__(self) -> None:
        self.now = self.most = 0
        self.lock = threading.Lock()

    def work(self, seconds: float = 0.1) -> None:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(seconds)
        with self.lock:
            self.now -= 1


@pytest.mark.parametrize("slots", [1, 2])
def test_at_most_slots_at_once(slots):
    line, meter = WorkLine(slots, poll=0.02), Meter()

    def job():
        with line.turn():
            meter.work()

    together([job] * 6)
    assert meter.most == slots and line.served == 6 and line.running == line.waiting == 0


def wait_until(cond, timeout: float = 10) -> None:
    end = time.time() + timeout
    while not cond():
        assert time.time() < end, "timed out"
        time.sleep(0.01)


def test_first_come_first_served_but_a_started_run_goes_first():
    """A and B queue in that order; C, whose run already had a turn, queues last but goes
    first: a page finishes its traces before other sessions start theirs."""
    line = WorkLine(1, poll=0.02)
    order = []
    release, c_had_turn, c_again = threading.Event(), threading.Event(), threading.Event()

    def holder():
        with line.turn():
            release.wait(10)

    def newcomer(name):
        line.new_run()
        with line.turn():
            order.append(name)

    def started():
        line.new_run()
        with line.turn():
            pass
        c_had_turn.set()
        c_again.wait(10)
        with line.turn():
            order.append("C")

    threads = [threading.Thread(target=started)]
    threads[0].start()
    assert c_had_turn.wait(10)
    threads.append(threading.Thread(target=holder))
    threads[-1].start()
    wait_until(lambda: line.running == 1)
    for n, name in enumerate(("A", "B"), start=1):
        threads.append(threading.Thread(target=newcomer, args=(name,)))
        threads[-1].start()
        wait_until(lambda n=n: line.waiting == n)
    c_again.set()
    wait_until(lambda: line.waiting == 3)
    release.set()
    for t in threads:
        t.join(10)
    assert order == ["C", "A", "B"]


def test_a_waiting_session_is_told_its_place_and_can_leave():
    line = WorkLine(1, poll=0.02)
    release, told, left = threading.Event(), [], []

    def holder():
        with line.turn():
            release.wait(10)

    def leaver():
        def tell(ahead):
            told.append(ahead)
            if len(told) >= 3:
                raise RuntimeError("the student left the page")
        try:
            with line.turn(tell):
                pytest.fail("should not get a turn")
        except RuntimeError:
            left.append(1)

    h = threading.Thread(target=holder)
    h.start()
    wait_until(lambda: line.running == 1)
    t = threading.Thread(target=leaver)
    t.start()
    t.join(10)
    assert left == [1] and told[0] == 1 and line.waiting == 0  # its place is given up
    release.set()
    h.join(10)
    with line.turn():
        assert line.running == 1


def test_a_thread_holding_a_slot_reenters():
    line = WorkLine(1, poll=0.02)
    with line.turn():
        with line.turn():  # nested: no deadlock
            assert line.running == 1
        assert line.running == 1
    assert line.running == 0


def test_heavy_means_a_long_input():
    key = lambda request: ("model|cpu", request)  # noqa: E731
    assert not heavy_trace(key(TraceRequest("I saw a saw")))
    assert heavy_trace(key(TraceRequest("word " * 100)))
    assert heavy_trace(key(TraceRequest("short", "pair " * 100)))
    assert heavy_trace(key(TraceRequest(ids=tuple(range(200)))))
    assert not heavy_trace(key(TraceRequest(ids=(101, 102))))
    assert not heavy_trace("not a trace key")


def test_a_long_trace_needs_a_lease_hit_or_miss_a_short_one_never_waits(monkeypatch):
    """The trace cache's admission: a long input waits for a lease, even for a cached value
    (a waiting page holds no long trace); a short sentence never waits."""
    line = WorkLine(1, poll=0.02)
    traces = SharedCache(1 << 30, admit=lambda key: line.hold() if heavy_trace(key) else None)
    long_key = ("m", TraceRequest("word " * 200))
    short_key = ("m", TraceRequest("I saw a saw"))
    traces.get(long_key, lambda: "long")  # cached now; this thread holds the lease
    assert line.holds()
    got = []
    reader = threading.Thread(target=lambda: got.append(traces.get(long_key, lambda: "again")))
    reader.start()
    wait_until(lambda: line.waiting == 1)
    assert traces.get(short_key, lambda: "short") == "short" and got == []
    line.release()  # the run ended
    reader.join(10)
    assert got == ["long"]


def test_a_lease_is_given_back_while_waiting(monkeypatch):
    """Waiting for another session's computation, or for a turn in another line, gives back
    the lease: the holder of a lease never blocks everyone behind it."""
    monkeypatch.setattr(worklist, "BIG_TRACES", WorkLine(1, poll=0.02))
    monkeypatch.setattr(worklist, "LONG_WORK", WorkLine(1, poll=0.02))
    leases, turns = worklist.BIG_TRACES, worklist.LONG_WORK
    cache_ = SharedCache(10)
    computing, release = threading.Event(), threading.Event()

    def slow():
        computing.set()
        release.wait(10)
        return "value"

    other = threading.Thread(target=lambda: cache_.get("k", slow))
    other.start()
    computing.wait(10)
    got = []
    t = threading.Thread(target=lambda: (leases.hold(), got.append(cache_.get("k", slow)),
                                         got.append(leases.holds())))
    t.start()
    wait_until(lambda: leases.served == 1)  # t took the lease, then waits for "k"
    wait_until(lambda: leases.running == 0)  # ... and gave it back while waiting
    assert t.is_alive() and got == []
    release.set()
    t.join(10)
    other.join(10)
    assert got == ["value", False]

    hold_turn, done = threading.Event(), threading.Event()

    def busy():
        with turns.turn():
            hold_turn.set()
            done.wait(10)

    b = threading.Thread(target=busy)
    b.start()
    hold_turn.wait(10)

    def waits_for_a_turn():
        with turns.turn():
            pass

    # this thread holds a lease and now waits for LONG_WORK: the lease goes back first
    w = threading.Thread(target=lambda: (leases.hold(), waits_for_a_turn()))
    w.start()
    wait_until(lambda: turns.waiting == 1)
    assert leases.running == 0
    done.set()
    b.join(10)
    w.join(10)


def test_heavy_lease_outside_a_script_run_does_nothing():
    line = WorkLine(1)
    worklist.heavy_lease("x", line)
    assert not line.holds() and line.running == 0


def test_a_waiting_page_is_told_its_place_at_every_poll_and_a_stop_ends_the_wait(monkeypatch):
    """Inside a script run, a lease's wait draws its place in line at every poll (each drawing
    is where Streamlit stops a left page's script: here the box raises as Streamlit would),
    and the place is given up; outside a script run nothing is drawn."""
    line = WorkLine(1, poll=0.02)
    drawn = []

    class Box:
        def info(self, text, icon=None):
            drawn.append(text)
            if len(drawn) == 3:
                raise RuntimeError("the page was left")

        def empty(self):
            drawn.append(None)

    monkeypatch.setattr(worklist.st, "empty", Box)
    release = threading.Event()
    holder = threading.Thread(target=lambda: (line.hold(), release.wait(10), line.release()))
    holder.start()
    wait_until(lambda: line.running == 1)
    with worklist.script_run(), pytest.raises(RuntimeError):
        assert worklist.in_script_run()
        worklist.heavy_lease("Long text.", line)
    assert not worklist.in_script_run()
    assert drawn[:3] == [worklist.waiting_message("Long text.", 1)] * 3 and drawn[3] is None
    assert line.waiting == 0 and not line.holds()
    release.set()
    holder.join(10)


def test_quick_work_never_waits_behind_long_work(monkeypatch):
    """A class's short computations (a short sentence's attribution or flow) have their own
    line: while a long job holds the only long-work slot, a quick one starts at once; a second
    long one waits. A computation nested in a turn never waits in the other line."""
    from attnviz.ui import progress

    long_line, quick_line = WorkLine(1, poll=0.01), WorkLine(2, poll=0.01)
    monkeypatch.setattr(worklist, "LONG_WORK", long_line)
    monkeypatch.setattr(worklist, "QUICK_WORK", quick_line)
    monkeypatch.setattr(progress, "LONG_WORK", long_line)
    monkeypatch.setattr(progress, "QUICK_WORK", quick_line)
    holding, release = threading.Event(), threading.Event()

    def long_job() -> None:
        with progress.heavy_turn("long", long_line):
            holding.set()
            release.wait(10)

    job = threading.Thread(target=long_job)
    job.start()
    assert holding.wait(5)
    t0 = time.perf_counter()
    with progress.heavy_turn("quick", quick_line):
        assert quick_line.running == 1 and long_line.running == 1
        with progress.heavy_turn("nested long", long_line):  # nested: no second wait
            pass
    assert time.perf_counter() - t0 < 1.0
    second = {}

    def second_long() -> None:
        with progress.heavy_turn("second long", long_line):
            second["at"] = time.perf_counter()

    late = threading.Thread(target=second_long)
    late.start()
    time.sleep(0.2)
    assert "at" not in second and long_line.waiting == 1  # the long line keeps its turns
    release.set()
    job.join(5)
    late.join(5)
    assert "at" in second
