"""What any client may send the server, spoken directly in Streamlit's websocket protocol
(as tests/load/run_load.py does), against the shared e2e server:

- `clear_cache`: accepted from any client even though the menu hides it. It clears Streamlit's
  st.cache_* (the app uses none) and the sender's own session state; the app's caches (models,
  traces, results, figures, taggers: attnviz.ui.cache) are plain objects of the app, which
  Streamlit's clear does not reach (checked in this process), so no other session loses
  anything: the sender's next rerun and another session's draw as before.
- `debug_shutdown_runtime`: refused outside Streamlit's development mode (the server lives).
- SVG downloads: six concurrent requests for one figure start at most one server-side browser
  and draw it once; asking again starts none (ui.figures.svg_bytes).

The SVG test starts a server of its own and counts the browsers among its child processes;
the others use the shared e2e server.
"""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from attnviz.ui.figures import svg_export_available
from tests import serve
from tests.load.run_load import Session

from .conftest import SHOTS

pytestmark = pytest.mark.e2e


def run_async(coro):
    """asyncio.run in a thread of its own: in the full suite, Playwright's sync API may already
    run an event loop in this thread, where asyncio.run refuses to start another."""
    out: dict = {}

    def target() -> None:
        try:
            out["value"] = asyncio.run(coro)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = e

    worker = threading.Thread(target=target)
    worker.start()
    worker.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def ws_url(app_url: str) -> str:
    return app_url.replace("http://", "ws://") + "/_stcore/stream"


async def send(s: Session, **fields) -> None:
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg(**fields)
    await s.ws.send(msg.SerializeToString())


async def opened(app_url: str, text: str) -> Session:
    s = Session(ws_url(app_url), 0, 300)
    await s.connect()
    assert (await s.rerun("open")).ok
    s.type_sentence(text)
    r = await s.rerun("type")
    assert r.ok and r.charts, r.errors
    return s


def test_streamlits_clear_does_not_reach_the_apps_caches():
    """What a clear_cache message does on the server (st.cache_data and st.cache_resource
    cleared) leaves the app's own caches as they were."""
    import streamlit as st

    from attnviz.ui import cache

    key = ("test_e2e_server", "clear_cache")
    cache.cached("results", key, lambda: "kept")
    st.cache_data.clear()
    st.cache_resource.clear()
    assert cache.peek("results", key) == "kept"
    cache.forget("results", key)


def test_clear_cache_from_any_client_does_not_reach_the_apps_caches(app_url):
    async def scenario():
        a = await opened(app_url, "Session A saw a saw")
        b = await opened(app_url, "Session B sends clear_cache")
        await send(b, clear_cache=True)
        await asyncio.sleep(1.0)
        again_b = await b.rerun("after clear_cache")
        again_a = await a.rerun("after B's clear_cache")
        await a.close()
        await b.close()
        return again_a, again_b

    again_a, again_b = run_async(scenario())
    assert again_b.ok and again_b.charts, again_b.errors  # the sender: its page draws as before
    assert again_a.ok and again_a.charts, again_a.errors


def test_debug_shutdown_is_refused(app_url):
    async def scenario():
        s = Session(ws_url(app_url), 0, 120)
        await s.connect()
        await s.rerun("open")
        await send(s, debug_shutdown_runtime=True)
        await asyncio.sleep(1.0)
        r = await s.rerun("still there")
        await s.close()
        return r

    assert run_async(scenario()).ok
    with urllib.request.urlopen(f"{app_url}/_stcore/health", timeout=10) as r:
        assert r.read().strip() == b"ok"


# ------------------------------------------------------------------------- SVG export
@pytest.fixture(scope="module")
def fresh_server():
    """(URL, pid) of a server of this module's own, so that no other test's export has started
    its SVG renderer: the browsers under it are this test's."""
    port = serve.free_port()
    log = SHOTS.parent / "streamlit_svg.log"
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        proc = serve.start_server(port, log)
    except RuntimeError as e:
        pytest.fail(str(e))
    yield f"http://127.0.0.1:{port}", proc.pid
    serve.stop_server(proc)


def browsers_under(pid: int) -> set[int]:
    """Pids of the Chromium browser processes (not their helpers) descended from `pid`."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    found, todo = set(), list(children.get(pid, []))
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # a helper (zygote, renderer, gpu...) names its --type; chromium may rewrite its whole
        # command line into argv[0], so the flag is looked for in the joined line
        if b"chrom" in cmd[0].lower() and b" --type=" not in b" ".join(cmd):
            found.add(p)
    return found


class BrowserCount(threading.Thread):
    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.most, self.pids = pid, 0, set()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            now = browsers_under(self.pid)
            self.most, self.pids = max(self.most, len(now)), self.pids | now


async def request_files(s: Session, file_ids: list[str], timeout: float = 240) -> list:
    """Ask for each deferred file at once; the backend_operation_responses, in request order."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    for i, fid in enumerate(file_ids):
        msg = BackMsg()
        req = msg.backend_operation_request
        req.request_id, req.session_id, req.deferred_file.file_id = f"r{i}", s.session_id, fid
        await s.ws.send(msg.SerializeToString())
    got: dict[str, object] = {}
    end = time.time() + timeout
    while len(got) < len(file_ids):
        raw = await asyncio.wait_for(s.ws.recv(), timeout=max(1.0, end - time.time()))
        fm = ForwardMsg()
        fm.ParseFromString(raw)
        if fm.WhichOneof("type") == "backend_operation_response":
            got[fm.backend_operation_response.request_id] = fm.backend_operation_response
    return [got[f"r{i}"] for i in range(len(file_ids))]


@pytest.mark.skipif(not svg_export_available(), reason="no Chromium for kaleido")
def test_concurrent_svg_requests_start_one_browser_and_repeat_for_free(fresh_server):
    """Six requests at once for a figure's SVG: one server-side browser at most (the renderer is
    started once per server and kept), every request answered; the same requests again start
    no new browser (the SVG comes from the exports cache)."""
    app_url, app_pid = fresh_server
    async def scenario():
        s = await opened(app_url, "I saw a saw and it cut")
        svgs = [fid for label, fid in s.downloads if label == "SVG"]
        assert svgs, s.downloads
        watch = BrowserCount(app_pid)
        watch.start()
        first = await request_files(s, [svgs[0]] * 6)
        watch.stop.set()
        watch.join()
        busy = (watch.most, watch.pids)
        watch = BrowserCount(app_pid)
        watch.start()
        again = await request_files(s, [svgs[0]] * 6)
        watch.stop.set()
        watch.join()
        await s.close()
        return first, busy, again, (watch.most, watch.pids)

    first, (most, pids), again, (most_again, pids_again) = run_async(scenario())
    assert all(r.deferred_file.url and not r.error_msg for r in first + again), \
        [r.error_msg for r in first + again]
    assert pids, "no server-side browser was seen: did the export run?"
    assert most == 1, f"{most} browsers at once"
    assert most_again <= 1 and pids_again <= pids, "a repeated SVG request started a browser"
