"""The neuron view in a real browser: both step figures drawn, the numbers table shown."""

import pytest

from .conftest import drawn_charts, page_errors, screenshot, wait_for_app
from .test_e2e_explore import open_page

pytestmark = pytest.mark.e2e


@pytest.fixture
def tall(tab):
    return tab({"width": 1400, "height": 2600})


def test_inside_score_draws(tall, app_url):
    open_page(tall, app_url, "/inside_score?ins_layer=2&ins_head=9&ins_query=saw+%234")
    wait_for_app(tall)
    assert drawn_charts(tall, ".js-plotly-plot", 2) == 2
    assert tall.locator("[data-testid='stDataFrame']").count() == 1
    assert tall.get_by_text("Layer 2, head 9, query saw #4").count() >= 1
    assert not page_errors(tall)
    screenshot(tall, "inside_score")
