"""Attention flow's per-pair max-flows, solved in worker processes so that every core works.

scipy's max-flow holds the GIL, so threads add nothing; a process per core does. A worker is a
plain Python process running this file as a script: it imports numpy and scipy only (not the
attnviz package, which would import torch, and without forking the parent, which is unsafe in
a threaded server such as Streamlit's). It reads pickled jobs on stdin and writes the values on
stdout:

    job = (graph_id, graph or None, source_caps [m, n], sink_caps [m, n], want)
          ->  values [m], or flows on the source's or the sink's edges [m, n]

graph = (indptr, indices, data, sink) of flow.chain_graph's CSR matrix, sent only when the
worker does not hold that graph yet (it keeps the last GRAPHS); each value is the max-flow of
that graph with the source's n edges set to source_caps[p] and the sink's n edges to
sink_caps[p] (solve_batch below, the same function the parent uses when it solves in-process:
the results do not depend on where they were computed). The workers start on first use (or
prestart()), stay for the life of the parent, and exit when their stdin closes. A worker that
fails is dropped and its pairs are solved in-process.

This file must not import attnviz (it runs outside the package): numpy and scipy only.
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np

MAX_WORKERS = 16  # a worker holds numpy and scipy (tens of MB): no more than this, or the cores
CHUNK = 32  # pairs per job: small enough for steady progress, large enough to hide the pipe
GRAPHS = 4  # graphs a worker keeps (the bounds' two halves, the full graph), oldest dropped

# -c runs the worker with the current directory off sys.path (a file there must not shadow a
# module), then this file as __main__.
_BOOT = ("import sys; del sys.path[0]; import runpy; "
         "runpy.run_path(sys.argv[1], run_name='__main__')")


def solve_values(graph, sink: int, source_caps: np.ndarray, sink_caps: np.ndarray) -> np.ndarray:
    """values[p] = max-flow of a chain_graph (its source's n edges first in .data, its sink's n
    edges last) with those edges set to source_caps[p] and sink_caps[p], [m] int64."""
    return solve_batch(graph, sink, source_caps, sink_caps, "value")


WANTS = ("value", "out_of_source", "into_sink")


def solve_batch(graph, sink: int, source_caps: np.ndarray, sink_caps: np.ndarray,
                want: str) -> np.ndarray:
    """solve_values's max-flows, returning per pair (`want`): "value" [m] int64, or the flow on
    each of the source's n edges ("out_of_source") or of the sink's n edges ("into_sink"),
    [m, n] int64, of the max-flow scipy found."""
    from scipy.sparse.csgraph import maximum_flow

    if want not in WANTS:
        raise ValueError(f"want must be one of {WANTS}; got {want!r}")
    m, n = source_caps.shape
    out = np.zeros((m,) if want == "value" else (m, n), dtype=np.int64)
    for p in range(m):
        graph.data[:n] = source_caps[p]
        graph.data[-n:] = sink_caps[p]
        result = maximum_flow(graph, 0, sink)
        if want == "value":
            out[p] = result.flow_value
            continue
        f = result.flow  # antisymmetric: f[u, v] = -f[v, u]
        if want == "out_of_source":  # the source is node 0, its heads nodes 1..n
            row = slice(f.indptr[0], f.indptr[1])
            out[p, f.indices[row] - 1] = f.data[row]
        else:  # the sink's tails are its n predecessors sink - n .. sink - 1
            row = slice(f.indptr[sink], f.indptr[sink + 1])
            out[p, f.indices[row] - (sink - n)] = -f.data[row]
    return out


def _serve() -> None:
    """The worker's loop: one job in, its values out, until stdin closes (the parent closed it
    or ended). Ctrl-C in the server's terminal reaches the whole process group: the worker
    ignores it and ends with its parent instead."""
    import signal

    from scipy.sparse import csr_array

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    jobs = sys.stdin.buffer
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints go to stderr, not the pipe
    graphs: dict[int, tuple] = {}  # the last GRAPHS graphs sent, oldest first
    while True:
        try:
            graph_id, arrays, source_caps, sink_caps, want = pickle.load(jobs)
        except EOFError:
            return
        try:
            if arrays is not None:
                indptr, indices, data, sink = arrays
                while len(graphs) >= GRAPHS:
                    del graphs[next(iter(graphs))]
                size = len(indptr) - 1
                graphs[graph_id] = (csr_array((data.copy(), indices, indptr),
                                              shape=(size, size)), sink)
            graph, sink = graphs[graph_id]
            answer = solve_batch(graph, sink, source_caps, sink_caps, want)
        except Exception as error:  # noqa: BLE001 (sent back: the parent solves in-process)
            answer = RuntimeError(f"flow worker: {error!r}")
        pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
        answers.flush()


class _Worker:
    """One worker process and the graphs it holds (the same last GRAPHS ids as the worker)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", _BOOT, os.path.abspath(__file__)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.graph_ids: list[int] = []

    def solve(self, graph_id: int, arrays: tuple, source_caps: np.ndarray,
              sink_caps: np.ndarray, want: str = "value") -> np.ndarray:
        send = None if graph_id in self.graph_ids else arrays
        if send is not None:
            self.graph_ids = (self.graph_ids + [graph_id])[-GRAPHS:]
        pickle.dump((graph_id, send, source_caps, sink_caps, want), self.process.stdin,
                    protocol=pickle.HIGHEST_PROTOCOL)
        self.process.stdin.flush()
        answer = pickle.load(self.process.stdout)
        if isinstance(answer, Exception):  # the caller drops this worker
            raise answer
        return answer

    def close(self) -> None:
        try:
            self.process.stdin.close()
            self.process.wait(timeout=2)
        except Exception:  # noqa: BLE001 (closing: it may be gone already)
            self.process.kill()
            self.process.wait()


_lock = threading.Lock()
_idle: queue.Queue[_Worker] = queue.Queue()
_started = 0
_graph_ids = iter(range(1, 1 << 62))


def cores() -> int:
    """The cores this process may run on (its CPU affinity where the system tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_workers() -> int:
    """settings().flow_workers (ATTNVIZ_FLOW_WORKERS) if not 0, else the cores; never more
    than the cores or MAX_WORKERS (1: flows are solved in-process)."""
    from attnviz.settings import settings

    wanted = settings().flow_workers or cores()
    return max(1, min(wanted, cores(), MAX_WORKERS))


def _take(wanted: int) -> _Worker:
    """An idle worker, starting one if fewer than `wanted` run; else wait for one."""
    global _started
    while True:
        with _lock:
            try:
                return _idle.get_nowait()
            except queue.Empty:
                start = _started < wanted
                _started += start
        if start:
            try:
                return _Worker()
            except Exception:
                with _lock:
                    _started -= 1
                raise
        try:
            return _idle.get(timeout=0.05)
        except queue.Empty:
            continue  # a worker may have been dropped meanwhile: look again


def prestart(wanted: int) -> int:
    """Start workers until `wanted` run (none if as many run already), without waiting for
    them: a worker imports numpy and scipy (about a second) while the caller goes on, so a
    page can start them before its flow is asked for. Returns how many were started."""
    global _started
    with _lock:
        missing = max(0, wanted - _started)
        _started += missing
    started = 0
    for _ in range(missing):
        try:
            _idle.put(_Worker())
            started += 1
        except Exception:  # noqa: BLE001 (no process: the flow solves in-process)
            with _lock:
                _started -= 1
    return started


def _drop(worker: _Worker) -> None:
    global _started
    worker.close()
    with _lock:
        _started -= 1


@atexit.register
def close_workers() -> None:
    """Stop every idle worker (they also stop on their own when this process ends)."""
    global _started
    while True:
        try:
            worker = _idle.get_nowait()
        except queue.Empty:
            return
        worker.close()
        with _lock:
            _started -= 1


def solve_in_workers(graph, sink: int, source_caps: np.ndarray, sink_caps: np.ndarray,
                     workers: int) -> Iterator[tuple[slice, np.ndarray, bool]]:
    """solve_values for every pair, in `workers` processes: yields (slice of pairs, values,
    whether a worker answered) as the jobs finish (in any order), so the caller can report
    progress from its own thread. A job whose worker fails is solved here instead."""
    inner = solve_batches_in_workers([(graph, sink, source_caps, sink_caps, "value")], workers)
    try:
        for _, part, values, in_worker in inner:
            yield part, values, in_worker
    finally:  # closed now, not when garbage collected: its workers are idle when this returns
        inner.close()


def solve_batches_in_workers(batches: list[tuple], workers: int
                             ) -> Iterator[tuple[int, slice, np.ndarray, bool]]:
    """solve_batch for each batch (graph, sink, source_caps, sink_caps, want), all batches'
    jobs in `workers` processes at once: yields (batch index, slice of its pairs, result,
    whether a worker answered) as the jobs finish, in any order. A job whose worker fails is
    solved here instead; the jobs not started are dropped when the caller stops reading."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    ids: dict[int, int] = {}  # one id per graph object: batches on the same graph share it
    graph_ids = [ids.setdefault(id(g), next(_graph_ids)) for g, *_ in batches]
    arrays = [(g.indptr, g.indices, g.data.copy(), sink) for g, sink, *_ in batches]
    own: dict[int, object] = {}  # the caller's copies of the graphs, for jobs solved here
    own_lock = threading.Lock()

    def job(b: int, part: slice) -> tuple[int, slice, np.ndarray, bool]:
        _, _, sources, sinks, want = batches[b]
        try:
            worker = _take(workers)
        except Exception:  # noqa: BLE001 (no process could start: solve here)
            return b, part, solve_here(b, part), False
        try:
            result = worker.solve(graph_ids[b], arrays[b], sources[part], sinks[part], want)
        except Exception:  # noqa: BLE001 (a failed worker: drop it and solve here)
            _drop(worker)
            return b, part, solve_here(b, part), False
        _idle.put(worker)
        return b, part, result, True

    def solve_here(b: int, part: slice) -> np.ndarray:
        graph, sink, sources, sinks, want = batches[b]
        with own_lock:  # one copy of each graph, its edges overwritten per pair
            if graph_ids[b] not in own:
                own[graph_ids[b]] = graph.copy()
            return solve_batch(own[graph_ids[b]], sink, sources[part], sinks[part], want)

    parts = [(b, slice(s, s + CHUNK)) for b, batch in enumerate(batches)
             for s in range(0, len(batch[2]), CHUNK)]
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for done in as_completed([pool.submit(job, b, part) for b, part in parts]):
            yield done.result()
    finally:  # also when the caller stops early (a page rerun): drop the jobs not started
        pool.shutdown(wait=True, cancel_futures=True)


def workers_cpu_seconds() -> float:
    """CPU seconds (user + system) that the idle workers have used so far, for benchmarks
    (from /proc on Linux; 0.0 where it cannot be read)."""
    total = 0
    for worker in list(_idle.queue):
        try:
            with open(f"/proc/{worker.process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # fields[0] is the state (field 3)
            total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK") if total else 0.0


def running_workers() -> int:
    """How many worker processes run now."""
    return _started


if __name__ == "__main__":
    _serve()
