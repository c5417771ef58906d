"""Figures of ablation and patching (attnviz.plotting.ablation), checked on their JSON."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.plotting import ablation
from tests.colours import contrast, luminance


def test_patching_map_keeps_repeated_tokens_apart_and_its_bar_title_beside_the_bar():
    restored = np.array([[1.0, 0.2, -0.1, 0.9], [0.5, 0.0, 0.3, 1.0]])
    tokens = ["i", "saw", "a", "saw"]
    fig = ablation.residual_map(restored, tokens, ["i", "saw", "the", "saw"])
    heat = fig.data[0]
    np.testing.assert_array_equal(heat.z, restored)
    assert len(set(heat.x)) == 4  # the two saws are two columns
    assert "a / the" in fig.layout.xaxis.ticktext[2]  # what the corrupted sentence had there
    # a title on top of a vertical bar ran into its top tick label ('1') at 390 px
    assert heat.colorbar.title.text == "restored" and heat.colorbar.title.side == "right"


def test_weight_change_map_reads_on_a_dark_page():
    """'How much each head's weights change' (a size >= 0): on the dark theme's page (the
    figure as live_chart.for_theme draws it there) its unchanged layers (0) are not white slabs,
    and its largest change stands out from the page as on a white one."""
    from attnviz.plotting.common import for_dark_background

    effect = np.zeros((6, 12))
    effect[3:, :] = np.linspace(0.0, 0.02, 36).reshape(3, 12)  # layers 0-2 unchanged
    fig = ablation.head_map(effect, "t", "change", selected=(2, 4), signed=False)
    dark = for_dark_background(fig).data[0]
    scale = [c for _v, c in dark.colorscale]
    zero, top = scale[0], scale[-1]
    assert dark.zmin == 0.0 and dark.zmax == 0.02
    dark_page, white_page = "#0E1117", "#FFFFFF"  # Streamlit's dark and light backgrounds
    assert luminance(zero) < 0.1, zero  # 0 reads as "nothing" on the dark page, no slab
    assert contrast(top, dark_page) > 7 and contrast(zero, white_page) > 7, (zero, top)


# About 100 tokens (the case): a paragraph whose word pieces make long row labels.
PARAGRAPH = ("I saw a saw in the workshop yesterday afternoon, and the carpenter explained the "
             "evaluation of every blade: its teeth, its handle, its weight, and the way it cuts "
             "through oak, pine and birch. Then she showed me how attention in a transformer "
             "weighs every word against every other word, row by row, before the values are "
             "mixed into new vectors that the next layer reads again and again, until the last "
             "layer hands its vectors to the classifier.")
PLOT_WIDTH = 820 - 20 - 70  # px: PAGE_WIDTH less the margins and the vertical colour bar


def _later_maps(n: int, layers: range, seed: int = 0) -> list[tuple[int, np.ndarray]]:
    rng = np.random.default_rng(seed)
    maps = []
    for layer in layers:
        m = rng.normal(0.0, 0.004, (n, n))
        maps.append((layer, m - m.mean(axis=1, keepdims=True)))  # rows sum to 0
    return maps


def test_later_layers_name_their_rows_in_every_panel_with_room_between_panels(model):
    """At ~100 tokens every panel of the later layers' difference maps names its rows (a
    phone lays the panels out again two to a row: a panel second in its row may be first
    there), and the gap between two panels of a row holds the longest row label on a 1280 px
    page: the labels never lie on the map to their left."""
    from attnviz.plotting.common import TICK_PAD, text_width

    tokens = model.trace(PARAGRAPH).tokens
    assert 90 <= len(tokens) <= 110, len(tokens)
    fig = ablation.weight_diffs(_later_maps(len(tokens), range(1, 6)), tokens, None)
    panels = [(fig.layout[f"xaxis{k or ''}"], fig.layout[f"yaxis{k or ''}"])
              for k in ["", *range(2, 6)]]
    longest = max(text_width(t) for t in panels[0][1].ticktext)
    for k, (_x, y) in enumerate(panels):
        assert y.showticklabels is not False and len(y.ticktext) >= 4, k
    rows: dict[float, list] = {}
    for x, y in panels:
        rows.setdefault(round(y.domain[0], 6), []).append(tuple(x.domain))
    assert sorted(len(r) for r in rows.values()) == [2, 3]
    for row in rows.values():
        row.sort()
        for left, right in zip(row, row[1:], strict=False):
            gap = (right[0] - left[1]) * PLOT_WIDTH
            assert gap >= longest + TICK_PAD, (gap, longest)


def test_later_layers_colour_bar_numbers_stay_upright_on_a_phone(model):
    """The shared colour bar of the later layers' maps: its numbers are written across
    (tickangle 0) and fit the shortest bar a phone draws (phone_layout.js: a horizontal bar
    under the last row of panels, 0.9 of that row's width; on a 390 px phone, about 358 px of
    frame, two panels a row, the last row one panel), so Plotly has no reason to turn them
    sideways; three of them: -top, 0, top, the ends the scale's true ends."""
    from attnviz.plotting.common import text_width

    tokens = model.trace(PARAGRAPH).tokens
    maps = _later_maps(len(tokens), range(1, 6))
    top = max(float(np.abs(m).max()) for _l, m in maps)
    bar = ablation.weight_diffs(maps, tokens, 3).layout.coloraxis.colorbar
    assert bar.tickangle == 0 and bar.tickvals is not None, bar  # not left to Plotly
    assert list(bar.tickvals) == [-top, 0.0, top]
    assert [float(t) for t in bar.ticktext] == pytest.approx([-top, 0.0, top], rel=0.05)
    shortest = 0.9 * 0.45 * 358  # px: one panel of two, 0.9 of it
    assert sum(text_width(t) for t in bar.ticktext) + 2 * 12 <= shortest, bar.ticktext


def test_later_layers_labels_thinned_to_what_a_panel_holds(model):
    """At ~100 tokens a panel of the later layers' maps is about 106 x 290 px on a 1280 px
    page: it names as many rows as lines of FONT fit down it and as many keys as slanted
    labels fit across it (40 rows and 16 keys lay on one another there); "I saw a saw" keeps
    every label."""
    tokens = model.trace(PARAGRAPH).tokens
    fig = ablation.weight_diffs(_later_maps(len(tokens), range(1, 6)), tokens, None)
    x, y = fig.layout.xaxis, fig.layout.yaxis
    tall = (y.domain[1] - y.domain[0]) * (fig.layout.height - 80)  # px, margins t + b
    wide = (x.domain[1] - x.domain[0]) * ablation.PANELS_WIDTH
    assert 4 <= len(y.ticktext) and len(y.ticktext) * 16 <= tall, (len(y.ticktext), tall)
    assert 3 <= len(x.ticktext) and len(x.ticktext) * 20 <= wide, (len(x.ticktext), wide)
    short = model.trace("I saw a saw").tokens
    fig = ablation.weight_diffs(_later_maps(len(short), range(1, 6)), short, None)
    assert list(fig.layout.yaxis.ticktext) == list(fig.layout.xaxis.ticktext) == [
        "[CLS]", "i", "saw #2", "a", "saw #4", "[SEP]"]
