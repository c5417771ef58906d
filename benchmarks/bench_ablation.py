"""The head-importance map (analysis.ablation.head_importance: each of the 72 heads switched off
alone, the mean change of every token's final vector), beside the same ablations written with
forward hooks on Hugging Face's eager BertModel: one forward pass per head, and each layer's
12 heads in one batch (each sequence of the batch zeroes its own head).

Medians at 16, 64 and 128 tokens, bundled model, CPU (and CUDA when present); the last column
is the largest difference between the attnviz map and the hooks' map. A second table times the
rest of the page at the same lengths: one head removed (its trace, every head's weight
differences, each token's cosine), the map beside Clark et al.'s statistics, a layer's attention
removed, the pruning curve and patching.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

import attnviz
from attnviz.analysis import ablation
from attnviz.engine import bundled_model_dir
from attnviz.engine.request import TraceRequest

from .bench_engine import random_ids
from .report import Table, rows_table, show

LENGTHS = (16, 64, 128)
COST = "about two minutes on a 2-core CPU"


def median_s(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def hf_reference(device: str):
    from transformers import BertModel

    return BertModel.from_pretrained(bundled_model_dir(), local_files_only=True,
                                     attn_implementation="eager").eval().to(device)


def hf_map(ref, ids: list[int], batched: bool) -> np.ndarray:
    """The same map with pre-hooks on each layer's output projection (zeroing a head's slice)."""
    L, H = ref.config.num_hidden_layers, ref.config.num_attention_heads
    d = ref.config.hidden_size // H
    x = torch.tensor([ids], device=ref.device)
    cos = torch.nn.functional.cosine_similarity
    with torch.inference_mode():
        base = ref(x).last_hidden_state[0]
        out = np.zeros((L, H))
        for layer in range(L):
            proj = ref.encoder.layer[layer].attention.output.dense
            if batched:
                def pre(m, args):
                    y = args[0].clone()  # [H, n, hidden]: sequence b zeroes head b
                    for b in range(H):
                        y[b, :, b * d:(b + 1) * d] = 0
                    return (y,)
                handle = proj.register_forward_pre_hook(pre)
                last = ref(x.expand(H, -1)).last_hidden_state
                handle.remove()
                out[layer] = (1 - cos(last, base[None], dim=-1)).mean(-1).cpu().numpy()
                continue
            for head in range(H):
                def pre(m, args, head=head):
                    y = args[0].clone()
                    y[..., head * d:(head + 1) * d] = 0
                    return (y,)
                handle = proj.register_forward_pre_hook(pre)
                last = ref(x).last_hidden_state[0]
                handle.remove()
                out[layer, head] = float((1 - cos(last, base, dim=-1)).mean())
    return out


def run(device: str = "cpu", repeats: int = 3) -> list[dict]:
    model = attnviz.load_model(device=device)
    ref = hf_reference(device)
    rng = np.random.default_rng(0)
    rows = []
    for n in LENGTHS:
        ids = random_ids(rng, n)
        request = TraceRequest(ids=tuple(ids))
        ablation.head_importance(model, request, "change")  # warm-up
        ours_s, imp = median_s(lambda r=request: ablation.head_importance(model, r, "change"),
                               repeats)
        loop_s, loop = median_s(lambda i=ids: hf_map(ref, i, False), repeats)
        batch_s, batch = median_s(lambda i=ids: hf_map(ref, i, True), repeats)
        diff = max(np.abs(imp.values - loop).max(), np.abs(imp.values - batch).max())
        rows.append(dict(device=device, tokens=n, attnviz_ms=1000 * ours_s,
                         hf_loop_ms=1000 * loop_s, hf_batch_ms=1000 * batch_s,
                         max_diff=f"{diff:.1e}"))
    return rows


def run_page(device: str = "cpu", repeats: int = 3) -> list[dict]:
    """The page's other work, timed on the same random ids (patching: one run, it is the
    slowest)."""
    model = attnviz.load_model(device=device)
    rng = np.random.default_rng(0)
    rows = []
    for n in LENGTHS:
        ids = random_ids(rng, n)
        request = TraceRequest(ids=tuple(ids))
        other = TraceRequest(ids=tuple(ids[:n // 2] + [ids[n // 2] + 1] + ids[n // 2 + 1:]))
        imp = ablation.head_importance(model, request, "change")
        one_s, _ = median_s(lambda r=request: ablation.one_head(model, r, 2, 7), repeats)
        stats_s, _ = median_s(lambda r=request, i=imp: ablation.beside_stats(model, r, i),
                              repeats)
        layer_s, _ = median_s(lambda r=request: ablation.layer_removal(model, r, "change"),
                              repeats)
        prune_s, _ = median_s(lambda r=request, i=imp: ablation.pruning_curve(model, r, i),
                              repeats)
        patch_s, _ = median_s(lambda r=request, o=other, t=(1, n // 2):
                              ablation.patching(model, r, o, t), 1)
        rows.append(dict(device=device, tokens=n, one_ms=1000 * one_s, stats_ms=1000 * stats_s,
                         layer_ms=1000 * layer_s, prune_ms=1000 * prune_s, patch_s=patch_s))
    return rows


PAGE_COLUMNS = {"device": "device", "tokens": "tokens",
                "one_ms": "one head removed: trace + weight differences (ms)",
                "stats_ms": "map beside the statistics (ms)",
                "layer_ms": "a layer's attention removed, every layer (ms)",
                "prune_ms": "pruning curve, 73 points (ms)",
                "patch_s": "patching: heads + layer x token map (s, one run)"}


COLUMNS = {"device": "device", "tokens": "tokens",
           "attnviz_ms": "attnviz map, 72 heads (ms)",
           "hf_loop_ms": "HF eager + hooks, a pass per head (ms)",
           "hf_batch_ms": "HF eager + hooks, a layer's 12 heads in one batch (ms)",
           "max_diff": "largest difference of the maps"}


def main() -> list[Table]:
    devices = ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]
    rows = [r for d in devices for r in run(d)]
    page = [r for d in devices for r in run_page(d)]
    return show(rows_table(rows, columns=COLUMNS,
                           title="Head-importance map (mean change of every token's final "
                                 "vector, zero ablation), bundled model; medians of 3"),
                rows_table(page, columns=PAGE_COLUMNS,
                           title="The rest of the ablation page, same ids; medians of 3 "
                                 "(patching: one run; the layer x token map up to 64 tokens)"))


if __name__ == "__main__":
    main()
