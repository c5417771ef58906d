"""Attention flow against the authors' formulation, written out here with networkx: one
Edmonds-Karp max-flow per (output, input) pair on the layered attention graph, each output's
row divided by its sum (Abnar & Zuidema 2020, samiraabnar/attention_flow)."""

import os
import signal
import threading
import time

import networkx as nx
import numpy as np
import pytest

from attnviz.analysis.flow import (
    SCALE,
    FlowStats,
    attention_flow,
    integer_capacities,
    lower_bounds,
    max_flows,
    max_flows_stats,
    normalise_rows,
)
from attnviz.analysis.rollout import residual_attention


def networkx_flow(weights: np.ndarray, layer: int) -> np.ndarray:
    """Their get_adjmat + compute_flows: heads averaged, identity added, rows renormalised;
    edge (l+1, i) -> (l, k) with capacity A_l[i, k]; flow from each output to each input."""
    att = weights.astype(np.float64).mean(axis=1)
    att = att + np.eye(att.shape[-1])[None]
    att = att / att.sum(axis=-1)[..., None]
    n = att.shape[-1]
    g = nx.DiGraph()
    for lay in range(layer + 1):
        for i in range(n):
            for k in range(n):
                g.add_edge((lay + 1, i), (lay, k), capacity=float(att[lay, i, k]))
    out = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = nx.maximum_flow_value(g, (layer + 1, i), (0, j),
                                              flow_func=nx.algorithms.flow.edmonds_karp)
        out[i] /= out[i].sum()
    return out


def test_every_layer_of_a_sentence(model):
    t = model.trace("I saw a saw")
    for layer in range(t.n_layers):
        np.testing.assert_allclose(attention_flow(t.weights, layer),
                                   networkx_flow(t.weights, layer), atol=1e-6, rtol=0)


def test_a_sentence_pair_last_layer(model):
    t = model.trace("I saw a saw", "It cut wood")
    ours = attention_flow(t.weights)
    np.testing.assert_allclose(ours, networkx_flow(t.weights, t.n_layers - 1), atol=1e-6, rtol=0)
    np.testing.assert_allclose(ours.sum(axis=1), 1.0, atol=1e-12)
    stats = max_flows_stats(residual_attention(t.weights), t.n_layers - 1)[1]
    assert stats.certified > 0 and stats.certified + stats.solved == t.n_tokens ** 2


@pytest.mark.slow
def test_a_paragraph(model):
    t = model.trace("The saw was old. She cut the wood with it, slowly.")
    np.testing.assert_allclose(attention_flow(t.weights, 3), networkx_flow(t.weights, 3),
                               atol=1e-6, rtol=0)


def test_hand_computed_two_layers():
    # Two tokens, two layers, one head each. Â_0 = [[.5, .5], [0, 1]], Â_1 = [[1, 0], [.5, .5]].
    w0 = np.array([[0.0, 1.0], [0.0, 1.0]])
    w1 = np.array([[1.0, 0.0], [1.0, 0.0]])
    weights = np.stack([w0[None], w1[None]])  # [2, 1, 2, 2]
    a = residual_attention(weights)
    np.testing.assert_allclose(a[1], [[1.0, 0.0], [0.5, 0.5]])
    # output 1 -> input 0: paths 1->0->0 (min(.5, .5)) and 1->1->0 (min(.5, 0)) = 0.5
    # output 1 -> input 1: 1->0->1 (min(.5, .5)) + 1->1->1 (min(.5, 1)) = 1.0
    # output 0 -> input 0: 0->0->0 min(1, .5) = .5;  0 -> 1: 0->0->1 min(1, .5) = .5
    np.testing.assert_allclose(max_flows(a, 1), [[0.5, 0.5], [0.5, 1.0]], atol=1e-15)
    np.testing.assert_allclose(attention_flow(weights), [[0.5, 0.5], [1 / 3, 2 / 3]])


def test_random_attention_deeper_layers():
    # Peaked random attention (Dirichlet 0.3) where paths compete for the same narrow edges.
    rng = np.random.default_rng(3)
    w = rng.dirichlet(np.full(5, 0.3), size=(4, 2, 5))  # [layers, heads, n, n]
    for layer in (2, 3):
        np.testing.assert_allclose(attention_flow(w, layer), networkx_flow(w, layer),
                                   atol=1e-6, rtol=0)


def test_bad_layer_and_zero_rows():
    with pytest.raises(ValueError, match="layer"):
        attention_flow(np.full((2, 1, 3, 3), 1 / 3), 2)
    np.testing.assert_array_equal(normalise_rows(np.zeros((2, 2))), np.zeros((2, 2)))


def scipy_pair_flows(cap: np.ndarray, layer: int) -> np.ndarray:
    """Every pair solved on its own (no bounds), on the same integer graph: the full graph of
    layer `layer` built here edge by edge, one scipy max-flow per pair."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import maximum_flow

    n = cap.shape[-1]
    node = {("source",): 0}
    for b in range(layer, 0, -1):
        for k in range(n):
            node[(b, k)] = len(node)
    sink = len(node)
    rows, cols, caps = [], [], []
    for b in range(layer, 1, -1):  # boundary b -> b - 1 through Â_{b-1}
        for p in range(n):
            for q in range(n):
                rows.append(node[(b, p)])
                cols.append(node[(b - 1, q)])
                caps.append(cap[b - 1, p, q])
    out = np.zeros((n, n), dtype=np.int64)
    for i in range(n):
        for j in range(n):
            r = rows + [0] * n + [node[(1, k)] for k in range(n)]
            c = cols + [node[(layer, k)] for k in range(n)] + [sink] * n
            d = caps + list(cap[layer, i]) + list(cap[0, :, j])
            g = sp.csr_array((np.array(d, dtype=np.int32), (r, c)), shape=(sink + 1, sink + 1))
            out[i, j] = maximum_flow(g, 0, sink).flow_value
    return out


def test_integer_capacities_rows_sum_to_scale():
    rng = np.random.default_rng(0)
    a = residual_attention(rng.dirichlet(np.full(7, 0.5), size=(3, 2, 7)))
    cap = integer_capacities(a)
    assert cap.dtype == np.int64
    np.testing.assert_array_equal(cap.sum(axis=-1), SCALE)
    assert np.abs(cap - a * SCALE).max() < 1


@pytest.mark.parametrize("seed", [3, 8])
def test_certified_pairs_equal_their_own_max_flow(seed):
    # Peaked random attention: some pairs' bounds meet (certified, no per-pair max-flow), the
    # others fall back to Dinic; both equal a per-pair max-flow on the same integer graph, and
    # the lower bounds never exceed it (each is a feasible flow).
    rng = np.random.default_rng(seed)
    a = residual_attention(rng.dirichlet(np.full(6, 0.3), size=(5, 2, 6)))
    cap = integer_capacities(a)
    exact = scipy_pair_flows(cap, 4)
    flows, stats = max_flows_stats(a, 4)
    assert stats.certified > 0 and stats.solved > 0
    unbounded, every = max_flows_stats(a, 4, certify=False)
    assert every.certified == 0 and every.solved == 36
    np.testing.assert_array_equal(unbounded, flows)
    assert stats.certified + stats.solved == stats.pairs == 36
    np.testing.assert_array_equal(np.rint(flows * SCALE).astype(np.int64), exact)
    upper = np.minimum(cap[4].sum(axis=1)[:, None], cap[0].sum(axis=0)[None, :])
    lower = lower_bounds(cap, a, 4, FlowStats())
    assert (lower <= exact).all() and (exact <= upper).all()
    assert ((lower == upper) == (exact == upper) & (lower == exact)).all()


@pytest.mark.slow
def test_real_attention_certifies_and_matches_networkx(model):
    # 16 tokens, last layer: part of the pairs certified, the rest solved; all equal networkx.
    t = model.trace("The saw was old. She cut the wood with it, slowly.")
    a = residual_attention(t.weights)
    flows, stats = max_flows_stats(a, t.n_layers - 1)
    assert stats.certified > 0 and stats.solved > 0
    assert stats.certified + stats.solved == t.n_tokens ** 2
    np.testing.assert_allclose(normalise_rows(flows), networkx_flow(t.weights, t.n_layers - 1),
                               atol=1e-6, rtol=0)


def test_every_pair_is_certified_or_solved():
    rng = np.random.default_rng(5)
    a = residual_attention(rng.dirichlet(np.full(5, 1.0), size=(6, 3, 5)))
    for layer in range(6):
        stats = max_flows_stats(a, layer)[1]
        if layer < 2:  # closed forms: no max-flow at all
            assert stats.certified == stats.solved == 0
        else:
            assert stats.certified + stats.solved == stats.pairs == 25
        if layer == 2:  # no middle boundary to meet at: every pair solved
            assert stats.certified == 0 and stats.bound_flows == 0


def test_worker_processes_give_the_same_values():
    # The per-pair max-flows solved in two worker processes equal those solved in-process and
    # a per-pair max-flow built in the test; every pair was answered by a worker.
    from attnviz.analysis import flow_workers

    rng = np.random.default_rng(8)
    a = residual_attention(rng.dirichlet(np.full(6, 0.3), size=(5, 2, 6)))
    exact = scipy_pair_flows(integer_capacities(a), 4)
    here, here_stats = max_flows_stats(a, 4, workers=1)
    seen, threads = [], set()

    def progress(fraction: float, _: str) -> None:  # a Streamlit bar needs the script's thread
        seen.append(fraction)
        threads.add(threading.get_ident())

    there, stats = max_flows_stats(a, 4, workers=2, progress=progress)
    np.testing.assert_array_equal(there, here)
    np.testing.assert_array_equal(np.rint(there * SCALE).astype(np.int64), exact)
    assert here_stats.workers == 1 and here_stats.solved_in_workers == 0
    assert stats.workers == 2 and stats.solved_in_workers == stats.solved > 0
    assert seen == sorted(seen) and seen[-1] == 1.0 and threads == {threading.get_ident()}
    assert 1 <= flow_workers.running_workers() <= 2
    # A second matrix reuses the running workers (each is sent the new graph).
    b = residual_attention(rng.dirichlet(np.full(6, 0.3), size=(5, 2, 6)))
    np.testing.assert_array_equal(max_flows_stats(b, 4, workers=2)[0],
                                  max_flows_stats(b, 4, workers=1)[0])
    flow_workers.close_workers()
    assert flow_workers.running_workers() == 0


def test_a_dead_worker_is_replaced_by_solving_here():
    # Workers killed between two matrices: their pairs are solved in this process instead,
    # with the same values, and the stats say no worker answered them.
    from attnviz.analysis import flow_workers

    rng = np.random.default_rng(3)
    a = residual_attention(rng.dirichlet(np.full(5, 0.3), size=(4, 2, 5)))
    want = max_flows_stats(a, 3, workers=1)[0]
    max_flows_stats(a, 3, workers=2)
    pids = flow_workers.worker_pids()
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    got, stats = max_flows_stats(a, 3, certify=False, workers=len(pids))  # the pool is broken
    np.testing.assert_array_equal(got, want)
    assert stats.solved > 0 and stats.solved_in_workers < stats.solved
    flow_workers.close_workers()


def test_a_worker_imports_neither_torch_nor_streamlit():
    # A worker imports flow_workers (numpy and scipy) and the attnviz package files above it,
    # which import nothing heavy: no torch import (seconds) per worker. Asked in a fresh
    # interpreter, whose main module a spawned worker does not import.
    import subprocess
    import sys

    code = ("from attnviz.analysis import flow_workers\n"
            "pool = flow_workers.executor(1)\n"
            "print(pool.submit(eval, \"sorted(m for m in ('torch', 'streamlit', 'attnviz.engine', "
            "'attnviz.ui') if m in __import__('sys').modules)\").result())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_stopping_early_leaves_the_workers_idle():
    # A page rerun stops reading the results: the jobs not started are dropped and every
    # worker goes back to the idle pool, ready for the next matrix.
    from attnviz.analysis import flow_workers
    from attnviz.analysis.flow import chain_graph, solve_values

    rng = np.random.default_rng(1)
    cap = integer_capacities(residual_attention(rng.dirichlet(np.ones(4), size=(4, 1, 4))))
    graph, sink = chain_graph([cap[2], cap[1]])
    sources = np.repeat(cap[3], 64, axis=0)  # [256, 4]: 8 jobs of 32 pairs
    sinks = np.tile(cap[0].T, (64, 1))
    results = flow_workers.solve_in_workers(graph, sink, sources, sinks, 2)
    part, values, _ = next(results)
    np.testing.assert_array_equal(values, solve_values(graph.copy(), sink, sources[part],
                                                       sinks[part]))
    results.close()
    assert flow_workers.jobs_in_flight() == 0 and flow_workers.running_workers() <= 2
    flow_workers.close_workers()


def test_a_progress_that_raises_leaves_the_workers_idle():
    # Streamlit stops a script by raising from inside a widget call (here: the progress bar):
    # the error reaches the caller, the jobs not started are dropped, every worker is idle.
    from attnviz.analysis import flow_workers

    class Stop(Exception):
        pass

    def progress(fraction: float, _: str) -> None:
        if 0 < fraction < 1:
            raise Stop

    rng = np.random.default_rng(2)
    a = residual_attention(rng.dirichlet(np.ones(12), size=(4, 1, 12)))
    with pytest.raises(Stop):
        max_flows_stats(a, 3, progress=progress, certify=False, workers=2)
    assert flow_workers.jobs_in_flight() == 0 and flow_workers.running_workers() <= 2
    flow_workers.close_workers()


def test_never_more_workers_than_cores():
    from attnviz import settings
    from attnviz.analysis import flow_workers

    most = min(flow_workers.cores(), flow_workers.MAX_WORKERS)
    with settings.override(flow_workers=999):
        assert flow_workers.default_workers() == most
    with settings.override(flow_workers=1):
        assert flow_workers.default_workers() == 1  # in-process
    with settings.override(flow_workers=0):  # one per core
        assert flow_workers.default_workers() == most


@pytest.mark.parametrize("ending", ["exits", "is killed"])
def test_the_workers_end_with_their_server(ending):
    # A server process that used the workers and then exits (atexit) or is killed (SIGKILL:
    # each worker watches its parent's sentinel): no worker outlives it.
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from attnviz.analysis import flow_workers\n"
            "from attnviz.analysis.flow import max_flows_stats, residual_attention\n"
            "a = residual_attention(np.random.default_rng(0).dirichlet(np.ones(8), (4, 1, 8)))\n"
            "max_flows_stats(a, 3, certify=False, workers=2)\n"
            "print(*flow_workers.worker_pids(), flush=True)\n"
            "sys.stdin.read()\n")
    server = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    pids = [int(p) for p in server.stdout.readline().split()]
    assert 1 <= len(pids) <= 2
    if ending == "exits":
        server.stdin.close()
    else:
        server.kill()
    server.wait(timeout=30)

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(") ")[-1][0] != "Z"  # a zombie has ended
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 20
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    still = [p for p in pids if alive(p)]
    for p in still:  # do not leave them behind should the test fail
        os.kill(p, signal.SIGKILL)
    assert not still


def test_prestarted_workers_are_the_ones_used():
    # A page starts the workers before its flow is asked for; the flow then uses them (no
    # more are started) and asking again starts none.
    from attnviz.analysis import flow_workers

    flow_workers.close_workers()
    assert flow_workers.prestart(2) == 2 and flow_workers.prestart(2) == 0
    deadline = time.monotonic() + 60
    while len(flow_workers.worker_pids()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # started without waiting: each tells its id once it runs
    pids = flow_workers.worker_pids()
    assert len(pids) == 2
    rng = np.random.default_rng(4)
    a = residual_attention(rng.dirichlet(np.ones(8), size=(4, 1, 8)))
    flows, stats = max_flows_stats(a, 3, certify=False, workers=2)
    assert stats.solved_in_workers == stats.solved == 64
    np.testing.assert_array_equal(flows, max_flows_stats(a, 3, certify=False, workers=1)[0])
    assert flow_workers.worker_pids() == pids and flow_workers.running_workers() == 2
    assert flow_workers.workers_cpu_seconds() > 0  # the bench's CPU column reads this
    flow_workers.close_workers()
    assert flow_workers.workers_cpu_seconds() == 0.0


def test_the_bounds_in_workers_equal_the_bounds_here():
    # The bounds' small max-flows (the halves' flows on their source or sink edges, not only
    # values) give the same lower bounds in two worker processes as in this process, and the
    # same certified pairs and flows.
    from attnviz.analysis import flow_workers

    rng = np.random.default_rng(8)
    a = residual_attention(rng.dirichlet(np.full(9, 0.3), size=(5, 2, 9)))
    cap = integer_capacities(a)
    here_stats, there_stats = FlowStats(), FlowStats()
    here = lower_bounds(cap, a, 4, here_stats)
    counts = []
    there = lower_bounds(cap, a, 4, there_stats, counts.append, workers=2)
    np.testing.assert_array_equal(there, here)
    assert here.max() > 0 and sum(counts) == there_stats.bound_flows == here_stats.bound_flows
    flows, stats = max_flows_stats(a, 4, workers=2)
    np.testing.assert_array_equal(flows, max_flows_stats(a, 4, workers=1)[0])
    assert stats.certified > 0 and stats.solved_in_workers == stats.solved
    flow_workers.close_workers()


def test_solve_batch_edges_are_a_flow():
    # The flows solve_batch reports on the source's and the sink's edges are within their
    # capacities and each sums to the max-flow's value.
    from attnviz.analysis.flow import chain_graph
    from attnviz.analysis.flow_workers import solve_batch

    rng = np.random.default_rng(6)
    cap = integer_capacities(residual_attention(rng.dirichlet(np.ones(5), size=(4, 1, 5))))
    graph, sink = chain_graph([cap[2], cap[1]])
    sources, sinks = cap[3], cap[0].T
    values = solve_batch(graph, sink, sources, sinks, "value")
    out = solve_batch(graph, sink, sources, sinks, "out_of_source")
    into = solve_batch(graph, sink, sources, sinks, "into_sink")
    np.testing.assert_array_equal(out.sum(1), values)
    np.testing.assert_array_equal(into.sum(1), values)
    assert (0 <= out).all() and (out <= sources).all() and (0 <= into).all()
    assert (into <= sinks).all()
    with pytest.raises(ValueError, match="want"):
        solve_batch(graph, sink, sources, sinks, "cut")
