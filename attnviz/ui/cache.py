"""The app's one cache registry: everything computed once per server and shared by sessions.

    kind      key                                     bound (attnviz.settings, default)
    models    (folder, device)                        count (models, 4)
    traces    Trace.key = (model key, TraceRequest)   bytes (trace_cache_mb, 640)
    results   (name, Trace.key or settings, ...)      bytes (result_cache_mb, 128)
    figures   (name, Trace.key or settings, ...)      bytes (figure_cache_mb, 128)
    taggers   taggers.Settings                        count (4)

Figures are sized by `footprint` (their arrays, lists and strings), the others by
the bytes of their NumPy arrays (`nbytes`).

The model key (Model.key) names the weights by their digest, so a checkpoint saved again into
its folder and loaded again never meets the traces or results of the weights it replaced.

Keys are plain values (strings, numbers, frozen requests and settings), never arrays. Each
cache (a cachetools.LRUCache inside SharedCache) evicts its least recently used entries past
its bound and computes a key once when
several sessions ask for it together: later callers wait (with a spinner, if given) and get
the same value. Cached arrays are made read-only, so no session can alter what others see.

These caches are plain Python objects, not Streamlit's st.cache_*: Streamlit's "clear caches"
message, which any client can send, does not reach them.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager, nullcontext

import cachetools
import numpy as np
import plotly.graph_objects as go

from ..i18n import _
from ..settings import settings
from .per_figure import figure_json
from .worklist import heavy_lease, heavy_trace, release_leases


def nbytes(value) -> int:
    """Bytes of the NumPy arrays inside a value (dicts, lists, tuples and dataclasses walked)."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, dict):
        return sum(nbytes(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(nbytes(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if isinstance(getattr(type(value), "nbytes", None), property):  # counts itself (Trace)
            return value.nbytes
        return sum(nbytes(getattr(value, f.name)) for f in dataclasses.fields(value))
    return 0


_NUMBERS = frozenset({int, float, bool, type(None)})


# A Plotly template's JSON -> the footprint of its dict (a few templates: themes, languages)
_TEMPLATE_SIZES: cachetools.LRUCache = cachetools.LRUCache(64)
_TEMPLATE_LOCK = threading.Lock()


def footprint(value) -> int:
    """Approximate bytes held by a value: NumPy arrays and tensors by their data, strings and
    bytes by their length, containers by their items plus a pointer each (Python's own object
    headers included roughly). A Plotly figure counts twice the length of its JSON
    (per_figure.figure_json, made once per figure and kept while it lives: the bytes a chart
    sends): the figure's own data and layout, about as large, and that JSON."""
    kind = type(value)
    if kind in _NUMBERS:  # most of a figure's leaves: answered first
        return 24
    if kind is str:
        return 50 + len(value)
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (str, bytes)):
        return 50 + len(value)
    if isinstance(value, dict):
        source = getattr(value, "source", None) if kind is not dict else None
        if type(source) is bytes:  # plotting.common.Template: a copy of one template's JSON
            with _TEMPLATE_LOCK:
                size = _TEMPLATE_SIZES.get(source)
            if size is None:
                size = 64 + sum(footprint(v) + 8 for v in value.values())
                with _TEMPLATE_LOCK:
                    _TEMPLATE_SIZES[source] = size
            return size
        return 64 + sum(footprint(v) + 8 for v in value.values())
    if isinstance(value, (list, tuple)):
        # A figure's labels, tick texts and numbers, counted as below without a call per item
        kinds = set(map(type, value))
        if kinds <= _NUMBERS:  # 24 bytes a number
            return 56 + 32 * len(value)
        if kinds == {str}:  # 50 bytes and its length a string
            return 56 + 58 * len(value) + sum(map(len, value))
        return 56 + sum(footprint(v) + 8 for v in value)
    if isinstance(value, go.Figure):
        return 2 * len(figure_json(value)[0])
    if hasattr(value, "element_size") and hasattr(value, "numel"):  # a torch.Tensor
        return value.numel() * value.element_size()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(footprint(getattr(value, f.name)) for f in dataclasses.fields(value))
    return 24


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
    """Values shared by every session of a server, held in a cachetools.LRUCache bounded by
    `max_size`: its least recently used entries go once their total size passes it. `size(value)`
    is bytes, or 1 to bound by count; a value larger than the whole bound counts as the whole
    bound, so it is kept alone until the next one comes.

    What cachetools leaves to its user, and this class adds: concurrent requests for one key
    compute it once (later callers wait, inside `waiting()` if given, a spinner, and get the same
    value), and a caller about to wait first gives back any heavy-work lease it holds
    (ui.worklist), so the compute-once locks and the heavy-work lines never deadlock; cachetools'
    own `cached(condition=...)` wraps one function and waits silently, holding what it holds.
    `admit(key)`, if given, is called first on every get: the trace cache's long inputs take a
    lease there, hit or miss."""

    def __init__(self, max_size: int, size: Callable[[object], int] = lambda value: 1,
                 admit: Callable[[Hashable], None] | None = None):
        self.max_size = max_size
        self._size = size
        self._admit = admit  # called first on every get (the heavy-work line's lease)
        self._items: cachetools.LRUCache = cachetools.LRUCache(
            max(1, max_size), getsizeof=lambda item: min(item[1], max(1, max_size)))
        self._lock = threading.Lock()  # cachetools' caches are not thread-safe
        self._pending: dict[Hashable, threading.Lock] = {}
        self.hits = 0
        self.misses = 0

    def fresh(self) -> SharedCache:
        """A new, empty cache with the same bound, sizes and admission."""
        return SharedCache(self.max_size, self._size, self._admit)

    def _hit(self, key: Hashable):
        """(value, size) for key, marked as just used; None if not held."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self.hits += 1
            return found

    def get(self, key: Hashable, compute: Callable[[], object],
            waiting: Callable[[], AbstractContextManager] | None = None):
        """The cached value for key, or compute() once (concurrent callers share it)."""
        if self._admit is not None:
            self._admit(key)
        found = self._hit(key)
        if found is not None:
            return found[0]
        with self._lock:
            key_lock = self._pending.setdefault(key, threading.Lock())
        if not key_lock.acquire(blocking=False):  # another caller is computing this key
            release_leases()  # never wait while holding a heavy-work lease
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
                self._pending.pop(key, None)
            return value
        finally:
            key_lock.release()

    def peek(self, key: Hashable):
        """The value for key if held now (marked as just used), else None; never computes."""
        found = self._hit(key)
        return None if found is None else found[0]

    def discard(self, key: Hashable) -> None:
        """Forget one key's value (a no-op when it holds none)."""
        with self._lock:
            self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    @property
    def total(self) -> int:
        """The size of what is held now (bytes, or a count)."""
        return self._items.currsize

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def __len__(self) -> int:
        return len(self._items)


def _admit_trace(key: Hashable) -> None:
    """A page run reading a trace of a long input takes a BIG_TRACES lease (ui.worklist)."""
    if heavy_trace(key):
        heavy_lease(_("This page reads a long text."))


def _mb(size_mb: float) -> int:
    return int(size_mb * 2**20)


def _caches() -> dict[str, SharedCache]:
    """The registry's caches, bounded as attnviz.settings says."""
    s = settings()
    return {
        "models": SharedCache(s.models),
        "traces": SharedCache(_mb(s.trace_cache_mb), size=nbytes, admit=_admit_trace),
        "results": SharedCache(_mb(s.result_cache_mb), size=nbytes),
        "figures": SharedCache(_mb(s.figure_cache_mb), size=footprint),
        "taggers": SharedCache(4),
    }


CACHES: dict[str, SharedCache] = _caches()


def cached(kind: str, key: Hashable, compute: Callable[[], object],
           waiting: Callable[[], AbstractContextManager] | None = None):
    """CACHES[kind].get(key, compute, waiting): the one way the app caches a value."""
    return CACHES[kind].get(key, compute, waiting)


def peek(kind: str, key: Hashable):
    """CACHES[kind]'s value for `key` if it holds one now, else None; never computes."""
    return CACHES[kind].peek(key)


def is_cached(kind: str, key: Hashable) -> bool:
    """Whether CACHES[kind] holds `key` now (a page skips its "please wait" for a hit)."""
    return key in CACHES[kind]


def forget(kind: str, key: Hashable) -> None:
    """CACHES[kind] without `key`: the next `cached` call computes it again."""
    CACHES[kind].discard(key)


def clear_caches(*kinds: str) -> None:
    """Forget the cached values of these kinds (all but the models when none are named)."""
    for kind in kinds or [k for k in CACHES if k != "models"]:
        CACHES[kind].clear()
