"""A phone turned to landscape (844 x 390, an iPhone's browser) in a real browser: the window
is wider than the 768 px past which Streamlit opens the sidebar, yet the sidebar starts
collapsed (ui.router.initial_sidebar_state reads the phone from the request's User-Agent) and
its open button opens it; a desktop browser at 1280 x 720 still starts with it open."""

import pytest

from tests.test_ui_router_sidebar import DESKTOP, IPHONE

from .conftest import page_errors, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

LANDSCAPE = {"width": 844, "height": 390}
LAPTOP = {"width": 1280, "height": 720}
SIDEBAR = "[data-testid=stSidebar]"


def _context(browser, viewport, agent, phone):
    extra = dict(is_mobile=True, has_touch=True) if phone else {}
    return browser.new_context(viewport=viewport, user_agent=agent, **extra)


def _open(pg, url: str) -> None:
    pg.goto(url)
    wait_for_app(pg)
    pg.wait_for_timeout(1000)  # the sidebar's slide ends


def _visible_width(pg) -> float:
    """How many pixels of the sidebar lie on screen (0 when collapsed off its left edge)."""
    box = pg.locator(SIDEBAR).bounding_box()
    if box is None:
        return 0.0
    return max(0.0, min(box["x"] + box["width"], pg.viewport_size["width"]) - max(box["x"], 0))


@pytest.mark.parametrize("path", ["/", "/explore"])
def test_a_phone_in_landscape_starts_with_the_sidebar_collapsed(browser, app_url, path):
    name = "landscape_" + (path.strip("/") or "start")
    ctx = _context(browser, LANDSCAPE, IPHONE, phone=True)
    pg = ctx.new_page()
    try:
        _open(pg, f"{app_url}{path}")  # a link opened in the browser
        assert not page_errors(pg)
        assert _visible_width(pg) == 0, pg.locator(SIDEBAR).bounding_box()
        assert pg.locator(SIDEBAR).get_attribute("data-collapsed") == "true"
        screenshot(pg, name)
        opener = pg.locator("[data-testid=stExpandSidebarButton]")
        assert opener.get_attribute("aria-expanded") == "false"
        opener.click()
        pg.wait_for_timeout(1000)
        assert _visible_width(pg) > 200  # the reader opened it: it is on screen
        assert pg.locator(SIDEBAR).get_attribute("data-collapsed") == "false"
        screenshot(pg, f"{name}_sidebar_open")
        if path == "/explore":  # a widget's rerun leaves the opened sidebar open
            pg.locator("[data-testid=stMain] [data-testid=stCheckbox] label").first.click()
            wait_for_app(pg)
            pg.wait_for_timeout(1000)
            assert _visible_width(pg) > 200
    finally:
        ctx.close()


def test_a_phone_in_landscape_in_chinese(browser, app_url):
    """A fresh phone (Streamlit keeps a sidebar the reader opened open in that browser)."""
    ctx = _context(browser, LANDSCAPE, IPHONE, phone=True)
    pg = ctx.new_page()
    try:
        _open(pg, f"{app_url}/?lang=zh")
        assert not page_errors(pg)
        assert _visible_width(pg) == 0
        screenshot(pg, "landscape_start_zh")
    finally:
        ctx.close()


@pytest.mark.parametrize("path", ["/", "/explore"])
def test_a_desktop_browser_starts_with_the_sidebar_open(browser, app_url, path):
    ctx = _context(browser, LAPTOP, DESKTOP, phone=False)
    pg = ctx.new_page()
    try:
        _open(pg, f"{app_url}{path}")  # a link opened in the browser
        assert not page_errors(pg)
        assert _visible_width(pg) > 200
        assert pg.locator(SIDEBAR).get_attribute("data-collapsed") == "false"
    finally:
        ctx.close()
