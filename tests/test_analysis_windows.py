"""Windowed attention (blocked, L·w) against full attention with a window mask, SDPA, and HF
BertModel; the measured memory against the tensor sizes; the context sweep against HF."""

import threading

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis import windows as win
from attnviz.engine import attention, build_mask, window_mask

CASES = [  # n, window, causal, block
    (1, 0, False, None), (6, 1, False, None), (17, 2, True, None), (40, 3, False, 5),
    (33, 0, True, 4), (50, 60, False, None), (129, 16, False, None), (64, 7, True, 64),
]


def qkv(n, d=8, heads=3, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(heads, n, d, generator=g, dtype=dtype) for _ in range(3)]


@pytest.mark.parametrize("n,w,causal,block", CASES)
def test_windowed_equals_masked_full_attention_and_sdpa(n, w, causal, block):
    q, k, v = qkv(n)
    r = win.windowed_attention(q, k, v, w, causal=causal, block=block)
    mask = build_mask(n, w, causal)
    out, weights, scores = attention(q, k, v, mask=mask)
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # independent reference
    torch.testing.assert_close(r.outputs, sdpa, atol=1e-6, rtol=0)
    torch.testing.assert_close(r.outputs, out, atol=1e-6, rtol=0)
    torch.testing.assert_close(win.band_to_dense(r.weights, w), weights, atol=1e-6, rtol=0)
    # Raw scores in the band are q·k, written out, for every key that exists.
    dense_s = win.band_to_dense(r.scores, w, fill=float("nan"))
    inside = window_mask(n, w).expand_as(dense_s)
    ref = torch.einsum("hid,hjd->hij", q, k)
    torch.testing.assert_close(dense_s[inside], ref[inside], atol=1e-6, rtol=0)
    assert torch.isnan(dense_s[~inside]).all()


@pytest.mark.parametrize("n,w,causal,block", CASES)
def test_float32_matches_within_1e5(n, w, causal, block):
    q, k, v = qkv(n, d=64, dtype=torch.float32, seed=1)
    r = win.windowed_attention(q, k, v, w, causal=causal, block=block)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=build_mask(n, w, causal))
    torch.testing.assert_close(r.outputs, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("n,w,causal", [(23, 2, False), (23, 3, True), (5, 9, False)])
def test_weights_zero_outside_window_and_rows_sum_to_one(n, w, causal):
    q, k, v = qkv(n, dtype=torch.float32)
    dense = win.band_to_dense(win.windowed_attention(q, k, v, w, causal=causal).weights, w)
    allowed = build_mask(n, w, causal).expand_as(dense)
    assert (dense[~allowed] == 0).all()  # exactly 0, not merely small
    assert (dense[allowed] > 0).all()
    torch.testing.assert_close(dense.sum(-1), torch.ones(3, n), atol=1e-6, rtol=0)


def test_band_layout_is_key_i_minus_w_plus_o():
    q, k, v = qkv(9, heads=1)
    r = win.windowed_attention(q, k, v, 2)
    # query 4, offset 0 -> key 2; offset 4 -> key 6. query 0, offset 0 -> key -2: no key.
    assert r.scores[0, 4, 0] == pytest.approx(float(q[0, 4] @ k[0, 2]))
    assert r.scores[0, 4, 4] == pytest.approx(float(q[0, 4] @ k[0, 6]))
    assert torch.isnan(r.scores[0, 0, 0]) and r.weights[0, 0, 0] == 0


def test_no_tensor_of_size_l_squared_and_memory_grows_linearly():
    """Peak bytes from the profiler's allocation records equal the tensor sizes written out."""
    L, d, w = 1024, 64, 32
    full = win.measure_attention(L, w, "full", repeats=1)
    # scores, logits, weights ([L, L] float32 each) live together, plus the [L, d] outputs.
    assert full.peak_bytes == 3 * L * L * 4 + L * d * 4
    small = win.measure_attention(L, w, "windowed", repeats=1)
    big = win.measure_attention(2 * L, w, "windowed", repeats=1)
    assert small.peak_bytes < L * L * 4  # not even one L×L matrix
    assert 1.8 < big.peak_bytes / small.peak_bytes < 2.2  # doubles with L (L² would be 4x)
    full2 = win.measure_attention(2 * L, w, "full", repeats=1)
    assert full2.peak_bytes / full.peak_bytes > 3.9
    assert small.seconds > 0 and small.median_seconds >= small.seconds


def test_measure_sweep_and_table():
    calls = []
    ms = win.measure_sweep([64, 128], 4, repeats=1, progress=lambda f, m: calls.append(f))
    t = win.measurements_table(ms)
    assert list(t["length"]) == [64, 64, 64, 128, 128, 128]
    assert list(t["method"][:3]) == ["full", "masked", "windowed"]
    assert calls[-1] == 1.0 and len(calls) == 6
    assert "CPU" in win.device_name("cpu")
    with pytest.raises(ValueError):
        win.measure_attention(8, 1, "sparse")


def test_sweep_windows():
    assert win.sweep_windows(6) == [1, 2, 3, 4, 5]
    ws = win.sweep_windows(512)
    assert ws[:24] == list(range(1, 25)) and ws[-1] == 511 and len(ws) <= 40
    assert ws == sorted(set(ws))


def test_repeated_pair():
    assert win.repeated_pair(["[CLS]", "i", "saw", "a", "saw", "[SEP]"]) == (2, 4)
    assert win.repeated_pair(["[CLS]", "a", "b", "[SEP]"]) is None


def test_context_sweep_matches_hf_bert_with_window_mask(model, hf_model):
    text = "I saw a saw"
    ids, seg, _ = model.tokenize(text)
    n = len(ids)
    s = win.context_sweep(model, ids, seg)
    assert list(s.windows) == list(range(1, n)) and s.pair == (2, 4)
    with torch.no_grad():
        def hf_final(mask):
            bias = torch.zeros(1, 1, n, n).masked_fill(~mask, float("-inf"))
            return hf_model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([seg]),
                            attention_mask=bias).last_hidden_state[0].double().numpy()
        full = hf_final(torch.ones(n, n, dtype=torch.bool))
        for k, w in enumerate(s.windows):
            h = hf_final(window_mask(n, int(w)))
            cos = (h * full).sum(1) / np.linalg.norm(h, axis=1) / np.linalg.norm(full, axis=1)
            np.testing.assert_allclose(s.cosine[k], cos, atol=1e-5)
            a, b = h[2], h[4]
            pair = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
            assert s.pair_cosine[k] == pytest.approx(pair, abs=1e-5)
    assert s.full_pair_cosine == pytest.approx(0.658, abs=1e-3)  # FIELD_NOTES
    np.testing.assert_allclose(s.cosine[-1], 1.0, atol=1e-5)  # w = n - 1 is full attention
    np.testing.assert_allclose(s.mean_cosine, s.cosine.mean(1))
    assert s.mean_cosine[0] < 0.9  # one neighbour each side moves the vectors a lot


def test_engine_trace_with_window_matches_sweep(model):
    text = "the cat sat on the mat"
    ids, seg, _ = model.tokenize(text)
    s = win.context_sweep(model, ids, seg, windows=[2])
    t_w, t_f = model.trace(text, window=2), model.trace(text)
    a, b = t_w.hidden_states[-1].astype(np.float64), t_f.hidden_states[-1].astype(np.float64)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(s.cosine[0], cos, atol=1e-5)
    assert s.pair == (1, 5)  # 'the' twice


def test_peak_memory_is_per_thread_and_safe_under_concurrency():
    """A class on one server: several sessions measure at once while others run torch. The
    profiler is one per process (two at once crashed libtorch in the load test); each
    measurement counts only its own thread's allocations, so the numbers do not change."""
    alone = [win.measure_attention(512, 16, m, repeats=1).peak_bytes
             for m in ("full", "masked", "windowed")]
    stop = threading.Event()

    def noise():
        a = torch.randn(200, 200)
        while not stop.is_set():
            (a @ a).sum()

    results: dict[int, list[int]] = {}

    def measure(i: int) -> None:
        results[i] = [win.measure_attention(512, 16, m, repeats=1).peak_bytes
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
    fn = win._attention_fn(method, 512, 16, torch.device("cpu"))
    with torch.inference_mode():
        fn(q, k, v)
        ours = win.peak_memory(lambda: fn(q, k, v), torch.device("cpu"))[0]
        assert ours == profiled_peak(lambda: fn(q, k, v)) > 0


def test_peak_memory_counts_frees_between_ops():
    def churn():
        for _ in range(5):
            x = torch.empty(2**20)  # 4 MiB, freed before the next one is made
            del x

    assert win.peak_memory(churn, torch.device("cpu"))[0] <= 2 * 4 * 2**20
