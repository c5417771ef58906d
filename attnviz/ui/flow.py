"""Attention flow for a page: computed once per server with a progress bar, shared by pages.

The per-pair max-flows run in analysis.flow_workers' processes: started on the server's first
flow, kept for its life (reused by every session and page), never more than its cores, ended
with it. Flows take turns in the heavy-work line (ui.progress.with_progress), so one flow at a
time has every worker, and a page that needs the same matrix waits for it instead of
computing it again.
"""

from __future__ import annotations

import numpy as np

from attnviz.analysis import flow, flow_workers
from attnviz.i18n import _

from .progress import with_progress

QUICK_TOKENS = 32  # flow up to this length is short work (its time: benchmarks/bench_flow.py)


def flow_of(t, layer: int | None = None) -> np.ndarray | None:
    """flow_layer [n, n] of trace t (rows: outputs after `layer`, default the last; columns:
    inputs; each row sums to 1), or None past flow.MAX_TOKENS tokens (a page shows rollout)."""
    if t.n_tokens > flow.MAX_TOKENS:
        return None
    layer = t.n_layers - 1 if layer is None else int(layer)
    a = flow.residual_attention(t.weights if t.holds_weights else np.stack(
        [t.layer_weights(li) for li in range(t.n_layers)]))  # [L, n, n]
    return with_progress("results", ("flow", t.key, layer),
                         _("Computing attention flow (max-flows)..."),
                         lambda progress: flow.normalise_rows(flow.max_flows_stats(
                             a, layer, progress, workers=workers_for(t.n_tokens))[0]),
                         quick=t.n_tokens <= QUICK_TOKENS)


def workers_for(n: int) -> int | None:
    """Worker processes for an n-token flow: the running ones whenever some run (a short
    sentence's max-flows take as long there, and hold no GIL: the server's other sessions go on
    meanwhile), else flow's own rule (from PARALLEL_PAIRS pairs on, started on first use)."""
    running = flow_workers.running_workers()
    return running if running > 1 and n > 1 else None


def prepare(t) -> None:
    """Start the flow workers now (without waiting) when t's flow would use them, so that they
    are ready when the flow is asked for; once per server: later calls find them running."""
    if flow.PARALLEL_PAIRS <= t.n_tokens ** 2 and t.n_tokens <= flow.MAX_TOKENS:
        wanted = flow_workers.default_workers()
        if wanted > 1:
            flow_workers.prestart(wanted)
