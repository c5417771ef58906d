"""The app's one cache registry: everything computed once per server and shared by sessions.

    kind      key                                     bound
    models    (folder, device)                        count (ATTNVIZ_MODELS, default 4)
    traces    Trace.key = (model key, TraceRequest)   bytes (ATTNVIZ_TRACE_CACHE_MB, 1500)
    results   (name, Trace.key or settings, ...)      bytes (ATTNVIZ_RESULT_CACHE_MB, 256)
    figures   (name, Trace.key or settings, ...)      count (256)
    taggers   taggers.Settings                        count (4)

Keys are plain values (strings, numbers, frozen requests and settings), never arrays. Each
cache evicts its least recently used entries past its bound and computes a key once when
several sessions ask for it together: later callers wait (with a spinner, if given) and get
the same value. Cached arrays are made read-only, so no session can alter what others see.

These caches are plain Python objects, not Streamlit's st.cache_*: Streamlit's "clear caches"
message, which any client can send, does not reach them.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager, nullcontext

import numpy as np


def nbytes(value) -> int:
    """Bytes of the NumPy arrays inside a value (dicts, lists, tuples and dataclasses walked)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, dict):
        return sum(nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(nbytes(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    return 0


def read_only(value):
    """Make every NumPy array inside a value read-only (in place); returns the value."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, dict):
        for v in value.values():
            read_only(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            read_only(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            read_only(getattr(value, f.name))
    return value


class SharedCache:
    """Values shared by every session of a server, least recently used evicted once their
    total size passes `max_size` (the newest is always kept). `size(value)` is bytes, or 1 to
    bound by count. Concurrent requests for one key compute it once: later callers wait,
    inside `waiting()` if given (a spinner), and get the same value."""

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
            value = read_only(compute())
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

    @property
    def total(self) -> int:
        """The size of what is held now (bytes, or a count)."""
        return self._total

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        return len(self._items)


def _mb(name: str, default: float) -> int:
    return int(float(os.environ.get(name, default)) * 2**20)


CACHES: dict[str, SharedCache] = {
    "models": SharedCache(int(os.environ.get("ATTNVIZ_MODELS", 4))),
    "traces": SharedCache(_mb("ATTNVIZ_TRACE_CACHE_MB", 1500), size=nbytes),
    "results": SharedCache(_mb("ATTNVIZ_RESULT_CACHE_MB", 256), size=nbytes),
    "figures": SharedCache(256),
    "taggers": SharedCache(4),
}


def cached(kind: str, key: Hashable, compute: Callable[[], object],
           waiting: Callable[[], AbstractContextManager] | None = None):
    """CACHES[kind].get(key, compute, waiting): the one way the app caches a value."""
    return CACHES[kind].get(key, compute, waiting)


def clear_caches(*kinds: str) -> None:
    """Forget the cached values of these kinds (all but the models when none are named)."""
    for kind in kinds or [k for k in CACHES if k != "models"]:
        CACHES[kind].clear()
