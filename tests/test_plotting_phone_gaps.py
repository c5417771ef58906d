"""Panels that each name their own rows, laid out again on a 390 px phone (ui.phone_layout's
phoneShaped under Node): the gap between two panels of a row, and the left margin, hold the
widest row name, so no name lies on the panel to its left (ablation's later layers' maps at
~100 tokens: two a row 36 px apart put the second panel's names on the first)."""

from __future__ import annotations

from attnviz.plotting import ablation
from attnviz.plotting.common import FONT
from tests.test_plotting_ablation import PARAGRAPH, _later_maps
from tests.test_plotting_screens import PHONE_FRAME, _panels, _phone_shaped


def _row_gaps(layout: dict, data: list) -> tuple[list[float], float]:
    """(the px between each two neighbouring panels of a row, the plot area's width in px)
    of a shaped figure in a PHONE_FRAME px frame."""
    m = layout["margin"]
    plot = PHONE_FRAME - m["l"] - m["r"]
    rows: dict[float, list] = {}
    for xd, yd in _panels(layout, data).values():
        rows.setdefault(round(yd[1], 6), []).append(xd)
    gaps = []
    for row in rows.values():
        row.sort()
        gaps += [(b[0] - a[1]) * plot for a, b in zip(row, row[1:], strict=False)]
    return gaps, plot


def test_on_a_phone_panels_naming_their_rows_leave_room_for_the_names(model):
    long = model.trace(PARAGRAPH).tokens
    short = model.trace("I saw a saw").tokens
    figs = [ablation.weight_diffs(_later_maps(len(tok), range(1, 6)), tok, None)
            for tok in (long, short)]
    for fig, res in zip(figs, _phone_shaped(figs, PHONE_FRAME), strict=True):
        layout, data = res["figure"]["layout"], res["figure"]["data"]
        assert not res["same"] and not res["wide"]  # laid out again, nothing scrolls
        # the widest row name at 0.56 em a character (Arial's letters and digits: 0.22-0.83)
        names = max(len(t) for t in fig.layout.yaxis.ticktext) * 0.56 * FONT["size"]
        gaps, plot = _row_gaps(layout, data)
        assert all(g >= names + 8 for g in gaps), (gaps, names)
        assert layout["margin"]["l"] >= names + 8  # the first column's names
        panels = _panels(layout, data)
        assert len(panels) == 5
        for xd, _yd in panels.values():  # each panel as wide as a phone shows a map
            assert (xd[1] - xd[0]) * plot >= 140 and 0 <= xd[0] < xd[1] <= 1
        for k in ["", *range(2, 6)]:  # every panel keeps its names
            assert layout[f"yaxis{k}"].get("showticklabels") is not False
