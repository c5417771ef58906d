"""The measured cost of full, masked and windowed attention: peak memory against the tensor
sizes written out, and safe under concurrent sessions."""

import threading

import pytest
import torch

from attnviz.analysis import cost


def test_no_tensor_of_size_l_squared_and_memory_grows_linearly():
    """Peak bytes from the profiler's allocation records equal the tensor sizes written out."""
    L, d, w = 1024, 64, 32
    full = cost.measure_attention(L, w, "full", repeats=1)
    # scores, logits, weights ([L, L] float32 each) live together, plus the [L, d] outputs.
    assert full.peak_bytes == 3 * L * L * 4 + L * d * 4
    small = cost.measure_attention(L, w, "windowed", repeats=1)
    big = cost.measure_attention(2 * L, w, "windowed", repeats=1)
    assert small.peak_bytes < L * L * 4  # not even one L×L matrix
    assert 1.8 < big.peak_bytes / small.peak_bytes < 2.2  # doubles with L (L² would be 4x)
    full2 = cost.measure_attention(2 * L, w, "full", repeats=1)
    assert full2.peak_bytes / full.peak_bytes > 3.9
    assert small.seconds > 0 and small.median_seconds >= small.seconds


def test_measure_sweep_and_table():
    calls = []
    ms = cost.measure_sweep([64, 128], 4, repeats=1, progress=lambda f, m: calls.append(f))
    t = cost.measurements_table(ms)
    assert list(t["length"]) == [64, 64, 64, 128, 128, 128]
    assert list(t["method"][:3]) == ["full", "masked", "windowed"]
    assert calls[-1] == 1.0 and len(calls) == 6
    assert "CPU" in cost.device_name("cpu")
    with pytest.raises(ValueError):
        cost.measure_attention(8, 1, "sparse")


def test_peak_memory_is_per_thread_and_safe_under_concurrency():
    """A class on one server: several sessions measure at once while others run torch. The
    profiler is one per process (two at once crashed libtorch in the load test); each
    measurement counts only its own thread's allocations, so the numbers do not change."""
    alone = [cost.measure_attention(512, 16, m, repeats=1).peak_bytes
             for m in ("full", "masked", "windowed")]
    stop = threading.Event()

    def noise():
        a = torch.randn(200, 200)
        while not stop.is_set():
            (a @ a).sum()

    results: dict[int, list[int]] = {}

    def measure(i: int) -> None:
        results[i] = [cost.measure_attention(512, 16, m, repeats=1).peak_bytes
                      for m in ("full", "masked", "windowed")]

    others = [threading.Thread(target=noise) for _ in range(2)]
    workers = [threading.Thread(target=measure, args=(i,)) for i in range(3)]
    for t in others + workers:
        t.start()
    for t in workers:
        t.join()
    stop.set()
    for t in others:
        t.join()
    assert all(v == alone for v in results.values()), (alone, results)
    assert alone[0] > alone[2] > 0


def profiled_peak(fn) -> int:
    """The reference: one profile around fn alone, every allocation and free in time order."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        result = fn()
        del result
    live = peak = 0
    for _, b in sorted((e.time_range.start, e.self_cpu_memory_usage) for e in prof.events()
                       if e.self_cpu_memory_usage):
        live += b
        peak = max(peak, live)
    return peak


@pytest.mark.parametrize("method", ["full", "masked", "windowed"])
def test_peak_memory_equals_a_plain_profile(method):
    """The lock and the thread filter change nothing for a lone caller: frees between ops
    still count (a marker around fn() once booked them to itself and doubled 'masked')."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 512, 64, generator=g) for _ in range(3))
    fn = cost._attention_fn(method, 512, 16, torch.device("cpu"))
    with torch.inference_mode():
        fn(q, k, v)
        ours = cost.peak_memory(lambda: fn(q, k, v), torch.device("cpu"))[0]
        assert ours == profiled_peak(lambda: fn(q, k, v)) > 0


def test_peak_memory_counts_frees_between_ops():
    def churn():
        for _ in range(5):
            x = torch.empty(2**20)  # 4 MiB, freed before the next one is made
            del x

    assert cost.peak_memory(churn, torch.device("cpu"))[0] <= 2 * 4 * 2**20
