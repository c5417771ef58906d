"""What one student's click costs the server, page by page: CPU seconds of one rerun.

A lecture hall's latency is bound by the CPU its reruns take: 120 students clicking every
0.2-1 s make some 70 reruns a second, so on 2 cores each may take ~30 ms of CPU. This tells
which page's reruns are dear. One server started as `make serve`
starts a worker (ATTNVIZ_PRELOAD=class, one torch thread per core less one), its class
warm-up awaited; then one protocol session (tests/load/run_load.Session, what a browser tab
is to the server) visits every page in turn, `repeats` times, and for each:

- fresh: the page with a sentence nobody typed yet (the load test's sentences with a new
  number, as its students type them): the trace, the page's analyses and figures made;
- cached: the same page and sentence again (everything in the server's caches);
- layer: another value of the page's layer control, where it has one (its fragment only,
  where the control is in one, as a browser reruns it);
- layer again: back and forth between two layers drawn already (6 times per sentence):
  numbers and figures cached, the cost of the rerun itself.

CPU = the server's utime + stime from /proc (10 ms ticks, so the mean of several repeats) plus
its flow worker processes' (analysis.flow_workers). Sequential, nothing else asking: the cost
of the work itself, not of waiting. Speed is measured here, never in tests.

    python -m benchmarks.bench_page_cpu [repeats]        (make bench BENCH=page_cpu)
"""

from __future__ import annotations

import asyncio
import os
import platform
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TICK = os.sysconf("SC_CLK_TCK")
AGAIN = 6  # changes back and forth between two layers drawn already, per sentence
REPEATS = 3  # sentences per page under make bench (more: bench_page_cpu N)


def _cpu_of(pid: int | str) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def server_cpu(pid: int) -> float:
    """CPU seconds of the server process and of its flow workers (its child processes started
    by multiprocessing: analysis/flow_workers.py's pool; they live as long as the server)."""
    total = _cpu_of(pid)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                if parent == pid and b"multiprocessing" in Path(
                        f"/proc/{entry}/cmdline").read_bytes():
                    total += _cpu_of(entry)
            except (OSError, ValueError, IndexError):
                pass
    return total


async def measure(url: str, pid: int, repeats: int) -> dict[str, tuple]:
    from tests.load import run_load as rl

    s = rl.Session(url, 0, 240)
    await s.connect()
    await s.rerun("open")
    rng = random.Random(0)
    out = {}
    for name in list(s.pages):
        fresh, cached, layer, again = [], [], [], []
        for i in range(repeats):
            s.go_to(name)
            s.type_sentence(rl.SENTENCES[(i * 7 + len(name)) % len(rl.SENTENCES)]
                            + f" #{rng.randint(20, 99999)}")
            for bucket in (fresh, cached):
                c0 = server_cpu(pid)
                r = await s.rerun("page")
                bucket.append(server_cpu(pid) - c0)
                if not r.ok:
                    raise SystemExit(f"{name or 'the default page'}: {r.errors}")
            states = dict(s.states)
            if s.change_layer(rng):
                c0 = server_cpu(pid)
                r = await s.rerun("layer")
                layer.append(server_cpu(pid) - c0)
                if not r.ok:
                    raise SystemExit(f"{name or 'the default page'}, layer: {r.errors}")
                # back and forth between two layers already drawn: their numbers and figures
                # are in the caches, what is left is the rerun itself
                wid = next(k for k, v in s.states.items() if states.get(k) is not v)
                first = s.states[wid]
                s.change_layer(rng)
                await s.rerun("layer")
                second = s.states[wid]
                for k in range(AGAIN):
                    s.click(wid, first if k % 2 == 0 else second)
                    c0 = server_cpu(pid)
                    r = await s.rerun("layer")
                    again.append(server_cpu(pid) - c0)
                    if not r.ok:
                        raise SystemExit(f"{name or 'the default page'}, layer: {r.errors}")
        ms = [round(1000 * sum(v) / len(v), 1) if v else None
              for v in (fresh, cached, layer, again)]
        out[name or "(default page)"] = tuple(ms)
        print(f"| {name or '(default page)'} | {ms[0]} | {ms[1]} | "
              + " | ".join("-" if m is None else str(m) for m in ms[2:]) + " |", flush=True)
    await s.close()
    return out


def run(repeats: int = 6) -> dict[str, tuple]:
    from tests import serve
    from tests.load.run_load import wait_for_class_warm_up
    from tests.serve import free_port

    os.environ["ATTNVIZ_PRELOAD"] = "class"  # as `make serve` starts its workers
    port = free_port()
    log = Path(tempfile.gettempdir()) / f"bench_page_cpu_{port}.log"
    proc = serve.start_server(port, log)
    try:
        wait_for_class_warm_up(log)
        print(f"CPU per rerun (ms), CPU {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores; means of {repeats} sentences per page")
        print("| page | fresh sentence | same again (cached) | layer changed | layer again "
              "(cached) |")
        print("|---|---:|---:|---:|---:|")
        return asyncio.run(measure(f"ws://127.0.0.1:{port}/_stcore/stream", proc.pid,
                                   repeats))
    finally:
        serve.stop_server(proc)


def main() -> None:
    run(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else REPEATS)


if __name__ == "__main__":
    main()
