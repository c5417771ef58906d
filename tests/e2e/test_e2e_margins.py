"""Figures that reserve their labels' room up front are drawn once: in Chromium with the same
plotly.js the app ships, the margins Plotly's automargin ends up with equal the ones the
figure asked for (no label pushed a margin, so no second draw), and they waste little.

Checked for the explore page's figures (the mosaic, one head and its token lines at 512
tokens, the readable
"I saw a saw" head, a Chinese sentence's wider labels, raw scores). Offline: the page is a
file with plotly.js inlined; no server, no network.
"""

from __future__ import annotations

import json
from pathlib import Path

import plotly
import plotly.io as pio
import pytest

from attnviz.analysis import views
from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.plotting.overview import mark_head, overview_mosaic
from attnviz.plotting.token_lines import token_lines

pytestmark = pytest.mark.e2e
LONG = ("The quick brown fox jumps over the lazy dog near the river bank, and I saw a saw. "
        * 40)
SLACK = 60  # px: the most a reserved margin may exceed what the labels needed
# The paper's margins as drawn: the test adds to each figure an invisible rectangle over the
# whole area inside the margins (paper coordinates 0 to 1, no line, no fill), and measures its
# drawn path (a shape's path carries its index, data-index) against the figure's <svg>. Not the
# plot area (.nsewdrag): square cells constrain the axes' domain inside these margins.
PAPER = {"type": "rect", "xref": "paper", "yref": "paper", "x0": 0, "x1": 1, "y0": 0, "y1": 1,
         "line": {"width": 0}, "fillcolor": "rgba(0, 0, 0, 0)", "layer": "above"}
MARGINS = """g => {
    const svg = g.querySelector('.main-svg').getBoundingClientRect();
    const i = g.layout.shapes.length - 1;  // the paper's rectangle, added last
    const p = g.querySelector(`.shapelayer path[data-index="${i}"]`).getBoundingClientRect();
    return {l: p.left - svg.left, r: svg.right - p.right, t: p.top - svg.top,
            b: svg.bottom - p.bottom}; }"""
# The margins once Plotly is done: automargin may redraw after newPlot's promise resolves
# (under load it did, and a read right after newPlot saw the 10 px it started from), so the
# margins are read until they hold still for three reads 50 ms apart (3 s at most).
SETTLED = """async g => {
    const read = """ + MARGINS + """;
    let last = JSON.stringify(read(g)), same = 0;
    for (let i = 0; i < 60 && same < 3; i++) {
        await new Promise(r => setTimeout(r, 50));
        const now = JSON.stringify(read(g));
        same = now === last ? same + 1 : 0; last = now;
    }
    return JSON.parse(last); }"""


def with_paper(spec: dict) -> dict:
    """`spec` (a figure's JSON) with PAPER added as its last shape."""
    layout = spec["layout"]
    return {**spec, "layout": {**layout, "shapes": [*layout.get("shapes", []), PAPER]}}


@pytest.fixture(scope="module")
def figures(cpu_model) -> dict:
    long = cpu_model.trace(LONG)
    short = cpu_model.trace("I saw a saw")
    zh = cpu_model.trace("我看见一把锯子，锯子很旧。")
    mosaic = overview_mosaic(long.weights, views.mean_maps(long.weights), long.tokens)
    return {
        "mosaic, 512 tokens": mark_head(mosaic, 0, 3),
        "one head, 512 tokens": attention_heatmap(long.weights[0, 3], long.tokens, "weights",
                                                  "Layer 0, head 3",
                                                  zmax=float(long.weights[0, 3].max())),
        "one head, I saw a saw": attention_heatmap(short.weights[1, 2], short.tokens),
        "scores, I saw a saw": attention_heatmap(short.scores[1, 2], short.tokens, "scores"),
        "one head, Chinese": attention_heatmap(zh.weights[0, 0], zh.tokens),
        "token lines, 512 tokens": token_lines(long.weights[0, [3, 5]], [3, 5], long.tokens,
                                               list(range(long.n_tokens)), query=2),
        "token lines, Chinese": token_lines(zh.weights[0, [0, 1]], [0, 1], zh.tokens),
        "token lines, I saw a saw": token_lines(short.weights[1, [2]], [2], short.tokens),
    }


# Token lines name their tokens beside the dots, in the side margins (the axes are hidden, so
# automargin knows nothing of them): how far the drawn labels reach past the plot area.
OVERHANG = """g => {
    const m = (""" + MARGINS + """)(g), svg = g.querySelector('.main-svg').getBoundingClientRect();
    const texts = [...g.querySelectorAll('.textpoint text')].map(t => t.getBoundingClientRect())
        .filter(r => r.width > 0);
    return {l: svg.left + m.l - Math.min(...texts.map(r => r.left)),
            r: Math.max(...texts.map(r => r.right)) - (svg.right - m.r)}; }"""


@pytest.mark.parametrize("width", [940, 420])  # the app's main column; a phone
def test_labels_fit_in_the_reserved_margins(browser, figures, tmp_path, width):
    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    specs = {name: with_paper(json.loads(pio.to_json(fig, validate=False)))
             for name, fig in figures.items()}
    html = tmp_path / "margins.html"
    html.write_text(f"<html><body><div id=g style='width:{width}px'></div><script>"
                    + js.read_text() + "</script></body></html>")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        "file://") else route.abort())
    page.goto(html.as_uri())
    for name, spec in specs.items():
        page.evaluate("""async spec => {
            const g = document.getElementById('g'); Plotly.purge(g);
            await Plotly.newPlot(g, spec.data, spec.layout, {}); }""", spec)
        got = page.evaluate(f"({SETTLED})(document.getElementById('g'))")
        asked = spec["layout"]["margin"]
        for side in "lrtb":
            # Equal: nothing pushed (automargin would have drawn the figure a second time).
            assert got[side] == pytest.approx(asked[side], abs=0.5), (name, side, got, asked)
    page.close()


def test_reserved_margins_waste_little(browser, figures, tmp_path):
    """With automargin alone (margins of 10 px), Plotly pushes each margin to what its labels
    need; the reserved margins exceed that by at most SLACK px."""
    js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    html = tmp_path / "needed.html"
    html.write_text("<html><body><div id=g style='width:940px'></div><script>"
                    + js.read_text() + "</script></body></html>")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(html.as_uri())
    for name, fig in figures.items():
        spec = with_paper(json.loads(pio.to_json(fig, validate=False)))
        asked = dict(spec["layout"]["margin"])
        if name.startswith("token lines"):  # labels drawn in the margins, whole and close
            page.evaluate("""async f => {
                const g = document.getElementById('g'); Plotly.purge(g);
                await Plotly.newPlot(g, f.data, f.layout, {}); }""", spec)
            reach = page.evaluate(f"({OVERHANG})(document.getElementById('g'))")
            for side in "lr":
                assert asked[side] >= reach[side], (name, side, asked, reach)  # whole
                assert asked[side] - reach[side] <= SLACK, (name, side, asked, reach)
            continue
        spec["layout"]["margin"] = {side: 10 for side in "lrtb"} | {"t": asked["t"]}
        for name_ in [k for k in spec["layout"] if k.startswith(("xaxis", "yaxis"))]:
            # automargin on whatever template the figure carries (plotly.js's default is off;
            # an earlier test may have changed plotly's default template)
            spec["layout"][name_]["automargin"] = True
        page.evaluate("""async f => {
            const g = document.getElementById('g'); Plotly.purge(g);
            await Plotly.newPlot(g, f.data, f.layout, {}); }""", spec)
        need = page.evaluate(f"({SETTLED})(document.getElementById('g'))")
        for side in "lrb":
            assert asked[side] >= need[side] - 0.5, (name, side, asked, need)
            # Square cells at 512 tokens: the plot is as large as its height allows and the
            # domain's slack holds the labels, so what automargin needs says nothing of waste.
            if not name.startswith(("one head, 512", "mosaic, 512")):
                assert asked[side] - need[side] <= SLACK, (name, side, asked, need)
    page.close()
