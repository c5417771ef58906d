"""First visit: how long a student waits for the first heatmap, attnviz against a bare app.

Each server is started fresh (cold) and driven by headless Chromium (Playwright + Debian's
chromium): the browser asks for "/" as soon as the server's health check answers, and the
clock stops when the first Plotly heatmap is drawn in the page. Then more visits, each in a
new browser context (a new session on the same server). Servers of these kinds, alternating,
in the same run:

- bare: a Streamlit script with one Plotly heatmap (6 x 6) and nothing else, the floor;
- attnviz: app.py as `make run` serves it (scripts/run_app.py: the model loads in the
  background while the server starts; a first page that arrives before it is loaded waits
  for it), its default page (heads of one layer, the 12-head weights grid of "I saw a saw"),
  with a cache folder of the benchmark's own;
- attnviz, no preload: the same with ATTNVIZ_PRELOAD=0 (model loaded on the first request);
- with BENCH_BASELINE=REV (a commit): "attnviz at REV", that commit's app (a git worktree of
  it, made for the run) served the same way, to compare two versions in the same run.

cold = server start -> first heatmap drawn (the start includes Streamlit's own start-up; the
time to the health check is printed apart); then a second visit at once (a new browser session,
while the preload may still be loading the model), and warm = the median of three visits once
the model is loaded (the preload's "preload done" line in the server's log), each in a new
browser context (nothing kept from an earlier visit). returning = the median of three visits
in a browser profile on disk that has visited the page twice before, as a student's browser
is between two lessons: its HTTP cache and the code V8 compiled from the scripts are kept.
Goals: attnviz warm <= 1.2x bare warm; attnviz cold <= bare cold + 2 s. Medians of a few runs.

    make bench BENCH=first_visit        (or: python -m benchmarks.bench_first_visit [repeats])
"""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.report import Table, show  # noqa: E402
from tests.serve import CHROME_ARGS as ARGS  # noqa: E402
from tests.serve import free_port, stop_server  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
COST = ("It starts six fresh servers, one after another, and drives them with headless "
        "Chromium (/usr/bin/chromium).")
HEATMAP = ".js-plotly-plot .heatmaplayer image"
REPEATS = 2  # fresh servers of each kind (make bench; more: bench_first_visit N)
BARE_APP = '''"""The floor: one Plotly heatmap, nothing else."""
import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.title("One heatmap")
z = np.random.default_rng(0).random((6, 6))
st.plotly_chart(go.Figure(go.Heatmap(z=z)), key="heatmap")
'''
FLAGS = ["--server.headless", "true", "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"]


def start(kind: str, port: int, folder: Path,
          roots: dict[str, Path] | None = None) -> tuple[subprocess.Popen, float]:
    """Start a server of `kind` (`roots`: the checkout a kind serves, where it is not this
    one); (process, its start time on time.perf_counter)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    if kind == "bare":
        script = folder / "bare_app.py"
        script.write_text(BARE_APP)
        argv, cwd = [sys.executable, "-m", "streamlit", "run", str(script)], folder
    else:
        root = (roots or {}).get(kind, ROOT)
        argv, cwd = [sys.executable, "scripts/run_app.py", "app.py"], root
        if root != ROOT:
            env["PYTHONPATH"] = str(root)  # before the editable install's path
        env["ATTNVIZ_PRELOAD"] = "0" if kind == "attnviz, no preload" else "1"
        env["ATTNVIZ_FAST_PATHS"] = "1"
        env["ATTNVIZ_CACHE_DIR"] = str(folder / "cache")
    log = open(log_of(folder, kind, port), "w")  # noqa: SIM115
    t0 = time.perf_counter()
    proc = subprocess.Popen([*argv, "--server.port", str(port), *FLAGS], cwd=cwd, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    return proc, t0


def wait_healthy(port: int, proc: subprocess.Popen, timeout_s: float = 180) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                        timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.02)
        if proc.poll() is not None:
            break
    raise RuntimeError("server did not start")


def timed(page, url: str) -> float:
    """Seconds from `page` asking for `url` to its first heatmap drawn (a new session)."""
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit")
    try:
        page.wait_for_selector(HEATMAP, timeout=180_000)
    except Exception:  # what the page shows instead, for the report
        shot = Path(tempfile.gettempdir()) / f"first_visit_timeout_{int(time.time())}.png"
        page.screenshot(path=str(shot), full_page=True)
        print(f"no heatmap drawn at {url}: screenshot {shot}", file=sys.stderr, flush=True)
        raise
    return time.perf_counter() - t0


def visit(browser, url: str) -> float:
    """`timed` in a new browser context (nothing kept from an earlier visit)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        return timed(ctx.new_page(), url)
    finally:
        ctx.close()


def returning(playwright, url: str, folder: Path, visits: int = 3) -> float:
    """The median of `visits` visits, each `timed` in a new tab of a browser profile on disk
    (`folder`), after two visits that fill its caches."""
    ctx = playwright.chromium.launch_persistent_context(
        folder, executable_path=CHROMIUM, args=ARGS, viewport={"width": 1400, "height": 1000})

    def one() -> float:
        page = ctx.new_page()
        try:
            return timed(page, url)
        finally:
            page.close()

    try:
        for blank in ctx.pages:  # the window a persistent profile opens with
            blank.close()
        for _ in range(2):
            one()
        return statistics.median(one() for _ in range(visits))
    finally:
        ctx.close()


def log_of(folder: Path, kind: str, port: int) -> Path:
    """The server's log (`start` writes it)."""
    name = "".join(c if c.isalnum() else "_" for c in kind)
    return folder / f"{name}_{port}.log"


def wait_model_loaded(log: Path, kind: str, timeout_s: float = 180) -> None:
    """Until the model is loaded: the preload's "preload done" line in the server's log
    (attnviz.ui.preload); without a preload the first visit, which drew the heatmaps, loaded
    it."""
    if kind == "attnviz, no preload":
        return
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if "attnviz: preload done" in log.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise RuntimeError("the model was not loaded")


def one_run(playwright, browser, kind: str, folder: Path, visits: int = 3,
            roots: dict[str, Path] | None = None) -> dict[str, float]:
    """One fresh server of `kind`: its times (cold, a second visit at once, the median of
    `visits` visits once the model is loaded, and of `visits` returning visits)."""
    port = free_port()
    proc, t0 = start(kind, port, folder, roots)
    try:
        wait_healthy(port, proc)
        health = time.perf_counter() - t0
        first = visit(browser, f"http://127.0.0.1:{port}/")
        cold = time.perf_counter() - t0
        soon = visit(browser, f"http://127.0.0.1:{port}/")  # a second visitor right after
        if kind != "bare":
            wait_model_loaded(log_of(folder, kind, port), kind)
        warm = statistics.median(visit(browser, f"http://127.0.0.1:{port}/")
                                 for _ in range(visits))
        again = returning(playwright, f"http://127.0.0.1:{port}/",
                          Path(tempfile.mkdtemp(prefix="profile-", dir=folder)), visits)
    except Exception:
        log = next(folder.glob(f"*_{port}.log"), None)
        print(f"{kind}: server log {log}:\n" + (log.read_text()[-3000:] if log else ""),
              file=sys.stderr, flush=True)
        raise
    finally:
        stop_server(proc)
    return {"health": health, "first request": first, "cold": cold, "soon": soon, "warm": warm,
            "returning": again}


def run(repeats: int = 3) -> dict[str, dict[str, float]]:
    from playwright.sync_api import sync_playwright

    from benchmarks.checkouts import checkout, revision

    kinds = ["bare", "attnviz", "attnviz, no preload"]
    rev = os.environ.get("BENCH_BASELINE")
    runs: dict[str, list[dict[str, float]]] = {}
    with contextlib.ExitStack() as stack:
        roots = {}
        if rev:
            base = stack.enter_context(checkout(rev))
            roots[f"attnviz at {revision(base)}"] = base
        kinds += list(roots)
        runs = {k: [] for k in kinds}
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        p = stack.enter_context(sync_playwright())
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        ctx = browser.new_context()  # the browser's own first page is nobody's first visit
        ctx.new_page().goto("about:blank")
        ctx.close()
        for _ in range(repeats):
            for kind in kinds:
                runs[kind].append(one_run(p, browser, kind, Path(tmp), roots=roots))
                r = runs[kind][-1]
                print(f"  {kind}: cold {r['cold']:.2f} s, second at once {r['soon']:.2f} s, "
                      f"warm {r['warm']:.2f} s, returning {r['returning']:.2f} s", flush=True)
        browser.close()
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in runs.items()}
    return med


def main() -> list[Table]:
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else REPEATS
    med = run(repeats)
    bare, ours = med["bare"], med["attnviz"]
    return show(Table(
        ["app", "server start -> health check (s)", "first request -> heatmap (s)",
         "cold: start -> heatmap (s)", "a second visit at once (s)",
         "warm: a visit once the model is loaded (s)",
         "returning: a browser that visited before (s)"],
        [[kind, *(f"{m[k]:.2f}" for k in ("health", "first request", "cold", "soon", "warm",
                                           "returning"))]
         for kind, m in med.items()],
        title=f"First heatmap drawn, headless Chromium; medians of {repeats} fresh servers each "
              "(warm, returning: median of 3 visits per server)",
        note=f"warm: attnviz / bare = {ours['warm'] / bare['warm']:.2f}x (goal <= 1.2x); "
             f"returning: attnviz / bare = {ours['returning'] / bare['returning']:.2f}x; cold: "
             f"attnviz - bare = {ours['cold'] - bare['cold']:+.2f} s (goal <= +2 s)."))


if __name__ == "__main__":
    main()
