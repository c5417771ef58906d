"""Presentation mode on a 1280x720 projector, every step in English and in Chinese, with "I saw
a saw" and with the lesson's Chinese example (nine characters: its tag tables run across, its
figures take the room the tables leave, the taggers' note on English goes into the fold): once
the step's answer is shown (its fullest state), the question, every figure of the figure column
and the Next button lie inside the 720 px window without scrolling (their bounding rects,
read from the page); whatever the step has under the two columns is folded into one expander
named for the step, closed, and nothing else shows there; every block of the text column
(a table, a tag table drawn there) ends above the window's bottom; and no text of the step's
figures lies on another (a title on a tick label, a colour bar's title on an axis title, a
legend on an axis title, a tagger's name on its tags: their boxes on the screen, slanted
labels as slanted boxes); and no text on the screen is smaller than 18 px, read from the back
of a room (the computed font-size of every visible text of the main area: the text column's
notes, formulas' indices, code, the buttons and their keys, a select box's value, the fold's
label, the figures' labels); and the text column says little: at most WORDS_MAX words, and
on steps 2 and 5 (mostly notes in small type) at most DENSE_WORDS_MAX, the rest in the fold.
One page walks the lesson with the clicker's key; the measurements go to
test-output/lesson_present.json."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from attnviz.analysis.lesson import STEPS, ZH_SENTENCES
from scripts.screenshots import LABELS, label_collisions

from .conftest import SHOTS, page_errors, screenshot, wait_for_app

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("lesson_kept")]

N_STEPS = len(STEPS)
LONG = 600_000  # the first step that needs the taggers trains them (and step 5 the sweep)
WIDTH, HEIGHT = 1280, 720
ZH_EXAMPLE = ZH_SENTENCES[0]  # 我上山，山上有花。: nine characters, the most the lesson offers
# (UI language, sentence): "I saw a saw" (the page's default) in both languages, then the
# Chinese example in the English UI (its longer words); one page walks them one after another
WALKS = (("en", None), ("zh", None), ("en", ZH_EXAMPLE))

# Each rect relative to the window, and the page's scroll height (Streamlit scrolls its main
# area, not the document): one call per step.
MEASURE = """() => {
  const r = el => { if (!el) return null; const b = el.getBoundingClientRect();
                    return {top: b.top, bottom: b.bottom, left: b.left, right: b.right}; };
  const main = document.querySelector('[data-testid="stMain"]');
  return {
    scroll: main ? main.scrollHeight : document.documentElement.scrollHeight,
    scrolled: main ? main.scrollTop : window.scrollY,
    question: r(document.querySelector('.st-key-lesson_question')),
    next: r(document.querySelector('.st-key-lesson_next button')),
    figures: [...document.querySelectorAll('.st-key-lesson_main .js-plotly-plot')].map(r),
    // each block of the text column (its tables and a tag table drawn there included)
    body: [...document.querySelectorAll(
      '.st-key-lesson_body [data-testid="stElementContainer"]')].filter(
      e => e.getBoundingClientRect().height > 0).map(
      e => ({...r(e), text: (e.innerText || '').trim().slice(0, 40)})),
    // the page's blocks after the columns: each shown one, and the fold (closed or open)
    below: (() => {
      const blocks = [...document.querySelector('[data-testid="stMainBlockContainer"]')
                      .firstElementChild.children];
      const at = blocks.findIndex(b => b.querySelector('.st-key-lesson_body'));
      return blocks.slice(at + 1).filter(b => b.getBoundingClientRect().height > 0)
        .map(b => b.classList.contains('st-key-lesson_rest') || b.querySelector(
          '.st-key-lesson_rest') ? 'fold' : (b.innerText || b.tagName).slice(0, 60));
    })(),
    fold: (() => { const d = document.querySelector('.st-key-lesson_rest details');
                   return d ? {open: d.open, label: d.querySelector('summary').innerText,
                               blocks: d.querySelectorAll('[data-testid="stElementContainer"]')
                                 .length} : null; })(),
  };
}"""


SMALLEST_PX = 18  # the smallest text a projector shows
# The smallest computed font-size of the text on the screen: every visible text node of the
# main area (the page's blocks and the figures' SVG) and every box's value, icons (a ligature
# font: 'expand_more') left out; {size, text}, or null when there is no text.
SMALLEST = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const seen = (el) => {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || r.bottom < 0 || r.top > window.innerHeight) return false;
    for (let a = el; a && a !== main; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.display === 'none' || cs.visibility === 'hidden' || +cs.opacity === 0) return false;
    }
    return true;
  };
  let small = null;
  const keep = (size, text) => {
    if (small === null || size < small.size) small = {size, text: text.slice(0, 40)};
  };
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const text = walker.currentNode.textContent.replace(/[\\u200b\\s]+/g, ' ').trim();
    const el = walker.currentNode.parentElement;
    if (!text || !el || !seen(el)) continue;
    const cs = getComputedStyle(el);
    if (!/Material Symbols|Material Icons/.test(cs.fontFamily)) keep(parseFloat(cs.fontSize), text);
  }
  for (const el of main.querySelectorAll('input, textarea')) {
    if (el.value && el.type !== 'hidden' && seen(el)) {
      keep(parseFloat(getComputedStyle(el).fontSize), el.value);
    }
  }
  return small;
}"""


# Words a projector's text column may hold (in any of the walks' languages), and the steps whose
# column is mostly notes in small type, where fewer words still are what reads from the back of
# a room. Counted as a reader sees them: the column's text, a formula one word, two Chinese
# characters one word (a Chinese word is one or two), buttons, boxes and figures left out.
WORDS_MAX, DENSE_STEPS, DENSE_WORDS_MAX = 150, (2, 5), 95
WORDS = """() => {
  const body = document.querySelector('.st-key-lesson_body');
  if (!body) return null;
  const copy = body.cloneNode(true);
  copy.querySelectorAll('.katex').forEach(e => e.replaceWith(' x '));
  copy.querySelectorAll('.js-plotly-plot, button, [data-testid="stSelectbox"], style, script')
    .forEach(e => e.replaceWith(' '));
  const text = copy.textContent;
  const latin = (text.match(/[A-Za-z0-9][A-Za-z0-9.,%'\u2019-]*/g) || []).length;
  const cjk = (text.match(/[\u3400-\u9fff]/g) || []).length;
  return latin + Math.round(cjk / 2);
}"""


# The charts of the step's figures (both columns), read with the screenshot tool's LABELS
# (every text as the four corners of its box on the screen, slanted labels as slanted boxes).
CHARTS = ".st-key-lesson_main .js-plotly-plot, .st-key-lesson_body .js-plotly-plot"


def collisions(page) -> list[str]:
    """'chart: label on label' for each two labels of one of the step's charts drawn over
    one another (the screenshot tool's label_collisions)."""
    return [f"{chart['name']}: {hit}" for chart in page.evaluate(LABELS, CHARTS)
            for hit in label_collisions(chart)]


def settle(page) -> None:
    page.wait_for_timeout(600)
    wait_for_app(page, plots=False, timeout_ms=LONG)


def outside(rect: dict | None) -> bool:
    return rect is None or rect["top"] < 0 or rect["bottom"] > HEIGHT + 1 \
        or rect["left"] < 0 or rect["right"] > WIDTH + 1


def walk(page, app_url: str, lang: str, sentence: str | None = None) -> dict[int, dict]:
    """Every step in presentation mode, its answer shown, for `sentence` (the lesson's
    sentence box, in the URL; None: the page's default): {step: measurements}."""
    query = ("&lang=zh" if lang == "zh" else "") + (
        f"&lesson_sentence={quote(sentence)}" if sentence else "")
    page.goto(f"{app_url}/lesson?lesson_present=true&lesson_step=1{query}")
    settle(page)
    name = lang + ("_zh_sentence" if sentence else "")
    seen = {}
    for step in range(1, N_STEPS + 1):
        top = page.locator(".st-key-lesson_top h2").inner_text()
        assert top.startswith(f"{step}/{N_STEPS}"), (lang, step, top)
        if step == 1 and sentence:  # the tag table names the sentence's words
            table = page.locator(".st-key-lesson_main .js-plotly-plot").first.text_content()
            assert sentence[1] in table, table
        if STEPS[step - 1].predict:
            page.keyboard.press("PageDown")  # reveals the answer, same step
            settle(page)
        assert not page_errors(page), (lang, step)
        page.locator(".st-key-lesson_main .js-plotly-plot .main-svg").first.wait_for(
            timeout=LONG)
        page.wait_for_timeout(300)
        seen[step] = {**page.evaluate(MEASURE), "collisions": collisions(page),
                      "smallest": page.evaluate(SMALLEST), "words": page.evaluate(WORDS)}
        screenshot(page, f"lesson_present_{name}_step{step}")
        if step < N_STEPS:
            page.keyboard.press("PageDown")
            settle(page)
    return seen


def test_every_step_fits_a_1280x720_projector_in_both_languages(page, app_url):
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.goto(f"{app_url}/")  # a fresh server: the router first
    wait_for_app(page)
    measured = {lang + (f" {sentence}" if sentence else ""): walk(page, app_url, lang, sentence)
                for lang, sentence in WALKS}
    (SHOTS.parent / "lesson_present.json").write_text(json.dumps(measured, indent=1,
                                                                  ensure_ascii=False))
    misfits = []
    for lang, steps in measured.items():
        for step, m in steps.items():
            parts = {"Next": m["next"], **{f"figure {k + 1}": f
                                           for k, f in enumerate(m["figures"])}}
            if STEPS[step - 1].predict:
                parts["question"] = m["question"]
            bad = [name for name, rect in parts.items() if outside(rect)]
            bad += [f"text column: {b['text']!r} past the bottom" for b in m["body"]
                    if b["bottom"] > HEIGHT + 1]
            bad += [f"labels collide: {c}" for c in m["collisions"]]
            if m["smallest"] and m["smallest"]["size"] < SMALLEST_PX:
                bad.append(f"text of {m['smallest']['size']:.1f} px: {m['smallest']['text']!r}")
            most = DENSE_WORDS_MAX if step in DENSE_STEPS else WORDS_MAX
            if m["words"] is None or m["words"] > most:
                bad.append(f"{m['words']} words in the text column (at most {most})")
            if not m["figures"]:
                bad.append("no figure")
            if m["scrolled"]:
                bad.append(f"scrolled {m['scrolled']}")
            loose = [b for b in m["below"] if b != "fold"]
            if loose or m["below"].count("fold") > 1:
                bad.append(f"unfolded under the columns: {loose}")
            fold = m["fold"]
            if fold and (fold["open"] or str(step) not in fold["label"] or not fold["blocks"]):
                bad.append(f"fold {fold}")
            if bad:
                misfits.append(f"{lang} step {step} ({STEPS[step - 1].key}, page "
                               f"{m['scroll']:.0f} px): {', '.join(bad)}")
    assert not misfits, "\n".join(misfits)
    # the steps with the taggers' numbers (their download at least) have a fold
    folded = [step for step, m in measured["en"].items() if m["fold"]]
    assert {2, 5, N_STEPS} <= set(folded), folded
