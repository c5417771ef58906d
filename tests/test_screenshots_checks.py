"""The checks `make screenshots` runs on what it reads from each page (scripts/screenshots.py),
given made-up rectangles: labels on one another (rotated ones as rotated boxes), content past
the window's right edge, an empty table cell (of a data grid too, read as it scrolls), a
colour bar beside the wrong panel, a lesson step taller than its window; and the report they
make."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def shots():
    spec = importlib.util.spec_from_file_location("screenshots",
                                                  ROOT / "scripts" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["screenshots"] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def box(l, t, r, b):  # noqa: E741 - left, top, right, bottom
    return [[l, t], [r, t], [r, b], [l, b]]


def rotated(cx, cy, w, h, degrees):
    """A w x h label centred at (cx, cy), turned by `degrees`."""
    a = math.radians(degrees)
    return [[cx + x * math.cos(a) - y * math.sin(a), cy + x * math.sin(a) + y * math.cos(a)]
            for x, y in ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))]


def label(text, corners):
    return {"text": text, "corners": corners}


def test_labels_on_one_another_are_found_and_touching_ones_are_not(shots):
    apart = {"name": "A", "labels": [label("saw #2", box(0, 0, 40, 14)),
                                     label("saw #4", box(41, 0, 80, 14)),
                                     label("a", box(80.5, 0, 90, 14))]}  # touching: fine
    assert shots.overlapping_labels(apart) == []
    on = {"name": "B", "labels": [label("weight on [CLS]", box(0, 0, 110, 16)),
                                  label("weight on [SEP]", box(90, 2, 200, 18))]}
    (hit,) = shots.overlapping_labels(on)
    assert hit.startswith("B: labels overlap") and "weight on [SEP]" in hit


def test_slanted_labels_side_by_side_are_not_called_overlapping(shots):
    # -45 degree tick labels 20 px apart: their upright bounding boxes overlap, they do not
    lab = [label(f"t{i}", rotated(20 * i, 0, 60, 12, -45)) for i in range(4)]
    assert shots.overlapping_labels({"name": "x", "labels": lab}) == []
    crowded = [label(f"t{i}", rotated(6 * i, 0, 60, 12, -45)) for i in range(4)]
    (hit,) = shots.overlapping_labels({"name": "x", "labels": crowded}, limit=2)
    assert "and 3 more" in hit  # five pairs within a line height (12 px) of each other


def test_content_past_the_right_edge_outside_a_scrolling_frame(shots):
    items = [{"what": "svg text: Layers x heads", "right": 558, "scrolls": False},
             {"what": "stTable", "right": 700, "scrolls": True},  # its frame scrolls
             {"what": "div", "right": 390.5, "scrolls": False}]  # within a pixel
    (hit,) = shots.past_right_edge(items, 390)
    assert hit == "past the right edge by 168 px: svg text: Layers x heads"


def test_an_empty_table_cell_is_named_by_its_row_and_column(shots):
    table = {"name": "stTable 1", "head": 1,
             "rows": [["", "tag", "word"], ["saw #2", "VERB", "saw"], ["saw #4", "", "saw"]]}
    assert shots.empty_cells(table) == [
        "stTable 1: empty cell in row 'saw #4', column 'tag'"]  # the index corner may be empty
    assert shots.empty_cells({"name": "t", "head": 0, "rows": [["a", "b"]]}) == []


def test_a_data_grids_empty_cell_is_found_wherever_the_grid_was_scrolled_to(shots):
    # st.dataframe's cells as read at two scroll stops (rows 1-4, then 3-6, overlapping); the
    # header is row 1; an empty cell on the second stop only, a cell never read
    first = [[1, 1, "word"], [1, 2, "tag"], [2, 1, "i"], [2, 2, "PRON"], [3, 1, "saw #2"],
             [3, 2, "VERB"], [4, 1, "a"], [4, 2, "DET"]]
    second = [[3, 1, "saw #2"], [3, 2, "VERB"], [4, 1, "a"], [4, 2, "DET"], [5, 1, "saw #4"],
              [5, 2, ""], [6, 1, "."]]
    grid = {"name": "stDataFrame 1", "head": 1, "rows": 6, "cols": 2, "cells": first + second}
    table = shots.grid_table(grid)
    assert table["rows"][4] == ["saw #4", ""] and table["rows"][5] == [".", None]
    assert shots.empty_cells(table) == [
        "stDataFrame 1: empty cell in row 'saw #4', column 'tag'"]  # the unread one is not
    assert shots.unread_cells(grid) == ["stDataFrame 1: 1 of 12 cells could not be read"]
    found = {"charts": [], "past": [], "tables": [], "width": 1280, "grids": [grid]}
    assert shots.defects(found) == shots.empty_cells(table) + shots.unread_cells(grid)
    whole = {**grid, "cells": [[r, c, t or "NOUN"] for r, c, t in first + second]
             + [[6, 2, "PUNCT"]]}  # every cell read, none empty
    assert shots.defects({**found, "grids": [whole]}) == []


def test_a_colour_bar_beside_a_panel_it_does_not_serve(shots):
    panels = {"xy": {"l": 0, "t": 0, "r": 100, "b": 100},
              "x2y2": {"l": 140, "t": 0, "r": 240, "b": 100},
              "x3y3": {"l": 280, "t": 0, "r": 380, "b": 100}}
    right = {"name": "heads", "panels": panels, "bars": [
        {"name": "coloraxis", "rect": {"l": 244, "t": 0, "r": 256, "b": 100},
         "serves": ["xy", "x2y2"]},
        {"name": "coloraxis2", "rect": {"l": 384, "t": 0, "r": 396, "b": 100},
         "serves": ["x3y3"]}]}
    assert shots.misplaced_colour_bars(right) == []
    # entropy's bar beside the share panels and the share bar beside entropy's: both wrong
    swapped = {"name": "heads", "panels": panels, "bars": [
        {"name": "coloraxis", "rect": {"l": 384, "t": 0, "r": 396, "b": 100},
         "serves": ["xy", "x2y2"]},
        {"name": "coloraxis2", "rect": {"l": 244, "t": 0, "r": 256, "b": 100},
         "serves": ["x3y3"]}]}
    found = shots.misplaced_colour_bars(swapped)
    assert len(found) == 2 and "by panel x3y3" in found[0] and "by panel x2y2" in found[1]
    # below: a horizontal bar under its own panel of a stacked figure, not under the next
    stacked = {"name": "s", "panels": {"xy": {"l": 0, "t": 0, "r": 300, "b": 200},
                                       "x2y2": {"l": 0, "t": 330, "r": 300, "b": 530}},
               "bars": [{"name": "coloraxis", "rect": {"l": 20, "t": 250, "r": 280, "b": 260},
                         "serves": ["xy"]}]}
    assert shots.misplaced_colour_bars(stacked) == []
    stacked["bars"][0]["rect"] = {"l": 20, "t": 300, "r": 280, "b": 310}
    assert shots.misplaced_colour_bars(stacked)


def test_a_step_taller_than_its_window(shots):
    assert shots.too_tall(943, 720, "presentation mode") == [
        "presentation mode: page 943 px tall in a 720 px window"]
    assert shots.too_tall(720, 720, "presentation mode") == []


def test_the_report_lists_each_defect_with_page_size_and_language(shots, tmp_path):
    found = {"charts": [{"name": "Head statistics", "labels": [
        label("share", box(0, 0, 40, 14)), label("entropy", box(20, 0, 70, 14))],
        "bars": [], "panels": {}}],
        "past": [{"what": "table", "right": 500, "scrolls": False}],
        "tables": [{"name": "stTable 1", "head": 1, "rows": [["", "a"], ["x", ""]]}],
        "width": 390}
    problems = shots.defects(found)
    assert len(problems) == 3
    rows = [{"size": "390x844", "theme": "dark", "lang": "zh", "page": "head_stats",
             "defect": p} for p in problems]
    shots.write_report(tmp_path, rows, [("1280x720", "en", 6, 943, ["too tall"])])
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| head_stats | 390x844 | dark | zh | Head statistics: labels overlap" in md
    assert "| 6 | 943 |" in md
    data = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert data["defects"] == rows and data["lesson_steps"][0]["height"] == 943
