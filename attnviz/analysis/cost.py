"""What truncated attention saves: time and peak memory of full, masked and windowed attention.

    full      attention(q, k, v): builds the [L, L] scores and weights          ~ L² memory
    masked    the same with window_mask(L, w): still [L, L], a mask saves nothing
    windowed  windowed_attention(q, k, v, w): blocks of keys, never [L, L]      ~ L·w memory

Random queries/keys/values from a fixed seed (1 head, d = 64 by default); the best of a few
calls after a warm-up; peak memory from the allocator's own counts, so it repeats exactly.
"""

from __future__ import annotations

import platform
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnviz.engine.attention import attention, window_mask, windowed_attention
from attnviz.i18n import N_, _


@dataclass
class Measurement:
    """Cost of one attention call at one length: seconds and peak bytes.

    seconds = best of the repeats (other processes on a shared machine only ever add time);
    median_seconds is kept beside it.
    """

    length: int
    window: int
    method: str  # "full", "masked" (full matrix + window mask) or "windowed"
    seconds: float
    median_seconds: float
    peak_bytes: int
    memory_method: str


def device_name(device: torch.device | str) -> str:
    """A readable name of the device the numbers were taken on."""
    device = torch.device(device)
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA)"
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return _("CPU {cpu}, {n} threads").format(cpu=cpu, n=torch.get_num_threads())


def _attention_fn(method: str, n: int, window: int, device) -> Callable:
    if method == "full":
        return lambda q, k, v: attention(q, k, v)[0]
    if method == "masked":
        return lambda q, k, v: attention(q, k, v, mask=window_mask(n, window, device))[0]
    if method == "windowed":
        return lambda q, k, v: windowed_attention(q, k, v, window, return_band=False).outputs
    raise ValueError(f"method must be full, masked or windowed; got {method!r}")


_PROFILER_LOCK = threading.Lock()
_MARKER = "attnviz.peak_memory"
# How peak memory was measured: cached with the measurement, so marked here and looked up
# with _() where shown (plotting.windows.cost_chart).
CUDA_PEAK = N_("torch.cuda.max_memory_allocated")
PROFILER_PEAK = N_("torch profiler allocation records (CPU)")


def peak_memory(fn: Callable[[], object], device: torch.device) -> tuple[int, str]:
    """Peak bytes of tensors allocated while fn() runs, above what was live before.

    CUDA: torch.cuda.max_memory_allocated after reset_peak_memory_stats (the caching
    allocator's own count). CPU: the PyTorch profiler's allocation records
    (profile_memory=True): every tensor allocation and free in time order, summed, peak taken.
    Python's tracemalloc cannot see these buffers (torch allocates them outside Python's heap).
    """
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        base = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        result = fn()
        torch.cuda.synchronize(device)
        peak = torch.cuda.max_memory_allocated(device) - base
        del result
        return int(peak), CUDA_PEAK
    from torch.profiler import ProfilerActivity, profile, record_function

    # The profiler is one per process and records every thread: concurrent sessions (a class
    # on one server) must take turns (two profiles at once crashed libtorch), and only this
    # thread's allocations count. An empty marker names this thread; it must not enclose fn(),
    # or the frees between fn's ops would be booked to it and lost below.
    with _PROFILER_LOCK:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            with record_function(_MARKER):
                pass
            result = fn()
            del result
    events = prof.events()
    mine = {e.thread for e in events if e.name == _MARKER}
    changes = sorted(
        (e.time_range.start, e.self_cpu_memory_usage)
        for e in events if e.self_cpu_memory_usage and e.thread in mine and e.name != _MARKER
    )
    live = peak = 0
    for _start, b in changes:
        live += b
        peak = max(peak, live)
    return int(peak), PROFILER_PEAK


def measure_attention(
    length: int,
    window: int,
    method: str,
    *,
    head_dim: int = 64,
    heads: int = 1,
    device: torch.device | str = "cpu",
    repeats: int = 5,
    seed: int = 0,
) -> Measurement:
    """Time (best and median of `repeats` after one warm-up) and peak memory of one call."""
    device = torch.device(device)
    g = torch.Generator(device="cpu").manual_seed(seed)
    q, k, v = (torch.randn(heads, length, head_dim, generator=g).to(device) for _ in range(3))
    fn = _attention_fn(method, length, window, device)
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    with torch.inference_mode():
        fn(q, k, v)  # warm-up
        sync()
        times = []
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            fn(q, k, v)
            sync()
            times.append(time.perf_counter() - t0)
        peak, how = peak_memory(lambda: fn(q, k, v), device)
    return Measurement(length, window, method, float(np.min(times)), float(np.median(times)),
                       peak, how)


def measure_sweep(
    lengths: Sequence[int],
    window: int,
    methods: Sequence[str] = ("full", "masked", "windowed"),
    *,
    device: torch.device | str = "cpu",
    repeats: int = 5,
    head_dim: int = 64,
    heads: int = 1,
    progress: Callable[[float, str], None] | None = None,
) -> list[Measurement]:
    """measure_attention for every (length, method); progress(fraction, message) after each."""
    out, total = [], len(lengths) * len(methods)
    for a, n in enumerate(lengths):
        for b, m in enumerate(methods):
            out.append(measure_attention(n, window, m, head_dim=head_dim, heads=heads,
                                         device=device, repeats=repeats))
            if progress:
                progress((a * len(methods) + b + 1) / total, f"L = {n}, {m}")
    return out


def measurements_table(ms: Sequence[Measurement]) -> dict[str, np.ndarray]:
    """Column arrays (for CSV/NPZ download and the benchmark's printed table)."""
    return {
        "length": np.array([m.length for m in ms]),
        "window": np.array([m.window for m in ms]),
        "method": np.array([m.method for m in ms]),
        "seconds": np.array([m.seconds for m in ms]),
        "median_seconds": np.array([m.median_seconds for m in ms]),
        "peak_bytes": np.array([m.peak_bytes for m in ms], dtype=np.int64),
    }

