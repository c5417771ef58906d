"""ui.live_chart, the chart redrawn in place: what the browser gets is the figure's exact JSON
(as st.plotly_chart would send it), the Plotly.js it uses is the one Streamlit ships and
announces on `window`, show_figure uses it only where asked (and falls back to st.plotly_chart
where it cannot), and "Download this view (HTML)" records its figure like any other.
The browser side (drawn, redrawn in place, hover, toolbar) is checked in
tests/e2e/test_e2e_explore.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import streamlit
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from attnviz.export import html as export
from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.ui import figures, live_chart, recorder
from tests.apptest import open_page
from tests.plotly_json import decode, specs

TOKENS = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]


@pytest.fixture
def heatmap() -> go.Figure:
    w = np.random.default_rng(0).random((6, 6)).astype(np.float32)
    return attention_heatmap(w / w.sum(1, keepdims=True), TOKENS, "weights", "Layer 1, head 2")


def test_plotly_is_the_copy_streamlit_ships_and_it_sets_window_plotly():
    found = live_chart.plotly_module()
    assert found and found.startswith("static/js/PlotlyChart.") and found.endswith(".js")
    path = Path(streamlit.__file__).parent / "static" / found
    assert path.is_file()
    # The component's JS waits for this global; the module sets it when it is evaluated.
    assert "window.Plotly=" in path.read_text(encoding="utf-8")
    assert live_chart.available()


def test_the_payload_holds_the_figure_exactly(heatmap):
    config = {**figures.PLOT_CONFIG, "responsive": True}
    data = live_chart.payload(heatmap, config, "a heatmap's text")
    got = json.loads(data)
    assert got["figure"] == json.loads(pio.to_json(heatmap, validate=False))
    assert got["config"] == config and got["alt"] == "a heatmap's text"
    assert got["plotly"] == live_chart.plotly_module()
    np.testing.assert_array_equal(decode(got["figure"]["data"][0]["z"]), heatmap.data[0].z)
    assert got["figure"]["data"][0]["x"] == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4",
                                             "[SEP] #5"]  # two distinct saws
    spec, cfg = live_chart.spec_of(data)
    assert json.loads(spec) == got["figure"] and cfg == config
    assert live_chart.spec_of(b"not json") is None and live_chart.spec_of(b"{}") is None


def _live_msg(name: str, data: bytes, path=(0, 3)) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = list(path)
    msg.delta.new_element.bidi_component.component_name = name
    msg.delta.new_element.bidi_component.bytes = data
    return msg


def test_the_view_recorder_keeps_a_live_charts_figure(heatmap):
    data = live_chart.payload(heatmap, figures.PLOT_CONFIG, None)
    [block] = recorder.blocks_of(_live_msg(live_chart.NAME, data))
    assert block == recorder.LiveFigure(data)  # kept as sent; decoded when a file is made
    assert recorder.size_of(block) == len(data)
    rec = recorder.Recorded("t")
    rec.add(block)
    rec.add(recorder.LiveFigure(b"broken"))  # a payload that cannot be read is left out
    [figure] = rec.view().blocks
    assert isinstance(figure, export.Figure) and figure.app_template
    assert json.loads(figure.spec) == json.loads(pio.to_json(heatmap, validate=False))
    assert recorder.blocks_of(_live_msg("someone_elses", data)) == []
    assert recorder.blocks_of(_live_msg(live_chart.NAME, data, path=(1, 0))) == []  # sidebar


def test_show_figure_draws_in_place_only_where_asked(monkeypatch, heatmap):
    drawn = []
    monkeypatch.setattr(live_chart, "live_chart", lambda *a, **k: drawn.append(a))
    monkeypatch.setattr(figures.st, "plotly_chart", lambda *a, **k: drawn.append("streamlit"))
    monkeypatch.setattr(figures, "show_numbers", lambda *a, **k: None)
    monkeypatch.setattr(figures, "svg_export_available", lambda: False)
    figures.show_figure(heatmap, key="one", in_place=True)
    fig, key, config, alt = drawn.pop()
    assert fig is heatmap and key == "one" and alt
    assert config["toImageButtonOptions"] == {"format": "png", "scale": 2,
                                              "filename": "attnviz_layer_1_head_2"}
    figures.show_figure(heatmap, key="one")  # not asked
    figures.show_figure(heatmap, key="one", in_place=True, on_select="rerun")  # selections
    figures.show_figure(heatmap, in_place=True)  # no key: nothing to keep it under
    monkeypatch.setattr(live_chart, "available", lambda: False)  # e.g. another Streamlit
    figures.show_figure(heatmap, key="one", in_place=True)
    assert drawn == ["streamlit"] * 4


def test_the_explore_page_draws_its_open_head_and_lines_in_place():
    at = open_page("pages/explore.py", timeout=180)
    el, lines = at.get("bidi_component")  # the open head and its token lines
    assert el.proto.component_name == live_chart.NAME and el.proto.id.endswith("live_ex_one")
    assert lines.proto.id.endswith("live_ex_lines")
    spec, config = live_chart.spec_of(el.proto.bytes)
    assert json.loads(spec)["layout"]["title"]["text"] == "Layer 0, head 0"
    assert config["toImageButtonOptions"]["filename"] == "attnviz_layer_0_head_0"
    first_id = el.proto.id
    # "Download this view (HTML)" holds the page's three figures, the live ones included.
    doc = recorder.html_of(at.session_state[recorder.STATE_KEY])
    found = [json.loads(m)["figure"] for m in re.findall(
        r'<script type="application/json" class="attnviz-figure">(.*?)</script>', doc, re.S)]
    shown = [json.loads(spec) for spec in specs(at)]
    for fig in shown:
        fig["layout"].pop("template", None)
    assert len(found) == 3 and found == shown
    at.button_group(key="ex_head").set_value(7).run()
    el, _ = at.get("bidi_component")
    # The same element (its id comes from the key alone), holding the new head.
    assert el.proto.id == first_id
    assert json.loads(live_chart.spec_of(el.proto.bytes)[0])["layout"]["title"]["text"] == \
        "Layer 0, head 7"
