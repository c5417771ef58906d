"""The engine's full trace vs transformers' BertModel, same weights, same input, alternating.

Peers: HF eager with output_attentions + output_hidden_states (what a visualiser needs: the
weights and every layer's states; the engine records Q, K, V, scores and outputs as well),
and HF sdpa that records nothing (the fastest plain forward). Medians over repeated runs;
ratios < 1 mean attnviz is faster. The engine's one eager pass (engine.model) is meant to be
no slower than HF eager (vs eager <= 1x).
"""

from __future__ import annotations

import os
import platform
import statistics
import time

import numpy as np
import torch

import attnviz
from attnviz.engine import bundled_model_dir

LENGTHS = (16, 128, 512)


def random_ids(rng: np.random.Generator, n: int) -> list[int]:
    """n BERT ids: [CLS], n - 2 random word-piece ids, [SEP] (the benchmarks' inputs)."""
    return [101] + rng.integers(1000, 30000, n - 2).tolist() + [102]


def machine(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} (CUDA {torch.version.cuda})"
    cpu = platform.processor() or platform.machine()
    return (f"CPU {cpu}, {os.cpu_count()} cores, torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads")


def timed(fn, device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def median_ms(fns: dict, repeats: int, device: torch.device | None = None) -> dict[str, float]:
    """Median milliseconds of each function: two warm-up calls each, then `repeats` rounds that
    call the peers alternately, so drift (clocks, other work) hits every peer alike."""
    device = device or torch.device("cpu")
    for f in fns.values():
        f()
        f()
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            times[k].append(timed(f, device))
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}


def run(device_name: str | None = None, repeats: int = 20) -> list[dict]:
    from transformers import BertModel

    model = attnviz.load_model(device=device_name)
    dev = model.device
    folder = bundled_model_dir()
    eager = BertModel.from_pretrained(folder, local_files_only=True,
                                      attn_implementation="eager").to(dev).eval()
    sdpa = BertModel.from_pretrained(folder, local_files_only=True,
                                     attn_implementation="sdpa").to(dev).eval()
    rng = np.random.default_rng(0)
    rows = []
    for n in LENGTHS:
        ids = random_ids(rng, n)
        x = torch.tensor([ids], device=dev)

        def ours(ids=ids):
            model.trace_ids(ids)

        def hf_eager(x=x):
            with torch.inference_mode():
                o = eager(x, output_attentions=True, output_hidden_states=True)
                [a.cpu() for a in o.attentions], [h.cpu() for h in o.hidden_states]

        def hf_sdpa(x=x):
            with torch.inference_mode():
                sdpa(x).last_hidden_state.cpu()

        fns = {"attnviz": ours, "hf_eager": hf_eager, "hf_sdpa": hf_sdpa}
        med = median_ms(fns, repeats, dev)
        rows.append(dict(tokens=n, **{f"{k}_ms": v for k, v in med.items()},
                         vs_eager=med["attnviz"] / med["hf_eager"],
                         vs_sdpa=med["attnviz"] / med["hf_sdpa"]))
    print(f"Engine trace vs transformers {__import__('transformers').__version__} "
          f"on {machine(dev)}; median of {repeats}, alternating")
    print("| tokens | attnviz trace (ms) | HF eager + attentions (ms) | HF sdpa, no capture (ms) "
          "| vs eager | vs sdpa |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['tokens']} | {r['attnviz_ms']:.1f} | {r['hf_eager_ms']:.1f} | "
              f"{r['hf_sdpa_ms']:.1f} | {r['vs_eager']:.2f}x | {r['vs_sdpa']:.2f}x |")
    return rows


def main() -> None:
    run("cpu")
    if torch.cuda.is_available():
        run("cuda")


if __name__ == "__main__":
    main()
