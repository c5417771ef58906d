"""The step-by-step page in a real browser: steps reached by URL, in both modes, screenshots."""

import pytest

from .conftest import drawn_charts, page_errors, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


@pytest.fixture
def app(page, app_url):
    """The server's address, the page tall enough for a whole step per screenshot; each test
    opens its link directly (on a fresh server the first run hands over to the router:
    test_e2e_deep_link)."""
    page.set_viewport_size({"width": 1400, "height": 2600})
    return app_url


# Each step's URL state is checked by AppTest (tests/test_page_step_by_step.py); here a few
# links, each a whole page load, in both modes, with the parameters a student shares.
URLS = [
    ("sbs_mode=toy&sbs_step=3&sbs_query=2&sbs_key=4", "step_by_step_toy_3", "3. Similarity"),
    ("sbs_mode=toy&sbs_step=6&sbs_m=6&sbs_dk=4&sbs_p=2", "step_by_step_toy_6", "6. Weighted sum"),
    ("sbs_mode=toy&sbs_step=7&sbs_m=6&sbs_heads=3", "step_by_step_toy_7", "7. Multi-head"),
    ("sbs_mode=real&sbs_step=2&sbs_layer=3&sbs_head=7", "step_by_step_real_2",
     "2. Queries, keys, values"),
    ("sbs_mode=real&sbs_step=8", "step_by_step_real_8", "8. Additive similarity"),
]


def test_steps_reached_by_url(page, app):
    """Each URL opens its step and mode (one browser page, visited in turn)."""
    for query, shot, step_label in URLS:
        page.goto(f"{app}/step_by_step?{query}")
        wait_for_app(page)
        assert not page_errors(page), query
        number, name = step_label.split(". ")
        heading = f"Step {number}: {name}"
        assert page.get_by_role("heading", name=heading).count() == 1, f"{query}: not {heading}"
        assert drawn_charts(page, ".js-plotly-plot", 1) >= 1
        body = page.inner_text("body")
        assert ("engine trace" in body) == ("sbs_mode=real" in query), query
        if "sbs_layer=3&sbs_head=7" in query:
            assert "W[224:256]" in body  # head 7's rows of W^q
        screenshot(page, shot)


def test_clicking_a_step_updates_the_url(page, app):
    page.goto(f"{app}/step_by_step?sbs_mode=toy&sbs_step=1")
    wait_for_app(page)
    steps = page.get_by_role("radiogroup", name="Step")
    steps.locator("[data-testid='stRadioOption']").nth(4).click()  # option 5: Softmax
    page.wait_for_timeout(700)
    wait_for_app(page)
    assert "sbs_step=5" in page.url
    assert page.get_by_role("heading", name="Step 5: Softmax").count() == 1
    assert not page_errors(page)
    screenshot(page, "step_by_step_toy_5")


BOXES = """() => {
  const gd = document.querySelector('.js-plotly-plot');
  const box = e => { const r = e.getBoundingClientRect();
                     return {text: e.textContent, top: r.top, bottom: r.bottom}; };
  return {ticks: [...gd.querySelectorAll('.xtick text')].map(box),
          title: box(gd.querySelector('.cbtitle text'))};
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_the_colour_bars_title_stands_below_the_token_labels(tab, app_url, width):
    """Step 1's matrix I: its colour bar's title ("value") stands under the row of token
    labels (I #1, saw #2, ...), not among them, on a laptop and on a phone."""
    page = tab({"width": width, "height": 900})
    page.goto(f"{app_url}/step_by_step?sbs_mode=toy&sbs_step=1")
    wait_for_app(page)
    page.locator(".js-plotly-plot .cbtitle text").first.wait_for(timeout=60_000)
    found = page.evaluate(BOXES)
    assert [t["text"] for t in found["ticks"]] == ["I #1", "saw #2", "a #3", "saw #4"]
    assert found["title"]["text"] == "value"
    lowest = max(t["bottom"] for t in found["ticks"])
    assert found["title"]["top"] >= lowest + 2, found
