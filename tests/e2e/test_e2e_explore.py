"""The all-heads page in a real browser: mosaic drawn, a click opens that head, a pair filter."""

import re

import pytest
from plotly.offline import get_plotlyjs_version

from tests.serve import choose

from .conftest import drawn_charts, page_errors, screenshot, set_sentence, wait_for_app

pytestmark = pytest.mark.e2e


def open_page(page, app_url: str, path: str) -> None:
    """Open a page's link directly, as a shared link is opened (on a fresh server its first
    run hands over to the router: test_e2e_deep_link)."""
    page.goto(f"{app_url}{path}")
    wait_for_app(page)


def wait_for_live(page) -> None:
    """The open head and its lines are drawn (like every chart of the page, they are drawn in
    place: ui.live_chart)."""
    page.wait_for_function(LIVE_DRAWN, timeout=60_000, polling=250)


def test_explore_draws_and_click_opens_a_head(page, app_url):
    open_page(page, app_url, "/explore")
    wait_for_live(page)
    assert drawn_charts(page, ".js-plotly-plot", 3) >= 3  # mosaic, one head, token lines
    assert not page_errors(page)
    screenshot(page, "explore_default")

    # "I saw a saw": 6 tokens, tiles of 6 cells + 1 gap; 13 tile columns, 7 tile rows.
    mosaic = page.locator(".js-plotly-plot").first
    box = mosaic.locator(".nsewdrag").first.bounding_box()
    step, cols, rows = 7, 13 * 7 - 1, 7 * 7 - 1
    x = box["x"] + box["width"] * (5 * step + 3.5) / cols  # head 5
    y = box["y"] + box["height"] * (2 * step + 3.5) / rows  # layer 2
    page.mouse.click(x, y)
    page.wait_for_timeout(1500)
    wait_for_app(page)
    assert re.search(r"ex_layer=2", page.url) and re.search(r"ex_head=5", page.url), page.url
    assert page.get_by_text("Layer 2, head 5").count() >= 1
    assert not page_errors(page)
    screenshot(page, "explore_clicked")


def test_a_longer_sentence_shows_its_own_token_choice(page, app_url):
    """From "I saw a saw" (all tokens offered and chosen) to 82 tokens (one token at a time):
    the select box shows the token whose lines are drawn, never "all tokens" left over."""
    open_page(page, app_url, "/explore")
    box = page.locator("[data-testid='stSelectbox']").filter(
        has=page.get_by_text("Token lines for one query token", exact=True)).first
    assert box.locator("input").first.input_value() == "all tokens"
    set_sentence(page, "I saw a saw " * 20)
    wait_for_app(page)
    wait_for_live(page)
    assert box.locator("input").first.input_value() == "saw #2"
    assert not page_errors(page)


def test_explore_sentence_pair_filter(page, app_url):
    open_page(page, app_url, "/explore?text=I+saw+a+saw&pair=It+cut+the+wood"
                             "&ex_seg=across&ex_hide=true")
    assert not page_errors(page)
    assert page.get_by_text("not renormalised", exact=False).count() >= 1
    assert page.get_by_text("Share of this head's weight", exact=False).count() >= 1
    screenshot(page, "explore_pair_across")


# The open head and its token lines (the mosaic above them is drawn in place too).
LIVE = ":is(.st-key-live_ex_one, .st-key-live_ex_lines) [data-testid=attnvizLiveChart]"
EVERY_LIVE = "[data-testid=attnvizLiveChart]"
LIVE_DRAWN = (f"() => [...document.querySelectorAll('{LIVE}')].length === 2 && "
              f"[...document.querySelectorAll('{LIVE}')].every(c => c.dataset.drawn)")
# Where the cell in row `query`, column `key` of a heatmap is on the screen, from what plotly.js
# shows in public: the plot area as drawn (its .nsewdrag), the axis ranges Plotly settled on
# (written back into gd.layout) and the cell's coordinates in gd.data. On a category axis a
# coordinate's place is its index among the axis's categories, in the order they first appear
# in the data (or the axis's categoryarray); any other category order is refused.
CELL_AT = """(gd, query, key) => {
  const box = gd.querySelector('.draglayer .nsewdrag').getBoundingClientRect();
  const place = (axis, v) => {
    const ax = gd.layout[axis + 'axis'];
    if (ax.type !== 'category') return v;
    const by = ax.categoryorder || 'trace';
    if (by !== 'trace' && by !== 'array') throw new Error('categoryorder ' + by);
    const order = by === 'array' ? [...ax.categoryarray]
        : [...new Set(gd.data.flatMap(t => [...(t[axis] || [])]))];
    const i = order.indexOf(v);
    if (i < 0) throw new Error(v + ' is not a category of the ' + axis + ' axis');
    return i;
  };
  const tr = gd.data[0], [x0, x1] = gd.layout.xaxis.range, [y0, y1] = gd.layout.yaxis.range;
  return [box.left + box.width * (place('x', tr.x[key]) - x0) / (x1 - x0),
          box.top + box.height * (y1 - place('y', tr.y[query])) / (y1 - y0)];
}"""
LIVE_CELL = ("([query, key]) => (" + CELL_AT + ")(document.querySelector("
             "'.st-key-live_ex_one [data-testid=attnvizLiveChart]'), query, key)")


def open_head(page, head: int, title: str) -> None:
    """Choose `head`; wait until the open head's chart is titled `title` and the app idle."""
    choose(page, "Head", str(head))
    page.wait_for_function(
        f"t => (document.querySelector('{LIVE} .gtitle') || {{}}).textContent === t",
        arg=title, timeout=60_000, polling=250)
    wait_for_app(page)


def test_the_open_head_is_redrawn_in_place(page, app_url, model):
    """The enlarged head and its lines are charts drawn in place (ui.live_chart): a head change
    redraws the same plots (Plotly.react) instead of mounting new charts, a token change only
    the lines; the head keeps the app's hover with the engine's exact value, its toolbar's
    PNG and full-screen buttons, and no request leaves the server."""
    outside = []
    page.on("request", lambda r: outside.append(r.url)
            if not r.url.startswith(app_url) and not r.url.startswith(("data:", "blob:"))
            else None)
    open_page(page, app_url, "/explore?text=I+saw+a+saw&ex_layer=2&ex_head=5")
    wait_for_live(page)
    one = page.locator(LIVE).first  # then the token lines, also drawn in place
    assert one.locator(".gtitle").text_content() == "Layer 2, head 5"
    # Drawn by the plotly package's own plotly.js, which the page got once from the server.
    assert page.evaluate("() => window.attnvizPlotly.ready.then(P => P.version)") == \
        get_plotlyjs_version()
    # ... run as a script of the page, which leaves no name of its own on the window
    assert page.evaluate("() => 'moduleName' in window") is False
    buttons = [b.get_attribute("data-title") for b in one.locator(".modebar-btn").all()]
    assert buttons[0] == "Download plot as a PNG" and buttons[-1] == "Fullscreen"  # as others
    page.evaluate(f"() => document.querySelectorAll('{LIVE}').forEach((c, i) => {{"
                  " c.dataset.kept = String(i); c.querySelector('.main-svg').dataset.kept ="
                  " String(i); })")

    open_head(page, 7, "Layer 2, head 7")
    assert page.locator(LIVE).count() == 2
    # the same plots, redrawn: the head and its lines
    assert [c.get_attribute("data-kept") for c in page.locator(LIVE).all()] == ["0", "1"]
    # ... updated by Plotly, not drawn anew (a config that differs from the last one, like a
    # new PNG file name or a new button, makes Plotly.react draw the whole chart again)
    assert [c.locator(".main-svg").first.get_attribute("data-kept")
            for c in page.locator(LIVE).all()] == ["0", "1"]
    one.hover()
    with page.expect_download() as png:  # the PNG's name follows the head now open
        one.locator(".modebar-btn[data-title='Download plot as a PNG']").click()
    assert png.value.suggested_filename == "attnviz_layer_2_head_7.png"
    assert "head 7" in page.locator(LIVE).nth(1).locator(".legendtext").first.text_content()
    assert "ex_head=7" in page.url

    # Another query token for the lines: the lines are redrawn, the head (the same figure,
    # sent again by the rerun) is left as it is, not drawn a second time.
    drawn = [c.get_attribute("data-drawn") for c in page.locator(LIVE).all()]
    choose(page, "Token lines for one query token", "saw #4")
    page.wait_for_function(f"d => document.querySelectorAll('{LIVE}')[1].dataset.drawn !== d",
                           arg=drawn[1], timeout=60_000, polling=250)
    wait_for_app(page)
    assert page.locator(LIVE).first.get_attribute("data-drawn") == drawn[0]

    x, y = page.evaluate(LIVE_CELL, [4, 2])
    page.mouse.move(x, y)
    one.locator(".hoverlayer .hovertext").wait_for(timeout=10_000)
    lines = one.locator(".hoverlayer .hovertext text.nums tspan.line").all_text_contents()
    w = float(model.trace("I saw a saw").weights[2, 7, 4, 2])
    assert [s.strip() for s in lines] == [
        "query saw #4", "key saw #2", f"weight = {w:.6f}"]
    assert not page_errors(page) and not outside, outside
    screenshot(page, "explore_live_head")

    one.hover()
    one.locator(".modebar-btn[data-title='Fullscreen']").click()
    page.wait_for_function("() => document.fullscreenElement && "
                           "document.fullscreenElement.dataset.testid === 'attnvizLiveChart'",
                           polling=250)
    page.evaluate("() => document.exitFullscreen()")

    # A reloaded page has no plotly.js of its own: it gets it again and draws.
    page.reload()
    wait_for_app(page)
    wait_for_live(page)
    assert page.locator(LIVE).first.locator(".gtitle").text_content() == "Layer 2, head 7"
    assert not page_errors(page) and not outside, outside


# How each chart of the page is drawn (the computed styles of what plotly.js drew): the paper's
# background; the plot area's (its own rectangle where plotly.js draws one, else the paper's,
# which plotly.js leaves showing where the two are one opaque colour); the layout's font, family
# and colour (of a label the test adds, which has no font of its own); the title's colour; the
# x axis's tick labels' colour (null where the axis shows none). The hover label's colours come
# from HOVER_AT and HOVER.
THEMED = """async () => {
  const P = await window.attnvizPlotly.ready;  // the plotly.js that drew the charts
  const paint = el => {
    if (!el) return null;
    const s = getComputedStyle(el), a = Number(s.fillOpacity);
    return a === 1 ? s.fill : s.fill.replace(/^rgb\\((.*)\\)$/, `rgba($1, ${a})`);
  };
  return Promise.all([...document.querySelectorAll('.js-plotly-plot')].map(async gd => {
    const paper = getComputedStyle(gd.querySelector('.main-svg')).backgroundColor;
    const plot = gd.querySelector('.bglayer rect.bg');
    const n = (gd.layout.annotations || []).length;
    await P.relayout(gd, {[`annotations[${n}]`]: {text: 'font', showarrow: false, x: 0.5,
                                                   y: 0.5, xref: 'paper', yref: 'paper'}});
    const label = gd.querySelector(`.annotation[data-index="${n}"] .annotation-text`);
    const font = [getComputedStyle(label).fontFamily, paint(label)];  // read while drawn
    await P.relayout(gd, {[`annotations[${n}]`]: null});
    return [paper, plot ? paint(plot) : paper, ...font,
            paint(gd.querySelector('.gtitle')), paint(gd.querySelector('.xtick text'))];
  }));
}"""
# A point of the `i`th chart to hover: a heatmap's first cell, else the first marker drawn.
HOVER_AT = ("i => { const gd = document.querySelectorAll('.js-plotly-plot')[i];"
            " if (gd.data[0].type === 'heatmap') return (" + CELL_AT + ")(gd, 0, 0);"
            " const b = gd.querySelector('.scatterlayer .point').getBoundingClientRect();"
            " return [b.left + b.width / 2, b.top + b.height / 2]; }")
# The hover label of the `i`th chart as drawn: its background and its text's colour.
HOVER = """i => {
  const gd = document.querySelectorAll('.js-plotly-plot')[i];
  const label = gd.querySelector('.hoverlayer .hovertext');
  if (!label) return null;
  return ['path', 'text'].map(k => getComputedStyle(label.querySelector(k)).fill);
}"""
# The page's own background and text colours, as rgb(...), and a colour as the page reads it.
PAGE_COLOURS = """() => {
  const app = getComputedStyle(document.querySelector('[data-testid=stApp]'));
  return [app.backgroundColor, app.color];
}"""
AS_RGB = """c => { const s = document.createElement('span'); s.style.color = c;
  document.body.appendChild(s); const v = getComputedStyle(s).color; s.remove(); return v; }"""


def test_a_chart_drawn_in_place_looks_like_the_others_dark_and_in_chinese(tab, app_url):
    """Dark theme (the browser's preference) and Chinese: the charts drawn in place take the
    page's own background and text colours, all alike, and the open head shows its Chinese
    title after a head change."""
    page = tab(color_scheme="dark")
    open_page(page, app_url, "/explore?lang=zh&text=I+saw+a+saw&ex_layer=1&ex_head=2")
    wait_for_live(page)
    choose(page, "头", "4")
    page.wait_for_function(f"() => (document.querySelector('{LIVE} .gtitle') || {{}})"
                           ".textContent === '第 1 层，第 4 个头'", timeout=60_000, polling=250)
    wait_for_app(page)
    hovers = []
    for i, chart in enumerate(page.locator(".js-plotly-plot").all()):
        chart.scroll_into_view_if_needed()
        page.mouse.move(*page.evaluate(HOVER_AT, i))
        page.wait_for_function(f"() => ({HOVER})({i})", timeout=10_000, polling=100)
        hovers.append(page.evaluate(HOVER, i))
        page.mouse.move(0, 0)
    mosaic, one, lines = [d[:5] + h + d[5:] for d, h in zip(page.evaluate(THEMED), hovers,
                                                            strict=True)]
    assert all(mosaic) and all(one) and all(lines[:-1]), (mosaic, one, lines)  # all drawn
    assert one == mosaic and lines[:-1] == mosaic[:-1], (mosaic, one, lines)
    background, text = page.evaluate(PAGE_COLOURS)
    assert page.evaluate(AS_RGB, mosaic[0]) == background != "rgb(255, 255, 255)"  # dark
    light = [int(v) for v in page.evaluate(AS_RGB, mosaic[3])[4:-1].split(",")[:3]]
    assert min(light) > 180 and text != background  # light text on the dark page
    assert not page_errors(page)
    screenshot(page, "explore_live_head_dark_zh")


def test_past_the_outline_limit_layer_and_head_rerun_only_their_part(page, app_url):
    """Past 24 shown tokens the mosaic does not outline the open head, so layer and head are
    chosen inside the lower fragment: a head change redraws the head in place, leaves the
    mosaic's plot as it was, and still puts the head in the link."""
    text = "the cat sat on the mat and the dog sat on the log " * 3  # 41 tokens in all
    open_page(page, app_url, "/explore?text=" + text.strip().replace(" ", "+"))
    wait_for_live(page)
    assert page.get_by_text("tokens shown: past 24", exact=False).count() == 1
    mosaic = page.locator(".st-key-live_ex_overview .js-plotly-plot").first
    mosaic.evaluate("g => { g.dataset.kept = 'yes'; }")
    image = mosaic.locator(".heatmaplayer image").first.get_attribute("href")
    open_head(page, 9, "Layer 0, head 9")
    assert "ex_head=9" in page.url
    assert mosaic.get_attribute("data-kept") == "yes"
    assert mosaic.locator(".heatmaplayer image").first.get_attribute("href") == image
    assert not page_errors(page)
    screenshot(page, "explore_fragment_head")


def test_a_chart_that_cannot_be_drawn_says_so(tab, app_url):
    """Where plotly.js cannot load (here: the page's copy is marked failed before the app
    runs, as a script that does not evaluate leaves it), a chart drawn in place says so as
    text on the page instead of staying blank; the page's other parts still work."""
    page = tab()
    page.add_init_script("""(() => {
      const r = {state: "failed", ready: Promise.reject(new Error("refused by the test"))};
      r.ready.catch(() => {});
      window.attnvizPlotly = r;
    })();""")
    page.goto(f"{app_url}/explore?text=I+saw+a+saw")
    wait_for_app(page, plots=False)
    page.wait_for_function(
        f"() => [...document.querySelectorAll('{EVERY_LIVE}')].length === 3 && "
        f"[...document.querySelectorAll('{EVERY_LIVE}')].every(c => c.textContent.includes("
        "'could not be drawn'))", timeout=60_000, polling=250)
    assert "Numbers in this figure" in page.locator(LIVE).first.text_content()
    assert page.get_by_text("Numbers in this figure").count() >= 2
    page.locator(LIVE).first.scroll_into_view_if_needed()
    screenshot(page, "explore_chart_failed")


def test_a_chart_drawn_in_place_downloads_png_and_svg_from_its_toolbar(tab, app_url):
    """The open head's toolbar: the camera gives a PNG and the SVG button an SVG (both drawn
    by the browser, from the chart as shown), named after the figure's title; the SVG holds
    the head's title and both saws' labels (rows and columns)."""
    page = tab()
    open_page(page, app_url, "/explore?text=I+saw+a+saw&ex_layer=1&ex_head=2")
    wait_for_live(page)
    chart = page.locator(".st-key-live_ex_one [data-testid=attnvizLiveChart]")
    got = {}
    for title, kind in (("^='Download plot'", "png"), ("='Download as SVG (vector)'", "svg")):
        chart.hover()
        button = chart.locator(f".modebar-btn[data-title{title}]")
        with page.expect_download(timeout=60_000) as download:
            button.click()
        path = download.value.path()
        assert download.value.suggested_filename == f"attnviz_layer_1_head_2.{kind}"
        got[kind] = open(path, "rb").read()
    assert got["png"][:8] == b"\x89PNG\r\n\x1a\n"
    svg = got["svg"].decode()
    assert svg.startswith("<svg") and "Layer 1, head 2" in svg
    assert "saw #2" in svg and "saw #4" in svg
    assert not page_errors(page)


def test_plotly_js_is_a_file_the_browser_keeps_never_on_the_websocket(browser, app_url):
    """plotly.js comes as a file the app serves (/app/static/plotly-<hash>.min.js, JavaScript),
    run as a script of the page and fetched once: a reload takes it from the browser's cache
    (at most a revalidation's headers travel: Streamlit's static files carry no cache lifetime),
    and no websocket message the page receives comes near its 4.8 MB (ui.live_chart)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = ctx.new_page()
    got, frames = [], []
    page.on("response", lambda r: got.append((r.url, r.status, r.headers.get("content-type")))
            if "/app/static/plotly-" in r.url else None)
    page.on("websocket", lambda ws: ws.on(
        "framereceived", lambda data: frames.append(len(data))))
    open_page(page, app_url, "/explore?text=I+saw+a+saw&ex_layer=1&ex_head=2")
    wait_for_live(page)
    assert got and got[0][1] == 200 and "javascript" in (got[0][2] or ""), got
    url = got[0][0]
    assert re.search(r"/app/static/plotly-[0-9a-f]{12}\.min\.js$", url), url
    page.reload()
    wait_for_app(page)
    wait_for_live(page)
    sizes = page.evaluate("u => performance.getEntriesByName(u).map(e => e.transferSize)", url)
    assert len(sizes) == 1 and sizes[0] < 10_000, sizes  # from the browser's cache
    assert frames and max(frames) < 1_000_000, max(frames)
    assert not page_errors(page)
    ctx.close()
