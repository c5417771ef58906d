"""Switch it off and see in a real browser: the lesson's view, the map beside the head
statistics, one head's later-layer difference maps, and the URL keeping the chosen measure and
ablation."""

import pytest

from .conftest import page_errors, screenshot, wait_for_app
from .test_e2e_explore import open_page

pytestmark = pytest.mark.e2e


def test_ablation_page_draws_and_keeps_its_choices_in_the_url(page, app_url):
    open_page(page, app_url, "/ablation?text=I+saw+a+saw")
    assert page.locator(".js-plotly-plot").count() >= 7  # cosines, ranking, top weights, ...
    assert page.get_by_text("Positions off, then heads off").count() == 1
    assert page.locator(".js-plotly-plot").filter(
        has_text="Later layers' weights, with the head removed minus without").count() == 1
    assert page.locator(".js-plotly-plot").filter(has_text="ρ = ").count() == 1
    page.get_by_text("mean (its average over reference sentences)").first.click()
    page.wait_for_timeout(1000)
    wait_for_app(page)
    assert "abl_mode=mean" in page.url, page.url  # the link keeps the choice
    assert page.locator(".js-plotly-plot").count() >= 7
    assert not page_errors(page)
    screenshot(page, "ablation")


def test_the_shown_head_link_opens_in_chinese(browser, app_url):
    """?abl_shown=h4 (the link the page writes, the same in every language) opens head 4 in a
    Chinese session, and the link keeps it."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    page = ctx.new_page()
    open_page(page, app_url, "/ablation?lang=zh&text=I+saw+a+saw&abl_shown=h4")
    box = page.locator("[data-testid=stSelectbox] input[aria-label='后面各层显示的权重']")
    assert box.input_value() == "第 4 个头"
    assert "abl_shown=h4" in page.url, page.url
    assert not page_errors(page)
    ctx.close()
