"""Figures that read on every screen, checked on their layouts (no browser): a 138-token
paragraph keeps square cells and thinned, non-overlapping labels that still name words; colour
bars lie horizontal below the plot (on a phone a bar on the right is cut off) or beside their
own panels."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnviz.plotting.common import COLORBAR_BELOW
from attnviz.plotting.heatmaps import LONG_TICKS, LONG_X_TICKS, attention_heatmap, heads_grid
from attnviz.plotting.stats import stats_heatmaps

WORDS = ("the old carpenter kept a saw on the wall of his shop and each morning he took it "
         "down to cut the boards that the village needed").split()
N = 138


@pytest.fixture(scope="module")
def tokens() -> list[str]:
    words = [WORDS[i % len(WORDS)] for i in range(N - 2)]
    return ["[CLS]", *words, "[SEP]"]


@pytest.fixture(scope="module")
def weights() -> np.ndarray:
    w = np.random.default_rng(1).random((12, N, N)).astype(np.float32)
    return w / w.sum(-1, keepdims=True)


def test_one_head_at_138_tokens_has_square_cells_and_few_labels(tokens, weights):
    fig = attention_heatmap(weights[0], tokens)
    x, y = fig.layout.xaxis, fig.layout.yaxis
    assert y.scaleanchor == "x" and y.constrain == "domain"
    assert 10 <= len(x.ticktext) <= LONG_X_TICKS and 10 <= len(y.ticktext) <= LONG_TICKS
    # every k-th token, named by its number and word ('#6 saw'): the two saws stay apart
    assert all(t.startswith("#") and " " in t for t in y.ticktext)
    assert len(set(y.ticktext)) == len(y.ticktext)
    # the hover names the full label of every cell; the values are the matrix, untouched
    assert "%{y}" in fig.data[0].hovertemplate and "saw #6" in fig.data[0].y
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), weights[0])


@pytest.mark.parametrize("n", [6, N])
def test_one_head_colour_bar_is_horizontal_and_on_screen(tokens, weights, n):
    """Horizontal, from the plot's left edge (a phone shows it); below the keys' labels for a
    short sentence, above a long one's square plot (on a narrow screen the square leaves its
    spare height at the bottom, which would part the bar from the plot)."""
    fig = attention_heatmap(weights[0, :n, :n], tokens[:n], "scores")
    bar, m = fig.data[0].colorbar, fig.layout.margin
    assert bar.orientation == "h" and bar.yref == "paper"
    plot = fig.layout.height - m.t - m.b
    if n <= 40:  # its top edge below the x labels, bar and title inside the bottom margin
        assert bar.yanchor == "top" and -bar.y * plot == pytest.approx(m.b - COLORBAR_BELOW)
    else:  # its bottom edge just above the plot, bar and title inside the top margin
        assert bar.yanchor == "bottom" and (bar.y - 1) * plot == pytest.approx(28)
        assert m.t >= 50 + COLORBAR_BELOW and fig.layout.yaxis.constraintoward == "top"
    assert bar.x == 0 and bar.xanchor == "left"  # from the left edge: a phone shows it
    assert m.r <= 20


def test_pooled_heads_grid_names_words_and_thins_its_bottom_labels(tokens, weights):
    fig = heads_grid(weights, tokens)  # 138 > 96 cells: blocks of 2 tokens
    x, y = fig.layout.xaxis, fig.layout.yaxis
    per_panel = len(x.ticktext) // 4
    assert 4 <= per_panel <= 7  # 4 panels a row: at most 28 slanted labels in all
    assert all(t.startswith("#") and t.split(" ", 1)[1] for t in x.ticktext + y.ticktext)
    assert "#12 shop" in y.ticktext  # a block's tick names its first word
    assert fig.layout.coloraxis.colorbar.orientation == "h"
    assert fig.layout.coloraxis.colorbar.y < 0


def test_stats_colour_bars_stand_beside_their_own_panels(weights, tokens):
    from attnviz.analysis.head_stats import STATS, head_stats

    fig = stats_heatmaps(head_stats(weights[None].repeat(2, 0), tokens), STATS)
    layout = fig.layout
    heat = [tr for tr in fig.data if tr.type == "heatmap"]
    for axis_name in ("coloraxis", "coloraxis2"):
        bar = layout[axis_name].colorbar
        panels = [tr for tr in heat if (tr.coloraxis or "coloraxis") == axis_name]
        beside = []
        for tr in panels:
            xd, yd = layout[tr.xaxis.replace("x", "xaxis")].domain, \
                layout[tr.yaxis.replace("y", "yaxis")].domain
            if yd[0] <= bar.y <= yd[1] and 0 <= bar.x - xd[1] <= 0.03:
                beside.append(tr.name)
        assert beside, axis_name  # right of one of its own panels, in that panel's row
        others = [tr for tr in heat if tr not in panels]
        for tr in others:  # and in no other scale's panel's way
            xd = layout[tr.xaxis.replace("x", "xaxis")].domain
            yd = layout[tr.yaxis.replace("y", "yaxis")].domain
            assert not (yd[0] <= bar.y <= yd[1] and xd[0] - 0.02 <= bar.x <= xd[1] + 0.02)


def test_compare_colour_bars_lie_under_their_own_panels(weights, tokens):
    from attnviz.plotting.compare import compare_figure

    w = weights[0, :6, :6]
    labels = ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]
    fig = compare_figure(w, w * 0.5, w * 0.5, ["[CLS]", "i", "saw", "a", "saw", "[SEP]"],
                         ("A", "B", "A - B"), labels=labels)
    layout = fig.layout
    weights_bar, diff_bar = layout.coloraxis.colorbar, layout.coloraxis2.colorbar
    assert weights_bar.orientation == diff_bar.orientation == "h"
    assert weights_bar.y < 0 and diff_bar.y < 0
    assert weights_bar.x == layout.xaxis.domain[0]  # under panels A and B
    assert diff_bar.x == layout.xaxis3.domain[0]  # under the difference
    assert list(fig.data[0].x) == labels and {"saw #2", "saw #4"} <= set(layout.xaxis.ticktext)


def test_inside_one_score_names_both_saws():
    from attnviz.plotting.neuron import score_steps, value_steps

    rng = np.random.default_rng(0)
    nb = {k: rng.random(shape) for k, shape in (
        ("q", (4,)), ("keys", (6, 4)), ("products", (6, 4)), ("scores", (6,)),
        ("scaled", (6,)), ("weights", (6,)), ("values", (6, 4)), ("weighted", (6, 4)),
        ("output", (4,)))}
    toks = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    for fig in (score_steps(nb, toks, 2), value_steps(nb, toks, 2)):
        text = list(fig.layout.yaxis.ticktext)
        assert "saw #2" in text and "saw #4" in text and "saw" not in text


def test_window_masks_off_cells_are_not_a_light_slab_on_the_dark_theme():
    """The off cells are a translucent grey over the plot's background (either theme's),
    never an opaque near-white; the on cells the palette's blue."""
    import re

    from attnviz.plotting.common import OKABE_ITO
    from attnviz.plotting.windows import masks_and_weights

    m = np.tril(np.ones((6, 6), bool))
    fig = masks_and_weights(["[CLS]", "i", "saw", "a", "saw", "[SEP]"], {"causal": m},
                            {"causal": m / m.sum(1, keepdims=True)})
    scale = [tuple(stop) for stop in fig.data[0].colorscale]
    off, on = scale[0][1], scale[-1][1]
    alpha = re.fullmatch(r"rgba\(\s*(\d+),\s*(\d+),\s*(\d+),\s*([\d.]+)\)", off)
    assert alpha and float(alpha.group(4)) <= 0.3 and on == OKABE_ITO[0]
    # no grid lines show through them; at 138 tokens each of the three panels' slanted key
    # labels are few enough not to run together
    assert fig.layout.yaxis.showgrid is False and fig.layout.xaxis.showgrid is False
    words = [WORDS[i % len(WORDS)] for i in range(N)]
    long = np.ones((N, N), bool)
    wide = masks_and_weights(words, {"a": long, "b": long, "c": long},
                             {k: long / N for k in "abc"})
    assert len(wide.layout.xaxis4.ticktext) <= 8 and len(wide.layout.yaxis4.ticktext) <= 24


def test_head_map_labels_never_overlap_in_a_dense_cluster():
    from attnviz.plotting.corpus import LABEL_PX, PHONE_PLOT, head_map

    rng = np.random.default_rng(3)
    coords = np.concatenate([rng.normal(0, 0.01, (60, 2)), rng.normal(0, 1, (12, 2))])
    behaviour = np.array(["mixed"] * 72, dtype=object).reshape(6, 12)
    fig = head_map(coords, behaviour)
    dots = fig.data[0]
    shown = [i for i, t in enumerate(dots.text) if t]
    # the room a label needs at a phone's scale (one scale for both axes, the wider extent's)
    room = np.array(LABEL_PX) * max(np.ptp(coords, axis=0) / np.array(PHONE_PLOT))
    for a in shown:
        for b in shown:
            if a < b:
                assert not (np.abs(coords[a] - coords[b]) < room).all(), (a, b)
    assert len(shown) < 40 and dots.text[0] == "0.0"  # the cluster keeps a few labels
    # every dot still names its head in the hover
    assert list(dots.customdata[:, 0].astype(int)) == list(np.repeat(np.arange(6), 12))



SAWS = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
PHONE_PLOT_WIDTH = 270  # px: a chart's plot area on a 390 px phone, row labels taken off


def test_mosaic_colour_bar_lies_above_it_and_its_head_numbers_fit_a_phone():
    """The colour bar horizontal above the head numbers, its title on top (beside the mosaic
    its top tick '1' sat on its title, and on a phone it squeezed the tiles); the 13 column
    labels upright and small enough to stand apart at a phone's ~21 px a tile."""
    from attnviz.plotting.common import text_width
    from attnviz.plotting.overview import MOSAIC_BAR_GAP, overview_mosaic

    L, H, n = 12, 12, 6
    w = np.random.default_rng(0).random((L, H, n, n)).astype(np.float32)
    means = {"layers": w.mean(1), "heads": w.mean(0), "all": w.mean((0, 1))}
    fig = overview_mosaic(w, means, SAWS)
    bar, m, x = fig.data[0].colorbar, fig.layout.margin, fig.layout.xaxis
    assert bar.orientation == "h" and bar.title.side == "top" and bar.yanchor == "bottom"
    plot = fig.layout.height - m.t - m.b
    assert (bar.y - 1) * plot == pytest.approx(MOSAIC_BAR_GAP)  # above the head numbers
    assert m.t >= 90 + MOSAIC_BAR_GAP + COLORBAR_BELOW and m.r <= 20
    assert fig.layout.yaxis.constraintoward == "top"  # the mosaic stays under its bar
    assert list(x.ticktext) == [str(h) for h in range(H)] + ["mean"] and x.tickangle == 0
    tile = PHONE_PLOT_WIDTH / (H + 1)
    widths = [text_width(t, x.tickfont.size) for t in x.ticktext]
    assert all((a + b) / 2 < tile for a, b in zip(widths, widths[1:], strict=False))
    np.testing.assert_array_equal(fig.data[0].z[:n, :n], w[0, 0])  # the numbers untouched


def test_heads_grid_key_labels_stand_upright_one_line_per_phone_cell():
    """Six tokens: every key named under each panel ('saw #2', 'saw #4'), upright, one line of
    GRID_X_SIZE text per cell of a phone's ~65 px panel (slanted, 'i' sat on 'saw #2');
    longer inputs name at most GRID_PANEL_X_TICKS a panel, every token still in the hover."""
    from attnviz.plotting.heatmaps import GRID_PANEL_X_TICKS, GRID_X_SIZE, heads_grid

    w = np.random.default_rng(0).random((12, 6, 6)).astype(np.float32)
    x = heads_grid(w, SAWS).layout.xaxis
    assert list(x.ticktext) == ["[CLS]", "i", "saw #2", "a", "saw #4", "[SEP]"] * 4
    assert x.tickangle == -90 and x.tickfont.size == GRID_X_SIZE
    assert 1.2 * GRID_X_SIZE - 2 <= 65 / GRID_PANEL_X_TICKS  # a line's height, 2 px allowed
    long = np.random.default_rng(0).random((12, 20, 20)).astype(np.float32)
    fig = heads_grid(long, [f"w{i}" for i in range(20)])
    assert len(fig.layout.xaxis.ticktext) == 4 * GRID_PANEL_X_TICKS - 4  # every 4th: 5 a panel
    assert "%{x}" in fig.data[0].hovertemplate


def test_head_map_legend_lies_below_the_map():
    from attnviz.plotting.corpus import head_map

    coords = np.random.default_rng(0).normal(size=(72, 2))
    fig = head_map(coords, np.array(["mixed"] * 72, dtype=object).reshape(6, 12))
    legend, m = fig.layout.legend, fig.layout.margin
    assert legend.orientation == "h" and legend.y < 0 and legend.x == 0
    plot = fig.layout.height - m.t - m.b
    assert -legend.y * plot + 2 * 24 <= m.b  # the legend's rows inside the bottom margin


def test_shuffled_outputs_legend_lies_under_the_slanted_layer_names():
    from attnviz.plotting.common import label_room
    from attnviz.plotting.positions import equivariance_figure

    diffs = {"learned": np.linspace(1e-3, 1, 13), "none": np.full(13, 1e-6)}
    fig = equivariance_figure(diffs)
    x, legend, m = fig.layout.xaxis, fig.layout.legend, fig.layout.margin
    names = list(fig.data[0].x)
    assert names[0] == "embeddings" and x.tickangle == -45
    plot = fig.layout.height - m.t - m.b
    below = -legend.y * plot
    assert below >= label_room(names, angle=-45, across=False, titled=False)
    assert legend.yanchor == "top" and m.b >= below + 2 * 24

# --- On a phone: ui.phone_layout's phoneShaped (the browser's script) run under Node -------

PHONE_FRAME = 358  # px: a chart's frame on a 390 px phone


def phone_layout_js() -> str:
    """The chart's phone layout script (components/live_chart/phone_layout.js), as shipped."""
    from importlib.resources import files

    return files("attnviz.ui.components").joinpath(
        "live_chart", "phone_layout.js").read_text(encoding="utf-8")


def _phone_shaped(figures: list, width: float) -> list[dict]:
    """phoneShaped(figure, width, element) of each figure under Node (skipped without one):
    {figure (shaped), same (unchanged object), wide (the element keeps attnviz-wide)}."""
    import json
    import shutil
    import subprocess

    import plotly.io as pio

    node = shutil.which("node")
    if node is None:
        pytest.skip("no Node.js to run the chart's script")
    script = phone_layout_js() + """
const figs = JSON.parse(require('fs').readFileSync(0, 'utf8'));
console.log(JSON.stringify(figs.map(fig => {
  const cls = new Set(['attnviz-wide']);
  const div = {classList: {contains: c => cls.has(c), remove: c => cls.delete(c),
                           toggle: (c, on) => on ? cls.add(c) : cls.delete(c)}};
  const out = phoneShaped(fig, Number(process.argv[1]), div);
  return {figure: out, same: out === fig, wide: cls.has('attnviz-wide')};
})));
"""
    specs = "[" + ",".join(pio.to_json(f, validate=False) for f in figures) + "]"
    done = subprocess.run([node, "-e", script, str(width)], input=specs, capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def _panels(layout: dict, data: list) -> dict[str, tuple[list, list]]:
    """x axis ref of each panel a trace is drawn on -> (x domain, y domain)."""
    out = {}
    for tr in data:
        x, y = tr.get("xaxis", "x"), tr.get("yaxis", "y")
        out[x] = (layout["xaxis" + x[1:]]["domain"], layout["yaxis" + y[1:]]["domain"])
    return out


def _stats_figure(weights, tokens):
    from attnviz.analysis.head_stats import STATS, head_stats

    return stats_heatmaps(head_stats(weights[None, :, :6, :6].repeat(2, 0), tokens[:6]), STATS)


def test_on_a_phone_head_statistics_take_two_panels_a_row_titles_and_bars_with_them(
        weights, tokens):
    fig = _stats_figure(weights, tokens)
    (res,) = _phone_shaped([fig], PHONE_FRAME)
    shaped, layout = res["figure"], res["figure"]["layout"]
    assert not res["same"] and not res["wide"]  # laid out again: no 760 px, no scrolling
    panels = _panels(layout, shaped["data"])
    assert len(panels) == 7
    columns = sorted({round(xd[0], 6) for xd, _ in panels.values()})
    rows = sorted({round(yd[1], 6) for _, yd in panels.values()}, reverse=True)
    assert len(columns) == 2 and len(rows) == 4  # two a row, in four rows
    boxes = list(panels.values())
    for i, (xa, ya) in enumerate(boxes):  # inside the figure, never on one another
        assert 0 <= xa[0] < xa[1] <= 1 and 0 <= ya[0] < ya[1] <= 1
        for xb, yb in boxes[i + 1:]:
            assert xa[1] <= xb[0] or xb[1] <= xa[0] or ya[1] <= yb[0] or yb[1] <= ya[0]
    # in their order, row by row: the first panel top left, entropy last (alone, row 4)
    order = sorted(panels, key=lambda r: (-panels[r][1][1], panels[r][0][0]))
    assert order == ["x"] + [f"x{i}" for i in range(2, 8)]
    # each subplot title centred over its own panel's top
    titles = [a for a in layout["annotations"] if a.get("yref") == "paper"]
    assert len(titles) == 7
    for note, ref in zip(titles, order, strict=True):
        xd, yd = panels[ref]
        assert note["x"] == pytest.approx((xd[0] + xd[1]) / 2) and note["y"] == yd[1]
    # each colour bar horizontal, under the last row of its own panels, within their width
    heat = [tr for tr in shaped["data"] if tr["type"] == "heatmap"]
    for axis in ("coloraxis", "coloraxis2"):
        bar = layout[axis]["colorbar"]
        mine = [panels[tr["xaxis"]] for tr in heat if tr.get("coloraxis") == axis]
        lowest = min(yd[0] for _, yd in mine)
        assert bar["orientation"] == "h" and bar["yanchor"] == "top" and bar["y"] < lowest
        below = [(xd, yd) for xd, yd in mine if yd[0] == lowest]
        x0, x1 = min(xd[0] for xd, _ in below), max(xd[1] for xd, _ in below)
        assert x0 <= bar["x"] - bar["len"] / 2 and bar["x"] + bar["len"] / 2 <= x1
    assert layout["height"] > fig.layout.height * 1.5  # grown by its rows


def test_on_a_phone_maps_side_by_side_stack_and_a_wide_frame_keeps_the_figure(
        weights, tokens):
    from attnviz.plotting.stats import maps_side_by_side

    w = weights[:3, :6, :6]
    fig = maps_side_by_side(list(w), ["weights", "norm shares", "norm shares, layer"],
                            tokens[:6])
    narrow, wide = _phone_shaped([fig, fig], PHONE_FRAME), _phone_shaped([fig], 900)
    layout = narrow[0]["figure"]["layout"]
    panels = _panels(layout, narrow[0]["figure"]["data"])
    assert {tuple(xd) for xd, _ in panels.values()} == {(0, 1)}  # one a row
    for i in (1, 2, 3):  # each map's own bar under it
        bar = layout["coloraxis" + (str(i) if i > 1 else "")]["colorbar"]
        yd = panels["x" + (str(i) if i > 1 else "")][1]
        assert bar["orientation"] == "h" and bar["y"] < yd[0]
        nxt = [p[1] for p in panels.values() if p[1][1] < yd[0]]
        assert all(bar["y"] > nd[1] for nd in nxt)  # above the next map
    assert wide[0]["same"] and wide[0]["wide"]  # a wide frame: as the server sent it


def test_on_a_phone_single_panels_and_the_heads_grid_stay_as_they_are(weights, tokens):
    one = attention_heatmap(weights[0, :6, :6], tokens[:6])
    grid = heads_grid(weights[:, :6, :6], tokens[:6])
    kept, shaped = _phone_shaped([one, grid], PHONE_FRAME)
    assert kept["same"]
    # the grid keeps its panels; titles too wide for them become the heads' numbers under a
    # heading (test_phone_measured)
    server, layout = grid.to_plotly_json()["layout"], shaped["figure"]["layout"]
    for key in ("xaxis", "yaxis", "height"):
        assert layout[key] == json.loads(json.dumps(server[key]))


def test_on_a_phone_a_long_title_is_broken_into_lines_that_fit():
    from attnviz.plotting.common import text_width

    title = "Layer 0, head 0: each mask (top) and the weights α it leaves (bottom)"
    fig = attention_heatmap(np.eye(6) / 1.0, ["[CLS]", "i", "saw", "a", "saw", "[SEP]"])
    fig.update_layout(title=title)
    (res,) = _phone_shaped([fig], PHONE_FRAME)
    text = res["figure"]["layout"]["title"]["text"]
    lines = text.split("<br>")
    assert len(lines) >= 2 and " ".join(lines) == title
    assert all(text_width(line, 16) < PHONE_FRAME for line in lines)
    assert res["figure"]["layout"]["margin"]["t"] > fig.layout.margin.t
