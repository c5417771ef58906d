"""The first page in a real browser: heatmaps drawn for the default and a typed sentence."""

import pytest

from .conftest import page_errors, screenshot, set_sentence, wait_for_app

pytestmark = pytest.mark.e2e


def test_layer_heads_page_draws(page, app_url):
    page.goto(f"{app_url}/")  # the default page
    wait_for_app(page)
    assert page.locator(".js-plotly-plot").count() >= 1
    assert not page_errors(page)
    screenshot(page, "layer_heads_default")

    set_sentence(page, "The <b>cat</b> sat on the mat")
    wait_for_app(page)
    assert not page_errors(page)
    # The typed tag shows literally as tokens: '<', 'b', '>' and is never rendered as bold.
    html = page.content()
    assert "<b>cat</b>" not in html
    screenshot(page, "layer_heads_typed")
