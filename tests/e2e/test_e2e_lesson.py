"""The lesson in a real browser: every step with Next (answer first, then the next step), and
presentation mode at 1280x720 driven by the keys a presenter's clicker sends."""

import re

import pytest

from attnviz.analysis.lesson import STEPS

from .conftest import SERVER_LOG, drawn_charts, page_errors, screenshot, wait_for_app

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("lesson_kept")]

N_STEPS = len(STEPS)
LONG = 600_000  # the first step that needs the taggers trains them (and step 5 the sweep)
FORWARD = ("ArrowRight", "PageDown", "Space")


def settle(page) -> None:
    page.wait_for_timeout(600)
    wait_for_app(page, plots=False, timeout_ms=LONG)


def drawn(page) -> None:
    """A chart of the step is drawn (charts are drawn in place by the browser after the
    script's run ends: ui.live_chart)."""
    page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=LONG)


@pytest.fixture
def app(page, app_url):
    """The server's address; each test opens the lesson's link directly (on a fresh server the
    first run hands over to the router: test_e2e_deep_link)."""
    return app_url


def test_lesson_walks_from_first_to_last_step(page, app):
    log_path = SERVER_LOG
    start = log_path.stat().st_size  # the server is shared: read only this test's part
    page.goto(f"{app}/lesson")
    settle(page)
    assert not page_errors(page)
    for step in range(N_STEPS):
        progress = page.locator("[data-testid='stProgress']").last.inner_text()
        assert f"Step {step + 1} of {N_STEPS}" in progress
        if STEPS[step].predict:
            page.get_by_role("button", name="Answer ▶").click()
            settle(page)
            assert re.search(rf"lesson_step={step + 1}\b", page.url), page.url
        assert not page_errors(page), step
        drawn(page)
        screenshot(page, f"lesson_step{step + 1}")
        if step < N_STEPS - 1:
            page.get_by_role("button", name="Next ▶").click()
            settle(page)
            assert re.search(rf"lesson_step={step + 2}\b", page.url), page.url
    assert page.get_by_role("button", name="Next ▶").is_disabled()
    with log_path.open(encoding="utf-8", errors="replace") as f:
        f.seek(start)
        log = f.read()
    assert "set via the Session State API" not in log and "Traceback" not in log


def inside(page, locator, what: str, step: int) -> None:
    box = locator.bounding_box()
    assert box is not None, (step, what)
    view = page.viewport_size
    assert box["y"] >= 0 and box["y"] + box["height"] <= view["height"] + 1, (step, what, box)
    assert box["x"] >= 0 and box["x"] + box["width"] <= view["width"] + 1, (step, what, box)


def test_presentation_mode_fits_a_projector_and_follows_the_clicker(page, app):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{app}/lesson?lesson_present=true&lesson_step=1")
    settle(page)
    sidebar = page.locator("[data-testid='stSidebar']")
    box = sidebar.bounding_box()
    assert box is None or box["x"] + box["width"] <= 0, box  # collapsed
    for step in range(N_STEPS):
        assert re.search(rf"lesson_step={step + 1}\b", page.url), page.url
        title = page.locator(".st-key-lesson_top h2").inner_text()
        assert title.startswith(f"{step + 1}/{N_STEPS}"), title
        if STEPS[step].predict:
            page.keyboard.press(FORWARD[step % 3])  # reveals the answer, same step
            settle(page)
            assert re.search(rf"lesson_step={step + 1}\b", page.url), page.url
            inside(page, page.locator(".st-key-lesson_question"), "question", step)
            answer = page.locator(".st-key-lesson_answer, .st-key-lesson_notes p").first
            inside(page, answer, "answer", step)
        assert not page_errors(page), step
        main = page.locator(".st-key-lesson_main .js-plotly-plot")
        assert drawn_charts(page, ".st-key-lesson_main .js-plotly-plot") >= 1, step
        inside(page, main.first, "main figure", step)
        inside(page, page.locator(".st-key-lesson_next button"), "Next", step)
        sizes = main.first.evaluate(
            "el => [...el.querySelectorAll('.xtick text, .ytick text')]"
            ".map(t => parseFloat(getComputedStyle(t).fontSize))")
        assert all(s >= 18 for s in sizes), (step, sizes)  # ticks large, not only the bar
        screenshot(page, f"lesson_present_step{step + 1}")
        if step < N_STEPS - 1:
            page.keyboard.press(FORWARD[(step + 1) % 3])
            settle(page)
    assert page.locator(".st-key-lesson_next button").is_disabled()
    page.keyboard.press("ArrowLeft")
    settle(page)
    assert re.search(rf"lesson_step={N_STEPS - 1}\b", page.url), page.url
    page.keyboard.press("PageUp")
    settle(page)
    assert re.search(rf"lesson_step={N_STEPS - 2}\b", page.url), page.url


def test_a_link_opens_the_step_in_presentation_mode(page, app):
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(f"{app}/lesson?lesson_step=9&lesson_present=true"
              "&lesson_sentence=They+can+can+the+can")
    settle(page)
    assert page.locator(".st-key-lesson_top h2").inner_text().startswith(f"9/{N_STEPS}")
    page.keyboard.press("PageDown")
    settle(page)
    drawn(page)
    assert "can" in page.locator(".st-key-lesson_answer, .st-key-lesson_notes").first.inner_text()
    assert not page_errors(page)
    screenshot(page, "lesson_present_bert")


def test_next_then_back_before_the_next_step_is_drawn_goes_back_one_step(page, app):
    """Next, then Back while the browser still holds the step's slider (the server's messages
    from the next step's slider on held back on the wire, as a busy machine delays them):
    Back's message carries the old slider, its old value; the page ends on the step it left,
    not one before (ui.lesson._slid). Once the messages are let through the page draws the
    step Back chose."""
    held: dict = {"arm": False, "on": False, "queue": [], "ws": None}

    def hold_from_the_slider_on(ws):
        server = ws.connect_to_server()

        def from_server(msg):
            if held["arm"] and isinstance(msg, bytes) and b"lesson_step_slider" in msg:
                held["on"] = True
            if held["on"]:
                held["queue"].append(msg)
            else:
                ws.send(msg)
        server.on_message(from_server)
        held["ws"] = ws

    page.route_web_socket(re.compile(r"/_stcore/stream"), hold_from_the_slider_on)
    page.goto(f"{app}/lesson?lesson_step=2")  # from step 1 a second step back stops at 1
    settle(page)
    page.get_by_role("button", name="Answer ▶").click()
    settle(page)
    held["arm"] = True
    page.get_by_role("button", name="Next ▶").click()
    for _ in range(240):  # the server ran Next up to the slider
        if held["on"]:
            break
        page.wait_for_timeout(250)
    assert held["on"], "the next step's slider never came"
    page.get_by_role("button", name="◀ Back").click()
    page.wait_for_timeout(500)
    held["arm"] = held["on"] = False
    for msg in held["queue"]:
        held["ws"].send(msg)
    settle(page)
    page.wait_for_timeout(500)
    settle(page)
    assert re.search(r"lesson_step=2\b", page.url), page.url
    progress = page.locator("[data-testid='stProgress']").last.inner_text()
    assert f"Step 2 of {N_STEPS}" in progress
    assert not page_errors(page)
