"""The lesson in a real browser: first step to last with Next, each result revealed."""

import re

import pytest

from .conftest import page_errors, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

N_STEPS = 8


def reveal(page) -> None:
    box = page.locator("[data-testid='stCheckbox']").filter(has_text="Reveal")
    if box.count():
        box.first.locator("label").click()
        page.wait_for_timeout(400)
        wait_for_app(page, plots=False)


@pytest.fixture
def app(page, app_url):
    """Open "/" first: on a fresh server a direct sub-page URL can bypass app.py (v1 pages)."""
    page.goto(f"{app_url}/")
    wait_for_app(page)
    return app_url


def test_lesson_walks_from_first_to_last_step(page, app):
    page.set_viewport_size({"width": 1400, "height": 2400})
    page.goto(f"{app}/lesson")
    wait_for_app(page, plots=False)
    assert not page_errors(page)
    for step in range(N_STEPS):
        progress = page.locator("[data-testid='stProgress']").last.inner_text()
        assert f"Step {step + 1} of {N_STEPS}" in progress
        reveal(page)
        assert not page_errors(page), step
        assert page.locator(".js-plotly-plot").count() >= 1, step
        screenshot(page, f"lesson_step{step + 1}")
        if step < N_STEPS - 1:
            page.get_by_role("button", name="Next ▶").click()
            page.wait_for_timeout(500)
            wait_for_app(page, plots=False)
            assert re.search(rf"lesson_step={step + 2}\b", page.url), page.url
    assert page.get_by_role("button", name="Next ▶").is_disabled()


def test_a_link_opens_the_step_in_presentation_mode(page, app):
    page.set_viewport_size({"width": 1400, "height": 2400})
    page.goto(f"{app}/lesson?lesson_step=7&lesson_present=true"
              "&lesson_sentence=They+can+can+the+can")
    wait_for_app(page, plots=False)
    assert "Step 7 of 8" in page.locator("[data-testid='stProgress']").last.inner_text()
    reveal(page)
    assert page.locator(".js-plotly-plot").count() >= 1
    assert not page_errors(page)
    screenshot(page, "lesson_present_bert")
