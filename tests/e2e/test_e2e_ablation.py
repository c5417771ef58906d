"""Switch it off and see in a real browser: the lesson's view, the map beside the head
statistics, one head's later-layer difference maps, and the URL keeping the chosen measure and
ablation."""

import pytest

from .conftest import drawn_charts, page_errors, screenshot, wait_for_app
from .test_e2e_explore import open_page

pytestmark = pytest.mark.e2e


def test_ablation_page_draws_and_keeps_its_choices_in_the_url(page, app_url):
    open_page(page, app_url, "/ablation?text=I+saw+a+saw")
    assert drawn_charts(page, ".js-plotly-plot", 7) >= 7  # cosines, ranking, top weights, ...
    assert page.get_by_text("Positions off, then heads off").count() == 1
    assert page.locator(".js-plotly-plot").filter(
        has_text="Later layers' weights, with the head removed minus without").count() == 1
    assert page.locator(".js-plotly-plot").filter(has_text="ρ = ").count() == 1
    page.get_by_text("mean (its average over reference sentences)").first.click()
    page.wait_for_timeout(1000)
    wait_for_app(page)
    assert "abl_mode=mean" in page.url, page.url  # the link keeps the choice
    assert drawn_charts(page, ".js-plotly-plot", 7) >= 7
    assert not page_errors(page)
    screenshot(page, "ablation")


def test_the_shown_head_link_opens_in_chinese(tab, app_url):
    """?abl_shown=h4 (the link the page writes, the same in every language) opens head 4 in a
    Chinese session, and the link keeps it."""
    page = tab({"width": 1280, "height": 720})
    open_page(page, app_url, "/ablation?lang=zh&text=I+saw+a+saw&abl_shown=h4")
    box = page.locator("[data-testid=stSelectbox] input[aria-label='后面各层显示的权重']")
    assert box.input_value() == "第 4 个头"
    assert "abl_shown=h4" in page.url, page.url
    assert not page_errors(page)


# Each label of a chart (every axis' tick labels: Plotly classes them by axis, ytick, y2tick,
# ...; panel titles; colour bars) lying on one of the chart's plot areas (its maps' drag
# rectangles) by more than 2 px: "'text' on map k".
ON_MAPS = """(el) => {
  const box = e => e.getBoundingClientRect();
  const maps = [...el.querySelectorAll('.draglayer .nsewdrag')].map(box);
  const out = [];
  for (const t of el.querySelectorAll('.xaxislayer-above text, .yaxislayer-above text, '
                                      + '.annotation-text, .colorbar text')) {
    const b = box(t);
    if (!b.width || !b.height) continue;
    maps.forEach((m, k) => {
      const w = Math.min(b.right, m.right) - Math.max(b.left, m.left);
      const h = Math.min(b.bottom, m.bottom) - Math.max(b.top, m.top);
      if (w > 2 && h > 2) out.push(`'${t.textContent}' on map ${k}`);
    });
  }
  return out;
}"""


@pytest.mark.parametrize("size", [(1280, 720), (390, 844)])
def test_at_100_tokens_no_label_of_the_maps_lies_on_another(tab, app_url, size):
    """A text of ~100 tokens, on a laptop and on a phone: no label of the later layers' maps
    lies on another (row labels thinned to what a panel's height holds, key labels to its
    width; their boxes on the screen, slanted ones as slanted boxes, as the screenshot tool
    reads them) nor on one of the maps (a panel's row labels on the map beside or above it),
    the shared colour bar's numbers stand upright, and the three top heads'
    colour-bar titles stand apart and on no other label."""
    from urllib.parse import urlencode

    from scripts.screenshots import LABELS, label_collisions
    from tests.test_plotting_ablation import PARAGRAPH

    page = tab({"width": size[0], "height": size[1]})
    open_page(page, app_url, "/ablation?" + urlencode({"text": PARAGRAPH}))
    charts = page.locator(".js-plotly-plot")
    later = charts.filter(has_text="layer 2").filter(has_text="layer 5")
    three = charts.evaluate_all("(cs) => cs.map(c => c.querySelectorAll('.cbtitle').length)")
    top = charts.nth(three.index(3))  # the lesson's three top heads, a colour bar each
    assert later.count() == 1 and three.count(3) == 1
    hits = {}
    for name, chart in (("later layers", later), ("top heads", top)):
        chart.scroll_into_view_if_needed()
        page.wait_for_timeout(500)
        handle = chart.element_handle()
        marked = page.evaluate("(el) => { el.classList.add('attnviz-measured'); }", handle)
        assert marked is None
        for found in page.evaluate(LABELS, ".attnviz-measured"):
            hits[name] = label_collisions(found)
        page.evaluate("(el) => el.classList.remove('attnviz-measured')", handle)
    # the top heads' maps (plotting.stats.maps_side_by_side): their colour-bar titles
    hits["top heads"] = [h for h in hits["top heads"] if "'weight'" in h]
    assert hits == {"later layers": [], "top heads": []}, hits
    # nor on a map: a panel's row labels on its neighbour's map (two panels a row on a phone),
    # a panel's key labels or title on the map under or over it
    on_maps = later.first.evaluate(ON_MAPS)
    assert later.first.evaluate("(el) => el.querySelectorAll('.draglayer .nsewdrag').length") \
        == 5 and on_maps == [], on_maps
    turned = later.first.evaluate("(el) => [...el.querySelectorAll('.cbaxis text')].map("
                                  "t => t.getAttribute('transform') || '')")
    assert len(turned) == 3 and not any("rotate" in t for t in turned), turned
    titles = top.first.evaluate("(el) => [...el.querySelectorAll('.cbtitle text')].map(t => {"
                                "const r = t.getBoundingClientRect();"
                                "return [r.left, r.right, r.top, r.bottom];})")
    assert len(titles) == 3  # side by side on a laptop, one under another on a phone
    for i, a in enumerate(titles):
        for b in titles[i + 1:]:
            apart = a[1] <= b[0] or b[1] <= a[0] or a[3] <= b[2] or b[3] <= a[2]
            assert apart, titles
    assert not page_errors(page)
    screenshot(page, f"ablation_100_tokens_{size[0]}")
