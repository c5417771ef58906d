"""The server-wide caches: bounded by bytes (traces) or count, LRU, computing identical
requests once."""

import threading
import time

import numpy as np
import pytest

from attnviz.ui.trace_cache import SharedCache, TraceCache, trace_nbytes


def test_lru_eviction_by_bytes(model):
    small = model.trace("I saw a saw")
    cache = TraceCache(max_bytes=int(trace_nbytes(small) * 2.5))
    for text in ("a", "b", "c"):
        cache.get(text, lambda: model.trace("I saw a saw"))
    assert len(cache) == 2 and cache.nbytes <= cache.max_bytes
    calls = []
    cache.get("c", lambda: calls.append(1))  # a hit: not recomputed
    assert not calls and cache.hits == 1
    cache.get("a", lambda: model.trace("I saw a saw"))  # evicted earlier: recomputed
    assert cache.misses == 4


def test_cached_arrays_are_read_only(model):
    t = TraceCache(1 << 30).get("k", lambda: model.trace("I saw a saw"))
    with pytest.raises(ValueError):
        t.weights[0, 0, 0, 0] = 2.0
    assert np.allclose(t.weights.sum(-1), 1, atol=1e-5)


def test_concurrent_identical_requests_compute_once(model):
    cache = TraceCache(1 << 30)
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.3)
        return model.trace("I saw a saw")

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("same", slow)))
               for _ in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(calls) == 1 and len(results) == 6
    assert all(r is results[0] for r in results)


def test_one_oversized_trace_is_still_kept(model):
    cache = TraceCache(max_bytes=10)
    t = cache.get("big", lambda: model.trace("I saw a saw"))
    assert cache.get("big", lambda: None) is t and len(cache) == 1


def test_shared_cache_by_count_and_waiting_callers_are_told():
    """The same cache serves the windows page's long runs and the lesson's taggers: bounded
    by count, and a caller that waits for another's computation enters `waiting()` once."""
    cache = SharedCache(max_size=2)
    started, waited, calls = threading.Event(), [], []

    def slow():
        calls.append(1)
        started.set()
        time.sleep(0.3)
        return "result"

    first = threading.Thread(target=lambda: cache.get("run", slow))
    first.start()
    started.wait()
    got = cache.get("run", slow, waiting=lambda: _Noted(waited))
    first.join()
    assert got == "result" and calls == [1] and waited == ["entered"]
    assert cache.get("run", slow, waiting=lambda: _Noted(waited)) == "result"
    assert waited == ["entered"]  # a hit does not wait
    for k in ("a", "b"):
        cache.get(k, lambda k=k: k)
    assert len(cache) == 2 and cache.get("run", lambda: "again") == "again"  # evicted


class _Noted:
    def __init__(self, log: list) -> None:
        self.log = log

    def __enter__(self):
        self.log.append("entered")

    def __exit__(self, *exc):
        return False
