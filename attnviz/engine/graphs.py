"""Encoder passes as TorchScript graphs, for a server that many sessions share.

Why: the eager encoder makes one call into torch per operation (~150-200 per pass), and each
call gives the GIL back while it computes and then waits for it again. On a class server the
GIL is nearly always held by another session's page, and each of those waits can last a
switch interval (5 ms): a short sentence's trace took about a second instead of 20 ms, an
attribution 2-3.5 s instead of 0.25 s. A traced graph runs all its operations in one call
without the GIL.

The graphs are run by TorchScript's plain interpreter (`run`: no optimising passes, a switch
TorchScript keeps per thread), so they perform the very operations `fn` performs, in the same
order; each graph is also compared with `fn` at other input shapes before it is used, and
where it differs (a shape read into a Python number and frozen by the trace) or TorchScript
is missing, the caller keeps the eager function.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable

import torch


def run(graph, *args):
    """graph(*args) by the plain interpreter: op by op as traced, no fusion or other rewrites,
    so the numbers stay eager's. The switch is per thread, so it is set on every call (a
    server runs each session's script in its own thread)."""
    with torch.jit.optimized_execution(False):
        return graph(*args)


def traced(fn: Callable, inputs: Callable[[int], tuple], sizes: Iterable[int] = (5, 9),
           example: int = 3, atol: float = 1e-6):
    """torch.jit.trace(fn) on inputs(example), or None unless it gives fn's results (a tensor
    or a tuple of tensors, to `atol`) on inputs(size) for each of `sizes`."""
    try:
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = torch.jit.trace(fn, inputs(example), check_trace=False)
            for size in sizes:
                args = inputs(size)
                got, want = run(graph, *args), fn(*args)
                got = got if isinstance(got, tuple) else (got,)
                want = want if isinstance(want, tuple) else (want,)
                if len(got) != len(want) or any(
                        g.shape != w.shape or not torch.allclose(g, w, rtol=0, atol=atol)
                        for g, w in zip(got, want, strict=True)):
                    return None
        return graph
    except Exception:  # noqa: BLE001  (no TorchScript, or a function it cannot follow)
        return None
