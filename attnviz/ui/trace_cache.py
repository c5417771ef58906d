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

import numpy as np

from attnviz.engine import Trace


def trace_nbytes(t: Trace) -> int:
    return sum(v.nbytes for v in vars(t).values() if isinstance(v, np.ndarray))


class TraceCache:
    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, tuple[Trace, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._pending: dict[Hashable, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], Trace]) -> Trace:
        """The cached trace for key, or compute() once (concurrent callers share it)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key][0]
            key_lock = self._pending.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                if key in self._items:  # computed by the caller we waited for
                    self._items.move_to_end(key)
                    self.hits += 1
                    return self._items[key][0]
            trace = compute()
            for value in vars(trace).values():
                if isinstance(value, np.ndarray):
                    value.flags.writeable = False
            size = trace_nbytes(trace)
            with self._lock:
                self.misses += 1
                self._items[key] = (trace, size)
                self._bytes += size
                while self._bytes > self.max_bytes and len(self._items) > 1:
                    _, (_, old) = self._items.popitem(last=False)
                    self._bytes -= old
                self._pending.pop(key, None)
        return trace

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)


SHARED = TraceCache(int(float(os.environ.get("ATTNVIZ_TRACE_CACHE_MB", "1500")) * 2**20))
