"""A server-wide cache of Traces, bounded by bytes rather than by count.

A trace of a short sentence is a few hundred kB; one of 512 tokens is about 170 MB (two
[6, 12, 512, 512] float32 arrays). A count-bounded cache would hold gigabytes on a class
server, so this one evicts the least recently used traces once their arrays exceed a budget
(ATTNVIZ_TRACE_CACHE_MB, default 1500). Identical requests arriving together compute once:
the second waits for the first. Cached arrays are read-only, so sessions cannot alter them.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager, nullcontext

import numpy as np

from attnviz.engine import Trace


def trace_nbytes(t: Trace) -> int:
    return sum(v.nbytes for v in vars(t).values() if isinstance(v, np.ndarray))


class SharedCache:
    """Values shared by every session of a server, least recently used evicted once their
    total size passes `max_size` (the newest is always kept). `size(value)` is bytes for
    traces, or 1 to bound by count. Concurrent requests for one key compute it once: later
    callers wait, inside `waiting()` if given (a spinner), and get the same value."""

    def __init__(self, max_size: int, size: Callable[[object], int] = lambda value: 1):
        self.max_size = max_size
        self._size = size
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()
        self._pending: dict[Hashable, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def _hit(self, key: Hashable):
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return self._items[key]

    def get(self, key: Hashable, compute: Callable[[], object],
            waiting: Callable[[], AbstractContextManager] | None = None):
        """The cached value for key, or compute() once (concurrent callers share it)."""
        found = self._hit(key)
        if found is not None:
            return found[0]
        with self._lock:
            key_lock = self._pending.setdefault(key, threading.Lock())
        if not key_lock.acquire(blocking=False):  # another caller is computing this key
            with waiting() if waiting else nullcontext():
                key_lock.acquire()
        try:
            found = self._hit(key)  # computed by the caller we waited for
            if found is not None:
                return found[0]
            value = compute()
            size = self._size(value)
            with self._lock:
                self.misses += 1
                self._items[key] = (value, size)
                self._total += size
                while self._total > self.max_size and len(self._items) > 1:
                    _, (_, old) = self._items.popitem(last=False)
                    self._total -= old
                self._pending.pop(key, None)
            return value
        finally:
            key_lock.release()

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0

    def __len__(self) -> int:
        return len(self._items)


class TraceCache(SharedCache):
    """Traces by bytes; their arrays are made read-only so sessions cannot alter them."""

    def __init__(self, max_bytes: int):
        super().__init__(max_bytes, size=trace_nbytes)

    def get(self, key: Hashable, compute: Callable[[], Trace], waiting=None) -> Trace:
        return super().get(key, lambda: _read_only(compute()), waiting)

    @property
    def max_bytes(self) -> int:
        return self.max_size

    @property
    def nbytes(self) -> int:
        return self._total


def _read_only(t: Trace) -> Trace:
    for value in vars(t).values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return t


SHARED = TraceCache(int(float(os.environ.get("ATTNVIZ_TRACE_CACHE_MB", "1500")) * 2**20))
