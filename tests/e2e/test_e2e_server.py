"""What any client may send the server, spoken directly in Streamlit's websocket protocol
(as tests/load/run_load.py does), against the shared e2e server:

- `clear_cache`: accepted from any client even though the menu hides it. It clears Streamlit's
  st.cache_* (the app uses none) and the sender's own session state; the app's caches (models,
  traces, results, figures, taggers: attnviz.ui.cache) are plain objects of the app, which
  Streamlit's clear does not reach (checked in this process), so no other session loses
  anything: the sender's next rerun and another session's draw as before.
- `debug_shutdown_runtime`: refused outside Streamlit's development mode (the server lives).

Every test uses the shared e2e server.
"""

from __future__ import annotations

import asyncio
import threading
import urllib.request

import pytest

from tests.load.run_load import Session

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
