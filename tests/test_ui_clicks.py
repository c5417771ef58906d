"""A chart's click event is checked before a page reads it (ui.live_chart.points_of,
index_in, clicked_cell).

The event comes from the browser, so a raw client can send anything under "select": NaN,
strings, {}, a list nested 10,000 deep. Before the check, Head statistics, Value norms, Heads
across many sentences, Images and All heads read `int(points[0]["y"])` and raised. Here each
such payload gives no point (or a point without the bad field), a cell is read only when both
its row and column are whole numbers in range, and no page reads a point's fields unchecked.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.ui.live_chart import MAX_POINTS, index_in, points_of

ROOT = Path(__file__).resolve().parents[1]


def deep(n: int):
    out: list = []
    for _ in range(n):
        out = [out]
    return out


BAD_EVENTS = [None, float("nan"), "points", 7, [], {}, {"points": None}, {"points": "x"},
              {"points": {}}, {"points": deep(10_000)}, {"points": [None, "a", 3, []]},
              json.loads("[" * 900 + "]" * 900)]


@pytest.mark.parametrize("event", BAD_EVENTS, ids=range(len(BAD_EVENTS)))
def test_an_event_of_another_shape_has_no_points(event):
    assert points_of(event) == []


BAD_VALUES = [float("nan"), float("inf"), -1, 2.5, "2", "", [], {}, [2], {"y": 2}, None, True,
              deep(5000), 10**30, -0.0 - 1]


@pytest.mark.parametrize("value", BAD_VALUES, ids=range(len(BAD_VALUES)))
def test_a_bad_index_is_none(value):
    assert index_in(value, 6) is None


def test_good_indices_and_points():
    assert index_in(0, 6) == 0 and index_in(5.0, 6) == 5 and index_in(6, 6) is None
    point = {"x": 3, "y": 2.0, "z": 0.25, "curve_number": 0, "point_index": 17,
             "point_number": 17, "customdata": {"a": deep(50)}}
    assert points_of({"points": [point]}) == [
        {"x": 3, "y": 2.0, "z": 0.25, "curve_number": 0, "point_number": 17,
         "point_index": 17}]
    # Each bad field is left out; the point's good fields stay.
    mixed = {"x": float("nan"), "y": "layer 3 · query saw #2", "z": {}, "curve_number": -1,
             "point_index": "17", "point_number": math.inf}
    assert points_of({"points": [mixed]}) == [{"y": "layer 3 · query saw #2"}]
    assert points_of({"points": [{"y": "x" * 10_000}]}) == [{}]  # no category is this long
    assert len(points_of({"points": [point] * 10_000})) == MAX_POINTS


@pytest.mark.parametrize("event, cell", [
    ({"points": [{"x": 5, "y": 2}]}, (2, 5)),
    ({"points": [{"x": 5.0, "y": 2.0}]}, (2, 5)),
    ({"points": [{"x": 12, "y": 2}]}, None),  # no head 12
    ({"points": [{"x": "5", "y": 2}]}, None),
    ({"points": [{"x": float("nan"), "y": 2}]}, None),
    ({"points": [{}, {"x": 1, "y": 1}]}, (1, 1)),  # the first cell of the points
    ({"points": deep(3000)}, None),
    ({}, None),
    ("select", None),
])
def test_clicked_cell_reads_a_cell_or_nothing(event, cell):
    def page() -> None:
        import streamlit as st

        from attnviz.ui.live_chart import clicked_cell

        st.session_state["cell"] = clicked_cell("map", 6, 12)

    at = AppTest.from_function(page, default_timeout=30)
    at.session_state["live_map"] = {"select": event}
    at.run()
    assert not at.exception
    assert at.session_state["cell"] == cell


CLICK_PAGES = ["head_stats", "value_norms", "corpus_heads", "images", "explore"]


@pytest.mark.parametrize("name", CLICK_PAGES)
def test_every_page_reads_a_click_through_the_check(name):
    """The pages that take clicks read them with clicked_cell or index_in (after points_of):
    no `int(points[0]["y"])` or `points[0]["point_index"]` read unchecked."""
    code = (ROOT / "pages" / f"{name}.py").read_text(encoding="utf-8")
    assert 'selection_mode="points"' in code
    assert "clicked_cell(" in code or "index_in(" in code
    assert not re.search(r"int\(points|points\[0\]\[", code), name


@pytest.mark.parametrize("state, row", [
    ({"selection": {"rows": [7], "columns": []}}, 7),
    ({"selection": {"rows": [7.0]}}, 7),
    ({"selection": {"rows": []}}, None),
    ({"selection": {"rows": ["x"]}}, None),
    ({"selection": {"rows": [72]}}, None),  # 6 layers x 12 heads: rows 0-71
    ({"selection": {"rows": [-1]}}, None),
    ({"selection": {"rows": [float("nan")]}}, None),
    ({"selection": {"rows": {}}}, None),
    ({"selection": "rows"}, None),
    ({}, None),
    (None, None),
    ("select", None),
])
def test_a_tables_selected_row_is_a_row_or_nothing(state, row):
    """Head statistics' table: whatever selection state a client sent, a row of the table or
    nothing (never an exception)."""
    from attnviz.ui.live_chart import selected_row

    assert selected_row(state, 72) == row
