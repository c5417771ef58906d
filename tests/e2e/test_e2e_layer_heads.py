"""The first page in a real browser: heatmaps drawn for the default and a typed sentence."""

import pytest

from .conftest import drawn_charts, page_errors, screenshot, set_sentence, wait_for_app
from .test_e2e_explore import CELL_AT

pytestmark = pytest.mark.e2e


def test_layer_heads_page_draws(page, app_url):
    page.goto(f"{app_url}/")  # the default page
    wait_for_app(page)
    assert drawn_charts(page, ".js-plotly-plot", 1) >= 1
    assert not page_errors(page)
    screenshot(page, "layer_heads_default")

    set_sentence(page, "The <b>cat</b> sat on the mat")
    wait_for_app(page)
    assert not page_errors(page)
    # The typed tag shows literally as tokens: '<', 'b', '>' and is never rendered as bold.
    html = page.content()
    assert "<b>cat</b>" not in html
    screenshot(page, "layer_heads_typed")


def test_layer_heads_url_opens_the_page_with_its_settings(page, app_url):
    """/layer_heads (the page's file name) is the same page, not 'Page not found', and keeps
    the URL's layer and sentence."""
    page.goto(f"{app_url}/")
    wait_for_app(page)
    page.goto(f"{app_url}/layer_heads?layer=3&text=I+saw+it")
    wait_for_app(page)
    body = page.inner_text("body")
    assert "Page not found" not in body
    assert "Layer 3: softmax weights" in body and "5 tokens" in body
    assert not page_errors(page)


def test_a_fragment_rerun_keeps_the_sessions_language(page, app_url):
    """Opening a figure's numbers reruns the layer's fragment alone (app.py's router does not
    run): its text, figure and tables stay in Chinese, as they were before the click."""
    page.goto(f"{app_url}/")
    wait_for_app(page)
    page.goto(f"{app_url}/?lang=zh&text=I+saw+a+saw&layer=1")
    wait_for_app(page)
    assert "第 1 层：softmax 注意力权重" in page.inner_text("body")
    page.get_by_text("本图中的数值", exact=True).first.click()
    page.locator("[data-testid=stTable] table").first.wait_for()
    wait_for_app(page)
    body = page.inner_text("body")
    assert "第 1 层：softmax 注意力权重" in body and "softmax weights" not in body
    assert "saw #2" in page.locator("[data-testid=stTable] table").first.inner_text()
    assert not page_errors(page)


# A head's cell of the grid: the head's block starts at the row and column its figure's meta
# says (layout.meta.panels.starts, the app's own field); CELL_AT finds the cell on the screen.
CELL = """([head, query, key]) => {
  const gd = document.querySelector('.js-plotly-plot');
  const [r0, c0] = gd.layout.meta.panels.starts[head];
  return (""" + CELL_AT + """)(gd, r0 + query, c0 + key);
}"""


def test_a_grid_cells_hover_names_its_head_and_both_tokens(page, app_url, model):
    """The heads grid is one heatmap (its heads as blocks): the hover of head 5's cell (query
    saw #4, key saw #2) names that head and both tokens, its weight the engine's."""
    page.goto(f"{app_url}/")
    wait_for_app(page)
    page.goto(f"{app_url}/?text=I+saw+a+saw&layer=2")
    wait_for_app(page)
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    x, y = page.evaluate(CELL, [5, 4, 2])
    page.mouse.move(x, y)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)
    text = page.evaluate("() => [...document.querySelectorAll("
                         "'.hoverlayer .hovertext text.nums tspan.line')]"
                         ".map(t => t.textContent).join('\\n')")
    w = float(model.trace("I saw a saw").weights[2, 5, 4, 2])
    # the panel marks (zero-width spaces) are in the text but take no room: it reads the same
    lines = [s.strip() for s in text.replace("\u200b", "").split("\n") if s.strip()]
    assert lines == ["head 5", "query saw #4", "key saw #2", f"weight = {w:.6f}"]
    assert not page_errors(page)
