"""A table too wide for a phone (the lesson's sweep table): ui.render draws it whole for a
laptop and, for a phone, one column at a time beside the rows' names (the page's width picks
one by a CSS media query of ui.style's phone style)."""

import numpy as np
import pytest

from attnviz.views.lesson import WIDE, ColumnsTable, sweep_table

pytestmark = pytest.mark.apptest


class _Sweeps:  # what sweep_table reads of taggers.Sweeps
    sizes = (100, 400, 1600)
    names = ("attention_pos", WIDE)

    def gaps(self, name):
        return np.array([[0.2, 0.1, 0.05], [0.3, 0.12, 0.04]]) * (2 if name == WIDE else 1)


def _draw(table) -> None:
    from attnviz.ui.render import render

    render(table)


def test_the_sweep_table_turns_on_a_phone_and_stays_whole_on_a_laptop():
    from streamlit.testing.v1 import AppTest

    table = sweep_table(_Sweeps())
    assert isinstance(table, ColumnsTable) and table.phone_by_column
    headers = list(table.columns)
    assert len(headers) == 4 and headers[3].startswith("1600")
    at = AppTest.from_function(_draw, args=(table,)).run(timeout=30)
    assert not at.exception
    *turned, whole = [f.value for f in at.dataframe]
    assert list(whole.columns) == headers  # the laptop's table, as it was
    assert len(turned) == 3  # the phone's: one per training size, beside the taggers
    for frame, header in zip(turned, headers[1:], strict=True):
        assert list(frame.columns) == [headers[0], header]
        assert list(frame[header]) == list(table.columns[header])
        assert list(frame[headers[0]]) == list(table.columns[headers[0]])
    # every page's phone style (ui.style, applied by the router) shows one of the two
    from attnviz.ui import style

    rules = style.STYLES["phone"]
    assert '@media (max-width: 640px) {[class*="st-key-attnviz_table_whole_"] {display: none;}}' \
        in rules
    assert '@media (min-width: 641px) {[class*="st-key-attnviz_table_columns_"] ' \
        '{display: none;}}' in rules
    assert not at.get("html")  # no markup of its own


def test_a_plain_table_stays_one_table():
    from streamlit.testing.v1 import AppTest

    from attnviz.export.html import Table

    at = AppTest.from_function(_draw, args=(Table({"a": [1], "b": [2], "c": [3]}),)).run()
    assert len(at.dataframe) == 1 and not at.get("html")
