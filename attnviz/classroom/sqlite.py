"""The class store in one SQLite file (WAL mode): the worker processes of one machine.

WAL lets readers (every student's poll) go on while one writer commits; each change is one
`BEGIN IMMEDIATE` transaction (the write lock taken first, so a read-then-write cannot
interleave with another process's), and a busy file is waited for (busy_timeout). A
committed answer is in the WAL file before the call returns: a process killed afterwards
(kill -9) loses nothing (synchronous=NORMAL loses nothing on a process crash; only a power
cut may lose the last commits). A process keeps a pool of connections (`_db`).
"""

from __future__ import annotations

import json
import os
import queue
import sqlite3
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from .store import GRACE_S, StoreUnavailable, UnknownClass, decode, encode

SCHEMA = """
create table if not exists classes (code text primary key, rec text not null,
                                    expires real not null);
create table if not exists students (code text not null, student text not null,
                                     primary key (code, student));
create table if not exists answers (code text not null, step integer not null,
                                    student text not null, choice integer not null,
                                    primary key (code, step, student));
"""
BUSY_MS = 10_000


class SQLiteBackend:
    """Classes, seats and answers in the SQLite file at `path` (made with its folder)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._pool: queue.SimpleQueue = queue.SimpleQueue()
        self._pid = os.getpid()
        try:
            with self._db() as db:
                db.executescript(SCHEMA)  # its own transaction
        except sqlite3.Error as e:
            raise StoreUnavailable(str(e)) from e

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_MS / 1000, isolation_level=None,
                             check_same_thread=False)
        db.execute("pragma journal_mode=wal")
        db.execute("pragma synchronous=normal")
        db.execute(f"pragma busy_timeout={BUSY_MS}")
        return db

    @contextmanager
    def _db(self):
        """A connection of this process for one call: taken from the pool (a queue.SimpleQueue,
        as many as calls ran at once) or opened, given back after. Each Streamlit run has a
        thread of its own, so a connection per thread would be opened on every run."""
        if self._pid != os.getpid():  # a forked child opens its own
            self._pool, self._pid = queue.SimpleQueue(), os.getpid()
        try:
            db = self._pool.get_nowait()
        except queue.Empty:
            try:
                db = self._connect()
            except sqlite3.Error as e:
                raise StoreUnavailable(str(e)) from e
        try:
            yield db
        finally:
            self._pool.put(db)

    @contextmanager
    def _tx(self):
        with self._db() as db:
            try:
                db.execute("begin immediate")
            except sqlite3.Error as e:
                raise StoreUnavailable(str(e)) from e
            try:
                yield db
                db.execute("commit")
            except BaseException:
                db.execute("rollback")
                raise

    def _read(self, db: sqlite3.Connection, code: str) -> dict | None:
        row = db.execute("select rec from classes where code = ?", (code,)).fetchone()
        if row is None:
            return None
        return decode(json.loads(row[0]))

    def _write(self, db: sqlite3.Connection, rec: dict) -> None:
        db.execute("insert or replace into classes values (?, ?, ?)",
                   (rec["code"], json.dumps(encode(rec)), rec["expires"]))

    def insert(self, rec: dict) -> bool:
        with self._tx() as db:
            if self._read(db, rec["code"]) is not None:
                return False
            self._write(db, rec)
            return True

    def load(self, code: str) -> dict | None:
        try:
            with self._db() as db:
                return self._read(db, code)
        except sqlite3.Error as e:
            raise StoreUnavailable(str(e)) from e

    def change(self, code: str, fn: Callable[[dict], dict]) -> dict:
        with self._tx() as db:
            rec = self._read(db, code)
            if rec is None:
                raise UnknownClass()
            new = fn(rec)
            self._write(db, new)
            return new

    def _seat(self, db: sqlite3.Connection, code: str, student: str, cap: int) -> bool:
        if db.execute("select 1 from students where code = ? and student = ?",
                      (code, student)).fetchone():
            return True
        n = db.execute("select count(*) from students where code = ?", (code,)).fetchone()[0]
        if n >= cap:
            return False
        db.execute("insert into students values (?, ?)", (code, student))
        return True

    def _live(self, db, code: str, now: float) -> tuple[dict | None, str]:
        """The class's record and "ok", or None and why not ("unknown", "expired")."""
        rec = self._read(db, code)
        if rec is None:
            return None, "unknown"
        if now >= rec["expires"]:
            return None, "expired"
        return rec, "ok"

    def join(self, code: str, student: str, cap: int, now: float) -> str:
        with self._tx() as db:
            rec, status = self._live(db, code, now)
            if rec is None:
                return status
            return "ok" if self._seat(db, code, student, cap) else "full"

    def answer(self, code: str, student: str, step: int, choice: int, cap: int,
               now: float) -> str:
        with self._tx() as db:
            rec, status = self._live(db, code, now)
            if rec is None:
                return status
            if step != rec["step"]:
                return "moved"
            if rec["shown"]:
                return "revealed"
            if not 0 <= choice < rec["choices"]:
                return "choice"
            if not self._seat(db, code, student, cap):
                return "full"
            db.execute("insert or replace into answers values (?, ?, ?, ?)",
                       (code, step, student, choice))
            return "ok"

    def students(self, code: str) -> int:
        with self._db() as db:
            return db.execute("select count(*) from students where code = ?",
                              (code,)).fetchone()[0]

    def answers(self, code: str, step: int) -> dict[str, int]:
        with self._db() as db:
            return dict(db.execute(
                "select student, choice from answers where code = ? and step = ?",
                (code, step)))

    def steps(self, code: str) -> list[int]:
        with self._db() as db:
            return [r[0] for r in db.execute(
                "select distinct step from answers where code = ? order by step", (code,))]

    def purge(self, now: float) -> None:
        with self._tx() as db:
            old = [r[0] for r in db.execute("select code from classes where expires < ?",
                                            (now - GRACE_S,))]
            for code in old:
                for table in ("classes", "students", "answers"):
                    db.execute(f"delete from {table} where code = ?", (code,))  # noqa: S608
