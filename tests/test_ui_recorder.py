""""Download this view (HTML)": every page offers it, and the file holds what the page drew
(its headings, text, tables, figures and numbers, in order) with typed text shown literally.

`screen_and_file(at)` reads both sides of a page run in AppTest: what the main area shows
(widgets left out) and what the recorded view holds; the page tests call
`assert_file_holds_the_screen` on their own runs."""

from __future__ import annotations

import json
import re
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from attnviz import settings
from attnviz.export import html as export
from attnviz.ui import recorder
from tests.apptest import open_page
from tests.plotly_json import charts

HOSTILE = "<script>alert(1)</script> $x$ **b**"
LABEL = "Download this view (HTML)"
_TEXT = {"title", "header", "subheader", "markdown", "caption", "info", "warning", "error",
         "success"}
_LEVELS = {1: "title", 2: "header"}


def _without_template(spec: str) -> dict:
    fig = json.loads(spec)
    fig["layout"].pop("template", None)
    return fig


def _screen(node, out: list) -> list:
    """What the main area shows, in page order: (kind, what) for text, tables, metrics,
    charts and the numbers' download buttons; widgets left out."""
    children = getattr(node, "children", {}) or {}
    for i in sorted(children):
        c = children[i]
        kind = getattr(c, "type", None)
        if kind in _TEXT:
            out.append((kind, c.value))
        elif kind == "metric":
            out.append(("metric", (c.label, c.value)))
        elif kind == "code":
            out.append(("code", c.value))
        elif kind == "dataframe":
            out.append(("table", {k: list(v) for k, v in c.value.items()}))
        elif kind == "plotly_chart" or (kind == "bidi_component"):
            out.append(("figure", None))  # compared by `charts` (both kinds of chart)
        elif kind == "download_button":
            out.append(("numbers", c.label))
        if not (kind == "expander" and c.label == "Numbers in this figure"):
            _screen(c, out)  # a figure's numbers: drawn only while open (ui.show_figure)
    return out


def _recorded(view: export.View) -> list:
    out = [("title", view.title)]  # the page's own title is the file's <h1>
    for b in view.blocks:
        if isinstance(b, export.Heading):
            out.append((_LEVELS.get(b.level, "subheader"), b.text))
        elif isinstance(b, export.Markdown):
            out.append((b.style or "markdown", b.text))
        elif isinstance(b, export.Metric):
            out.append(("metric", (b.label, b.value)))
        elif isinstance(b, export.Code):
            out.append(("code", b.text))
        elif isinstance(b, export.Table):
            out.append(("table", {k: list(np.asarray(v).tolist()) if isinstance(v, np.ndarray)
                                  else list(v) for k, v in b.columns.items()}))
        elif isinstance(b, export.Figure):
            out.append(("figure", None))
        elif isinstance(b, export.Numbers):
            out.append(("numbers", b.label))
        else:
            out.append((type(b).__name__, None))
    return out


def screen_and_file(at, besides: tuple[str, ...] = ()) -> tuple[list, list, list, list]:
    """(what the main area shows, what the recorded view holds), then the figures shown and
    the figures in the HTML file, in order. `besides`: texts left out of both sides (the
    messages ui.context draws: what a model is, what was dropped)."""
    rec = at.session_state[recorder.STATE_KEY]
    doc = recorder.html_of(rec)
    shown = [_without_template(spec) for _, spec in charts(at)]

    def kept(entries: list) -> list:
        return [e for e in entries if not (isinstance(e[1], str) and
                                           any(b in e[1] for b in besides))]

    return (kept(_screen(at.main, [])), kept(_recorded(rec.view())), shown, _figures(doc))


def _close(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return a == b or abs(a - b) <= 1e-6 * max(1.0, abs(a))  # float32 cells as float64
    return a == b


def assert_file_holds_the_screen(at, besides: tuple[str, ...] = ()) -> None:
    """The page's HTML view holds exactly what its main area shows, in order, and its
    figures are the figures drawn (their JSON equal, Streamlit's theme left out)."""
    screen, file, shown, written = screen_and_file(at, besides)
    assert _close(screen, file), (screen, file)
    assert shown and written == shown
    assert len([b for b in at.sidebar.get("download_button") if b.proto.label == LABEL]) == 1


def _figures(doc: str) -> list[dict]:
    return [json.loads(s)["figure"] for s in re.findall(
        r'<script type="application/json" class="attnviz-figure">(.*?)</script>', doc, re.S)]


@pytest.fixture(scope="module")
def explore():
    return open_page("pages/explore.py", timeout=240)


def test_the_view_holds_the_page_in_order(explore):
    rec = explore.session_state[recorder.STATE_KEY]
    kinds = [type(b).__name__ for _, b in rec.entries]
    assert kinds == ["Heading", "Markdown", "FigureRef", "FigureRef", "FigureRef", "Numbers"]
    view = rec.view()
    assert view.title == "All heads, token lines"  # the page's own title, once
    assert view.blocks[0].text.startswith("Every tile is one head's softmax weights")
    assert view.settings == {"sentence": "I saw a saw"}
    # one head's tile (and its layer and the lines) drawn inside the page's fragment
    tag = rec.entries[-1][0]
    assert tag.endswith("explore.py:one_head") and rec.fragments == {tag}
    assert [t for t, _ in rec.entries] == [None] * 3 + [tag] * 3
    assert_file_holds_the_screen(explore)
    doc = recorder.html_of(rec)
    assert doc.count(export.plotly_js()) == 1
    assert re.search(r"<h1>(<bdi>)?All heads, token lines(</bdi>)?</h1>", doc)
    assert 'download="attnviz_layer0_head0.npz"' in doc and "base64," in doc


@pytest.mark.parametrize("page", ["pages/positions.py", "pages/head_stats.py"])
def test_a_page_rendering_a_view_offers_it_whole(page):
    assert_file_holds_the_screen(open_page(page))


def test_layer_view_holds_the_layer_shown_and_its_numbers():
    at = open_page("pages/layer_heads.py", layer=3)
    assert_file_holds_the_screen(at)
    doc = recorder.html_of(at.session_state[recorder.STATE_KEY])
    assert "Layer 3: softmax weights" in doc and 'download="attnviz_layer3.npz"' in doc
    assert "tokens · 12 heads" in doc  # the page's caption


def test_the_file_is_made_only_when_asked(explore, monkeypatch):
    """Recording a figure keeps the figure; its JSON is made when a file is."""
    rec = explore.session_state[recorder.STATE_KEY]
    made = []
    real = export.figure_spec
    monkeypatch.setattr(export, "figure_spec", lambda fig: made.append(fig) or real(fig))
    assert not made
    rec.view()
    assert made == [b.figure for _, b in rec.entries if isinstance(b, recorder.FigureRef)]


def test_a_view_over_the_size_limit_leaves_figures_out_and_says_so(explore):
    sizes = [b.size for _, b in explore.session_state[recorder.STATE_KEY].entries
             if isinstance(b, recorder.FigureRef)]
    assert all(s > 0 for s in sizes)
    with settings.override(view_max_mb=(sizes[0] + 1) / 2**20):  # room for the first only
        at = open_page("pages/explore.py", timeout=240)
    rec = at.session_state[recorder.STATE_KEY]
    blocks = [b for _, b in rec.entries]
    assert isinstance(blocks[2], recorder.FigureRef)
    for b in blocks[3:5]:
        assert b.style == "caption" and "left out of the file" in b.text
        assert "ATTNVIZ_VIEW_MAX_MB" in b.text
    assert isinstance(blocks[5], export.Numbers)  # text and numbers are always kept
    assert rec.held() == sizes[0] and rec.limit == sizes[0] + 1
    assert len(_figures(recorder.html_of(rec))) == 1


def test_typed_text_stays_text_in_the_file():
    at = open_page("pages/compare.py", text=HOSTILE, cmp_b=HOSTILE)
    doc = recorder.html_of(at.session_state[recorder.STATE_KEY])
    body = doc.replace(export.plotly_js(), "")
    assert "<script>alert" not in body and "<strong>b" not in body
    typed = "&lt;script&gt;alert(1)&lt;/script&gt; $x$ **b**"
    assert f"sentence: <span><bdi>{typed}</bdi></span>" in body
    assert "A: &lt;script&gt;alert(1)&lt;/script&gt; $x$ **b**" in body  # the page's own line
    assert_file_holds_the_screen(at)


def test_a_fragment_rerun_replaces_its_own_part_in_place(monkeypatch):
    """A fragment that reruns alone draws its part again: that part of the session's view is
    replaced where it was; the rest stays, and the part gets what the rest leaves of the
    limit."""
    saved = recorder.Recorded("t", limit=1300, fragments={"frag"})
    saved.add(export.Markdown("title"))
    saved.tag = "frag"
    saved.add(export.Markdown("layer 0 caption"))
    saved.add(export.Table({"w": np.zeros(50)}))  # 400 bytes
    saved.tag = None
    saved.add(export.Table({"v": np.zeros(100)}))  # 800 bytes
    saved.add(export.Markdown("footer"))
    assert [b.text for _, b in saved.entries if isinstance(b, export.Markdown)][-1] == "footer"
    fake = SimpleNamespace(session_state={recorder.STATE_KEY: saved},
                           query_params=SimpleNamespace(to_dict=lambda: {"ex_layer": "2"}))
    monkeypatch.setattr(recorder, "st", fake)
    monkeypatch.setattr(recorder, "use_session_language", lambda: "en")

    def part() -> str:
        recorder.record(export.Markdown("layer 2 caption"))
        recorder.record(export.Table({"w": np.zeros(10)}))  # 80 bytes: fits beside the 800
        recorder.record(export.Table({"w": np.zeros(60)}))  # 480 more: past 1300 - 800
        return "drawn"

    assert recorder.run_alone("frag", part) == "drawn"
    blocks = [b for _, b in saved.entries]
    assert blocks[0].text == "title" and blocks[1].text == "layer 2 caption"
    assert list(blocks[2].columns) == ["w"] and len(blocks[2].columns["w"]) == 10
    assert "left out of the file" in blocks[3].text
    assert list(blocks[4].columns) == ["v"] and blocks[5].text == "footer"
    assert [t for t, _ in saved.entries] == [None, "frag", "frag", "frag", None, None]
    assert saved.settings == {"sentence": "", "ex_layer": "2"}
    # a fragment the recorded page did not draw (another page's) leaves the view alone
    entries = list(saved.entries)
    assert recorder.run_alone("elsewhere", part) == "drawn" and saved.entries == entries


def test_a_recording_belongs_to_its_thread():
    seen: list = []
    started, done = threading.Event(), threading.Event()

    def page_thread():
        with recorder._into(recorder.Recorded("mine")):
            started.set()
            done.wait(5)

    t = threading.Thread(target=page_thread)
    t.start()
    started.wait(5)
    seen.append(recorder.active())
    recorder.note_numbers("x", dict, "x.npz", "npz")  # no recording here: ignored
    recorder.record(export.Markdown("x"))
    done.set()
    t.join()
    assert seen == [None]


def test_a_figure_is_recorded_with_its_config_and_size():
    """record_figure (ui.show_figure's, for every figure it draws) keeps the figure, its
    config and its data's bytes; the view writes the figure's JSON."""
    import plotly.graph_objects as go

    rec = recorder.Recorded("t")
    fig = go.Figure(go.Heatmap(z=np.ones((4, 4))))
    with recorder._into(rec):
        recorder.record(export.Markdown("before"))
        recorder.record_figure(fig, {"a": 1})
    blocks = [b for _, b in rec.entries]
    assert [type(b).__name__ for b in blocks] == ["Markdown", "FigureRef"]
    assert blocks[1].figure is fig and blocks[1].config == {"a": 1}
    assert blocks[1].size == 16 * 8
    assert rec.view().blocks[1] == export.Figure(export.figure_spec(fig), {"a": 1},
                                                 app_template=True)


def test_a_fragment_run_alone_gives_back_its_long_trace_lease(monkeypatch):
    """A fragment that reruns alone is a script run of its own: the lease it takes to read a
    long trace (worklist.BIG_TRACES, one at a time) is given back when it ends, however it
    ends; else the next student with a long text would wait for ever."""
    from attnviz.ui import worklist

    monkeypatch.setattr(recorder, "st", SimpleNamespace(session_state={}))
    monkeypatch.setattr(recorder, "use_session_language", lambda: "en")
    held = []

    def page_part(fail: bool) -> None:
        worklist.BIG_TRACES.hold()  # what reading a long trace does (ui.cache._admit_trace)
        held.append(worklist.BIG_TRACES.running)
        if fail:
            raise RuntimeError("stopped")

    def run(fail: bool) -> None:
        try:
            recorder.run_alone("frag", page_part, fail)
        except RuntimeError:
            pass

    for fail in (False, True):
        t = threading.Thread(target=run, args=(fail,))
        t.start()
        t.join(10)
        assert not t.is_alive()
    assert held == [1, 1] and worklist.BIG_TRACES.running == 0
