"""The positions page in a real browser: every tab draws, for the default and a typed sentence."""

import pytest

from .conftest import drawn_charts, page_errors, screenshot, set_sentence, wait_for_app

pytestmark = pytest.mark.e2e

TABS = ["1 · Shuffle the words", "2 · I saw a saw", "3 · The encodings", "4 · Compare the choices"]


@pytest.fixture
def app(page, app_url):
    """The server's address, the page tall enough for a whole tab in a screenshot; each test
    opens its link directly (on a fresh server the first run hands over to the router:
    test_e2e_deep_link)."""
    page.set_viewport_size({"width": 1400, "height": 3000})
    return app_url


def show_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    page.wait_for_timeout(800)
    panel = page.locator("[role='tabpanel']:visible")
    panel.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=60_000)


def test_positions_page_draws_every_tab(page, app):
    page.goto(f"{app}/positions")
    wait_for_app(page)
    assert not page_errors(page)
    assert "no position information" in page.inner_text("body").lower()
    for i, name in enumerate(TABS, start=1):
        show_tab(page, name)
        assert not page_errors(page)
        assert drawn_charts(page, "[role='tabpanel']:visible .js-plotly-plot", 2) >= 2
        screenshot(page, f"positions_tab{i}")

    # A sentence with no repeated word: the page says so and still draws the curve.
    set_sentence(page, "Dogs bark <i>loudly")  # no word repeats
    wait_for_app(page, plots=False)
    show_tab(page, TABS[1])
    assert not page_errors(page)
    assert "No word repeats" in page.inner_text("body")
    assert "<i>loudly" not in page.content()
    screenshot(page, "positions_no_repeat")


def test_positions_state_is_in_the_url(page, app):
    page.goto(f"{app}/positions?pos_layer=3&pos_head=5&pos_seed=4")
    wait_for_app(page)
    assert not page_errors(page)
    show_tab(page, TABS[1])
    assert "Layer 3, head 5" in page.inner_text("body")
