"""SVG export on a shared server (ui.figures.svg_bytes): kaleido starts a Chromium per call,
so the server draws one SVG at a time, draws each figure once (its bytes are cached under a
digest of the figure's JSON), and a request that cannot get its turn in time fails quickly
instead of piling up browsers. Checked with concurrent requests and a stand-in renderer that
records how many draw at once; one real kaleido export where a Chromium is installed."""

from __future__ import annotations

import threading
import time

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz.ui import figures
from attnviz.ui.cache import CACHES


class Renderer:
    """Stands in for kaleido: takes `seconds`, records calls and the most at once."""

    def __init__(self, seconds: float = 0.2) -> None:
        self.seconds, self.calls, self.now, self.most = seconds, 0, 0, 0
        self._lock = threading.Lock()

    def __call__(self, fig: go.Figure) -> bytes:
        with self._lock:
            self.calls += 1
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.seconds)
        with self._lock:
            self.now -= 1
        return f"<svg>{fig.layout.title.text}</svg>".encode()


def figure(title: str) -> go.Figure:
    return go.Figure(go.Heatmap(z=np.arange(6.0).reshape(2, 3)), layout={"title": title})


@pytest.fixture(autouse=True)
def empty_exports():
    CACHES["exports"].clear()
    yield
    CACHES["exports"].clear()


def run_together(calls) -> list:
    out = [None] * len(calls)
    threads = [threading.Thread(target=lambda i=i, c=c: out.__setitem__(i, c()))
               for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def test_six_requests_for_one_figure_draw_it_once():
    render = Renderer()
    fig = figure("same")
    got = run_together([lambda: figures.svg_bytes(fig, render)] * 6)
    assert render.calls == 1 and got == [b"<svg>same</svg>"] * 6
    assert figures.svg_bytes(figure("same"), render) == b"<svg>same</svg>"  # equal figure: cached
    assert render.calls == 1


def test_different_figures_are_drawn_one_at_a_time():
    render = Renderer(0.1)
    got = run_together([lambda i=i: figures.svg_bytes(figure(f"f{i}"), render)
                        for i in range(6)])
    assert render.calls == 6 and render.most == 1
    assert sorted(got) == sorted(f"<svg>f{i}</svg>".encode() for i in range(6))


def test_a_request_that_cannot_get_a_turn_fails_quickly():
    from attnviz import settings

    assert figures._EXPORT_SLOT.acquire(timeout=5)  # another export is running
    try:
        render = Renderer()
        with settings.override(export_wait_s=0.2), pytest.raises(figures.ExportBusy):
            figures.svg_bytes(figure("busy"), render)
        assert render.calls == 0
    finally:
        figures._EXPORT_SLOT.release()
    assert figures.svg_bytes(figure("busy"), Renderer()) == b"<svg>busy</svg>"  # then it works


def test_the_export_cache_is_bounded_by_bytes():
    cache = CACHES["exports"]
    render = lambda f: b"x" * (cache.max_size // 3)  # noqa: E731
    for i in range(5):
        figures.svg_bytes(figure(f"big{i}"), render)
    assert cache.total <= cache.max_size and len(cache) <= 3


@pytest.mark.slow
@pytest.mark.skipif(not figures.svg_export_available(), reason="no Chromium for kaleido")
def test_a_real_export_is_an_svg_of_the_figure():
    fig = figure("I saw a saw")
    svg = figures.svg_bytes(fig)
    assert svg.lstrip().startswith(b"<svg") and b"I saw a saw" in svg
    again = Renderer()
    assert figures.svg_bytes(fig, again) == svg and again.calls == 0  # second click: no browser


@pytest.mark.skipif(not figures.svg_export_available(), reason="no Chromium for kaleido")
def test_svg_has_the_figure_shape():
    """The SVG keeps the figure's on-screen shape (its height, a full-width chart's width)
    instead of kaleido's default 700 x 500."""
    import re

    fig = go.Figure(go.Heatmap(z=[[0.0, 1.0], [1.0, 0.0]]), layout=dict(height=333))
    svg = figures.render_svg(fig).decode()
    w, h = re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', svg).groups()
    assert (int(w), int(h)) == (figures.SVG_WIDTH, 333)
    fig.update_layout(width=640, height=None)
    svg = figures.svg_bytes(fig).decode()  # through the export slot and cache too
    assert re.search(r'<svg[^>]* width="640" height="(\d+)"', svg).group(1) == str(
        figures.SVG_HEIGHT)


def test_pandas_is_imported_whole_before_any_chart():
    """plotly finds pandas through sys.modules without importing it; a session drawing a chart
    while another thread is half-way through importing pandas crashed (seen under load).
    Importing the figures module must import pandas completely first."""
    import subprocess
    import sys

    code = ("import sys, attnviz.ui.figures; m = sys.modules.get('pandas'); "
            "print(m is not None and hasattr(m, 'Series') and hasattr(m, 'DataFrame'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_a_figure_is_summarised_once(monkeypatch):
    """A cached figure (the same object on every rerun) is read once; another figure, even an
    equal one, is read on its own; the entry goes with its figure."""
    import gc

    import plotly.graph_objects as go

    from attnviz.ui import figures

    calls = []
    real = figures.summarise
    monkeypatch.setattr(figures, "summarise", lambda fig: calls.append(fig) or real(fig))
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]), layout=dict(title="bars"))
    first = figures.figure_summary(fig)
    assert figures.figure_summary(fig) is first and len(calls) == 1
    other = go.Figure(fig)
    figures.figure_summary(other)
    assert len(calls) == 2
    key = id(other)
    del other
    calls.clear()
    gc.collect()
    assert key not in figures._SUMMARIES


def test_a_figures_title_and_accessible_name_are_read_once_per_language(monkeypatch):
    """What show_figure reads out of a figure on every rerun (its title, its accessible name)
    is read once per figure object and language; another figure is read on its own."""
    from attnviz import i18n

    calls = []
    real = figures.describe
    monkeypatch.setattr(figures, "describe", lambda fig: calls.append(fig) or real(fig))
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]), layout=dict(title="bars"))
    alt = figures.figure_alt(fig)
    assert figures.figure_alt(fig) == alt == real(fig) and len(calls) == 1
    assert figures.title_text(fig) == figures.title_text(fig) == "bars"
    with i18n.use("zh"):
        figures.figure_alt(fig)
    assert len(calls) == 2
    figures.figure_alt(go.Figure(fig))
    assert len(calls) == 3


def test_a_cached_figure_is_built_once_per_language_and_sized_by_its_dict():
    """ui.cached_figure builds a figure once per (language, key) and hands out the same object;
    the figure cache counts what the figure's dict holds."""
    from attnviz import i18n, plotting
    from attnviz.ui.cache import footprint

    w = np.random.default_rng(0).random((12, 5, 5))
    tokens = ["[CLS]", "i", "saw", "saw", "[SEP]"]
    built = []

    def build() -> go.Figure:
        built.append(i18n.language())
        return plotting.heads_grid(w, tokens, "weights", title="grid")

    key = ("test_cached_figure", float(w.sum()))
    CACHES["figures"].discard(("en", key))
    fig = figures.cached_figure(key, build)
    assert figures.cached_figure(key, build) is fig and built == ["en"]
    with i18n.use("zh"):
        assert figures.cached_figure(key, build) is not fig and built == ["en", "zh"]
    assert footprint(fig) == footprint(fig.to_dict()) > w[0].nbytes


def test_an_expander_without_a_key_is_named_by_its_title_once_per_run():
    """Two figures of one title in a run get two expander keys, the same in the next run."""
    from attnviz.ui import worklist

    worklist.new_run()
    first = [figures.numbers_key(None, "Weights"), figures.numbers_key(None, "Weights"),
             figures.numbers_key(None, "Scores"), figures.numbers_key("grid", "Weights")]
    assert first[0] != first[1] and first[1] == first[0] + "_2"
    assert first[2] != first[0] and first[3] == "numbers_grid"
    worklist.new_run()
    assert [figures.numbers_key(None, "Weights"), figures.numbers_key(None, "Weights"),
            figures.numbers_key(None, "Scores"), figures.numbers_key("grid", "Weights")] == first
