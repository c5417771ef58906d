"""The cache registry (attnviz.ui.cache): bounded by bytes (traces, results) or count, LRU,
computing identical requests once, read-only values, out of reach of Streamlit's cache clearing."""

import dataclasses
import threading
import time

import numpy as np
import pytest

from attnviz.engine import TraceRequest
from attnviz.ui.cache import CACHES, SharedCache, cached, footprint, nbytes, read_only


def TraceCache(max_bytes: int) -> SharedCache:  # noqa: N802 - the registry's trace cache
    return SharedCache(max_bytes, size=nbytes)


def test_lru_eviction_by_bytes(model):
    small = model.trace("I saw a saw")
    cache = TraceCache(max_bytes=int(nbytes(small) * 2.5))
    for text in ("a", "b", "c"):
        cache.get(text, lambda: model.trace("I saw a saw"))
    assert len(cache) == 2 and cache.total <= cache.max_size
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


def test_trace_bytes_are_its_arrays(model):
    """A trace's size is the bytes of its arrays, every one of them (kv_heads, the key/value
    head each query head reads, included); the list names them, so a new array is counted."""
    t = model.trace("I saw a saw")
    arrays = ("token_ids", "segments", "position_ids", "embeddings", "queries", "keys",
              "values", "scores", "weights", "outputs", "hidden_states", "mask", "kv_heads")
    assert {f.name for f in dataclasses.fields(t)
            if isinstance(getattr(t, f.name), np.ndarray)} == set(arrays)
    assert t.kv_heads.shape == (t.weights.shape[1],)  # one per query head
    assert nbytes(t) == sum(getattr(t, f).nbytes for f in arrays)


def test_results_are_read_only_all_the_way_down():
    value = read_only({"a": np.zeros(3), "b": (np.ones(2), [np.eye(2)])})
    for arr in (value["a"], value["b"][0], value["b"][1][0]):
        with pytest.raises(ValueError):
            arr[0] = 5


def test_the_request_is_the_key(model):
    """Requests that differ only in a seed the positions mode ignores are one cache entry."""
    calls = []

    def compute(request):
        calls.append(request)
        return model.trace(request)

    a = TraceRequest("I saw a saw", seed=3)
    b = TraceRequest("I saw a saw", seed=9)
    assert a == b and hash(a) == hash(b) and a.seed == 0
    cache = TraceCache(1 << 30)
    assert cache.get((model.key, a), lambda: compute(a)) is cache.get((model.key, b),
                                                                       lambda: compute(b))
    assert len(calls) == 1
    assert TraceRequest("x", positions="shuffled", seed=3) != TraceRequest(
        "x", positions="shuffled", seed=9)


def test_streamlit_cache_clearing_does_not_reach_the_registry():
    """Any client can send Streamlit's clear-cache message; the app's caches are not st.cache_*."""
    import streamlit as st

    key = ("test_registry_survives_clear", 1)
    cached("results", key, lambda: np.arange(3))
    st.cache_data.clear()
    st.cache_resource.clear()
    assert key in CACHES["results"]


def test_footprint_counts_a_list_of_numbers_or_strings_as_its_items():
    """A list of plain numbers (a figure's z row) or of strings (its tick labels) is counted
    without a call per item, as the item-by-item count: 24 bytes a number or None, 50 and its
    length a string, plus a pointer each, 56 for the list."""
    def by_item(value):  # the rule item by item, as for any other list
        if isinstance(value, list):
            return 56 + sum(by_item(v) + 8 for v in value)
        return 50 + len(value) if isinstance(value, str) else 24
    for value in ([], [1.5, None, 2, True], [[0.1] * 7, [None, 3]], [1.0, "saw", [2.0]],
                  (0.5, 1), [np.float32(1.0), 2.0], ["saw #2", "saw #4", ""], ("I", "saw")):
        assert footprint(value) == by_item(list(value) if isinstance(value, tuple) else value)
    assert footprint([0.25] * 1000) == 56 + 32 * 1000


def test_a_figure_is_sized_by_the_json_its_chart_sends_made_once(monkeypatch):
    """The figure cache sizes a figure by its JSON (twice: the figure, and the JSON kept for
    its chart), made once per figure object: putting it in the cache and drawing it later
    serialise it once, and nothing deep-copies it only to weigh it."""
    import plotly.graph_objects as go

    from attnviz.ui.per_figure import figure_json

    fig = go.Figure(go.Heatmap(z=np.arange(12.0).reshape(3, 4), x=list("abcd")))
    calls = []
    real = go.Figure.to_dict
    monkeypatch.setattr(go.Figure, "to_dict", lambda self: calls.append(1) or real(self))
    size = footprint(fig)
    assert size == 2 * len(figure_json(fig)[0]) and figure_json(fig)[0] is figure_json(fig)[0]
    assert len(calls) == 1  # the JSON's own (plotly.io.to_json), once


def test_values_per_figure_are_read_once_and_bounded():
    """PerFigure reads a figure once while it lives, keeps at most its bound (least recently
    used dropped, then read again when asked), and forgets a figure that is gone."""
    import gc

    import plotly.graph_objects as go

    from attnviz.ui.per_figure import PerFigure

    per, reads = PerFigure(max_size=2), []
    figs = [go.Figure(go.Bar(y=[k])) for k in range(3)]
    read = lambda fig: reads.append(id(fig)) or fig.data[0].y[0]  # noqa: E731
    assert [per.get(f, read) for f in figs[:2]] == [0, 1] and per.get(figs[0], read) == 0
    assert len(reads) == 2
    per.get(figs[2], read)  # the least recently used (figs[1]) is dropped
    assert id(figs[1]) not in per and id(figs[0]) in per and id(figs[2]) in per
    assert per.get(figs[1], read) == 1 and len(reads) == 4
    gone = id(figs[2])
    del figs[2], read
    gc.collect()
    assert gone not in per


def test_a_fresh_cache_has_the_bound_and_nothing_else():
    cache = TraceCache(1000)
    cache.get("a", lambda: np.zeros(10))
    fresh = cache.fresh()
    assert len(fresh) == 0 and fresh.max_size == 1000 and fresh.total == 0 and len(cache) == 1
    fresh.get("b", lambda: np.zeros(200))  # 1600 bytes: past the bound, kept alone
    assert fresh.total == 1000 and "b" in fresh
