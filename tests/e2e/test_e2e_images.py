"""The Images page in a real browser: figures drawn, URL state restored, a click picks a pixel."""

import re

import pytest

from .conftest import drawn_charts, page_errors, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


@pytest.fixture
def app(page, app_url):
    """The server's address; each test opens its page's link directly (on a fresh server the
    first run hands over to the router: test_e2e_deep_link)."""
    return app_url


def _tall(page) -> None:
    """Streamlit scrolls inside its own container, so a full-page screenshot shows only the
    viewport: make the viewport tall enough to hold the whole page."""
    page.set_viewport_size({"width": 1400, "height": 3400})


def _number(page, label: str) -> int:
    return int(page.get_by_label(label).input_value())


def test_images_page_draws_both_tabs(page, app):
    _tall(page)
    page.goto(f"{app}/images")
    wait_for_app(page)
    assert not page_errors(page)
    assert drawn_charts(page, ".js-plotly-plot", 5) >= 5
    assert page.get_by_text("Attention weights, layer 1").count() >= 1
    screenshot(page, "images_field")

    page.get_by_role("tab", name="Convolution as attention").click()
    page.wait_for_timeout(1500)
    wait_for_app(page, plots=False)
    page.locator("[role='tabpanel']:visible .js-plotly-plot .main-svg").first.wait_for(
        timeout=120_000)
    assert not page_errors(page)
    assert drawn_charts(page, "[role='tabpanel']:visible .js-plotly-plot", 2) == 2
    metric = page.locator("[data-testid='stMetricValue']").first.inner_text()
    assert float(metric) < 1e-5  # attention == conv2d to float error
    screenshot(page, "images_exact")


def test_url_state_is_restored(page, app):
    _tall(page)
    page.goto(f"{app}/images?img_row=3&img_col=7&img_k=5&img_depth=2")
    wait_for_app(page)
    assert not page_errors(page)
    assert (_number(page, "Pixel row"), _number(page, "Pixel column")) == (3, 7)
    # pixel (3, 7), k = 5, 2 layers: rows 0..7 (cut by the top border) x cols 3..11 = 72
    assert page.get_by_text(re.compile(r"Conv, 2 layer\(s\): 72 pixels \(analytic 72\)")).count()
    screenshot(page, "images_url_state")


def test_nonsense_in_the_url_falls_back_to_defaults(page, app):
    page.goto(f"{app}/images?img_size=7&img_row=-3&img_col=abc&img_k=4&img_alpha=zzz&img_sp=0")
    wait_for_app(page)
    assert not page_errors(page)
    assert drawn_charts(page, ".js-plotly-plot", 5) >= 5
    assert (_number(page, "Pixel row"), _number(page, "Pixel column")) == (10, 15)


def test_click_on_the_picture_picks_the_pixel(page, app):
    page.goto(f"{app}/images")
    wait_for_app(page)
    plot = page.locator(".js-plotly-plot").first
    box = plot.locator(".nsewdrag").first.bounding_box()  # the plotting area (32 x 32 pixels)
    # the centre of pixel (row 5, col 24), in screen coordinates
    x = box["x"] + box["width"] * (24 + 0.5) / 32
    y = box["y"] + box["height"] * (5 + 0.5) / 32
    page.mouse.click(x, y)
    page.wait_for_timeout(1500)
    wait_for_app(page)
    assert not page_errors(page)
    assert (_number(page, "Pixel row"), _number(page, "Pixel column")) == (5, 24)
    assert "img_row=5" in page.url and "img_col=24" in page.url
    screenshot(page, "images_clicked")
