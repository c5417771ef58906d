"""Every figure shown with ui.show_figure carries its numbers as text: a collapsed
"Numbers in this figure" expander of tables (keyboard and screen reader), and the chart's
accessible name. A page may pass its own summary or none. Checked on a bare script and on the
default page, whose first table must name head 0's top keys as the trace has them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz.ui import figures
from tests.apptest import open_numbers, open_page
from tests.pages_list import existing_pages
from tests.plotly_json import specs

LABEL = "Numbers in this figure"


def script() -> None:
    import pandas as pd
    import plotly.graph_objects as go

    from attnviz.ui.figures import show_figure

    bars = go.Figure(go.Bar(x=["a", "b"], y=[1.0, 2.0]), layout=dict(title="two bars"))
    show_figure(bars, key="auto")
    show_figure(bars, key="none", summary=False)
    show_figure(bars, key="own", summary="**own** words")
    show_figure(bars, summary=pd.DataFrame({"label": ["a"], "value": [1.0]}))


def test_a_figure_gets_its_numbers_unless_the_page_says_otherwise():
    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception
    assert [e.label for e in at.expander] == [LABEL] * 3  # "none" opted out
    assert not at.table and not at.caption and not at.markdown  # closed: nothing made yet
    open_numbers(at)
    auto, own, frame = at.expander
    assert auto.table[0].value.to_dict() == {"value": {"a": "1", "b": "2"}}
    assert "two bars" in auto.caption[0].value
    assert own.markdown[0].value == "**own** words" and not own.table
    assert frame.table[0].value["value"].tolist() == [1.0]
    (chart, *_) = at.get("bidi_component")  # drawn in place (ui.live_chart)
    alt = json.loads(chart.proto.bytes.split(b"\n", 1)[0])["alt"]
    assert "two bars" in alt and "Bars" in alt


def test_the_default_page_lists_each_heads_top_keys(model):
    at = open_numbers(open_page(text="I saw a saw"))
    t = model.trace("I saw a saw")
    numbers = [e for e in at.expander if e.label == LABEL]
    assert numbers, [e.label for e in at.expander]
    first = numbers[0]
    assert first.markdown[0].value == "**head 0**"
    table = first.table[0].value  # layer 0, head 0: rows = queries
    labels = ["[CLS]", "i", "saw #2", "a", "saw #4", "[SEP]"]
    assert table.index.tolist() == labels
    w = np.asarray(t.weights[0, 0], dtype=np.float64)
    for r, label in enumerate(labels):
        top = np.argsort(-w[r], kind="stable")[:3]
        assert table.loc[label, ["top 1", "top 2", "top 3"]].tolist() == [labels[c] for c in top]
        got = table.loc[label, ["value 1", "value 2", "value 3"]].astype(float).to_numpy()
        np.testing.assert_allclose(got, w[r, top], rtol=5e-4)
    assert len(first.table) == 12  # one per head


@pytest.mark.parametrize("page", existing_pages())
def test_every_figure_of_every_page_has_its_numbers(page):
    """Each chart a page draws (on its first view) comes with a "Numbers in this figure"
    expander holding text, and no figure's numbers failed to be read."""
    figures.SUMMARY_FAILURES.clear()
    at = open_page(page, timeout=600, text="I saw a saw")
    charts = specs(at)  # Streamlit's charts and those drawn in place
    numbers = [e for e in at.expander if e.label == LABEL]
    assert len(numbers) == len(charts)
    open_numbers(at)
    assert len(specs(at)) == len(charts)
    numbers = [e for e in at.expander if e.label == LABEL]
    for e in numbers:
        assert e.proto.expanded and (e.caption or e.markdown or e.table)
    assert not figures.SUMMARY_FAILURES
