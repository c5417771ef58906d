"""The app makes no outside request, and a URL with unusable numbers still draws, in Chromium.

Network: every request the browser attempts to a host other than the loopback server is
aborted and recorded (conftest.guard_outside with a route on a context of its own, its cache
empty), websockets included; none may be attempted. A classroom server may be offline, and a
class's browsers should not tell anyone which pages they read. Every page is visited with its
requests recorded by test_e2e_all_pages (opened, a control changed, a sentence typed; the
shared profile, where a route would turn the cache off); here the default page and its
tab icon, the app's own file handed over as a data: URL. (The tab icon used to be a Material
icon name, which Streamlit's frontend fetches from fonts.gstatic.com.)

URL values: a link carrying `inf`, `-inf`, `1e999` and a 5,000-digit number in bound number
widgets opens without an error box (a 100,000-digit one does not fit in a URL the server
accepts; tests/test_ui_urlstate.py sends it through Streamlit's own channel), the unusable
values leave the address bar, and typing a new sentence draws again (ui.urlstate).
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from .conftest import guard_outside, outside, page_errors, screenshot, set_sentence, wait_for_app

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]

@pytest.fixture
def guarded_page(browser):
    """A page in a context of its own, empty cache, every outside request aborted."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = ctx.new_page()
    yield pg, guard_outside(pg, abort=True)
    ctx.close()


def test_the_default_page_and_its_icon_make_no_outside_request(guarded_page, app_url):
    page, attempted = guarded_page
    page.goto(app_url + "/")
    wait_for_app(page)
    page.wait_for_timeout(1500)  # icons, fonts and late requests
    assert not page_errors(page), page_errors(page)
    icon = page.evaluate("document.querySelector(\"link[rel*='icon']\")?.href || ''")
    assert not sorted(set(attempted)), f"outside requests: {sorted(set(attempted))}"
    assert icon and not outside(icon), icon
    # the app's own icon, handed over as a data: URL (attnviz.ui.router.favicon_url)
    head, _, data = icon.partition(",")
    assert head == "data:image/png;base64", icon[:60]
    assert base64.b64decode(data) == (ROOT / "assets" / "favicon.png").read_bytes()


def test_unusable_url_numbers_leave_the_url_and_the_page_draws(page, app_url):
    huge = "9" * 5_000
    page.goto(f"{app_url}/step_by_step?sbs_seed=inf&sbs_query=-inf&sbs_m=1e999&sbs_p={huge}")
    wait_for_app(page)
    page.wait_for_timeout(1000)
    assert not page_errors(page), page_errors(page)
    assert "inf" not in page.url and "1e999" not in page.url and huge[:50] not in page.url
    set_sentence(page, "A new sentence after a bad link")
    wait_for_app(page)
    assert not page_errors(page), page_errors(page)
    screenshot(page, "url_values_sanitised")
