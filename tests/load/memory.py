"""Memory under a class that pastes long text (`make load`): eight sessions at once, each
pasting its own ~500-token paragraph, then opening the positions page's tabs 1, 2 and 4 and the
windows page's "How much context?" tab, the heaviest walk through the app per token.

Goal: the server's resident memory (VmRSS of its process) peaks under 4 GiB and is back within
1.5 GiB of its idle level a minute after the sessions close. "Idle" is measured after one warm-up
visit of every page with the default sentence (model loaded, imports done), its session closed.

Sessions speak Streamlit's websocket protocol on loopback, as in tests/load/run_load.py (one
websocket per browser tab; the server does all the work a class causes and nothing else).
Reported: RSS at idle, its peak while the sessions run, and 0, 30 and 60 s after they close;
every rerun's latency and any error.

    .venv/bin/python tests/load/memory.py [--sessions 8] [--after 60] [--json PATH]
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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import serve  # noqa: E402
from tests.load.run_load import (  # noqa: E402
    SENTENCES,
    MemorySampler,
    Rerun,
    Session,
    rss_mib,
    start_server,
    stream_url,
    summary,
    warm_up,
)

GOAL_PEAK_MIB = 4 * 1024
GOAL_AFTER_MIB = 1.5 * 1024  # above idle, a minute after the sessions close
WORDS = ("river", "window", "teacher", "garden", "engine", "signal", "letter", "market",
         "winter", "forest", "kernel", "vector", "station", "bridge", "harbour", "lantern")


def paragraphs(n: int, tokens: int = 500) -> list[str]:
    """n different English paragraphs of about `tokens` WordPiece tokens each (counted with
    the bundled model's tokenizer, [CLS] and [SEP] included, never over 512)."""
    from transformers import AutoTokenizer

    from attnviz.engine import bundled_model_dir

    tok = AutoTokenizer.from_pretrained(str(bundled_model_dir()), local_files_only=True)
    english = [s for s in SENTENCES if s.isascii()]
    out = []
    for i in range(n):
        rng = random.Random(1000 + i)
        parts: list[str] = []
        while True:
            s = rng.choice(english)
            nxt = " ".join([*parts, f"{s} near the {rng.choice(WORDS)} {i}."])
            if len(tok(nxt)["input_ids"]) > tokens:
                break
            parts.append(f"{s} near the {rng.choice(WORDS)} {i}.")
        out.append(" ".join(parts))
    return out


# The walk: (action, page URL name or None, tab label start or None).
WALK = [
    ("page", "positions", None), ("tab", None, "2 ·"), ("tab", None, "4 ·"),
    ("page", "windows", None), ("tab", None, "How much context"),
]


async def paster(url: str, index: int, text: str, timeout: float, results: list[Rerun],
                 start_delay: float) -> None:
    """One student: open the app, paste a paragraph, walk WALK, close the tab."""
    await asyncio.sleep(start_delay)
    s = Session(url, index, timeout)
    try:
        await s.connect()
        results.append(await s.rerun("open"))
        s.type_sentence(text)
        results.append(await s.rerun("paste"))
        for action, page, tab in WALK:
            if page is not None:
                s.go_to(page)
            elif not s.open_tab_named(tab):
                results.append(Rerun(index, s.page_name, "tab", 0.0, False, 0,
                                     [f"no tab starting {tab!r}"]))
                continue
            results.append(await s.rerun(action if page is None else f"{action}:{page}"))
    except Exception as e:  # noqa: BLE001 - reported as an error of this session
        results.append(Rerun(index, s.page_name, "connect", 0.0, False, 0, [repr(e)]))
    finally:
        await s.close()
        print(f"  session {index} closed after "
              f"{sum(r.seconds for r in results if r.session == index):.0f} s of reruns")


async def run_pasters(url: str, texts: list[str], timeout: float) -> list[Rerun]:
    results: list[Rerun] = []
    rng = random.Random(0)
    await asyncio.gather(*[paster(url, i, text, timeout, results, rng.uniform(0, 1))
                           for i, text in enumerate(texts)])
    return results


def add_server_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--url", help="use this running server (http://host:port, one Streamlit "
                                  "process, with --pid) instead of starting one")
    ap.add_argument("--pid", type=int, help="with --url: that server's process id (its memory "
                                            "is read and its life checked)")


def server_for(args: argparse.Namespace, ap: argparse.ArgumentParser, log_name: str):
    """(the server started here or None, its pid, its websocket address): the one --url and
    --pid name, else a fresh one on a free port, its log beside the report."""
    if (args.url is None) != (args.pid is None):
        ap.error("--url and --pid go together")
    if args.url:
        return None, args.pid, stream_url(args.url)
    port = serve.free_port()
    proc = start_server(port, args.json.parent / log_name)
    return proc, proc.pid, f"ws://127.0.0.1:{port}/_stcore/stream"


def running(proc, pid: int) -> bool:
    """Whether the server is still alive (started here: not ended; else its pid exists)."""
    return proc.poll() is None if proc is not None else Path(f"/proc/{pid}").exists()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=500, help="tokens per pasted paragraph")
    ap.add_argument("--after", type=float, default=60, help="seconds to watch after closing")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one rerun may take")
    ap.add_argument("--json", type=Path, default=ROOT / "test-output" / "load_memory.json")
    add_server_args(ap)
    args = ap.parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)

    args.json.parent.mkdir(parents=True, exist_ok=True)
    texts = paragraphs(args.sessions, args.tokens)
    proc, pid, url = server_for(args, ap, "load_memory_streamlit.log")
    sampler = MemorySampler(pid)
    sampler.start()
    try:
        warm = asyncio.run(warm_up(url, args.timeout))
        time.sleep(5 if proc is not None else 1)
        idle = rss_mib(pid)
        t0 = time.time()
        results = asyncio.run(run_pasters(url, texts, args.timeout))
        t_closed = time.time()
        after = {}
        for mark in (0, args.after / 2, args.after):
            time.sleep(max(0.0, t_closed + mark - time.time()))
            after[f"{mark:.0f}s"] = round(rss_mib(pid))
        alive = running(proc, pid)
    finally:
        sampler.stop()
        if proc is not None:
            serve.stop_server(proc)
    peak = max((m for t, m in sampler.samples if t0 <= t <= t_closed), default=idle)
    last = after[f"{args.after:.0f}s"]
    report = {
        "machine": f"{os.cpu_count()} CPU cores, loadavg at end {os.getloadavg()[0]:.1f}",
        "sessions": args.sessions, "tokens_per_paragraph": args.tokens,
        "walk_seconds": round(t_closed - t0, 1),
        "warm_up": summary(warm), **summary(results), "server_alive": alive,
        "rss_mib": {"idle": round(idle), "peak": round(peak), "after_close": after},
        "goal": {"peak_under_mib": GOAL_PEAK_MIB, "after_within_mib_of_idle": GOAL_AFTER_MIB,
                 "met": bool(peak < GOAL_PEAK_MIB and last - idle <= GOAL_AFTER_MIB)},
        "rss_curve_mib": [(round(t - t0, 1), round(m)) for t, m in sampler.samples[::8]
                          if t >= t0],
    }
    args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    lat = report["latency"]
    print(f"memory scenario: {args.sessions} sessions pasting ~{args.tokens} tokens, "
          f"{report['reruns']} reruns in {report['walk_seconds']} s ({report['machine']}); "
          f"errors: {len(report['errors'])}")
    print(f"rerun latency p50 {lat['p50_s']} s, p95 {lat['p95_s']} s, max {lat['max_s']} s")
    print(f"server RSS MiB: idle {round(idle)}, peak {round(peak)} (goal < {GOAL_PEAK_MIB}), "
          f"after close {after} (goal <= idle + {GOAL_AFTER_MIB:.0f})")
    for e in report["errors"][:20]:
        print("  ERROR", e)
    print(("goal met" if report["goal"]["met"] else "GOAL NOT MET") + f"; report: {args.json}")
    return 0 if report["goal"]["met"] and not report["errors"] and alive else 1


if __name__ == "__main__":
    raise SystemExit(main())
