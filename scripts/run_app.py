"""`streamlit run app.py`, with the model loaded in the background as soon as the server
answers (attnviz.ui.preload). `make run`, `make serve`'s workers and the test harness start
the app this way.

    python scripts/run_app.py [app.py] [streamlit run's flags]

Streamlit runs in this process through its command line (`python -m streamlit run ...`: the
same flags, config file and signal handling). Before it starts, a thread of this process
waits until the server answers its health check (`/_stcore/health`) on the port the flags
name, then loads the model (`preload`): the server answers at once, a browser loads the
page's scripts while the model loads, and the two never share the GIL during Streamlit's own
start-up. This file imports neither torch nor Streamlit before the server runs, and of
attnviz only its settings. settings().preload == "0" (ATTNVIZ_PRELOAD=0): no preload (the
first request loads the model, as plain `streamlit run` does).
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time
import urllib.request

from attnviz.settings import settings

DEFAULT_PORT = 8501  # Streamlit's
LISTEN_WAIT_S = 120.0  # the longest the preload waits for the server to answer


def flag(args: list[str], name: str) -> str | None:
    """The value of `--name value` or `--name=value` in streamlit run's flags, if given."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def health_url(args: list[str]) -> str:
    """The health check of the server these flags start (its port and address, from the flags
    or Streamlit's STREAMLIT_SERVER_* variables; a server on every address answers on
    127.0.0.1)."""
    port = flag(args, "--server.port") or os.environ.get("STREAMLIT_SERVER_PORT")
    host = flag(args, "--server.address") or os.environ.get("STREAMLIT_SERVER_ADDRESS") or ""
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port or DEFAULT_PORT}/_stcore/health"


def wait_until_answering(url: str, timeout_s: float = LISTEN_WAIT_S) -> bool:
    """Poll the server's health check until it answers ok (True) or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.read().strip() == b"ok":
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def start_preload(url: str | None = None) -> threading.Thread:
    """attnviz.ui.preload.preload() in a daemon thread of this server process, once the
    server at `url` answers (at once when None)."""
    def target() -> None:
        if url is not None:
            wait_until_answering(url)
        from attnviz.ui.preload import preload

        preload()

    thread = threading.Thread(target=target, name="attnviz-preload", daemon=True)
    thread.start()
    return thread


def class_threads() -> None:
    """A class server (settings().preload == "class", as `make serve` starts its workers)
    gives torch one core fewer than the machine has, unless OMP_NUM_THREADS says otherwise:
    the left core runs the server's Python thread, which draws every session's page, instead
    of torch's threads and the pages' thread taking turns on the same cores. Set here, before
    torch is imported: its thread pool reads the variable once."""
    if settings().preload == "class":
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) - 1)))


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        args.insert(0, "app.py")
    class_threads()
    if settings().preload != "0":
        start_preload(health_url(args[1:]))
    sys.argv = ["streamlit", "run", *args]
    runpy.run_module("streamlit", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
