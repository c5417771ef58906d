"""Start the app on loopback as `make run` does (`scripts/run_app.py`: `streamlit run`
that loads the model while the server starts), for e2e tests, the load test, benchmarks and
the screenshot script. One place, so every harness serves the app the same way; and
`choose`, how a harness picks an option in the page as a student does."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run",
               "--disable-dev-shm-usage"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(port: int, log_path: Path, root: Path = ROOT,
           env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start serving `root`'s app.py on 127.0.0.1:port, `env` added to this process's
    environment, and return at once, before it answers."""
    log = open(log_path, "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "scripts/run_app.py", "app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=root, stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **(env or {})},
    )


def start_server(port: int, log_path: Path, timeout_s: float = 120) -> subprocess.Popen:
    """Serve app.py on 127.0.0.1:port; return once /_stcore/health answers ok."""
    return wait_until_up(launch(port, log_path), port, log_path, timeout_s)


def wait_until_up(proc: subprocess.Popen, port: int, log_path: Path,
                  timeout_s: float = 120) -> subprocess.Popen:
    """`proc` (launched on `port`, its output in `log_path`) once /_stcore/health answers ok;
    RuntimeError with the end of its log if it does not in time (it is then killed)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return proc
        except OSError:
            time.sleep(0.5)
        if proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError(f"streamlit did not start; log:\n{Path(log_path).read_text()[-3000:]}")


def stop_server(proc: subprocess.Popen, timeout_s: float = 15) -> None:
    """Stop a server started here, by its PID: politely, then for sure."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def choose(page, label: str, option: str) -> float:
    """Pick `option` of the widget labelled `label` in a Playwright page: a row of buttons
    (layer, head) takes one click, the pointer moved onto the button first; a select box a
    click that opens it, typing to filter and Enter. Returns time.perf_counter() just before
    the last action (the click, or Enter): the moment the choice is made."""
    buttons = page.get_by_role("radiogroup", name=label, exact=True)
    if buttons.count():
        button = buttons.first.get_by_role("radio", name=option, exact=True)
        button.hover()
        chosen = time.perf_counter()
        button.click()
        return chosen
    page.locator("[data-testid='stSelectbox']").filter(
        has=page.get_by_text(label, exact=True)).first.click()
    page.keyboard.type(option)
    chosen = time.perf_counter()
    page.keyboard.press("Enter")
    return chosen
