"""Class mode's store (attnviz.classroom): the same cases on both backends, SQLite in WAL mode
and a real redis-server (tests/redis_server.py starts one; the Redis cases skip with the
reason only where none can run).

What a class must survive: several processes answering at once (every answer counted once),
a process killed with SIGKILL mid-class (every answer it had been told was accepted is still
there), the store restarted (SQLite: a new connection to the file; Redis: the server stopped
and started again on its append-only file), a student's forged or replayed control message, a
flood of answers from one session, unknown and expired codes, a full class."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnviz import classroom
from attnviz.classroom import codes
from attnviz.classroom.sqlite import SQLiteBackend
from attnviz.classroom.store import GRACE_S, ClassStore, Teacher
from tests import redis_server

ROOT = Path(__file__).resolve().parents[1]
TTL = 4 * 3600.0


class Clock:
    """The store's time, moved by the tests (it starts now: Redis expires keys at real
    times)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    pytest.importorskip("redis", reason="the redis client library is not installed")
    server, why = redis_server.start(tmp_path_factory.mktemp("redis"))
    if server is None:
        pytest.skip(why)
    yield server
    server.stop()


def backend_spec(kind: str, tmp_path: Path, request) -> tuple[str, str]:
    """(kind, where): enough for another process to open the same store."""
    if kind == "sqlite":
        return kind, str(tmp_path / "classroom.sqlite3")
    server = request.getfixturevalue("redis")
    import redis as redis_lib

    redis_lib.Redis.from_url(server.url).flushdb()
    return kind, server.url


def open_backend(spec: tuple[str, str]):
    kind, where = spec
    if kind == "sqlite":
        return SQLiteBackend(where)
    from attnviz.classroom.redis_store import RedisBackend

    return RedisBackend(where)


@pytest.fixture(params=["sqlite", "redis"])
def spec(request, tmp_path):
    return backend_spec(request.param, tmp_path, request)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(spec, clock):
    return ClassStore(open_backend(spec), clock, ttl_s=TTL)


def step(t: Teacher) -> Teacher:
    """The teacher's next control message (the next sequence number)."""
    return Teacher(t.code, t.secret, t.seq + 1)


# ------------------------------------------------------------------ codes
def test_join_codes_have_no_look_alikes_and_enough_length():
    assert not set("01ILO") & set(codes.ALPHABET)
    assert len(set(codes.ALPHABET)) == len(codes.ALPHABET) == 31
    assert len(codes.ALPHABET) ** codes.LENGTH > 8e11  # the docstring's arithmetic
    drawn = {codes.new_code() for _ in range(5000)}
    assert len(drawn) == 5000
    assert all(codes.parse_code(c) == c for c in drawn)
    c = next(iter(drawn))
    assert codes.parse_code(c.lower().replace("-", " ")) == c
    for bad in ("", "ABCD-EFG", "ABCD-EFGHJ", "ABCD-EFG0", "ABCD-EFGI", None, 12345678,
                "A" * 40, "<b>ABCD</b>"):
        assert codes.parse_code(bad) is None


def test_the_secret_is_neither_in_the_code_nor_kept(store):
    t = store.create("I saw a saw")
    assert t.secret not in t.code and len(t.secret) >= 40
    rec = store.backend.load(t.code)
    assert t.secret not in repr(rec) and rec["teacher"] == codes.digest(t.secret)


# ------------------------------------------------------------------ a class
def test_a_class_follows_answers_and_sees_the_room_at_the_reveal(store):
    t = store.create("I saw a saw")
    s = store.state(t.code)
    assert (s.step, s.shown, s.choices, s.text) == (1, False, 0, "I saw a saw")
    for k in range(5):
        store.join(t.code, f"s{k}")
    t = step(t)
    s = store.set_step(t, 2, choices=3)
    assert (s.step, s.choices, s.shown, s.right) == (2, 3, False, None)
    for k, choice in enumerate([0, 1, 1, 2]):
        store.answer(t.code, f"s{k}", 2, choice)
    store.answer(t.code, "s0", 2, 1)  # changed before the reveal: counted once, the last
    assert store.counts(t) == (4, 5)  # 4 of 5 answered
    assert store.my_answer(t.code, "s0", 2) == 1
    with pytest.raises(classroom.NotRevealed):  # nobody sees the answers before the reveal
        store.histogram(t.code, 2)
    t = step(t)
    s = store.reveal(t, right=1)
    assert (s.shown, s.right) == (True, 1)
    assert store.histogram(t.code, 2) == [0, 3, 1]
    with pytest.raises(classroom.NotNow):  # answers close at the reveal
        store.answer(t.code, "s4", 2, 0)
    t = step(t)
    store.set_step(t, 3, choices=2)
    with pytest.raises(classroom.NotNow):  # the class moved on
        store.answer(t.code, "s4", 2, 0)
    with pytest.raises(classroom.BadChoice):
        store.answer(t.code, "s4", 3, 2)
    store.answer(t.code, "s4", 3, 0)
    t = step(t)
    s = store.set_step(t, 2, choices=3)  # back to a revealed step: still revealed
    assert (s.shown, s.right, s.revealed) == (True, 1, {2: 1})
    assert store.histogram(t.code, 2) == [0, 3, 1]
    text = store.csv(t, lambda k: {2: ["a", "b", "c"], 3: ["yes", "no"]}[k])
    assert text.splitlines() == ["step,choice,label,answers,right", "2,1,a,0,0", "2,2,b,3,1",
                                 "2,3,c,1,0", "3,1,yes,1,", "3,2,no,0,"]
    assert "s0" not in text  # never who


def test_reveal_needs_a_question_and_a_right_choice(store):
    t = step(store.create())
    with pytest.raises(classroom.BadChoice):
        store.reveal(t, 0)  # step 1 offers no choice: nothing is right
    t = step(t)
    s = store.reveal(t, None)  # its answer shown all the same
    assert (s.shown, s.right, s.revealed) == (True, None, {1: -1})
    t = step(t)
    store.set_step(t, 2, choices=2)
    with pytest.raises(classroom.BadChoice):
        store.reveal(step(t), 2)
    with pytest.raises(classroom.ClassError):
        store.set_step(step(t), 0)
    with pytest.raises(classroom.ClassError):
        store.set_step(step(t), 2, choices=99)


# ------------------------------------------------------------------ only the teacher leads
def test_a_forged_control_message_is_refused(store):
    t = store.create()
    for secret in ("", "guess", codes.new_secret(), codes.digest(t.secret), None):
        forged = Teacher(t.code, secret, 99)
        with pytest.raises(classroom.NotTeacher):
            store.set_step(forged, 5, 2)
        with pytest.raises(classroom.NotTeacher):
            store.counts(forged)
        with pytest.raises(classroom.NotTeacher):
            store.csv(forged)
    assert store.state(t.code).step == 1
    store.set_step(step(t), 2, 2)  # the real teacher still leads, its sequence untouched


def test_a_replayed_control_message_is_refused(store):
    t = store.create()
    t2 = step(t)
    store.set_step(t2, 2, 2)
    t3 = step(t2)
    store.set_step(t3, 3, 2)
    for old in (t2, t3, t):  # replays of earlier messages (and of the newest one)
        with pytest.raises(classroom.Replayed):
            store.set_step(old, 2, 2)
    with pytest.raises(classroom.Replayed):
        store.reveal(t3, 0)
    assert store.state(t.code).step == 3


def test_only_the_teachers_browser_takes_control_again(store):
    t = store.create(browser="teacher-browser-token")
    t = step(t)
    store.set_step(t, 2, 2)
    with pytest.raises(classroom.NotTeacher):
        store.reclaim(t.code, "a-students-browser")
    with pytest.raises(classroom.NotTeacher):
        store.reclaim(t.code, None)
    again = store.reclaim(t.code, "teacher-browser-token")
    assert again.secret != t.secret and again.seq == t.seq + 1
    store.set_step(again, 3, 0)
    with pytest.raises(classroom.NotTeacher):  # the old secret is refused from now on
        store.set_step(step(step(t)), 4, 0)
    nobody = store.create()  # started without a browser token: nobody can reclaim it
    with pytest.raises(classroom.NotTeacher):
        store.reclaim(nobody.code, "")


def test_a_flood_of_answers_from_one_session_counts_once(store):
    t = step(store.create())
    store.set_step(t, 2, choices=4)
    for k in range(300):
        store.answer(t.code, "flooder", 2, k % 4)
    assert store.counts(t) == (1, 1)
    assert store.my_answer(t.code, "flooder", 2) == 299 % 4


def test_a_class_takes_at_most_max_students(spec, clock):
    store = ClassStore(open_backend(spec), clock, ttl_s=TTL, max_students=3)
    t = step(store.create())
    store.set_step(t, 2, choices=2)
    for k in range(3):
        store.answer(t.code, f"s{k}", 2, 0)
    with pytest.raises(classroom.ClassFull):
        store.answer(t.code, "s3", 2, 0)
    with pytest.raises(classroom.ClassFull):
        store.join(t.code, "s4")
    store.answer(t.code, "s1", 2, 1)  # a seated student still changes their answer
    assert store.counts(t) == (3, 3)


def test_unknown_codes_get_a_clear_refusal(store):
    real = store.create()
    absent = next(c for c in iter(codes.new_code, None) if c != real.code)
    for code in (absent, "nonsense", "", None, "ABCD-EFG0", "x" * 5000):
        with pytest.raises(classroom.UnknownClass) as e:
            store.state(code)
        assert "code" in e.value.message
        with pytest.raises(classroom.UnknownClass):
            store.join(code, "s")
        with pytest.raises(classroom.UnknownClass):
            store.answer(code, "s", 1, 0)
        with pytest.raises(classroom.UnknownClass):
            store.set_step(Teacher(code, real.secret, 5), 2, 2)
    with pytest.raises(classroom.ClassError):  # a student id that is not a short text
        store.answer(real.code, "x" * 500, 1, 0)


def test_a_class_expires_after_a_few_hours(store, clock, spec):
    t = step(store.create())
    store.set_step(t, 2, choices=2)
    store.answer(t.code, "s", 2, 0)
    clock.now += TTL - 1
    assert store.state(t.code).step == 2
    clock.now += 1
    for call in (lambda: store.state(t.code), lambda: store.join(t.code, "s2"),
                 lambda: store.answer(t.code, "s", 2, 1),
                 lambda: store.set_step(step(t), 3, 0), lambda: store.counts(t)):
        with pytest.raises(classroom.ClassExpired):
            call()
    if spec[0] == "redis":  # the server removes every key of the class by itself
        keys = store.backend.r.keys(f"attnviz:class:{t.code}*")
        assert keys and all(0 < store.backend.r.ttl(k) for k in keys)
    else:  # removed by the next class started a day after the end
        clock.now += GRACE_S + 1
        store.create()
        with pytest.raises(classroom.UnknownClass):
            store.state(t.code)
        assert store.backend.answers(t.code, 2) == {}


# ------------------------------------------------------------------ several processes
def _students(spec, code: str, first: int, n: int, step_: int, done) -> None:
    store = ClassStore(open_backend(spec))
    for k in range(first, first + n):
        store.join(code, f"p{k}")
        store.answer(code, f"p{k}", step_, k % 3)
        store.answer(code, f"p{k}", step_, (k + 1) % 3)  # changed once
    done.put(n)


def test_several_processes_answer_at_once(store, spec):
    t = step(store.create())
    store.set_step(t, 2, choices=3)
    ctx = multiprocessing.get_context("spawn")
    done = ctx.Queue()
    procs = [ctx.Process(target=_students, args=(spec, t.code, 30 * i, 30, 2, done))
             for i in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert store.counts(t) == (120, 120)
    store.reveal(step(t), 0)
    expected = [sum((k + 1) % 3 == c for k in range(120)) for c in range(3)]
    assert store.histogram(t.code, 2) == expected == [40, 40, 40]


KILLED = """
import sys
from attnviz.classroom.store import ClassStore
from tests.test_classroom_store import open_backend
store = ClassStore(open_backend((sys.argv[1], sys.argv[2])))
for k in range(100000):
    store.answer(sys.argv[3], f"k{k}", 2, k % 2)
    print(k, flush=True)
"""


def test_a_process_killed_mid_class_loses_no_answer(store, spec):
    t = step(store.create())
    store.set_step(t, 2, choices=2)
    proc = subprocess.Popen([sys.executable, "-c", KILLED, *spec, t.code], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    acked = []
    for line in proc.stdout:
        acked.append(int(line))
        if len(acked) >= 150:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    acked += [int(line) for line in proc.stdout.read().split()]
    proc.stdout.close()
    got = store.backend.answers(t.code, 2)
    assert all(f"k{k}" in got and got[f"k{k}"] == k % 2 for k in acked)
    assert len(got) in (len(acked), len(acked) + 1)  # the last one may be in, unacknowledged
    store.answer(t.code, "after", 2, 0)  # the store goes on
    assert store.counts(t)[0] == len(got) + 1


def test_the_store_restarted_keeps_the_class(store, spec, request, clock):
    t = step(store.create(browser="b"))
    store.set_step(t, 2, choices=2)
    for k in range(20):
        store.answer(t.code, f"s{k}", 2, k % 2)
    if spec[0] == "redis":
        server = request.getfixturevalue("redis")
        server.stop(kill=True)  # SIGKILL: only the append-only file remains
        with pytest.raises(classroom.StoreUnavailable) as e:
            store.state(t.code)
        assert "store" in e.value.message
        server.start()
    again = ClassStore(open_backend(spec), clock, ttl_s=TTL)
    assert again.state(t.code).step == 2
    assert again.counts(t) == (20, 20)
    t = again.reclaim(t.code, "b")  # the teacher, reloading, leads again
    again.reveal(t, 1)
    assert again.histogram(t.code, 2) == [10, 10]


def test_open_store_names_its_backend(tmp_path, spec):
    from attnviz.settings import override

    kind, where = spec
    with override(cache_dir=str(tmp_path), redis_url=where if kind == "redis" else ""):
        s = classroom.open_store()
    name = type(s.backend).__name__
    assert name == ("RedisBackend" if kind == "redis" else "SQLiteBackend")
    if kind == "sqlite":
        assert s.backend.path == tmp_path / "classroom.sqlite3"
        with s.backend._db() as db:
            assert db.execute("pragma journal_mode").fetchone()[0] == "wal"


def test_sqlite_threads_one_after_another_share_one_connection(tmp_path):
    """Each Streamlit run is a thread of its own: a class read from run after run (a
    student's check every second) reuses the process's pooled connection, opening none."""
    import threading

    s = ClassStore(SQLiteBackend(tmp_path / "c.sqlite3"))
    t = s.create("I saw a saw")
    opened = []
    connect = s.backend._connect
    s.backend._connect = lambda: opened.append(1) or connect()
    for k in range(20):
        th = threading.Thread(target=lambda k=k: (s.state(t.code), s.join(t.code, f"s{k}")))
        th.start()
        th.join()
    assert opened == [] and s.backend._pool.qsize() == 1
    assert s.counts(t)[1] == 20


def test_codes_of_many_classes_differ(store):
    made = [store.create().code for _ in range(50)]
    assert len(set(made)) == 50
    assert all(c == codes.parse_code(c) for c in itertools.islice(made, 10))
