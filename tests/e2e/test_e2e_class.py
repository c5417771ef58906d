"""Class mode end to end on `make serve WORKERS=2` (the hall of test_e2e_serve, its workers
warming the lesson only): a teacher (1280x720) and three students in browser contexts of their
own (two phones at 390x844, one reading Chinese by its locale alone, and a laptop; the hall
hands new browsers to its workers in turn, so students land on both), all in one headless
Chromium. How a class of 120 follows is the load test's (tests/load/class_load.py).

The teacher starts a class (a join code and a QR code large enough for a projector); the
students open the join link; the teacher moves through three steps with questions (the lesson's
steps 2, 3 and 4); every student's page follows within the wait below (the timings are written
to test-output/class_follow.json: 4 Chromium renderers share this machine's cores with both
workers, so the 2 s goal is measured by the load test, not here); every student answers;
the teacher's screen counts the answers ("3 of 3 answered"); after the reveal the histogram on
the teacher's screen and on every phone holds exactly the counts of the answers given, the right
one marked, and each student's own answer named. A student looks back and returns to the
class with one tap; the teacher reloads and still leads; a worker killed mid-class (SIGKILL)
loses no answer and its pages follow the class again from the other worker; presentation mode
with the histogram fits 1280x720 at every question step from step 4 on (4, 6, 7, 8), in
English and in Chinese: the step's heading, its text, its figures, the class's line (its code
large) and the histogram, every text 18 px or more (the step's notes are folded below)."""

from __future__ import annotations

import json
import os
import re
import signal
import time

import pytest

from attnviz import i18n
from attnviz.classroom import codes, questions
from attnviz.ui import classroom as ui_class

from .conftest import SHOTS, drawn_charts, page_errors, screenshot, wait_for_app
from .test_e2e_presentation import SMALLEST, SMALLEST_PX
from .test_e2e_serve import run_hall

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("lesson_kept")]  # the class's lesson
LONG = 600_000  # a step with the taggers may train them first
FOLLOW_MS = 60_000
PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 720}
STUDENTS = [("en", PHONE), ("zh", PHONE), ("en", LAPTOP)]
STEPS = (2, 3, 4)  # per_word, window, far: each asks a question with choices
# presenting with the class: each later question step (attention, no_positions, positions)
# and the charts of its figure column (step 4's: the tags' table and the curves)
PRESENTED = {4: 2, 6: 1, 7: 2, 8: 1}


@pytest.fixture(scope="module")
def hall(tmp_path_factory):
    """`make serve WORKERS=2` whose workers warm the lesson only (ATTNVIZ_PRELOAD=1): a class
    server's other warm-ups (timings, samples, demo models) are test_ui_preload's, and here
    would only take the CPU the four browsers need."""
    yield from run_hall(tmp_path_factory, ATTNVIZ_PRELOAD="1")


def settle(page) -> None:
    page.wait_for_timeout(400)
    wait_for_app(page, plots=False, timeout_ms=LONG)


def on_step(page, step: int, timeout_ms: int = FOLLOW_MS) -> None:
    page.wait_for_url(re.compile(rf"lesson_step={step}\b"), timeout=timeout_ms)


def tr(lang: str, text: str) -> str:
    with i18n.use(lang):
        return i18n._(text)


def room_counts(page) -> list[int]:
    """The counts of the histogram under the question (Plotly's public gd.data)."""
    chart = page.locator(".st-key-lesson_question .js-plotly-plot").first
    chart.wait_for(timeout=FOLLOW_MS)
    return [int(x) for x in chart.evaluate("gd => gd.data[0].x")]


# The presented step's blocks as rects of the window, and those that lie outside it (or are
# missing): the heading and Next, the class's line, every block of the text column (the
# step's text, the question and the room's histogram, the notes), the histogram, each chart of
# the figure column; and the class's code as the room reads it (its text and size in px).
BLOCKS = """([w, h]) => {
  const boxes = [];
  const add = (name, el) => {
    if (!el) { boxes.push({name, missing: true}); return; }
    const r = el.getBoundingClientRect();
    if (r.height > 0) boxes.push({name, top: r.top, bottom: r.bottom, left: r.left,
                                  right: r.right});
  };
  add('heading', document.querySelector('.st-key-lesson_top'));
  add('next', document.querySelector('.st-key-lesson_next button'));
  add('class line', document.querySelector('.st-key-class_bar'));
  add('code button', document.querySelector('.st-key-class_code button'));  // the teacher's
  add('histogram', document.querySelector('.st-key-lesson_question .js-plotly-plot'));
  document.querySelectorAll('.st-key-lesson_body [data-testid="stElementContainer"]')
    .forEach((e, k) => add(`text ${k}: ${(e.innerText || '').trim().slice(0, 30)}`, e));
  document.querySelectorAll('.st-key-lesson_main .js-plotly-plot')
    .forEach((e, k) => add(`figure ${k}`, e));
  const code = document.querySelector('.st-key-class_bar strong');
  return {outside: boxes.filter(b => b.missing || b.top < 0 || b.bottom > h + 1 || b.left < 0
                                     || b.right > w + 1),
          blocks: boxes.length, bottom: Math.max(...boxes.map(b => b.bottom || 0)),
          code: code && {text: code.innerText, px: parseFloat(getComputedStyle(code).fontSize)}};
}"""


def fits_one_screen(teacher, lang: str, code: str, step: int) -> None:
    """The teacher's presented step with the room's histogram lies inside 1280x720 (every
    block: the page is laid out after its run, its charts drawn in place after it, so the
    fit is awaited), its texts 18 px or more, the class's code large."""
    assert re.search(rf"lesson_step={step}\b", teacher.url), (lang, step, teacher.url)
    main, name = ".st-key-lesson_main ", (lang, step)
    # the figure column's charts (each chart's element first, then its drawing)
    charts = drawn_charts(teacher, main + "[data-testid='attnvizLiveChart']", PRESENTED[step],
                          FOLLOW_MS)
    assert charts >= PRESENTED[step], name
    assert drawn_charts(teacher, main + ".js-plotly-plot", charts, FOLLOW_MS) \
        == charts, name
    assert drawn_charts(teacher, ".st-key-lesson_question .js-plotly-plot", 1,
                        FOLLOW_MS) == 1, name
    size = [LAPTOP["width"], LAPTOP["height"]]
    try:
        teacher.wait_for_function(f"(size) => ({BLOCKS})(size).outside.length === 0",
                                  arg=size, timeout=FOLLOW_MS, polling=250)
    except Exception:  # noqa: BLE001 - the screen as it was, then the measured blocks below
        teacher.screenshot(path=str(SHOTS / f"class_teacher_present_{lang}_step{step}_failed.png"))
    seen = teacher.evaluate(BLOCKS, size)
    teacher.screenshot(path=str(SHOTS / f"class_teacher_present_{lang}_step{step}.png"))
    assert not seen["outside"] and seen["blocks"] >= 8, (name, seen)
    assert seen["code"]["text"] == code and seen["code"]["px"] >= 24, (name, seen)
    smallest = teacher.evaluate(SMALLEST)
    assert smallest["size"] >= SMALLEST_PX, (name, smallest)
    assert not page_errors(teacher), name


def present_to(teacher, lang: str, step: int) -> None:
    """The presenting teacher steps (Next, Back) to `step`, its answer revealed (Answer ▶):
    reruns of the same page."""
    for _ in range(12):
        here = int(re.search(r"lesson_step=(\d+)", teacher.url).group(1))
        label = teacher.locator(".st-key-lesson_next button").inner_text()
        if here == step and tr(lang, "Next ▶") in label:
            return
        teacher.locator(".st-key-lesson_back button" if here > step
                        else ".st-key-lesson_next button").click()
        settle(teacher)
    raise AssertionError((lang, step, teacher.url))


def test_a_class_follows_the_teacher_and_sees_the_room(hall, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    teacher_ctx = browser.new_context(viewport=LAPTOP)
    teacher = teacher_ctx.new_page()
    teacher.goto(hall.url + "/")
    wait_for_app(teacher)
    teacher.goto(hall.url + "/lesson")
    settle(teacher)
    teacher.get_by_role("button", name="Start a class").click()
    dialog = teacher.get_by_role("dialog")
    dialog.wait_for(timeout=60_000)
    code = re.search(r"[2-9A-Z]{4}-[2-9A-Z]{4}", dialog.inner_text()).group(0)
    assert codes.parse_code(code) == code
    qr = dialog.locator("img").first
    assert qr.bounding_box()["width"] >= 400  # a projector's QR code
    link = dialog.locator("pre").first.inner_text().strip()
    assert link.endswith(f"/lesson?class={code}")
    screenshot(teacher, "class_teacher_code")
    teacher.keyboard.press("Escape")
    assert re.search(rf"class={code}\b", teacher.url)
    assert "secret" not in link and len(link) < 80  # the code only

    students = []
    for k, (lang, size) in enumerate(STUDENTS):
        ctx = browser.new_context(viewport=size, locale="zh-CN" if lang == "zh" else "en-US")
        page = ctx.new_page()
        page.goto(link)  # the link names no language: a Chinese phone's locale says it
        settle(page)
        if lang == "zh":  # in Chinese from its first page (ui.classroom.phone_language)
            page.locator(".st-key-lesson_question").get_by_text(
                tr("zh", ui_class.STUDENT_HINT).strip("*")).wait_for(timeout=FOLLOW_MS)
        assert not page_errors(page), (k, page_errors(page))
        said = page.locator(".st-key-lesson_question").inner_text()
        assert tr(lang, ui_class.STUDENT_HINT).strip("*") in said, (k, said)
        assert tr(lang, ui_class.TEACHER_HINT).strip("*") not in said, (k, said)
        students.append((lang, page))

    teacher.get_by_role("button", name="Answer ▶").click()  # step 1's own question: its answer
    settle(teacher)
    timings: list[dict] = []
    for n, step in enumerate(STEPS):
        q = questions.question(step)
        teacher.get_by_role("button", name="Next ▶").click()
        clicked = time.perf_counter()
        for k, (_lang, page) in enumerate(students):
            on_step(page, step)
            timings.append({"step": step, "student": k,
                            "seconds": round(time.perf_counter() - clicked, 2)})
        settle(teacher)
        for _lang, page in students:
            settle(page)
        chosen = [(k + n) % len(q.choices) for k in range(len(students))]
        for k, (_lang, page) in enumerate(students):
            radios = page.locator(".st-key-lesson_question [data-testid='stRadio'] "
                                  "[role='radiogroup'] label")
            try:
                radios.nth(chosen[k]).click()
            except Exception:  # what the page shows instead, with its picture
                screenshot(page, f"class_student{k}_no_choice_step{step}")
                raise AssertionError((k, step, page.url, page.locator(
                    ".st-key-lesson_question").inner_text()[:300])) from None
            page.wait_for_timeout(300)
        teacher.get_by_text(f"{len(students)} of {len(students)} answered").wait_for(
            timeout=30_000)
        teacher.get_by_role("button", name="Answer ▶").click()
        settle(teacher)
        expected = last_counts = [chosen.count(c) for c in range(len(q.choices))]
        assert room_counts(teacher) == expected
        assert f"{len(students)} answered." in teacher.inner_text("body")
        for k, (lang, page) in enumerate(students):
            try:
                page.wait_for_function(
                    "() => document.querySelector('.st-key-lesson_question .js-plotly-plot')",
                    timeout=FOLLOW_MS, polling=250)
            except Exception:  # what the student's page shows instead, with its picture
                screenshot(page, f"class_student{k}_no_reveal_step{step}")
                raise AssertionError((k, step, page.url, page.locator(
                    ".st-key-lesson_question").inner_text()[:300])) from None
            settle(page)
            assert room_counts(page) == expected, (k, step)
            mine = tr(lang, q.choices[chosen[k]])
            said = page.locator(".st-key-lesson_question").inner_text()
            assert mine in said, (k, said)
            assert not page_errors(page), (k, page_errors(page))
        screenshot(teacher, f"class_teacher_step{step}")
        for k, (lang, page) in enumerate(students[:2]):
            screenshot(page, f"class_student{k}_{lang}_step{step}")

    # A student looks back, the class moves on, one tap brings the student back.
    lang, phone = students[0]
    phone.get_by_role("button", name="◀ Back").click()
    on_step(phone, STEPS[-1] - 1)
    teacher.get_by_role("button", name="Next ▶").click()
    settle(teacher)
    back = phone.get_by_role("button", name="Return to the class")
    back.wait_for(timeout=FOLLOW_MS)
    assert f"lesson_step={STEPS[-1] - 1}" in phone.url  # still where the student looks
    back.click()
    on_step(phone, STEPS[-1] + 1)

    # The teacher reloads: still the teacher (a browser token, not the link, says so).
    teacher.reload()
    settle(teacher)
    assert teacher.get_by_role("button", name="Show the code").count() == 1
    assert teacher.get_by_role("button", name="Return to the class").count() == 0

    # A worker killed mid-class (SIGKILL): its pages reconnect to the other worker, the
    # teacher still leads, every student follows again, no answer is lost.
    os.kill(hall.pids[0], signal.SIGKILL)
    hall.wait_for(rf"worker 1 \(pid {hall.pids[0]}, port {hall.ports[0]}\) exited", 60)
    teacher.wait_for_timeout(3000)
    for page in (teacher, *[p for _lang, p in students]):
        settle(page)
    here = STEPS[-1] + 1
    if teacher.get_by_role("button", name="Answer ▶").count():
        teacher.get_by_role("button", name="Answer ▶").click()
        settle(teacher)
    teacher.get_by_role("button", name="Next ▶").click()
    for _lang, page in students:
        on_step(page, here + 1)
    # The students leave: what follows is the teacher's screen alone (their open pages would
    # only follow each step below, four browsers' work on two cores for nothing checked).
    for _lang, page in students:
        page.context.close()
    for back_to in (here, here - 1):  # each Back one step (ui.lesson.step_slider: its key)
        teacher.get_by_role("button", name="◀ Back").click()
        on_step(teacher, back_to)
        settle(teacher)
    assert re.search(r"lesson_step=(\d+)", teacher.url).group(1) == str(STEPS[-1])
    assert room_counts(teacher) == last_counts  # step 4's answers, given before the kill

    # Presentation mode with the histogram: the whole step on one 1280x720 screen, every
    # question step from 4 on (revealed as the teacher goes), in English and (the same
    # teacher, the page opened again in Chinese) in Chinese, back to step 4.
    teacher.get_by_text("Presentation mode").click()
    teacher.wait_for_url(re.compile(r"lesson_present=true"), timeout=FOLLOW_MS)  # the toggle's
    settle(teacher)
    for step in PRESENTED:
        present_to(teacher, "en", step)
        fits_one_screen(teacher, "en", code, step)
    teacher.goto(teacher.url + "&lang=zh")
    settle(teacher)
    assert "lesson_present=true" in teacher.url
    for step in reversed(PRESENTED):
        present_to(teacher, "zh", step)
        fits_one_screen(teacher, "zh", code, step)
    assert room_counts(teacher) == last_counts
    (SHOTS.parent / "class_follow.json").write_text(json.dumps(timings, indent=1))
    teacher_ctx.close()
