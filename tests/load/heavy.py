"""A light session's latency while heavy links run (`make load`).

One link can ask the server for seconds of CPU: the windows page's cost tab at its longest
length with an unusual w, the lesson with a new seed (the taggers are trained for it), the
"How much context?" sweep of a pasted paragraph. Heavy work takes turns in the server's
heavy-work lines (attnviz.ui.worklist), and a waiting session is told its place in line; light
work never waits in line. Measured here:

1. a light session alone: a student on the default page with a short sentence, changing the
   layer every `--think` seconds, for `--alone` seconds: its rerun latency (p50, p95, max);
2. the same light session while three heavy links (HEAVY) open at once: its latency until the
   last heavy link has finished, and each heavy link's time and whether it was told to wait.

Sessions speak Streamlit's websocket protocol on loopback (as tests/load/run_load.py).

    .venv/bin/python tests/load/heavy.py [--alone 30] [--think 0.5] [--quick] [--json PATH]
        [--url http://127.0.0.1:PORT --pid PID]  (a running server instead of a fresh one)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import serve  # noqa: E402
from tests.load.memory import add_server_args, paragraphs, running, server_for  # noqa: E402
from tests.load.run_load import Rerun, Session, pct  # noqa: E402

WAITING = "Waiting for the server"


def heavy_links(paragraph: str, longest: int = 8192) -> list[tuple[str, dict[str, str],
                                                                  str | None]]:
    """(page, URL parameters, sentence to paste or None) for each heavy link; `longest`: the
    cost tab's longest length (a smaller one for --quick)."""
    return [
        ("windows", {"win_tab": "Long sequences: cost", "win_maxlen": str(longest),
                     "win_cost_w": "137"}, None),
        ("lesson", {"lesson_seed": "4321"}, None),
        ("windows", {"win_tab": "How much context?"}, paragraph),
    ]


async def light_student(url: str, until: asyncio.Event, think: float,
                        out: list[Rerun]) -> None:
    """Change the layer on the default page every `think` seconds until `until` is set."""
    rng = random.Random(7)
    s = Session(url, 0, 300)
    await s.connect()
    try:
        out.append(await s.rerun("open"))
        while not until.is_set():
            if s.change_layer(rng):
                out.append(await s.rerun("layer"))
            await asyncio.sleep(think)
    finally:
        await s.close()


async def heavy_student(url: str, index: int, page: str, params: dict[str, str],
                        paste: str | None, out: list[dict]) -> None:
    s = Session(url, index, 900)
    await s.connect()
    t0 = time.perf_counter()
    errors: list[str] = []
    try:
        r = await s.rerun("open")
        errors += r.errors
        if paste is not None:
            s.type_sentence(paste)
            errors += (await s.rerun("paste")).errors
        s.go_to(page)
        s.query_string = urlencode(params)
        errors += (await s.rerun("heavy link")).errors
    finally:
        await s.close()
    out.append({"link": f"/{page}?{urlencode(params)}" + (" (pasted paragraph)" if paste else ""),
                "seconds": round(time.perf_counter() - t0, 1),
                "told_to_wait": any(WAITING in n for n in s.notes), "errors": errors})


def stats(reruns: list[Rerun]) -> dict:
    lat = [r.seconds for r in reruns if r.ok and r.action == "layer"]
    return {"n": len(lat), "p50_s": round(pct(lat, 50), 3), "p95_s": round(pct(lat, 95), 3),
            "max_s": round(max(lat), 3) if lat else None,
            "errors": [e for r in reruns for e in r.errors]}


async def scenario(url: str, alone: float, think: float, paragraph: str,
                   longest: int = 8192) -> dict:
    done = asyncio.Event()
    alone_runs: list[Rerun] = []
    task = asyncio.create_task(light_student(url, done, think, alone_runs))
    await asyncio.sleep(alone)
    done.set()
    await task
    busy_runs: list[Rerun] = []
    heavy: list[dict] = []
    done = asyncio.Event()
    light = asyncio.create_task(light_student(url, done, think, busy_runs))
    await asyncio.sleep(2)  # the light session is open and drawing
    t0 = time.perf_counter()
    await asyncio.gather(*[heavy_student(url, i + 1, page, params, paste, heavy)
                           for i, (page, params, paste) in
                           enumerate(heavy_links(paragraph, longest))])
    busy_s = time.perf_counter() - t0
    done.set()
    await light
    return {"light_alone": stats(alone_runs), "light_during_heavy": stats(busy_runs),
            "heavy_links": heavy, "heavy_seconds": round(busy_s, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--alone", type=float, default=30, help="seconds of the light session alone")
    ap.add_argument("--think", type=float, default=0.5, help="seconds between light reruns")
    ap.add_argument("--json", type=Path, default=ROOT / "test-output" / "load_heavy.json")
    ap.add_argument("--quick", action="store_true",
                    help="smaller heavy links (the cost tab to 1,024 tokens, a paragraph of "
                         "about 150 tokens): the tool checked, not the server measured")
    add_server_args(ap)
    args = ap.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    paragraph = paragraphs(1, 150 if args.quick else 500)[0]
    proc, pid, url = server_for(args, ap, "load_heavy_streamlit.log")
    try:
        report = asyncio.run(scenario(url, args.alone, args.think, paragraph,
                                      1024 if args.quick else 8192))
        alive = running(proc, pid)
    finally:
        if proc is not None:
            serve.stop_server(proc)
    report = {"machine": f"{os.cpu_count()} CPU cores, loadavg at end {os.getloadavg()[0]:.1f}",
              **report, "server_alive": alive}
    args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    a, b = report["light_alone"], report["light_during_heavy"]
    print(f"light session alone: p50 {a['p50_s']} s, p95 {a['p95_s']} s ({a['n']} reruns); "
          f"during 3 heavy links: p50 {b['p50_s']} s, p95 {b['p95_s']} s, max {b['max_s']} s "
          f"({b['n']} reruns) ({report['machine']})")
    for h in report["heavy_links"]:
        print(f"  heavy {h['link']}: {h['seconds']} s, told to wait: {h['told_to_wait']}, "
              f"errors: {h['errors']}")
    errors = a["errors"] + b["errors"] + [e for h in report["heavy_links"] for e in h["errors"]]
    for e in errors[:20]:
        print("  ERROR", e)
    print(f"report: {args.json}")
    return 0 if not errors and alive else 1


if __name__ == "__main__":
    raise SystemExit(main())
