"""Attention flow's per-pair max-flows, solved in worker processes so that every core works.

scipy's max-flow holds the GIL, so threads add nothing; a process per core does. The workers
are a concurrent.futures.ProcessPoolExecutor started with "spawn" (forking a threaded server
such as Streamlit's is unsafe). A worker imports this module, whose imports are numpy and scipy
only: attnviz's package files it passes through import nothing else, and torch never loads
there. Each job is

    _job(graph_id, graph or None, source_caps [m, n], sink_caps [m, n], want)
        ->  values [m], or flows on the source's or the sink's edges [m, n]

graph = (indptr, indices, data, sink) of flow.chain_graph's CSR matrix. A worker keeps the last
GRAPHS graphs it was sent; a job sent without its graph to a worker that lacks it raises
MissingGraph and is sent again with it, so each graph crosses to a worker about once. Each
value is the max-flow of that graph with the source's n edges set to source_caps[p] and the
sink's n edges to sink_caps[p] (solve_batch below, the same function the parent uses when it
solves in-process: the results do not depend on where they were computed).

Limits: never more workers than the cores or MAX_WORKERS; CHUNK pairs a job; at most QUEUED
jobs of one flow in flight per worker, so a caller that stops reading (a page rerun) leaves the
jobs not started unsent. The pool starts on first use (or prestart()), stays for the life of
the parent (grown, never shrunk, when a flow asks for more workers), and ends with it: at
exit, and when the parent is killed (each worker watches its parent's sentinel). A job that
fails, or a pool that breaks (a worker killed), is solved in-process instead; the next flow
starts a new pool.

Spawned workers import the parent's main module (multiprocessing's rule), as __mp_main__: a
script that uses the pool runs its work only under `if __name__ == "__main__"` (app.py does;
Streamlit runs it as __main__), or each worker runs that work too.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.connection
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

import numpy as np

MAX_WORKERS = 16  # a worker holds numpy and scipy (tens of MB): no more than this, or the cores
CHUNK = 32  # pairs per job: small enough for steady progress, large enough to hide the pipe
GRAPHS = 4  # graphs a worker keeps (the bounds' two halves, the full graph), oldest dropped
QUEUED = 2  # jobs of a flow in flight per worker: the next one waits while one runs


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


class MissingGraph(LookupError):
    """A job reached a worker that does not hold its graph: send it again with the graph."""


_GRAPHS: OrderedDict[int, tuple] = OrderedDict()  # in a worker: the last GRAPHS graphs sent


def _job(graph_id: int, arrays: tuple | None, source_caps: np.ndarray, sink_caps: np.ndarray,
         want: str) -> np.ndarray:
    """One job, in a worker: solve_batch on graph `graph_id` (kept from an earlier job, or
    built from `arrays` and kept)."""
    from scipy.sparse import csr_array

    if arrays is not None and graph_id not in _GRAPHS:
        indptr, indices, data, sink = arrays
        size = len(indptr) - 1
        _GRAPHS[graph_id] = (csr_array((data.copy(), indices, indptr), shape=(size, size)), sink)
        while len(_GRAPHS) > GRAPHS:
            _GRAPHS.popitem(last=False)
    if graph_id not in _GRAPHS:
        raise MissingGraph(graph_id)
    _GRAPHS.move_to_end(graph_id)
    graph, sink = _GRAPHS[graph_id]
    return solve_batch(graph, sink, source_caps, sink_caps, want)


def _start_worker(pids) -> None:
    """A worker's start: it tells its process id (`pids`, a queue the parent reads). Ctrl-C in
    the server's terminal reaches the whole process group, so the worker ignores it and ends
    with its parent instead, which it watches: when the parent ends, however it ends (even
    killed), its sentinel becomes ready and the worker exits."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pids.put(os.getpid())
    parent = multiprocessing.parent_process()
    if parent is not None:
        def watch() -> None:
            multiprocessing.connection.wait([parent.sentinel])
            os._exit(0)

        threading.Thread(target=watch, daemon=True, name="flow-parent-watch").start()
    from scipy.sparse.csgraph import maximum_flow  # noqa: F401 - imported once, before a job


def _ready() -> None:
    """prestart's job: nothing (the worker it starts has imported what a job needs)."""


_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_size = 0  # the pool's workers
_pids: set[int] = set()  # its workers' process ids, as they told them
_pid_queue = None  # where the pool's workers tell their process ids
_in_flight = 0  # jobs submitted and not finished, all flows together
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


def executor(wanted: int) -> ProcessPoolExecutor:
    """The pool, started (or replaced by a larger one) so that it has at least `wanted`
    workers."""
    global _pool, _size, _pid_queue
    with _lock:
        if _pool is None or _size < wanted:
            old = _pool
            context = multiprocessing.get_context("spawn")
            _pid_queue = context.SimpleQueue()
            _pool = ProcessPoolExecutor(max_workers=wanted, mp_context=context,
                                        initializer=_start_worker, initargs=(_pid_queue,))
            _size = wanted
            _pids.clear()
            if old is not None:
                old.shutdown(wait=False, cancel_futures=True)
        return _pool


def _drop(pool: ProcessPoolExecutor) -> None:
    """Forget a broken pool: the next flow starts a new one."""
    global _pool, _size
    with _lock:
        if _pool is pool:
            _pool, _size = None, 0
            _pids.clear()
    pool.shutdown(wait=False, cancel_futures=True)


def prestart(wanted: int) -> int:
    """Start workers until `wanted` run (none if as many run already), without waiting for
    them: a worker imports numpy and scipy while the caller goes on, so a page can start them
    before its flow is asked for. Returns how many were started."""
    with _lock:
        running = _size if _pool is not None else 0
    if wanted <= running:
        return 0
    pool = executor(wanted)
    try:
        for _ in range(wanted):  # one job each: the pool starts a process per waiting job
            pool.submit(_ready)
    except Exception:  # noqa: BLE001 (no process: the flow solves in-process)
        _drop(pool)
        return 0
    return wanted - running


@atexit.register
def close_workers() -> None:
    """Stop the pool's workers (they also stop on their own when this process ends)."""
    global _pool, _size
    with _lock:
        pool, _pool, _size = _pool, None, 0
        _pids.clear()
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


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
    whether a worker answered) as the jobs finish, in any order. At most QUEUED * `workers`
    jobs are in flight; a job whose worker fails is solved here instead; the jobs not sent are
    dropped when the caller stops reading, and those in flight are waited for."""
    global _in_flight
    ids: dict[int, int] = {}  # one id per graph object: batches on the same graph share it
    graph_ids = [ids.setdefault(id(g), next(_graph_ids)) for g, *_ in batches]
    arrays = [(g.indptr, g.indices, g.data.copy(), sink) for g, sink, *_ in batches]
    own: dict[int, object] = {}  # the caller's copies of the graphs, for jobs solved here
    sent_with_graph: dict[int, int] = {}  # graph id -> jobs sent carrying it
    parts = [(b, slice(s, s + CHUNK)) for b, batch in enumerate(batches)
             for s in range(0, len(batch[2]), CHUNK)]
    parts.reverse()  # popped from the end: first part first

    def solve_here(b: int, part: slice) -> np.ndarray:
        graph, sink, sources, sinks, want = batches[b]
        if graph_ids[b] not in own:  # one copy of each graph, its edges overwritten per pair
            own[graph_ids[b]] = graph.copy()
        return solve_batch(own[graph_ids[b]], sink, sources[part], sinks[part], want)

    pool: ProcessPoolExecutor | None = executor(workers)
    running: dict[Future, tuple[int, slice, bool]] = {}  # future -> (batch, pairs, with graph)

    def send(b: int, part: slice, with_graph: bool) -> bool:
        """Submit one job to the pool; False when the pool cannot take it (broken)."""
        global _in_flight
        nonlocal pool
        if pool is None:
            return False
        _, _, sources, sinks, want = batches[b]
        try:
            future = pool.submit(_job, graph_ids[b], arrays[b] if with_graph else None,
                                 sources[part], sinks[part], want)
        except Exception:  # noqa: BLE001 (a worker died, no process started, a pool replaced)
            _drop(pool)
            pool = None
            return False
        with _lock:
            _in_flight += 1
        running[future] = (b, part, with_graph)
        return True

    try:
        while parts or running:
            while parts and len(running) < QUEUED * workers and pool is not None:
                b, part = parts.pop()
                first = sent_with_graph.get(graph_ids[b], 0) < workers  # its first jobs carry it
                if not send(b, part, first):
                    parts.append((b, part))
                    break
                sent_with_graph[graph_ids[b]] = sent_with_graph.get(graph_ids[b], 0) + first
            if not running:  # no pool: the rest is solved here, one part at a time
                b, part = parts.pop()
                yield b, part, solve_here(b, part), False
                continue
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                b, part, with_graph = running.pop(future)
                with _lock:
                    _in_flight -= 1
                error = future.exception()
                if isinstance(error, MissingGraph) and not with_graph and send(b, part, True):
                    continue  # sent again, with its graph
                if error is None:
                    yield b, part, future.result(), True
                    continue
                if isinstance(error, BrokenProcessPool) and pool is not None:
                    _drop(pool)
                    pool = None
                yield b, part, solve_here(b, part), False
    finally:  # also when the caller stops early (a page rerun): nothing more is sent
        for future in running:
            future.cancel()
        wait(list(running))
        with _lock:
            _in_flight -= len(running)


def jobs_in_flight() -> int:
    """Jobs sent to the workers and not finished yet, all flows together (0 when idle)."""
    return _in_flight


def worker_pids() -> list[int]:
    """The process ids of the pool's workers that have started (told through their queue)."""
    with _lock:
        while _pid_queue is not None and _pool is not None and not _pid_queue.empty():
            _pids.add(_pid_queue.get())
        return sorted(_pids)


def workers_cpu_seconds() -> float:
    """CPU seconds (user + system) that the pool's workers have used so far, for benchmarks
    (from /proc on Linux; 0.0 where it cannot be read)."""
    total = 0
    for pid in worker_pids():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # fields[0] is the state (field 3)
            total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK") if total else 0.0


def running_workers() -> int:
    """How many worker processes the pool has (0: none started)."""
    return _size if _pool is not None else 0
