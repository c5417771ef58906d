"""A lecture hall end to end: `scripts/serve.py --workers 2` (two Streamlit processes behind
nginx with cookie affinity: new browsers are dealt to the workers in turn, a cookie names
each one's worker), driven the way `make serve` runs it.

- A browser through nginx draws the heatmap, and every response it got from the app (the
  page, /_stcore/ calls, the websocket) came from one worker; Streamlit's scripts came from
  nginx itself, gzip-compressed.
- Two websocket sessions held by two different workers both get answers (a full rerun with
  figures, then another after typing a sentence).
- One worker killed (SIGKILL): the other keeps answering its session, and a browser whose
  cookie named the dead worker is served by the living one at once. The launcher logs the
  death and starts a replacement on the same port: both ports answer /_stcore/health again,
  nginx sends the dead worker's cookie there again, and a session on it gets answers.
- `make stop PORT=N` from another shell (the system's python3, as the README says; it sends
  the launcher SIGTERM, which it handles as Ctrl-C): every process it started (by pid, the
  replacement too, and every member of its process group, nginx's own worker included) is
  gone, the port is closed, and no replacement was started during the shutdown.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import SHOTS, free_port, page_errors, screenshot, wait_for_app

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "load"))
import run_load  # noqa: E402

from tests.test_serve import group_members, worker_for  # noqa: E402

COOKIE = "attnviz_worker"


@dataclass
class Hall:
    url: str
    port: int
    proc: subprocess.Popen
    pids: list[int]  # worker 1, worker 2, nginx's master (as the launcher printed them)
    ports: list[int]  # worker 1's and worker 2's
    lines: list[str]  # the launcher's output so far (stdout and stderr)
    replacements: list[int] = field(default_factory=list)  # pids of restarted workers

    def wait_for(self, pattern: str, timeout_s: float) -> re.Match:
        """The first match of `pattern` in the launcher's output, waiting for it."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            found = re.search(pattern, "".join(self.lines))
            if found:
                return found
            time.sleep(0.2)
        pytest.fail(f"no {pattern!r} in the launcher's output:\n" + "".join(self.lines)[-3000:])


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    """`make serve WORKERS=2`, as a class runs it."""
    yield from run_hall(tmp_path_factory)


def run_hall(tmp_path_factory, **env: str):
    """Start scripts/serve.py with 2 workers (`env` added to their environment), yield its
    Hall, stop it."""
    port = free_port()
    logs = tmp_path_factory.mktemp("serve_logs")
    proc = subprocess.Popen(
        [sys.executable, "scripts/serve.py", "--workers", "2", "--port", str(port),
         "--logs", str(logs)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env={**os.environ, **env})
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            lines.append(line)
            if "behind nginx" in line:
                ready.set()
        ready.set()  # the launcher's output ended: it exited (or will), said why above

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(300) or not any("behind nginx" in line for line in lines):
        proc.kill()
        pytest.fail("serve.py did not start:\n" + "".join(lines)[-3000:])
    out = "".join(lines)
    pids = [int(p) for p in re.search(r"pids ([\d ]+);", out).group(1).split()]
    ports = [int(p) for p in re.search(r"on 127\.0\.0\.1:([\d,]+) behind", out).group(1)
             .split(",")]
    yield Hall(f"http://127.0.0.1:{port}", port, proc, pids, ports, lines)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)


async def session_on(hall: Hall, key: str) -> tuple[run_load.Session, str]:
    """A websocket session whose affinity cookie is `key`, and the worker that holds it."""
    import websockets

    s = run_load.Session(f"ws://127.0.0.1:{hall.port}/_stcore/stream", 0, timeout=120)
    s.ws = await websockets.connect(s.url, subprotocols=["streamlit"], max_size=None,
                                    open_timeout=60, ping_interval=None,
                                    additional_headers={"Cookie": f"{COOKIE}={key}"})
    return s, s.ws.response.headers["X-Attnviz-Worker"]


def keys_per_worker(hall: Hall) -> dict[str, str]:
    """The affinity cookie of each worker: the cookie names its worker (checked here)."""
    found: dict[str, str] = {}
    for key in ("1", "2"):
        req = urllib.request.Request(f"{hall.url}/_stcore/health",
                                     headers={"Cookie": f"{COOKIE}={key}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            found[r.headers["X-Attnviz-Worker"]] = key
    return found


def test_a_browser_stays_on_one_worker(hall, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    workers, static = [], []
    page.on("response", lambda r: r.url.startswith("http") and (  # Streamlit's own files
        # and plotly.js (ui.live_chart) come from nginx; the app's other static files from
        # the browser's worker
        static if "/static/" in r.url and ("/app/static/" not in r.url or "/plotly-" in r.url)
        else workers).append((r.headers.get("x-attnviz-worker"),
                              r.headers.get("content-encoding"))))
    page.goto(hall.url + "/")
    wait_for_app(page)
    assert page.locator(".js-plotly-plot .main-svg").count() >= 1
    assert not page_errors(page)
    cookies = [c for c in ctx.cookies() if c["name"] == COOKIE]
    assert len(cookies) == 1 and cookies[0]["httpOnly"]
    # The page, /_stcore/ calls and the websocket: one worker. Streamlit's scripts and
    # plotly.js: nginx, the compressible ones gzipped (scripts/serve.py static_files).
    names = {w for w, _ in workers}
    assert len(workers) > 2 and len(names) == 1 and names <= {"1", "2"}, workers
    assert len(static) > 5 and {w for w, _ in static} == {"static"}, static
    assert sum(enc == "gzip" for _, enc in static) > len(static) / 2, static
    SHOTS.mkdir(parents=True, exist_ok=True)
    screenshot(page, "serve_two_workers")
    ctx.close()


def test_two_workers_answer_and_one_survives_the_other(hall):
    keys = keys_per_worker(hall)
    assert set(keys) == {"1", "2"}, keys

    async def scenario() -> None:
        s1, w1 = await session_on(hall, keys["1"])
        s2, w2 = await session_on(hall, keys["2"])
        assert (w1, w2) == ("1", "2")
        for s in (s1, s2):
            r = await s.rerun("open")
            assert r.ok and r.charts >= 1, r.errors
            s.type_sentence("I saw a saw again")
            r = await s.rerun("type")
            assert r.ok and r.charts >= 1, r.errors
        # Worker 1 dies; worker 2 keeps answering its session.
        os.kill(hall.pids[0], signal.SIGKILL)
        s2.type_sentence("The cat sat on the mat")
        r = await s2.rerun("type")
        assert r.ok and r.charts >= 1, r.errors
        # A browser whose cookie named worker 1 reconnects: the living worker serves it.
        s3, w3 = await session_on(hall, keys["1"])
        assert w3 == "2"
        r = await s3.rerun("open")
        assert r.ok and r.charts >= 1, r.errors
        for s in (s1, s2, s3):
            await s.close()

    run_in_thread(scenario)
    # The launcher saw it, and worker 1 is back on its port.
    hall.wait_for(rf"worker 1 \(pid {hall.pids[0]}, port {hall.ports[0]}\) exited "
                  r"\(killed by SIGKILL\)", 10)
    new = int(hall.wait_for(rf"worker 1 \(pid (\d+), port {hall.ports[0]}\) answers again",
                            240).group(1))
    assert new != hall.pids[0]
    hall.replacements.append(new)
    assert all(_health(p) for p in hall.ports)
    # nginx retries the failed server after its fail_timeout: worker 1's cookie goes home.
    deadline = time.time() + 30
    while worker_for(hall.port, keys["1"]) != "1" and time.time() < deadline:
        time.sleep(0.5)
    assert worker_for(hall.port, keys["1"]) == "1"

    async def back() -> None:
        s4, w4 = await session_on(hall, keys["1"])
        assert w4 == "1"
        r = await s4.rerun("open")
        assert r.ok and r.charts >= 1, r.errors
        await s4.close()

    run_in_thread(back)


def _health(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=10) as r:
        return r.read().strip() == b"ok"


def run_in_thread(coroutine_function) -> None:
    """asyncio.run in a thread of its own (Playwright's sync API holds this thread's loop)."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(coroutine_function())
        except BaseException as e:  # noqa: BLE001 - re-raised in the test's thread
            failure.append(e)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(600)
    if failure:
        raise failure[0]


def test_make_stop_leaves_nothing_running(hall):
    members = group_members(hall.pids[0])  # the group is led by worker 1's pid, even dead
    assert hall.pids[1] in members and hall.pids[2] in members
    assert all(p in members for p in hall.replacements)
    assert len(members) >= 3  # worker 2, nginx's master and its worker process
    stop = subprocess.run(["make", "-s", "-C", str(ROOT), "stop", f"PORT={hall.port}"],
                          capture_output=True, text=True, timeout=90)
    assert (stop.returncode, stop.stdout.strip()) == (0, "stopped"), stop.stderr
    assert hall.proc.wait(60) == 0
    restarts = "".join(hall.lines).count(" restarted: pid ")
    assert restarts == len(hall.replacements)  # none during the shutdown
    deadline = time.time() + 5
    while time.time() < deadline and any(Path(f"/proc/{p}").exists()
                                         for p in hall.pids + hall.replacements + members):
        time.sleep(0.2)
    left = [p for p in hall.pids + hall.replacements + members if Path(f"/proc/{p}").exists()]
    assert left == [], left
    assert group_members(hall.pids[0]) == []
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{hall.url}/_stcore/health", timeout=2)
