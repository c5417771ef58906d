"""Attention flow's per-pair max-flows, solved in worker processes so that every core works.

scipy's max-flow holds the GIL, so threads add nothing; a process per core does. A worker is a
plain Python process running this file as a script: it imports numpy and scipy only (not the
attnviz package, which would import torch, and without forking the parent, which is unsafe in
a threaded server such as Streamlit's). It reads pickled jobs on stdin and writes the values on
stdout:

    job = (graph_id, graph or None, source_caps [m, n], sink_caps [m, n])  ->  values [m]

graph = (indptr, indices, data, sink) of flow.chain_graph's CSR matrix, sent only when the
worker does not hold that graph yet; each value is the max-flow of that graph with the source's
n edges set to source_caps[p] and the sink's n edges to sink_caps[p] (solve_values below, the
same function the parent uses when it solves in-process: the values do not depend on where
they were computed). The workers start on first use (or prestart()), stay for the life of the
parent, and exit when their stdin closes. A worker that fails is dropped and its pairs are
solved in-process.

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

WORKERS_ENV = "ATTNVIZ_FLOW_WORKERS"  # how many worker processes; 0 or 1: solve in-process
MAX_WORKERS = 16  # a worker holds numpy and scipy (tens of MB): no more than this, or the cores
CHUNK = 32  # pairs per job: small enough for steady progress, large enough to hide the pipe

# -c runs the worker with the current directory off sys.path (a file there must not shadow a
# module), then this file as __main__.
_BOOT = ("import sys; del sys.path[0]; import runpy; "
         "runpy.run_path(sys.argv[1], run_name='__main__')")


def solve_values(graph, sink: int, source_caps: np.ndarray, sink_caps: np.ndarray) -> np.ndarray:
    """values[p] = max-flow of a chain_graph (its source's n edges first in .data, its sink's n
    edges last) with those edges set to source_caps[p] and sink_caps[p], [m] int64."""
    from scipy.sparse.csgraph import maximum_flow

    n = source_caps.shape[1]
    values = np.empty(len(source_caps), dtype=np.int64)
    for p in range(len(source_caps)):
        graph.data[:n] = source_caps[p]
        graph.data[-n:] = sink_caps[p]
        values[p] = maximum_flow(graph, 0, sink).flow_value
    return values


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
    graphs: dict[int, tuple] = {}
    while True:
        try:
            graph_id, arrays, source_caps, sink_caps = pickle.load(jobs)
        except EOFError:
            return
        try:
            if arrays is not None:
                indptr, indices, data, sink = arrays
                graphs.clear()
                size = len(indptr) - 1
                graphs[graph_id] = (csr_array((data.copy(), indices, indptr),
                                              shape=(size, size)), sink)
            graph, sink = graphs[graph_id]
            answer = solve_values(graph, sink, source_caps, sink_caps)
        except Exception as error:  # noqa: BLE001 (sent back: the parent solves in-process)
            answer = RuntimeError(f"flow worker: {error!r}")
        pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
        answers.flush()


class _Worker:
    """One worker process and the graph it holds."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", _BOOT, os.path.abspath(__file__)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.graph_id: int | None = None

    def solve(self, graph_id: int, arrays: tuple, source_caps: np.ndarray,
              sink_caps: np.ndarray) -> np.ndarray:
        send = None if self.graph_id == graph_id else arrays
        self.graph_id = None  # unknown until the worker answers
        pickle.dump((graph_id, send, source_caps, sink_caps), self.process.stdin,
                    protocol=pickle.HIGHEST_PROTOCOL)
        self.process.stdin.flush()
        answer = pickle.load(self.process.stdout)
        if isinstance(answer, Exception):
            raise answer
        self.graph_id = graph_id
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
    """ATTNVIZ_FLOW_WORKERS if set, else the cores; never more than the cores or MAX_WORKERS."""
    value = os.environ.get(WORKERS_ENV, "").strip()
    wanted = int(value) if value.isdigit() else cores()
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
    from concurrent.futures import ThreadPoolExecutor, as_completed

    graph_id = next(_graph_ids)
    arrays = (graph.indptr, graph.indices, graph.data.copy(), sink)
    own: list = []  # the caller's copy of the graph, for pairs solved in-process
    own_lock = threading.Lock()

    def job(part: slice) -> tuple[slice, np.ndarray, bool]:
        try:
            worker = _take(workers)
        except Exception:  # noqa: BLE001 (no process could start: solve here)
            return part, solve_here(part), False
        try:
            values = worker.solve(graph_id, arrays, source_caps[part], sink_caps[part])
        except Exception:  # noqa: BLE001 (a failed worker: drop it and solve here)
            _drop(worker)
            return part, solve_here(part), False
        _idle.put(worker)
        return part, values, True

    def solve_here(part: slice) -> np.ndarray:
        with own_lock:  # one copy of the graph, its edges overwritten per pair
            if not own:
                own.append(graph.copy())
            return solve_values(own[0], sink, source_caps[part], sink_caps[part])

    parts = [slice(s, s + CHUNK) for s in range(0, len(source_caps), CHUNK)]
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        for done in as_completed([pool.submit(job, part) for part in parts]):
            yield done.result()
    finally:  # also when the caller stops early (a page rerun): drop the jobs not started
        pool.shutdown(wait=True, cancel_futures=True)


def running_workers() -> int:
    """How many worker processes run now."""
    return _started


if __name__ == "__main__":
    _serve()
