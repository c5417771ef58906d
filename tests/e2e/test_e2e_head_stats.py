"""Head statistics in a real browser: clicking a cell picks that head and links onward."""

import re

import pytest

from .conftest import drawn_charts, page_errors, screenshot, wait_for_app
from .test_e2e_explore import open_page

pytestmark = pytest.mark.e2e


@pytest.fixture
def tall(tab):
    return tab({"width": 1400, "height": 2400})


def test_head_stats_click_picks_a_head(tall, app_url):
    open_page(tall, app_url, "/head_stats?text=Hello%2C+world.+I+saw+a+saw!")
    assert drawn_charts(tall, ".js-plotly-plot", 2) == 2  # statistics and the picked head
    assert not page_errors(tall)
    screenshot(tall, "head_stats")

    # The first panel (entropy): 6 layers x 12 heads; click layer 4, head 9.
    box = tall.locator(".js-plotly-plot").first.locator(".nsewdrag").first.bounding_box()
    tall.mouse.click(box["x"] + box["width"] * 9.5 / 12, box["y"] + box["height"] * 4.5 / 6)
    tall.wait_for_timeout(1500)
    wait_for_app(tall)
    assert re.search(r"hs_layer=4", tall.url) and re.search(r"hs_head=9", tall.url), tall.url
    link = tall.get_by_text("Open layer 4, head 9 in All heads")
    assert link.count() == 1
    link.click()
    tall.wait_for_timeout(1500)
    wait_for_app(tall)
    assert "/explore" in tall.url and "ex_layer=4" in tall.url and "ex_head=9" in tall.url
    assert tall.get_by_text("Layer 4, head 9").count() >= 1
    assert not page_errors(tall)
    screenshot(tall, "head_stats_to_explore")
