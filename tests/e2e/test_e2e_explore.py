"""The all-heads page in a real browser: mosaic drawn, a click opens that head, a pair filter."""

import re

import pytest

from .conftest import page_errors, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


def open_page(page, app_url: str, path: str) -> None:
    """Load the router first: on a fresh server a direct /<page> URL can bypass app.py."""
    page.goto(f"{app_url}/")
    wait_for_app(page)
    page.goto(f"{app_url}{path}")
    wait_for_app(page)


def test_explore_draws_and_click_opens_a_head(page, app_url):
    open_page(page, app_url, "/explore")
    assert page.locator(".js-plotly-plot").count() >= 3  # mosaic, one head, token lines
    assert not page_errors(page)
    screenshot(page, "explore_default")

    # "I saw a saw": 6 tokens, tiles of 6 cells + 1 gap; 13 tile columns, 7 tile rows.
    mosaic = page.locator(".js-plotly-plot").first
    box = mosaic.locator(".nsewdrag").first.bounding_box()
    step, cols, rows = 7, 13 * 7 - 1, 7 * 7 - 1
    x = box["x"] + box["width"] * (5 * step + 3.5) / cols  # head 5
    y = box["y"] + box["height"] * (2 * step + 3.5) / rows  # layer 2
    page.mouse.click(x, y)
    page.wait_for_timeout(1500)
    wait_for_app(page)
    assert re.search(r"ex_layer=2", page.url) and re.search(r"ex_head=5", page.url), page.url
    assert page.get_by_text("Layer 2, head 5").count() >= 1
    assert not page_errors(page)
    screenshot(page, "explore_clicked")


def test_explore_sentence_pair_filter(page, app_url):
    open_page(page, app_url, "/explore?text=I+saw+a+saw&pair=It+cut+the+wood"
                             "&ex_seg=across&ex_hide=true")
    assert not page_errors(page)
    assert page.get_by_text("not renormalised", exact=False).count() >= 1
    assert page.get_by_text("Share of this head's weight", exact=False).count() >= 1
    screenshot(page, "explore_pair_across")
