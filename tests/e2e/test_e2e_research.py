"""The research views in a real browser: flow beside rollout, value norms (a click picks a
head), the map of heads (a click picks a head), attribution and the comparison of two
sentences all draw without an error box."""

import re

import pytest

from .conftest import page_errors, screenshot, wait_for_app
from .test_e2e_explore import open_page

pytestmark = pytest.mark.e2e


@pytest.fixture
def tall(tab):
    return tab({"width": 1400, "height": 2400})


def test_rollout_and_flow(tall, app_url):
    open_page(tall, app_url, "/head_stats?text=The+old+saw+cut+the+wood.&hs_tab=Rollout+and+flow")
    assert tall.get_by_text("flow, layers 0-5").count() >= 1
    assert not page_errors(tall)
    screenshot(tall, "head_stats_flow")


def test_value_norms_click_picks_a_head(tall, app_url):
    open_page(tall, app_url, "/value_norms?text=The+cat+sat+on+the+mat%2C+and+the+dog+slept.")
    assert tall.get_by_text("Heads where the norms pick another key").count() == 1
    box = tall.locator(".js-plotly-plot").first.locator(".nsewdrag").first.bounding_box()
    tall.mouse.click(box["x"] + box["width"] * 7.5 / 12, box["y"] + box["height"] * 2.5 / 6)
    tall.wait_for_timeout(1500)
    wait_for_app(tall)
    assert re.search(r"vn_layer=2", tall.url) and re.search(r"vn_head=7", tall.url), tall.url
    assert tall.get_by_text("weights, layer 2 head 7").count() >= 1
    assert not page_errors(tall)
    screenshot(tall, "value_norms")


def test_map_of_heads_click_picks_a_head(tall, app_url):
    open_page(tall, app_url, "/corpus_heads")
    wait_for_app(tall)
    # The dot of layer 0, head 2 (labelled "0.2"): click the text label's dot.
    dot = tall.locator(".js-plotly-plot").first.locator("g.points path.point").nth(2)
    dot.click(force=True)
    tall.wait_for_timeout(1500)
    wait_for_app(tall)
    assert "ch_head=2" in tall.url and "ch_layer" not in tall.url, tall.url  # layer 0: default
    assert tall.get_by_text("Layer 0, head 2:", exact=False).count() >= 1
    assert not page_errors(tall)
    screenshot(tall, "corpus_heads")


def test_similarity_and_compare(tall, app_url):
    open_page(tall, app_url, "/similarity?text=The+carpenter+sharpened+his+saw."
                             "&sim_b=A+woodworker+prepares+his+tools.")
    assert tall.get_by_text("(within 1%)", exact=False).count() == 2
    assert tall.get_by_text("occlusion: token removed").count() >= 2  # beside IG, A and B
    assert not page_errors(tall)
    screenshot(tall, "similarity")
    open_page(tall, app_url, "/compare?text=I+saw+a+saw+yesterday&cmp_b=I+saw+a+dog+yesterday")
    assert tall.get_by_text("6 aligned tokens", exact=False).count() == 1
    assert not page_errors(tall)
    screenshot(tall, "compare")
