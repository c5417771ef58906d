"""This checkout's reruns against another checkout's, measured side by side at the same moment.

A shared machine's speed drifts from one hour to the next: measured one after the other, a
change of 5-10% in CPU per rerun cannot be told from that drift. Here both versions run at
once, so each difference is taken at one moment:

- **reruns** (default): two servers (this checkout, and BENCH_BASELINE=REV, a commit,
  checked out for the run in a git worktree; without it, this checkout twice: the spread of
  the instrument itself), started as `make serve` starts a worker (ATTNVIZ_PRELOAD=class,
  one torch thread), their class warm-ups awaited. One protocol session on each
  (tests/load/run_load.Session) types the same sentence and opens every page once, its
  layers and tabs once, so what follows is cached. Then the same steps on both, interleaved
  step by step (the order of the two swapped every step): every page, two layer changes and
  two tab changes each, `rounds` times. Per server: CPU of each rerun (utime + stime of the
  server and its flow workers, from /proc, read 50 ms after the answer), summed; mean
  latency.
- **class** (BENCH_CLASS=N): the two servers at once, each with its own class of N students
  (`tests/load/run_load.py --url`: warm-up visits, then N sessions clicking every 0.2-1 s): the
  two classes share the machine as two workers of `make serve WORKERS=2` share it. Per server:
  p50 / p95 / max latency, errors, CPU over its warm-up and class.

    BENCH_BASELINE=REV python -m benchmarks.bench_rerun_ab [rounds]
    BENCH_BASELINE=REV BENCH_CLASS=60 python -m benchmarks.bench_rerun_ab
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_page_cpu import server_cpu  # noqa: E402
from benchmarks.checkouts import checkout, revision  # noqa: E402
from benchmarks.report import Table, show  # noqa: E402
from tests.serve import free_port, launch, stop_server  # noqa: E402

SENTENCE = "The teacher saw the student saw the board"
COST = ("It starts two servers as `make serve` starts a worker (each warms what a class opens "
        "first) and compares them; without BENCH_BASELINE both serve this checkout (the "
        "spread of the instrument itself).")


def start(root: Path, log: Path) -> tuple[subprocess.Popen, int]:
    """A worker as `make serve` starts one, serving `root`'s app with `root`'s attnviz."""
    port = free_port()
    env = dict(PYTHONPATH=str(root), ATTNVIZ_PRELOAD="class", OMP_NUM_THREADS="1")
    return launch(port, log, root=root, env=env), port


def warmed(logs: list[Path]) -> None:
    """Until both servers' class warm-ups ended (run_load.wait_for_class_warm_up); a failed one
    ends the comparison."""
    from tests.load.run_load import wait_for_class_warm_up

    for log in logs:
        wait_for_class_warm_up(log)
        if "class warm-up failed" in log.read_text(errors="replace"):
            raise SystemExit(f"a server's class warm-up failed: {log}")


async def reruns(servers: list[tuple[subprocess.Popen, int]], rounds: int) -> list[dict]:
    from tests.load import run_load as rl

    sessions = []
    for _, port in servers:
        s = rl.Session(f"ws://127.0.0.1:{port}/_stcore/stream", 0, 240)
        await s.connect()
        await s.rerun("open")
        s.type_sentence(SENTENCE)
        await s.rerun("type")
        for page in list(s.pages):  # everything the steps below show, made once
            s.go_to(page)
            await s.rerun("page")
            rng = random.Random(0)
            for _ in range(2):
                if s.change_layer(rng):
                    await s.rerun("layer")
                if s.open_tab(rng):
                    await s.rerun("tab")
        sessions.append(s)
    cpu, latency = [0.0, 0.0], [[], []]
    step = 0
    for r in range(rounds):
        for page in [p for p in sessions[0].pages if all(p in s.pages for s in sessions)]:
            # the pages both versions have
            rngs = [random.Random(r), random.Random(r)]  # the same choices on both
            for kind in ("page", "layer", "tab", "layer", "tab"):
                for k in ((0, 1) if step % 2 == 0 else (1, 0)):
                    s, (proc, _) = sessions[k], servers[k]
                    if kind == "page":
                        s.go_to(page)
                    elif not (s.change_layer(rngs[k]) if kind == "layer"
                              else s.open_tab(rngs[k])):
                        continue
                    c0 = server_cpu(proc.pid)
                    done = await s.rerun(kind)
                    time.sleep(0.05)  # what the rerun leaves to do after its last message
                    cpu[k] += server_cpu(proc.pid) - c0
                    latency[k].append(done.seconds)
                    if not done.ok:
                        raise SystemExit(f"{page or 'the default page'} {kind}: {done.errors}")
                step += 1
    for s in sessions:
        await s.close()
    return [{"reruns": len(latency[k]), "cpu_ms": 1000 * cpu[k] / len(latency[k]),
             "latency_ms": 1000 * sum(latency[k]) / len(latency[k])} for k in (0, 1)]


def classes(servers: list[tuple[subprocess.Popen, int]], n: int, tmp: Path) -> list[dict]:
    c0 = [server_cpu(proc.pid) for proc, _ in servers]
    loads = [subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "load" / "run_load.py"), "--sessions", str(n),
         "--url", f"http://127.0.0.1:{port}", "--json", str(tmp / f"class{k}.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT) for k, (_, port) in enumerate(servers)]
    for load in loads:
        load.wait()
    out = []
    for k, (proc, _) in enumerate(servers):
        report = json.loads((tmp / f"class{k}.json").read_text())
        lat = report["latency"]
        out.append({"reruns": report["reruns"], "p50_s": lat["p50_s"], "p95_s": lat["p95_s"],
                    "max_s": lat["max_s"], "errors": len(report["errors"]),
                    "cpu_s": server_cpu(proc.pid) - c0[k]})
    return out


def run(rounds: int = 4) -> Table:
    rev = os.environ.get("BENCH_BASELINE")
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(checkout(rev)) if rev else ROOT
        return compare(base, rounds)


def compare(base: Path, rounds: int) -> Table:
    n = int(os.environ.get("BENCH_CLASS", "0"))
    names = [f"this checkout ({revision(ROOT)})",
             f"baseline ({revision(base)})" if base != ROOT else
             f"this checkout again ({revision(ROOT)})"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        logs = [tmp / "a.log", tmp / "b.log"]
        servers = [start(ROOT, logs[0]), start(base, logs[1])]
        try:
            warmed(logs)
            if n:
                results = classes(servers, n, tmp)
                return Table(
                    ["server", "reruns", "p50 (s)", "p95 (s)", "max (s)", "errors",
                     "CPU, warm-up + class (s)"],
                    [[name, r["reruns"], f"{r['p50_s']:.2f}", f"{r['p95_s']:.2f}",
                      f"{r['max_s']:.1f}", r["errors"], f"{r['cpu_s']:.1f}"]
                     for name, r in zip(names, results, strict=True)],
                    title=f"Two classes of {n} at once, one per server")
            results = asyncio.run(reruns(servers, rounds))
            return Table(
                ["server", "reruns", "CPU per rerun (ms)", "mean latency (ms)"],
                [[name, r["reruns"], f"{r['cpu_ms']:.2f}", f"{r['latency_ms']:.1f}"]
                 for name, r in zip(names, results, strict=True)],
                title=f"Cached reruns, interleaved, {rounds} rounds of every page",
                note=f"CPU per rerun, the first server / the second: "
                     f"{results[0]['cpu_ms'] / results[1]['cpu_ms']:.3f}.")
        finally:
            for proc, _ in servers:
                stop_server(proc)


def main() -> list[Table]:
    return show(run(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 4))


if __name__ == "__main__":
    main()
