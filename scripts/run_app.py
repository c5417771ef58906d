"""`streamlit run app.py`, with the model loaded in the background as soon as the server
listens (attnviz.ui.preload). `make run`, `make serve`'s workers and the test harness start
the app this way.

    python scripts/run_app.py [app.py] [streamlit run's flags]

This file imports neither torch nor attnviz before Streamlit listens: the server answers at
once, a browser loads the page's scripts while the model loads, and the two never share the
GIL during Streamlit's own start-up. ATTNVIZ_PRELOAD=0: no preload (the first request loads
the model, as plain `streamlit run` does); ATTNVIZ_PRELOAD=early: start it before Streamlit.
Everything else is `streamlit run`: the same flags, config file and signal handling.
"""

from __future__ import annotations

import os
import sys
import threading


def start_preload() -> threading.Thread:
    """attnviz.ui.preload.preload() in a daemon thread of this server process."""
    def target() -> None:
        from attnviz.first_view import wait_for_first_page

        waited = wait_for_first_page()  # with a stored first view: after the first page
        from attnviz.ui.preload import STATE, preload

        STATE["waited"] = waited
        preload()

    thread = threading.Thread(target=target, name="attnviz-preload", daemon=True)
    thread.start()
    return thread


def preload_when_serving() -> None:
    """Start the preload from Streamlit's server-start hook (once it listens); where this
    Streamlit has no such hook, start it now."""
    from streamlit.web import bootstrap

    hook = getattr(bootstrap, "_on_server_start", None)
    if hook is None:
        start_preload()
        return

    def on_server_start(server) -> None:
        start_preload()
        hook(server)

    bootstrap._on_server_start = on_server_start


def class_threads() -> None:
    """A class server (ATTNVIZ_PRELOAD=class, as `make serve` starts its workers) gives torch
    one core fewer than the machine has, unless OMP_NUM_THREADS says otherwise: the left core
    runs the server's Python thread, which draws every session's page. Measured on 2 cores
    with 30 students as fast as possible (README, Speed): p95 1.33-1.43 s with one torch thread,
    1.63-1.84 s with two (torch's threads and the pages' thread took turns on the same cores).
    Set here, before torch is imported: its thread pool reads the variable once."""
    if os.environ.get("ATTNVIZ_PRELOAD") == "class":
        os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) - 1)))


def main(argv: list[str] | None = None) -> None:
    from streamlit.web import cli

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0].startswith("-"):
        args.insert(0, "app.py")
    class_threads()
    mode = os.environ.get("ATTNVIZ_PRELOAD", "1")
    if mode == "early":
        start_preload()
    elif mode != "0":
        preload_when_serving()
    cli.main(["run", *args], prog_name="streamlit")


if __name__ == "__main__":
    main()
