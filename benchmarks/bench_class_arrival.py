"""A class arriving: many browsers load the page's files at once from `make serve`.

Every student's first visit loads Streamlit's frontend: the page, then its scripts, styles and
fonts under /static/. Through a worker these come from its Python thread, the one that draws
every session's page, uncompressed; `scripts/serve.py` has nginx send them itself,
gzip-compressed once at start (`--proxy-static` sends them through the workers instead). This
benchmark starts `make serve`'s cluster (2 workers, nginx) both ways in turn and has S clients
load exactly what a real visit loads:

- the list of URLs: the requests one headless Chromium makes for the default page (recorded
  once through the cluster);
- each client: one curl process fetching "/" and every /static/ URL of that list on one
  keep-alive connection, with `Accept-Encoding: gzip, deflate, br` as Chromium sends it (curl
  does not decompress: the bytes counted are the bytes a browser receives);
- measured: the time until every client is done (and p50/p95 of the clients' own times), the
  bytes sent, and the CPU seconds the workers (Python) and nginx used meanwhile (/proc).

The workers run the plain preload (ATTNVIZ_PRELOAD=1, no class warm-up) and are idle when the
clients start: this measures the files alone, not the page's computing.

    python -m benchmarks.bench_class_arrival [sessions] [repeats]    (default 120, 1)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.report import Table, show  # noqa: E402
from tests.load import class_load  # noqa: E402
from tests.serve import CHROME_ARGS as ARGS  # noqa: E402
from tests.serve import free_port  # noqa: E402
from tests.test_serve import group_members, serve  # noqa: E402 - scripts/serve.py, loaded

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ACCEPT = "Accept-Encoding: gzip, deflate, br"  # Chromium's
COST = ("It starts `make serve`'s cluster twice (Debian's nginx) and one headless Chromium "
        "(/usr/bin/chromium), then 120 curl clients at once.")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes and their reaped children so far."""
    return class_load.cpu_seconds(pids, children=True)


def visit_urls(base: str) -> list[str]:
    """The paths one headless Chromium visit of the default page requests under /static/."""
    from playwright.sync_api import sync_playwright

    seen: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("request", lambda r: seen.append(r.url))
        page.goto(base + "/")
        page.wait_for_selector(".js-plotly-plot .heatmaplayer image", timeout=180_000)
        page.wait_for_timeout(2000)  # late fonts and chunks
        browser.close()
    paths = [u[len(base):] for u in seen if u.startswith(base + "/static/")]
    return list(dict.fromkeys(paths))


def one_class(base: str, paths: list[str], sessions: int, folder: Path) -> dict:
    """`sessions` curl clients at once, each fetching "/" and `paths`; their times and bytes."""
    urls = [base + "/"] + [base + p for p in paths]
    config = folder / "urls.txt"
    config.write_text("".join(f'url = "{u}"\noutput = "/dev/null"\n' for u in urls))
    fmt = "%{size_download} %{http_code}\\n"
    t0 = time.perf_counter()
    procs = [subprocess.Popen(["curl", "-s", "-H", ACCEPT, "-K", str(config), "-w", fmt],
                              stdout=subprocess.PIPE, text=True) for _ in range(sessions)]
    times, sizes, bad = [], 0, 0
    pending = dict(enumerate(procs))
    while pending:
        for i, proc in list(pending.items()):
            if proc.poll() is not None:
                times.append(time.perf_counter() - t0)
                out = proc.stdout.read().split()
                sizes += sum(int(s) for s in out[0::2])
                bad += sum(code != "200" for code in out[1::2]) + (proc.returncode != 0)
                del pending[i]
        time.sleep(0.01)
    return {"all": time.perf_counter() - t0, "p50": statistics.median(times),
            "p95": statistics.quantiles(times, n=20)[-1] if len(times) > 1 else times[0],
            "bytes": sizes, "errors": bad}


def run(sessions: int = 120, repeats: int = 1) -> list[dict]:
    os.environ.setdefault("ATTNVIZ_PRELOAD", "1")  # the model only, no class warm-up
    folder = Path(tempfile.mkdtemp(prefix="attnviz-arrival-"))
    paths: list[str] | None = None
    results = []
    for _ in range(repeats):
        for static in (True, False):
            cluster = serve.Cluster(workers=2, port=free_port(), log_dir=folder,
                                    static=static)
            cluster.start()
            try:
                base = f"http://127.0.0.1:{cluster.port}"
                if paths is None:
                    paths = visit_urls(base)
                time.sleep(8)  # the workers' preload (the model) done, the machine quiet
                workers = [p.pid for p in cluster.procs[:-1]]
                nginx = [p for p in group_members(cluster.pgid) if p not in workers]
                w0, n0 = cpu_seconds(workers), cpu_seconds(nginx)
                r = one_class(base, paths, sessions, folder)
                r.update(static=static, workers_cpu=cpu_seconds(workers) - w0,
                         nginx_cpu=cpu_seconds(nginx) - n0, files=len(paths))
                results.append(r)
            finally:
                cluster.stop(grace_s=5)
                cluster.remove_folder()
    return results


def main() -> list[Table]:
    args = [int(a) for a in sys.argv[1:] if a.isdigit()]
    sessions = args[0] if args else 120
    results = run(*args[:2])
    return show(Table(
        ["static files from", "all done (s)", "client p50 (s)", "client p95 (s)", "sent (MB)",
         "workers' CPU (s)", "nginx CPU (s)", "errors"],
        [["nginx, gzip" if r["static"] else "the workers", f"{r['all']:.2f}", f"{r['p50']:.2f}",
          f"{r['p95']:.2f}", f"{r['bytes'] / 1e6:.0f}", f"{r['workers_cpu']:.2f}",
          f"{r['nginx_cpu']:.2f}", r["errors"]] for r in results],
        title=f"A class of {sessions} loading the page's files at once from `make serve` (2 "
              f"workers + nginx, loopback, curl clients); {results[0]['files']} files under "
              "/static/ per visit, plus the page"))


if __name__ == "__main__":
    main()
