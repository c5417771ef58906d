"""Truncated (windowed) self-attention whose cost grows with L·w, not L².

Seed 003, "self-attention for speech": a frame attends only within a range,
    w_ij = softmax_j(q^i · k^j / sqrt(d_k))  over the keys j with |i - j| <= w only,
    b^i  = sum_{|i-j|<=w} w_ij v^j.
Full attention with `engine.attention.window_mask` gives the same numbers but still builds
the whole [L, L] matrix and then throws most of it away. `windowed_attention` never builds
it: queries are cut into blocks of B rows, and block b only meets the B + 2w keys that can
fall in its rows' windows (keys gathered with `Tensor.unfold` of the zero-padded sequence,
Longformer's "sliding chunks", Beltagy et al. 2020, arXiv:2004.05150). Work and memory are
L·(B + 2w)·d and L·(B + 2w) instead of L²·d and L².

Also here: `measure_attention` (time and peak memory of full vs masked vs windowed
attention on a device) and `context_sweep` ("how much context does BERT use?": the encoder
run with windows w = 1..n, final vectors compared with full attention by cosine).
"""

from __future__ import annotations

import math
import platform
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.engine.attention import attention, window_mask


# --------------------------------------------------------------------------- windowed
@dataclass
class Windowed:
    """Windowed attention results. Band layout: band[..., i, o] belongs to key j = i - w + o."""

    outputs: torch.Tensor  # [..., n, d_v]
    weights: torch.Tensor | None  # [..., n, 2w + 1]  0 where the key is masked or absent
    scores: torch.Tensor | None  # [..., n, 2w + 1]  raw q·k, NaN where no key exists
    window: int


def default_block(window: int) -> int:
    """Rows per query block: B = max(w, 16), so a block meets B + 2w <= 3 max(w, 16) keys."""
    return max(int(window), 16)


def windowed_attention(
    queries: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    window: int,
    *,
    causal: bool = False,
    scale: float | None = None,
    block: int | None = None,
    return_band: bool = True,
) -> Windowed:
    """Attention restricted to |i - j| <= window (and j <= i if causal), never forming [n, n].

    queries/keys/values: [..., n, d]. With B rows per block and nb = ceil(n / B) blocks:
        S_b = Q_b K_b^T        [..., nb, B, B + 2w]   K_b = keys b·B - w .. b·B + B + w - 1
        W_b = softmax(S_b / sqrt(d_k), masked to the window),  Y_b = W_b V_b.
    """
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    n, d = queries.shape[-2], queries.shape[-1]
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    w = int(window)
    B = int(block or default_block(w))
    nb = -(-n // B)
    n_pad = nb * B
    span = B + 2 * w  # keys a block of queries can see
    lead = queries.shape[:-2]
    q_b = F.pad(queries, (0, 0, 0, n_pad - n)).reshape(*lead, nb, B, d)  # [..., nb, B, d]
    k_p = F.pad(keys, (0, 0, w, n_pad - n + w))  # [..., n_pad + 2w, d]
    v_p = F.pad(values, (0, 0, w, n_pad - n + w))
    k_b = k_p.unfold(-2, span, B)  # [..., nb, d, span]  (a view: unfold puts the window last)
    v_b = v_p.unfold(-2, span, B).transpose(-1, -2)  # [..., nb, span, d_v]
    scores = q_b @ k_b  # [..., nb, B, span]
    # Which (query, key) pairs lie inside the window: j - i = c - w - r, same for every block.
    dev = queries.device
    rel = torch.arange(span, device=dev) - w - torch.arange(B, device=dev)[:, None]  # [B, span]
    inside = rel.abs() <= w
    if causal:
        inside = inside & (rel <= 0)
    # Which keys exist (not padding): depends on (block, column) only, j = b·B - w + c.
    j = (torch.arange(nb, device=dev) * B)[:, None] - w + torch.arange(span, device=dev)
    exists = ((j >= 0) & (j < n))[:, None, :]  # [nb, 1, span]
    logits = scores * scale  # [..., nb, B, span]
    logits.masked_fill_(~inside, float("-inf")).masked_fill_(~exists, float("-inf"))
    weights = torch.softmax(logits, dim=-1)  # [..., nb, B, span]
    out = (weights @ v_b).reshape(*lead, n_pad, values.shape[-1])[..., :n, :]  # [..., n, d_v]
    if not return_band:
        return Windowed(out, None, None, w)
    # Diagonal strip of each block: row r's keys r .. r + 2w are j = i - w .. i + w.
    idx = torch.arange(B, device=dev)[:, None] + torch.arange(2 * w + 1, device=dev)  # [B, 2w+1]
    idx = idx.expand(*weights.shape[:-1], 2 * w + 1)
    band_w = weights.gather(-1, idx).reshape(*lead, n_pad, 2 * w + 1)[..., :n, :]
    band_s = scores.masked_fill(~exists, float("nan")).gather(-1, idx)
    band_s = band_s.reshape(*lead, n_pad, 2 * w + 1)[..., :n, :]
    return Windowed(out, band_w, band_s, w)


def band_to_dense(band: torch.Tensor, window: int, fill: float = 0.0) -> torch.Tensor:
    """[..., n, 2w + 1] band -> [..., n, n] matrix (dense[i, i - w + o] = band[i, o]).

    Only for pictures and tests of short inputs: it is exactly the L² object the windowed
    computation avoids.
    """
    n, w = band.shape[-2], int(window)
    dense = band.new_full((*band.shape[:-1], n + 2 * w), fill)  # column c is key c - w
    col = torch.arange(n, device=band.device)[:, None] + torch.arange(2 * w + 1, device=band.device)
    dense.scatter_(-1, col.expand_as(band), band)
    return dense[..., w : w + n]


# ------------------------------------------------------------------------- measuring
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
    return f"CPU {cpu}, {torch.get_num_threads()} threads"


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
        return int(peak), "torch.cuda.max_memory_allocated"
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
    for _, b in changes:
        live += b
        peak = max(peak, live)
    return int(peak), "torch profiler allocation records (CPU)"


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


# ------------------------------------------------------------------- context sweep
@dataclass
class ContextSweep:
    """Final vectors of the encoder under windows w, compared with full attention.

    cosine[k, i] = cos(h_w[i], h_full[i]) for window windows[k] (h = last hidden state);
    pair_cosine[k] = cos(h_w[a], h_w[b]) for the token pair (a, b), e.g. the two "saw"s.
    """

    windows: np.ndarray  # [W]
    cosine: np.ndarray  # [W, n]
    mean_cosine: np.ndarray  # [W]
    pair: tuple[int, int] | None
    pair_cosine: np.ndarray | None  # [W]
    full_pair_cosine: float | None
    tokens: list[str] = field(default_factory=list)


def cosine_rows(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """cos(a_i, b_i) = a_i·b_i / (|a_i| |b_i|) for each row i of two [n, d] tensors."""
    return F.cosine_similarity(a, b, dim=-1)


def repeated_pair(tokens: Sequence[str]) -> tuple[int, int] | None:
    """The first two positions holding the same (non-special) token, e.g. saw #2 and saw #4."""
    seen: dict[str, int] = {}
    for i, t in enumerate(tokens):
        if t in ("[CLS]", "[SEP]", "[PAD]"):
            continue
        if t in seen:
            return seen[t], i
        seen[t] = i
    return None


@torch.inference_mode()
def context_sweep(
    model,
    ids: Sequence[int],
    segments: Sequence[int] | None = None,
    windows: Sequence[int] | None = None,
    pair: tuple[int, int] | None = None,
    positions: str = "learned",
    progress: Callable[[float, str], None] | None = None,
) -> ContextSweep:
    """Run the encoder with window_mask(n, w) for each w (default 1 .. n - 1, then n - 1 = full)."""
    ids = list(ids)
    n = len(ids)
    segments = [0] * n if segments is None else list(segments)
    windows = list(range(1, max(n, 2))) if windows is None else [int(w) for w in windows]
    x, _ = model.embed(ids, segments, positions)
    full = model.encode(x, None, record=False).hidden_states[-1]  # [n, hidden]
    tokens = model.tokens_of(ids)
    if pair is None:
        pair = repeated_pair(tokens)
    cos, pair_cos = [], []
    for k, w in enumerate(windows):
        h = model.encode(x, window_mask(n, w, x.device), record=False).hidden_states[-1]
        cos.append(cosine_rows(h, full).cpu().numpy())
        if pair is not None:
            pair_cos.append(float(cosine_rows(h[pair[0]][None], h[pair[1]][None])))
        if progress:
            progress((k + 1) / len(windows), f"window w = {w}")
    cosine = np.stack(cos).astype(np.float64)
    full_pair = (float(cosine_rows(full[pair[0]][None], full[pair[1]][None]))
                 if pair is not None else None)
    return ContextSweep(
        windows=np.asarray(windows), cosine=cosine, mean_cosine=cosine.mean(axis=1), pair=pair,
        pair_cosine=np.asarray(pair_cos) if pair is not None else None,
        full_pair_cosine=full_pair, tokens=tokens,
    )


def sweep_windows(n: int, max_points: int = 40) -> list[int]:
    """Windows for the context sweep: every w in 1..n-1 when few, else 1..24 then geometric."""
    top = max(1, n - 1)  # w = n - 1 lets every token see every other: full attention
    if top <= max_points:
        return list(range(1, top + 1))
    head = list(range(1, 25))
    tail = np.unique(np.geomspace(25, top, max_points - len(head)).round().astype(int))
    return head + [int(w) for w in tail if w > 24]
