"""The server-wide trace cache: bounded by bytes, LRU, computes identical requests once."""

import threading
import time

import numpy as np
import pytest

from attnviz.ui.trace_cache import TraceCache, trace_nbytes


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
