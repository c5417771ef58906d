"""A shared link to a sub-page, opened first on a freshly started server, gets the router.

Streamlit runs a `pages/` file alone for such a first request (its legacy multipage mode);
attnviz.ui.ensure_router hands over to app.py, so the sidebar and the sentence are there.
Each path gets a fresh server of its own, so that the deep link really is its first request;
both servers start at once (their start-ups overlap).
"""

import pytest

from tests import serve

from .conftest import SHOTS, page_errors, screenshot, wait_for_app

pytestmark = pytest.mark.e2e
PATHS = ["images", "explore"]


@pytest.fixture(scope="module")
def fresh_servers():
    """{path: port} of servers started for this module, none of them visited yet."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    started = {}
    try:
        for path in PATHS:
            port = serve.free_port()
            log = SHOTS.parent / f"streamlit_deeplink_{path}.log"
            started[path] = (port, log, serve.launch(port, log))
        for port, log, proc in started.values():
            serve.wait_until_up(proc, port, log)
    except RuntimeError as e:
        for _, _, proc in started.values():
            serve.stop_server(proc)
        pytest.fail(str(e))
    yield {path: port for path, (port, _, _) in started.items()}
    for _, _, proc in started.values():
        serve.stop_server(proc)


@pytest.mark.parametrize("path", PATHS)
def test_first_request_to_a_sub_page_runs_the_router(browser, fresh_servers, path):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        page.goto(f"http://127.0.0.1:{fresh_servers[path]}/{path}?text=I+watch+my+watch")
        wait_for_app(page)  # waits for the router's sentence box in the sidebar
        assert page.locator("[data-testid='stSidebar'] textarea").first.input_value() == \
            "I watch my watch"
        assert page.locator("[data-testid='stSidebarNav']").inner_text().count("\n") >= 5
        assert not page_errors(page)
        screenshot(page, f"deep_link_{path}")
    finally:
        ctx.close()
