"""A phone (390 x 844, touch) in a real browser: no page scrolls sideways, a chart keeps its
width (520 px, three panels or more 760 px) and scrolls inside its own frame, the
sidebar starts collapsed, the chart toolbar keeps only its camera (Streamlit's charts and those
drawn in place alike), and a figure's numbers open
from the keyboard as a table."""

import pytest

from .conftest import page_errors, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
PAGES = ["/", "/step_by_step", "/positions", "/explore", "/head_stats"]

SIDEWAYS = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  return Math.max(main.scrollWidth - main.clientWidth,
                  document.scrollingElement.scrollWidth - window.innerWidth);
}"""
CHARTS = """() => [...document.querySelectorAll('.stPlotlyChart, .attnviz-live-chart')].map(c => {
  const frame = c.closest('.stElementContainer');
  return {frame: frame.getBoundingClientRect().width, chart: c.getBoundingClientRect().width,
          svg: c.querySelector('.main-svg').getBoundingClientRect().width,
          live: c.classList.contains('attnviz-live-chart'),
          grid: c.querySelector('.infolayer .annotation[data-index="2"]') !== null,
          wide: c.classList.contains('attnviz-wide'),
          groups: [...c.querySelectorAll('.modebar-group')].filter(
              g => getComputedStyle(g).display !== 'none').length};
})"""


@pytest.fixture
def phone(browser):
    ctx = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)
    pg = ctx.new_page()
    yield pg
    ctx.close()


@pytest.mark.parametrize("path", PAGES)
def test_a_phone_never_scrolls_sideways(phone, app_url, path):
    phone.goto(f"{app_url}/")
    wait_for_app(phone, plots=False)
    phone.goto(f"{app_url}{path}")
    wait_for_app(phone)
    phone.wait_for_timeout(1500)
    assert phone.evaluate(SIDEWAYS) <= 1
    assert not page_errors(phone)
    sidebar = phone.locator("[data-testid=stSidebar]")
    assert sidebar.get_attribute("data-collapsed") == "true"  # collapsed, its button says so
    opener = phone.locator("[data-testid=stExpandSidebarButton]")
    assert opener.get_attribute("aria-expanded") == "false"
    charts = phone.evaluate(CHARTS)
    assert charts
    assert all(c["live"] for c in charts)  # every chart is drawn in place (ui.live_chart)
    if path == "/":  # the 12-head grid (one heatmap, twelve panel titles) fits the phone
        assert charts[0]["grid"] and not charts[0]["wide"]
    for c in charts:
        assert c["frame"] <= PHONE["width"]  # the frame fits the phone, and the chart fits
        if c["wide"]:  # the frame, but three subplots or more keep 760 px and scroll in it
            assert c["chart"] >= 760 and c["svg"] >= 759
        else:
            assert c["chart"] <= c["frame"] + 1 and c["svg"] <= c["frame"] + 1
        assert c["groups"] <= 1  # the camera only, if the toolbar shows at all
    screenshot(phone, "phone" + path.replace("/", "_"))


def test_a_figures_numbers_open_from_the_keyboard(phone, app_url):
    phone.goto(f"{app_url}/?text=I+saw+a+saw")
    wait_for_app(phone)
    summary = phone.locator("summary").filter(has_text="Numbers in this figure").first
    summary.focus()
    phone.keyboard.press("Enter")
    table = phone.locator("[data-testid=stTable] table").first
    table.wait_for()
    text = table.inner_text()
    assert "saw #2" in text and "saw #4" in text
    assert phone.evaluate(SIDEWAYS) <= 1  # an open table scrolls in its frame too
