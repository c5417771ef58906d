"""A chart measured once drawn on a 390 px phone (ui.phone_layout's phoneAgain under Node, given
what the page measured, as phoneDrawn reads it in Chromium): the names of a long heatmap's rows
and keys thinned to as many as fit without overlap (every k-th, each a token's own label), and
panels whose y tick labels are numbers Plotly chose laid out again with room for them."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import plotly.io as pio
import pytest

from attnviz.plotting.ablation import importance_vs_stats
from attnviz.plotting.heatmaps import attention_heatmap
from tests.test_plotting_screens import PHONE_FRAME, _panels, phone_layout_js

LINE = 14.0  # px: a tick label's line at FONT's 13 px, as Chromium's getBBox measured it
WORDS = ("I saw a saw in the workshop yesterday afternoon and the carpenter explained the "
         "evaluation of every blade its teeth its handle its weight and the way it cuts through "
         "oak pine and birch then she showed me how attention in a transformer weighs every word "
         "against every other word row by row before the values are mixed").split()


def _node(figure, drawn: list[dict]) -> list[dict]:
    """For each measurement in `drawn` (a phoneDrawn result, or None to draw with the hint so
    far): {hint: phoneAgain's answer, figure: phoneShaped with the hint}; the hint carries on."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no Node.js to run the chart's script")
    script = phone_layout_js() + """
globalThis.window = {innerWidth: 390};
const [fig, drawn] = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const div = {classList: {contains: () => false, remove: () => {}, toggle: () => {}}};
let hint = null;
console.log(JSON.stringify(drawn.map(d => {
  hint = phoneAgain(fig, Number(process.argv[1]), d, hint) || hint;
  return {hint, figure: phoneShaped(fig, Number(process.argv[1]), div, hint),
          again: d ? phoneAgain(fig, Number(process.argv[1]), d, hint) : null};
})));
"""
    spec = "[" + pio.to_json(figure, validate=False) + "," + json.dumps(drawn) + "]"
    done = subprocess.run([node, "-e", script, str(PHONE_FRAME)], input=spec,
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def _index(ax: dict) -> list[int]:
    at = {c: i for i, c in enumerate(ax["categoryarray"])}
    return [at[v] for v in ax["tickvals"]]


def test_a_long_heatmaps_names_on_a_phone_as_many_as_fit_every_kth():
    """84 tokens: the server names every 4th row and 6th key (LONG_TICKS, LONG_X_TICKS); on a
    phone the square plot measured 175 px, so 21 rows lay 8.3 px apart (a line is 14) and 15
    slanted keys 12.5 px apart (19.8 across their slant). Thinned: rows every 8th (16.7 px),
    keys every 12th (25 px), the fewest fewer names that fit; each name the server's own for
    its row ('#9 afternoon', a repeated word's number kept), from the first."""
    tokens = (WORDS * 2)[:84]
    rng = np.random.default_rng(0)
    fig = attention_heatmap(rng.random((84, 84)), tokens)
    side = 175.0
    drawn = {"left": 16, "panels": {"xy": {
        "plot": {"l": 110, "t": 130, "r": 110 + side, "b": 130 + side},
        "y": {"n": 21, "h": LINE, "w": 90, "reach": 95},
        "x": {"n": 15, "h": LINE, "w": 90, "reach": 0}}}}
    (first,) = _node(fig, [drawn])
    server = fig.to_plotly_json()["layout"]
    layout = first["figure"]["layout"]
    for name, need in (("yaxis", LINE), ("xaxis", LINE / np.sin(np.pi / 4))):
        before, after = _index(server[name]), _index(layout[name])
        step = before[1] - before[0]
        k = after[1] - after[0]
        assert after[0] == 0 and all(b - a == k for a, b in zip(after, after[1:], strict=False))
        assert k % step == 0 and k > step  # every k-th of the server's every step-th
        px = side / 84
        assert px * k >= need - 0.01 > px * (k - step)  # apart by a line; fewer would not fit
        named = dict(zip(server[name]["tickvals"], server[name]["ticktext"], strict=True))
        assert [named[v] for v in layout[name]["tickvals"]] == layout[name]["ticktext"]
        assert len(after) >= 7
    assert "#9 afternoon" in layout["yaxis"]["ticktext"]
    assert all(t.startswith("#") for t in layout["yaxis"]["ticktext"])  # '#n token'
    # drawn again with those names (the same plot, names 16.7 px apart): nothing more to do
    thinned = {**drawn, "panels": {"xy": {**drawn["panels"]["xy"],
                                          "y": {"n": len(layout["yaxis"]["tickvals"]),
                                                "h": LINE, "w": 90, "reach": 95},
                                          "x": {"n": len(layout["xaxis"]["tickvals"]),
                                                "h": LINE, "w": 90, "reach": 0}}}}
    (second,) = _node(fig, [drawn, thinned])[1:]
    assert second["again"] is None


def test_a_phones_scatter_panels_leave_room_for_the_numbers_plotly_drew():
    """Ablation's "Does the head matter where it looks?" (7 scatter panels, y = |change|, its
    numbers Plotly's choice): laid out two a row 36 px apart, the second panel's '0.06' (30 px
    left of its plot, as Chromium drew it) lay on the first panel. Measured, the panels are
    laid out again: each gap between two panels of a row holds the numbers and 12 px, the
    left margin the first column's numbers and axis title, every panel at least 140 px wide."""
    rng = np.random.default_rng(1)
    size = rng.random((6, 12)) * 0.06
    names = ["entropy", "cls", "sep", "punct", "self", "prev", "next"]
    stats = {k: rng.random((6, 12)) for k in names}
    fig = importance_vs_stats(size, stats, {k: k for k in names}, dict.fromkeys(names, 0.1),
                              "|change| when removed")
    (plain,) = _node(fig, [None])
    lay = plain["figure"]["layout"]
    m = lay["margin"]
    plot = PHONE_FRAME - m["l"] - m["r"]
    panels = _panels(lay, plain["figure"]["data"])
    lefts = sorted({round(xd[0] * plot + m["l"], 3) for xd, _yd in panels.values()})
    assert len(lefts) == 2  # two a row, as shaped before anything was measured
    gap = min(xd[0] for xd, _ in panels.values() if xd[0] > 0.01) - max(
        xd[1] for xd, _ in panels.values() if xd[0] < 0.01)
    assert gap * plot < 30 + 12  # too little for the numbers: the defect measured
    drawn = {"left": 16, "panels": {}}
    for ref, (xd, yd) in panels.items():
        x0 = 16 + m["l"] + xd[0] * plot
        first = xd[0] < 0.01
        drawn["panels"][ref + "y" + ref[1:]] = {
            "plot": {"l": x0, "t": 100 + (1 - yd[1]) * 900, "r": 16 + m["l"] + xd[1] * plot,
                     "b": 100 + (1 - yd[0]) * 900},
            "y": {"n": 4, "h": LINE, "w": 26, "reach": 62 if first else 30},
            "x": {"n": 4, "h": LINE, "w": 20, "reach": 0}}
    (shaped,) = _node(fig, [drawn])
    lay = shaped["figure"]["layout"]
    m = lay["margin"]
    plot = PHONE_FRAME - m["l"] - m["r"]
    assert m["l"] >= 62 + 4  # the first column's numbers and title
    rows: dict[float, list] = {}
    for xd, yd in _panels(lay, shaped["figure"]["data"]).values():
        rows.setdefault(round(yd[1], 6), []).append(xd)
        assert (xd[1] - xd[0]) * plot >= 140 - 0.01
    for row in rows.values():
        row.sort()
        assert all((b[0] - a[1]) * plot >= 30 + 12 for a, b in zip(row, row[1:], strict=False))
    assert len(rows) == 7  # a phone's 358 px hold one such panel a row


def test_a_30_layer_models_layer_numbers_on_a_phone_every_second():
    """Head statistics' layer x head maps of a 30-layer model (SmolLM2) on a phone: the layers'
    numbers, one a layer (dtick 1), lay 7.9 px apart as Chromium drew them (a line is 14):
    ticked every 2 layers (15.8 px), the fewest fewer that fit; drawn so, nothing more."""
    from attnviz.analysis.head_stats import STATS
    from attnviz.plotting.stats import stats_heatmaps

    rng = np.random.default_rng(2)
    fig = stats_heatmaps({k: rng.random((30, 9)) for k in STATS}, {k: k for k in STATS})
    (plain,) = _node(fig, [None])
    lay = plain["figure"]["layout"]
    refs = list(_panels(lay, plain["figure"]["data"]))
    panel = {"plot": {"l": 80, "t": 100, "r": 330, "b": 337},
             "y": {"n": 30, "h": LINE, "w": 14, "pitch": 7.9, "reach": 40},
             "x": {"n": 5, "h": LINE, "w": 8, "pitch": 55, "reach": 0}}
    ids = [r + "y" + r[1:] for r in refs]
    drawn = {"left": 16, "panels": {i: panel for i in ids}}
    spaced = {**panel, "y": {**panel["y"], "n": 15, "pitch": 15.8}}
    first, second = _node(fig, [drawn, {"left": 16, "panels": {i: spaced for i in ids}}])
    for r in refs:
        name = "yaxis" + r[1:]
        assert fig.layout[name].dtick == 1
        assert first["figure"]["layout"][name]["dtick"] == 2
    assert second["again"] is None


def test_a_heads_grids_names_thinned_panel_by_panel_and_short_sentences_keep_theirs():
    """A heads grid (one heatmap, the heads its panels) at 90 tokens names 6 keys under each
    ~47 px panel on a phone, upright, 7.8 px apart (a line of its 10 px font is 12): every
    second of each panel's names is kept, the same under every panel, from each panel's
    first. 'I saw a saw' names every token (no '#n' of its own to say which row a thinned
    name is): left as it is, whatever is measured."""
    from attnviz.plotting.heatmaps import heads_grid

    rng = np.random.default_rng(3)
    tokens = (WORDS * 2)[:90]
    grid = heads_grid(rng.random((9, 90, 90)), tokens)
    x = grid.to_plotly_json()["layout"]["xaxis"]
    drawn = {"left": 16, "panels": {"xy": {
        "plot": {"l": 100, "t": 100, "r": 100 + 4 * 47 + 3 * 6, "b": 800},
        "y": {"n": 36, "h": LINE, "w": 90, "pitch": 18, "reach": 95},
        "x": {"n": 24, "h": 12, "w": 80, "pitch": 7.8, "reach": 0}}}}
    (first,) = _node(grid, [drawn])
    after = first["figure"]["layout"]["xaxis"]
    panels = [x["ticktext"][i:i + 6] for i in range(0, 24, 6)]
    assert all(p == panels[0] for p in panels)
    assert after["ticktext"] == [t for p in panels for t in p[::2]]
    assert set(after["tickvals"]) <= set(x["tickvals"])
    assert "yaxis" not in first["hint"]["thin"]  # rows 18 px apart: kept
    short = attention_heatmap(rng.random((6, 6)), ["[CLS]", "i", "saw", "a", "saw", "[SEP]"])
    tight = {"left": 16, "panels": {"xy": {
        "plot": {"l": 100, "t": 100, "r": 130, "b": 130},
        "y": {"n": 6, "h": LINE, "w": 40, "pitch": 5, "reach": 50},
        "x": {"n": 6, "h": LINE, "w": 40, "pitch": 5, "reach": 0}}}}
    (kept,) = _node(short, [tight])
    assert kept["hint"] is None
    assert kept["figure"]["layout"]["yaxis"]["ticktext"] == ["[CLS]", "i", "saw #2", "a",
                                                             "saw #4", "[SEP]"]


def _em(text: str, size: float) -> float:
    """A label's width in px as a phone draws it at most: 0.56 em a Latin character, 1.05 em
    a wide (CJK) one (Arial and Noto Sans CJK at 13-16 px, as Chromium measured them)."""
    import unicodedata

    return size * sum(1.05 if unicodedata.east_asian_width(c) in "WF" else 0.56 for c in text)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(("heads", "tokens"), [
    (12, ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]),  # the bundled BERT
    (9, ["I", "saw", "a", "saw"]),  # SmolLM2
])
def test_a_heads_grids_titles_on_a_phone_lie_apart_and_name_their_head(lang, heads, tokens):
    """Heads of one layer on a 390 px phone: four panels a row, ~75 px apart. '第 10 个头'
    is ~81 px wide at the titles' 15 px, so Chinese titles lay on one another (2 px apart as
    Chromium drew BERT's, 11 px SmolLM2's). Every two neighbouring titles of a row lie 8 px
    apart or more, and each says which head it is: its full title, or the head's number under
    a heading ("head", "头") left of its row of panels, inside the figure."""
    from attnviz import i18n
    from attnviz.plotting.heatmaps import heads_grid

    with i18n.use(lang):
        grid = heads_grid(np.random.default_rng(4).random((heads, len(tokens), len(tokens))),
                          tokens)
        word = i18n._("head")
        full = [i18n._("head {head}").format(head=h) for h in range(heads)]
    (shaped,) = _node(grid, [None])
    layout = shaped["figure"]["layout"]
    m = layout["margin"]
    plot = PHONE_FRAME - m["l"] - m["r"]
    notes = layout["annotations"]
    panels = grid.layout.meta["panels"]
    titles = [a for a in notes if a.get("xanchor") == "center"]
    assert len(titles) == heads
    rows: dict[float, list] = {}
    for h, a in enumerate(titles):
        width = _em(a["text"], a["font"]["size"])
        centre = m["l"] + a["x"] * plot
        rows.setdefault(a["y"], []).append((centre - width / 2, centre + width / 2, h))
        assert a["text"] in (full[h], str(h))  # its head, by name or number
        assert a["y"] == pytest.approx(1 - panels["starts"][h][0] / len(
            layout["yaxis"]["categoryarray"]))  # over its own panel's row
    for y, row in rows.items():
        row.sort()
        assert all(b[0] - a[1] >= 8 for a, b in zip(row, row[1:], strict=False)), (lang, row)
        if any(titles[h]["text"] == str(h) for _l, _r, h in row):  # numbers: the heading too
            (heading,) = [a for a in notes if a["text"] == word and a["y"] == y]
            right = m["l"] + heading.get("xshift", 0)
            assert heading["xanchor"] == "right" and heading["x"] == 0
            assert right - _em(word, heading["font"]["size"]) >= 0  # inside the figure
            assert right <= row[0][0]  # left of the row's first title
    if lang == "zh" and heads == 12:  # the defect: numbers and headings here
        assert [a["text"] for a in titles] == [str(h) for h in range(12)]


def test_token_lines_at_100_tokens_name_each_token_a_line_apart_on_a_phone():
    """Explore's token lines at ~100 tokens name every token: 1,500 px tall, the names lay
    13.98 px apart before Plotly's padding (12.9 px as Chromium drew them on a phone, under a
    title broken into two lines that took the plot area's height: '[CLS]' on 'i', 186 labels
    on one another). Now the rows fill the plot area, a line (14 px) apart or more, and a
    phone that breaks the title into lines grows the figure by as much."""
    from attnviz import i18n
    from attnviz.plotting.common import LEGEND_ROW
    from attnviz.plotting.token_lines import token_lines

    n = 100
    tokens = ["[CLS]", *(WORDS * 2)[:n - 2], "[SEP]"]
    w = np.random.default_rng(5).random((1, n, n))
    w /= w.sum(-1, keepdims=True)
    for lang in ("en", "zh"):
        with i18n.use(lang):
            fig = token_lines(w, [0], tokens, query=2, title=i18n._(
                "Layer {layer}: token lines (opacity = weight)").format(layer=0))
        server = fig.to_plotly_json()["layout"]
        assert server["yaxis"]["range"] == [n - 0.5, -0.5]  # no padding: rows fill the area
        area = server["height"] - server["margin"]["t"] - server["margin"]["b"]
        assert area / n >= LINE
        assert server["margin"]["b"] >= 10 + LEGEND_ROW
        (shaped,) = _node(fig, [None])
        layout = shaped["figure"]["layout"]
        assert "<br>" in layout["title"]["text"]  # broken into lines on a phone
        phone = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
        assert phone == pytest.approx(area, abs=1), lang


def test_a_long_heads_grids_heading_on_a_phone_stands_clear_of_the_first_row_name():
    """Heads of one layer at 90 tokens on a phone: the row names ('#0 [CLS]', '#8 yesterday')
    need a wide left margin, so even English titles ('head 10') outgrow their panels: the
    heads' numbers under 'head'. The first row name is centred 1 px under each panel's top,
    half a line (7 px) above it, where the heading stood ('#0 [CLS]' on 'head', once a row as
    Chromium drew it): the heading, and the numbers with it, stand that much higher."""
    from attnviz.plotting.heatmaps import heads_grid

    tokens = ["[CLS]", *(WORDS * 2)[:88], "[SEP]"]
    grid = heads_grid(np.random.default_rng(6).random((12, 90, 90)), tokens)
    (shaped,) = _node(grid, [None])
    layout = shaped["figure"]["layout"]
    m, y = layout["margin"], layout["yaxis"]
    headings = [a for a in layout["annotations"] if a["text"] == "head"]
    numbers = [a for a in layout["annotations"] if a.get("xanchor") == "center"]
    assert len(headings) == 3 and [a["text"] for a in numbers] == [str(h) for h in range(12)]
    row = (layout["height"] - m["t"] - m["b"]) / len(y["categoryarray"])  # px a row
    first = y["categoryarray"].index(y["tickvals"][0])
    reach = LINE / 2 - (first + 0.5) * row  # px the first name rises above its panel
    assert reach > 0
    for a in headings:
        assert a["yshift"] >= reach  # its bottom above the name's top
        assert {b["yshift"] for b in numbers if b["y"] == a["y"]} == {a["yshift"]}
