"""The bundled SmolLM2-135M-Instruct at long inputs (up to 2,048 tokens), attnviz beside
transformers' eager LlamaForCausalLM with output_attentions=True on the same token ids.

Each run is a fresh Python process (the parent starts one per peer and length, one at a time),
so each peak is that process's own: `peak RSS` is the kernel's high-water mark of the whole
process (getrusage ru_maxrss: model, input, everything) when the timed work is done (before the
run's own checks: HF's arrays saved, attnviz's compared with them), and `added` the highest
resident size sampled every 5 ms during the timed work, less the size just before it; `its
CPU time` the process's CPU seconds over the overview (time.process_time, all threads). A
process may use at most CAP_GIB of address space (RLIMIT_AS): one that would need more stops
with a MemoryError and its row says so, instead of pressing the machine into swap.

    attnviz   load_model("smollm2"), then a first overview of every head: the trace
              (Model.trace) and each head's weight on the first token and its head
              statistics (analysis.head_stats.first_token_share and trace_head_stats: of the
              held weights, or of what the forward pass took of them, Trace.weight_summary,
              where a long input's weights are not held); then a head change: one head's
              weights (Trace.weights_of: held, or computed again from its q and k) and its
              enlarged figure (views.explore.one_head)
    HF eager  LlamaForCausalLM from the same converted folder, one forward with
              output_attentions and output_hidden_states

`max |diff|`: every hidden state (over its layer's largest value, at least 1: SmolLM2's first
token reaches some 24,000, where one float32 step is 0.002) and three heads' weights (layers 0,
14, 29, absolute), attnviz's against HF's at the same length (HF's saved by its run). The
input is this repository's README, cut to the length in tokens. LENGTHS (e.g. "512,2048")
CAP_GIB (default 12) and THREADS (torch threads per run, e.g. "0,1": 0 is torch's default) are
read from the environment.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .report import Table, show

COST = ("It converts SmolLM2 once (when not done yet) and runs each peer in its own process at "
        "512 and 2,048 tokens, on torch's default threads and on one: several minutes on a "
        "2-core CPU and up to CAP_GIB (12) GiB of memory per process.")
DEFAULT_LENGTHS = (512, 2048)
DEFAULT_THREADS = (0, 1)  # torch's default, then one thread
HEADS = ((0, 0), (14, 4), (29, 8))  # (layer, head) compared with HF at every length
ROOT = Path(__file__).resolve().parents[1]
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


# ------------------------------------------------------------------ in the child process
class Peak:
    """The highest resident set size (bytes) sampled every 5 ms while the block runs, less the
    size when it began."""

    def __enter__(self) -> Peak:
        self.start = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc) -> None:
        self.seconds = time.perf_counter() - self.t0
        self.cpu = time.process_time() - self.c0  # this process's CPU seconds, all threads
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())
        self.added = self.peak - self.start


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def _max_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: kB


def _ids(n: int) -> list[int]:
    from transformers import AutoTokenizer

    from attnviz.engine.bundled import smollm2_dir

    tok = AutoTokenizer.from_pretrained(smollm2_dir(), local_files_only=True)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    ids = tok(text)["input_ids"]
    while len(ids) < n:
        ids = ids + ids
    return ids[:n]


def child_hf(n: int, out: Path) -> dict:
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    from attnviz.engine.bundled import smollm2_dir

    ids = torch.tensor([_ids(n)])
    hf = AutoModelForCausalLM.from_pretrained(smollm2_dir(), local_files_only=True,
                                              attn_implementation="eager",
                                              dtype=torch.float32).eval()
    with Peak() as p, torch.inference_mode():
        o = hf(ids, output_attentions=True, output_hidden_states=True)
    peak = _max_rss()
    hs = torch.stack(o.hidden_states)[:, 0].numpy()
    heads = np.stack([o.attentions[layer][0, head].numpy() for layer, head in HEADS])
    np.savez(out / f"hf_{n}.npz", hidden_states=hs, heads=heads)
    return {"overview_s": p.seconds, "overview_cpu": p.cpu, "added": p.added, "peak": peak}


def child_attnviz(n: int, out: Path) -> dict:
    import numpy as np

    import attnviz
    from attnviz.analysis.head_stats import first_token_share, trace_head_stats
    from attnviz.views import explore

    ids = _ids(n)
    model = attnviz.load_model("smollm2", device="cpu", max_tokens=n)
    request = attnviz.TraceRequest(ids=tuple(ids))
    with Peak() as first:
        t = model.trace(request)
        first_token_share(t)
        trace_head_stats(t)
    layer, head = HEADS[1]
    with Peak() as change:
        w = t.weights_of(layer, head)
        explore.one_head({head: w}, t.tokens, list(range(t.n_tokens)), layer, head)
    row = {"overview_s": first.seconds, "overview_cpu": first.cpu, "added": first.added,
           "head_s": change.seconds,
           "trace_mb": t.nbytes / 2**20, "held": t.weights is not None, "peak": _max_rss()}
    ref = out / f"hf_{n}.npz"
    if ref.is_file():
        with np.load(ref) as f:
            ref_h = f["hidden_states"]  # [layers + 1, n, hidden]
            scale = np.maximum(1.0, np.abs(ref_h).max(axis=(1, 2)))
            row["diff_hidden"] = float((np.abs(t.hidden_states - ref_h).max(axis=(1, 2))
                                        / scale).max())
            row["diff_weights"] = max(float(np.abs(t.weights_of(la, h) - f["heads"][i]).max())
                                      for i, (la, h) in enumerate(HEADS))
    return row


def child(peer: str, n: int, out: Path, cap_gib: float, threads: int = 0) -> None:
    """One measurement on `threads` torch threads (0: torch's default), its result printed as
    one JSON line (an error: its message)."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    limit = int(cap_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        row = (child_hf if peer == "hf" else child_attnviz)(n, out)
    except (MemoryError, RuntimeError) as e:
        row = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}" if str(e)
               else type(e).__name__}
    row.setdefault("peak", _max_rss())  # where the run stopped early: its peak so far
    row["threads"] = torch.get_num_threads()
    print(json.dumps(row), flush=True)


# ------------------------------------------------------------------ in the parent
def run_child(peer: str, n: int, out: Path, cap_gib: float, threads: int = 0) -> dict:
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_long_context", "--child",
                           peer, str(n), str(out), str(cap_gib), str(threads)], cwd=ROOT,
                          text=True,
                          capture_output=True, timeout=1800)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {proc.returncode}: {tail[:160]}"}
    return json.loads(lines[-1])


def main() -> list[Table]:
    from attnviz.engine.bundled import smollm2_dir

    lengths = tuple(int(x) for x in os.environ.get("LENGTHS", "").split(",") if x) or \
        DEFAULT_LENGTHS
    cap = float(os.environ.get("CAP_GIB", 12))
    threads = tuple(int(x) for x in os.environ.get("THREADS", "").split(",") if x) or \
        DEFAULT_THREADS
    smollm2_dir(progress=print)  # converted here, not inside a timed run
    rows = []
    with tempfile.TemporaryDirectory(prefix="attnviz-long-") as tmp:
        for n in lengths:
            for th in threads:
                for peer in ("hf", "attnviz"):  # HF first: attnviz's run compares with it
                    r = run_child(peer, n, Path(tmp), cap, th)
                    print(f"{peer} at {n} tokens, threads {th}: {r}", flush=True)
                    rows.append((n, peer, r))

    def mib(r, k):
        return f"{r[k] / 2**20:,.0f}" if k in r else "-"

    def sec(r, k):
        return f"{r[k]:.2f}" if k in r else "-"

    def diff(r, k):
        return f"{r[k]:.1e}" if k in r else "-"

    def held(r):
        if "held" not in r:
            return ""
        return ("every head's weights held" if r["held"] else
                "q, k, v kept; the overview's statistics taken in the forward pass; a head's "
                "weights computed again when asked")

    table = Table(
        ["tokens", "peer", "torch threads", "first overview (s)", "its CPU time (s)",
         "head change (s)",
         "peak RSS (MiB)",
         "added during the overview (MiB)", "trace arrays (MiB)",
         "max |diff| hidden / layer's max |h|", "max |diff| weights", "note"],
        [[n, "attnviz" if peer == "attnviz" else "HF eager + attentions",
          r.get("threads", "-"), sec(r, "overview_s"), sec(r, "overview_cpu"), sec(r, "head_s"),
          mib(r, "peak"),
          mib(r, "added"),
          f"{r['trace_mb']:,.0f}" if "trace_mb" in r else "-", diff(r, "diff_hidden"),
          diff(r, "diff_weights"), r.get("error", "") or held(r)] for n, peer, r in rows],
        title=f"SmolLM2-135M-Instruct (30 layers x 9 heads, 3 key/value heads), CPU, one "
              f"process per row, address space capped at {cap:g} GiB",
        note="Goals (issue 52): first overview at 2,048 tokens <= 10 s, peak memory <= 2 GB, a "
             "head change <= 1 s, numbers within 1e-5 of HF's. HF's overview is its one "
             "forward pass (it keeps every head's weights: a head change reads them). 30 x 9 "
             "x 2,048^2 float32 weights are 4.5 GB; a trace that keeps scores and weights for "
             "every head holds twice that. Torch threads: torch's default (one per core) and "
             "one: where another process keeps a core busy, every parallel step waits for "
             "the second thread, and one thread is the faster. Its CPU time: the process's "
             "CPU seconds during the overview, all its threads together; where other work "
             "shares the cores the wall time grows with it, the CPU time much less.")
    return show(table)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), float(sys.argv[5]),
              int(sys.argv[6]) if len(sys.argv) > 6 else 0)
    else:
        main()
