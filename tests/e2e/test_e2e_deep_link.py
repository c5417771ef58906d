"""A shared link to a sub-page, opened first on a freshly started server, gets the router.

Streamlit runs a `pages/` file alone for such a first request (its legacy multipage mode);
attnviz.ui.ensure_router hands over to app.py, so the sidebar and the sentence are there.
This test starts its own server so that the deep link really is the first request.
"""

import pytest

from tests.serve import stop_server

from .conftest import SHOTS, free_port, page_errors, screenshot, start_server, wait_for_app

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("path", ["images", "explore"])
def test_first_request_to_a_sub_page_runs_the_router(browser, path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = start_server(port, SHOTS.parent / f"streamlit_deeplink_{path}.log")
    try:
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        page.goto(f"http://127.0.0.1:{port}/{path}?text=I+watch+my+watch")
        wait_for_app(page)  # waits for the router's sentence box in the sidebar
        assert page.locator("[data-testid='stSidebar'] textarea").first.input_value() == \
            "I watch my watch"
        assert page.locator("[data-testid='stSidebarNav']").inner_text().count("\n") >= 5
        assert not page_errors(page)
        screenshot(page, f"deep_link_{path}")
        ctx.close()
    finally:
        stop_server(proc)
