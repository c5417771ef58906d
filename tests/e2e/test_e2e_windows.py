"""The windows page in a real browser: every tab draws, screenshots for a human look."""

import pytest

from .conftest import drawn_charts, page_errors, screenshot, set_sentence, wait_for_app

pytestmark = pytest.mark.e2e


def open_windows(page, app_url, query=""):
    page.goto(f"{app_url}/windows{query}")


def test_windows_page_tabs_draw(page, app_url):
    open_windows(page, app_url, "?win_w=2")
    wait_for_app(page)
    assert not page_errors(page)
    assert drawn_charts(page, ".js-plotly-plot", 1) >= 1
    screenshot(page, "windows_masks")
    for name, shot in [("Receptive fields", "windows_receptive"),
                       ("How much context?", "windows_context"),
                       ("Long sequences: cost", "windows_cost")]:
        page.get_by_role("tab", name=name).click()
        page.wait_for_timeout(1500)
        assert not page_errors(page)
        screenshot(page, shot)
    page.get_by_role("tab", name="Receptive fields").click()
    wait_for_app(page, plots=False)  # the tab's change reruns the page (its URL keeps the tab)
    page.get_by_text("a longer passage").click(timeout=120_000)
    wait_for_app(page, plots=False)  # the first chart sits in a hidden tab now
    page.wait_for_timeout(1500)
    assert not page_errors(page)
    screenshot(page, "windows_receptive_passage")


def test_windows_page_typed_sentence(page, app_url):
    open_windows(page, app_url)
    wait_for_app(page)
    set_sentence(page, "The <b>cat</b> sat on the mat")
    wait_for_app(page)
    assert not page_errors(page)
    assert "<b>cat</b>" not in page.content()


def test_cost_tab_has_one_window_and_w_survives_it(page, app_url):
    """The page's w is drawn by the tabs that use it; the cost tab shows only its own window
    (in frames), and w comes back unchanged (in the URL too) after a visit to the cost tab."""
    open_windows(page, app_url, "?win_w=3&win_tab=Long+sequences%3A+cost")
    wait_for_app(page)
    assert not page_errors(page)
    assert page.get_by_text("Window w: each token sees ±w tokens").count() == 0
    assert page.get_by_text("Window for this timing (± frames)").count() == 1
    page.get_by_role("tab", name="How much context?").click()
    wait_for_app(page, plots=False)
    page.wait_for_timeout(1500)
    w = page.locator("[data-testid='stSlider'] input[type='range']").first  # w comes first
    assert w.get_attribute("aria-label") == "Window w: each token sees ±w tokens"
    assert w.input_value() == "3"
    assert "win_w=3" in page.url
    assert not page_errors(page)
