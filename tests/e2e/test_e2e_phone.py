"""A phone (390 x 844, touch) in a real browser: no page scrolls sideways, a chart takes its
frame's width (an equation of matrices, Inside one score's steps, flows down the frame),
a figure of panels side by side is laid out again a few panels to a row (ui.phone_layout:
nothing scrolls, titles apart, each colour bar under its panels, row names on no other
map), the sidebar starts
collapsed, the chart toolbar keeps only its camera (Streamlit's charts and those drawn in place
alike), and a figure's numbers open from the keyboard as a table."""

import pytest

from .conftest import PHONE, page_errors, profile_page, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

PAGES = ["/", "/step_by_step", "/positions", "/explore", "/head_stats", "/inside_score"]

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

# Each chart's least px between two of its annotations side by side (a heads grid's titles).
TITLE_GAPS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(c => {
  const boxes = [...c.querySelectorAll('.infolayer .annotation-text')].map(
    e => e.getBoundingClientRect());
  let gap = Infinity;
  boxes.forEach(a => boxes.forEach(b => {
    if (a.left < b.left && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 2) {
      gap = Math.min(gap, b.left - a.right);
    }
  }));
  return gap === Infinity ? 1e9 : gap;
})"""


@pytest.fixture
def phone(phone_profile):
    """A tab of the session's phone profile (conftest.phone_profile): 390 x 844, touch."""
    with profile_page(phone_profile) as pg:
        yield pg


@pytest.mark.parametrize("path", PAGES)
def test_a_phone_never_scrolls_sideways(phone, app_url, path):
    """Each page at 390 x 844: nothing scrolls sideways, the sidebar starts collapsed, every
    chart is drawn in place and fits its frame. The same visit goes on: on "/" (the default
    sentence, "I saw a saw") a figure's numbers open from the keyboard; on head statistics
    its panels are laid out again for the phone, then the phone turns."""
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
        # its titles (each its head's name, or its number under a heading: ui.phone_layout's
        # phoneHeads) lie 8 px apart or more, and no label of it on another (label_collisions)
        from scripts.screenshots import LABELS, label_collisions

        gaps = phone.evaluate(TITLE_GAPS)
        assert gaps and gaps[0] >= 8, gaps
        first = phone.evaluate(LABELS, ".js-plotly-plot")[0]
        assert label_collisions(first) == []
    if path == "/inside_score":  # q, k and the weights, then the values: down the frame
        assert len(charts) == 2 and not any(c["wide"] for c in charts)
    for c in charts:
        assert c["frame"] <= PHONE["width"]  # the frame fits the phone, and the chart fits
        if c["wide"]:  # the frame, but an equation of matrices keeps 760 px and scrolls in it
            assert c["chart"] >= 760 and c["svg"] >= 759
        else:
            assert c["chart"] <= c["frame"] + 1 and c["svg"] <= c["frame"] + 1
        assert c["groups"] <= 1  # the camera only, if the toolbar shows at all
    screenshot(phone, "phone" + path.replace("/", "_"))
    if path == "/":
        a_figures_numbers_open_from_the_keyboard(phone)
    if path in PANEL_PAGES:
        panels_side_by_side_are_laid_out_again(phone, path)
    if path == "/head_stats":
        a_phone_turned_lays_the_panels_out_again(phone)


def a_figures_numbers_open_from_the_keyboard(phone) -> None:
    """The first figure's numbers ("Numbers in this figure") open from the keyboard as a
    table naming both saws apart, and it scrolls in its frame."""
    summary = phone.locator("summary").filter(has_text="Numbers in this figure").first
    summary.focus()
    phone.keyboard.press("Enter")
    table = phone.locator("[data-testid=stTable] table").first
    table.wait_for()
    text = table.inner_text()
    assert "saw #2" in text and "saw #4" in text
    assert phone.evaluate(SIDEWAYS) <= 1  # an open table scrolls in its frame too


# Each chart of several panels: its frame's overflow, its panels' plot areas, their titles
# (paper annotations) and its colour bars, as page rectangles.
PANELS = """() => [...document.querySelectorAll('.attnviz-live-chart')].map(c => {
  const box = e => { const r = e.getBoundingClientRect();
                     return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };
  const frame = c.closest('.stElementContainer');
  return {sideways: frame.scrollWidth - frame.clientWidth, frame: box(frame),
          wide: c.classList.contains('attnviz-wide'),
          panels: [...c.querySelectorAll('.draglayer .nsewdrag')].map(box),
          titles: [...c.querySelectorAll('.infolayer .annotation')].map(e => ({
              text: e.textContent, ...box(e.querySelector('.annotation-text') || e)})),
          bars: [...c.querySelectorAll('.infolayer .colorbar .cbfills')].map(box)};
}).filter(c => c.panels.length > 1)"""


def _apart(a: dict, b: dict) -> bool:
    return a["r"] <= b["l"] + 1 or b["r"] <= a["l"] + 1 or a["b"] <= b["t"] + 1 \
        or b["b"] <= a["t"] + 1


PANEL_PAGES = ["/head_stats", "/value_norms", "/windows", "/compare"]


@pytest.mark.parametrize("path", [p for p in PANEL_PAGES if p not in PAGES])
def test_on_a_phone_panels_side_by_side_are_laid_out_again(phone, app_url, path):
    """Value norms, the window masks, compare (head statistics: in its visit above)."""
    phone.goto(f"{app_url}{path}")
    wait_for_app(phone)
    phone.wait_for_timeout(1500)
    panels_side_by_side_are_laid_out_again(phone, path)


def panels_side_by_side_are_laid_out_again(phone, path: str) -> None:
    """No chart of several panels scrolls sideways in its frame; titles never on one
    another; each colour bar lies horizontal below plots and on none of them."""
    charts = phone.evaluate(PANELS)
    assert charts, "no chart of several panels"
    for c in charts:
        assert not c["wide"] and c["sideways"] <= 1
        for p in c["panels"]:  # every plot inside its frame's width
            assert c["frame"]["l"] - 1 <= p["l"] and p["r"] <= c["frame"]["r"] + 1
        titles = [t for t in c["titles"] if t["text"].strip()]
        for i, a in enumerate(titles):
            assert c["frame"]["l"] - 1 <= a["l"] and a["r"] <= c["frame"]["r"] + 1, a["text"]
            for b in titles[i + 1:]:
                assert _apart(a, b), (a["text"], b["text"])
        for bar in c["bars"]:
            assert bar["r"] - bar["l"] > bar["b"] - bar["t"]  # horizontal
            assert all(_apart(bar, p) for p in c["panels"])
            above = [p for p in c["panels"] if p["b"] <= bar["t"]
                     and p["l"] < bar["r"] and bar["l"] < p["r"]]
            assert above, "a colour bar with no plot above it"
            assert bar["l"] >= min(p["l"] for p in above) - 1
            assert bar["r"] <= max(p["r"] for p in above) + 1
    screenshot(phone, "phone_panels" + path.replace("/", "_"))


# Every chart drawn in place laid out for its frame's width now (the width it writes on its
# element once drawn for it: ui.live_chart), the frames' widths unchanged for 300 ms (the
# sidebar slides open and shut: its frames pass through widths on the way).
SETTLED = """() => {
  const charts = [...document.querySelectorAll('.attnviz-live-chart')];
  const widths = charts.map(c => c.parentElement.getBoundingClientRect().width);
  const now = performance.now(), seen = window.attnvizTestWidths;
  if (!seen || seen.widths !== widths.join()) {
    window.attnvizTestWidths = {widths: widths.join(), since: now};
    return false;
  }
  return charts.length > 0 && now - seen.since >= 300 &&
         charts.every((c, i) => c.dataset.laidOutWidth === String(widths[i]));
}"""


def settle(page) -> None:
    """Wait (up to 30 s) until SETTLED holds, counting the 300 ms from now."""
    page.evaluate("() => { delete window.attnvizTestWidths; }")
    page.wait_for_function(SETTLED, timeout=30_000, polling=250)


def a_phone_turned_lays_the_panels_out_again(phone) -> None:
    """Head statistics on a phone held upright, then turned (844 x 390: the sidebar shows and
    the frame gets 512 px), upright again, on a wide screen, and upright again: once every
    chart says it is laid out for its frame's width (SETTLED), the plots lie inside the frame
    and on none of one another, and upright the rows are as far apart as when first drawn."""
    settle(phone)

    def laid_out() -> list[int]:  # the gaps between the rows of the first chart's plots
        c = phone.evaluate(PANELS)[0]
        for i, p in enumerate(c["panels"]):
            assert c["frame"]["l"] - 1 <= p["l"] and p["r"] <= c["frame"]["r"] + 1, (p, c)
            assert all(_apart(p, q) for q in c["panels"][i + 1:]), c["panels"]
        tops = sorted({round(p["t"]) for p in c["panels"]})
        return [b - a for a, b in zip(tops, tops[1:], strict=False)]

    upright = laid_out()
    for size in ({"width": 844, "height": 390}, PHONE, {"width": 1100, "height": 800}, PHONE):
        phone.set_viewport_size(size)
        settle(phone)
        gaps = laid_out()
        if size == PHONE:
            assert len(gaps) == len(upright), (upright, gaps)
            assert all(abs(a - b) <= 2 for a, b in zip(gaps, upright, strict=True)), gaps
    assert page_errors(phone) == []


# Each chart's maps (its panels' plot areas) a CSS selector names, as the four corners of their
# boxes on the screen: label_collisions reads them beside the chart's labels.
MAPS = """(selector) => [...document.querySelectorAll(selector)].map(c =>
  [...c.querySelectorAll('.draglayer .nsewdrag')].map(d => { const r = d.getBoundingClientRect();
    return [[r.left, r.top], [r.right, r.top], [r.right, r.bottom], [r.left, r.bottom]]; }))"""


def test_on_a_phone_no_row_name_lies_on_another_map(phone, app_url):
    """Switch it off at ~100 tokens on a phone: the later layers' maps, each naming its own
    rows, are laid out again (ui.phone_layout) as far apart as those names need, so no label
    of the chart lies on one of its maps or on another label (their boxes on the screen as
    LABELS reads them, each map's box beside them, label_collisions), and every map lies in
    the phone's width. Two maps to a row 28 px apart put the second map's row names on the
    first. The same for the scatter panels of "Does the head matter where it looks?", whose
    numbers Plotly chooses (measured once drawn and laid out again)."""
    from urllib.parse import urlencode

    from scripts.screenshots import LABELS, label_collisions
    from tests.test_plotting_ablation import PARAGRAPH

    from .test_e2e_explore import open_page

    open_page(phone, app_url, "/ablation?" + urlencode({"text": PARAGRAPH}))
    later = phone.locator(".js-plotly-plot").filter(has_text="layer 2").filter(
        has_text="layer 5")
    assert later.count() == 1
    later.scroll_into_view_if_needed()
    phone.wait_for_timeout(500)
    later.evaluate("(el) => { el.classList.add('attnviz-measured'); }")
    (found,) = phone.evaluate(LABELS, ".attnviz-measured")
    (maps,) = phone.evaluate(MAPS, ".attnviz-measured")
    assert len(maps) == 5
    rows = later.evaluate("(el) => [...el.querySelectorAll('.yaxislayer-above')].map("
                          "g => g.querySelectorAll('text').length)")
    assert len(rows) == 5 and min(rows) >= 4, rows  # every map names its rows
    boxes = [{"text": f"<map {i + 1}>", "corners": m} for i, m in enumerate(maps)]
    hits = label_collisions({"labels": found["labels"] + boxes})
    assert hits == [], (len(hits), hits[:6])
    assert all(0 <= m[0][0] and m[1][0] <= PHONE["width"] for m in maps), maps
    screenshot(phone, "phone_ablation_100_tokens")
    # "Does the head matter where it looks?": scatter panels whose y numbers Plotly chooses
    # (measured once drawn, ui.phone_layout's phoneAgain): none on a panel or on another label
    # (two a row 36 px apart put a panel's '0.02', '0.04', '0.06' on the panel to its left)
    scatter = phone.locator(".js-plotly-plot").filter(has_text="matter where")
    assert scatter.count() == 1
    scatter.scroll_into_view_if_needed()
    phone.wait_for_timeout(500)
    scatter.evaluate("(el) => { document.querySelectorAll('.attnviz-measured').forEach("
                     "e => e.classList.remove('attnviz-measured'));"
                     " el.classList.add('attnviz-measured'); }")
    (found,) = phone.evaluate(LABELS, ".attnviz-measured")
    (maps,) = phone.evaluate(MAPS, ".attnviz-measured")
    assert len(maps) >= 7
    numbers = scatter.evaluate("(el) => [...el.querySelectorAll('.yaxislayer-above')].map("
                               "g => g.querySelectorAll('text').length)")
    assert len(numbers) >= 7 and min(numbers) >= 2, numbers  # every panel shows its numbers
    boxes = [{"text": f"<map {i + 1}>", "corners": m} for i, m in enumerate(maps)]
    hits = label_collisions({"labels": found["labels"] + boxes})
    assert hits == [], (len(hits), hits[:6])
    assert all(0 <= m[0][0] and m[1][0] <= PHONE["width"] for m in maps), maps
    assert not page_errors(phone)
    screenshot(phone, "phone_ablation_scatter_100_tokens")
