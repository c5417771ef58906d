"""ui.speedups and the cheaper figure bookkeeping beside it change no byte the browser gets:
the theme of a session's first message, a chart's JSON, a figure's title; and the figure
cache sizes a frozen figure as the figure and its JSON."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from streamlit import config
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime import app_session

from attnviz import plotting
from attnviz.plotting import common
from attnviz.ui import figures, speedups
from attnviz.ui.cache import footprint

TOKENS = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
SECTIONS = ["theme", "theme.light", "theme.dark", "theme.sidebar", "theme.light.sidebar",
            "theme.dark.sidebar"]


@pytest.fixture(params=[False, True], ids=["lean", "validated"])
def built(request, monkeypatch):
    """Figures built as the server builds them (plotting.common's lean figures, unvalidated)
    and as the other tests do (validated by plotly)."""
    monkeypatch.setattr(common, "VALIDATE", request.param)
    return request.param


@pytest.fixture
def undone():
    speedups.undo()
    yield
    speedups.undo()


def themes() -> list[bytes]:
    """What a new_session message carries for each theme section."""
    out = []
    for section in SECTIONS:
        msg = ForwardMsg()
        app_session._populate_theme_msg(msg.new_session.custom_theme, section)
        out.append(msg.SerializeToString())
    return out


def some_figures() -> list[go.Figure]:
    w = np.random.default_rng(0).random((12, 6, 6))
    return [plotting.heads_grid(w, TOKENS, "weights", title="grid"),
            plotting.heads_grid(w[:2], TOKENS, "scores", title="两个头"),
            go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], uid="kept"), layout={"title": "plain"}),
            go.Figure(go.Bar(y=[1, 2]))]


def test_theme_answers_are_kept_and_equal(undone, monkeypatch):
    config.get_config_options()
    before = config.get_option("theme.primaryColor")
    try:
        config.set_option("theme.primaryColor", "#123456")
        want = themes()
        scans = []
        original = config.get_options_for_section
        monkeypatch.setattr(config, "get_options_for_section",
                            lambda s: scans.append(s) or original(s))
        speedups.theme_once()
        assert themes() == want and themes() == want  # the same bytes, read once a section
        assert scans == SECTIONS
        got = config.get_options_for_section("theme")
        got["primaryColor"] = "changed"  # each call gets its own copy
        assert config.get_options_for_section("theme")["primaryColor"] == "#123456"
        assert config.get_options_for_section("server") == original("server")  # not kept
        assert scans.count("server") == 1  # passed through, every time
        # An option set (a test's, a re-parse's) or a new table: the theme is read again.
        config.set_option("theme.primaryColor", "#654321")
        assert config.get_options_for_section("theme")["primaryColor"] == "#654321"
        assert themes() != want
        assert scans.count("theme") == 2
        table = dict(config._config_options)
        monkeypatch.setattr(config, "_config_options", table)
        config.get_options_for_section("theme")
        assert scans.count("theme") == 3
    finally:
        speedups.undo()  # before monkeypatch puts Streamlit's own function back
        config.set_option("theme.primaryColor", before)


def test_a_frozen_figure_sends_plotlys_own_json(undone, built):
    import plotly.tools as tools

    for fig, twin in zip(some_figures(), some_figures(), strict=True):  # twin: never frozen
        plain = pio.to_json(fig.to_dict(), validate=False)
        whole = fig.to_dict()
        frozen = figures.frozen(fig)
        assert frozen.to_dict() == whole  # the figure is Plotly's as before: a new dict
        # st.plotly_chart's call gets the stand-in, and its JSON (kept, not made again).
        d = tools.return_figure_from_figure_or_data(frozen, validate_figure=True)
        assert type(d) is speedups.ChartStandIn
        assert set(d) == {"layout"} and set(d["layout"]) <= {"width", "height"}
        assert d["layout"].get("height") == whole["layout"].get("height")
        assert pio.to_json(d, validate=False) is d.json
        assert d.json == plain == speedups.chart_json(frozen)
        # Any other call is Plotly's: plotly.offline's (positional), another argument.
        for args, kwargs in ((True,), {}), ((), dict(validate_figure=False)):
            assert tools.return_figure_from_figure_or_data(frozen, *args, **kwargs) == whole
        original = speedups.plotly_to_json()
        assert original is not pio.to_json
        for kwargs in (dict(validate=True), dict(validate=False, pretty=True),
                       dict(validate=False, engine="json"),
                       dict(validate=False, remove_uids=False)):
            assert pio.to_json(frozen, **kwargs) == original(twin, **kwargs)
        assert pio.to_json(frozen, validate=False) == plain
        assert json.loads(plain) == json.loads(original(fig, validate=False))
    # Figures that were not frozen: Plotly's answers, kept nowhere.
    fig = some_figures()[0]
    assert tools.return_figure_from_figure_or_data(fig, validate_figure=True) == fig.to_dict()
    assert speedups.chart_json(fig) == pio.to_json(fig, validate=False)
    assert speedups.wire(fig) is None and speedups.wire({"data": []}) is None


def test_the_chart_element_is_unchanged(undone, built):
    from streamlit.testing.v1 import AppTest

    def script(figs) -> None:
        import streamlit as st

        for i, fig in enumerate(figs):
            st.plotly_chart(fig, key=f"chart{i}")

    specs = []
    for wrap in (lambda f: f, figures.frozen):
        figs = [wrap(f) for f in some_figures()]
        charts = AppTest.from_function(script, args=(figs,)).run().get("plotly_chart")
        specs.append([c.proto.SerializeToString() for c in charts])
    assert specs[0] == specs[1]  # the spec, the id, the size: every byte


def test_title_text_reads_the_layouts_own_dict(built):
    cases = [go.Figure(layout={"title": "a title"}), go.Figure(layout={"title": {"text": "t"}}),
             go.Figure(layout={"title": {"font": {"size": 9}}}), go.Figure(),
             common.figure(data=[], layout={"title": "lean"}), common.figure(data=[]),
             *some_figures()]
    for fig in cases:
        assert figures.title_text(fig) == fig.layout.title.text
        assert figures.file_stem(fig, "k").startswith("attnviz_")


def test_footprint_of_a_frozen_figure_and_its_template(monkeypatch):
    monkeypatch.setattr(common, "VALIDATE", False)  # the server's figures
    fig = some_figures()[0]
    own = footprint(fig._data) + footprint(fig._layout)
    frozen = figures.frozen(fig)
    # The figure and its JSON (base64 arrays: ~4/3 of their bytes), no second copy of it.
    assert footprint(frozen) == own + 50 + len(speedups.chart_json(frozen))
    template = fig._layout["template"]
    assert type(template) is common.Template
    assert footprint(template) == footprint(json.loads(json.dumps(template)))
    other = common._default_template(pio.templates.default)
    assert other is not template and other.source is template.source
    assert footprint(other) == footprint(template)

