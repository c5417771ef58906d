""""Download this view (HTML)": every page offers it, and the file holds what the page drew
(its figures, text and numbers) with typed text shown literally."""

from __future__ import annotations

import json
import re
import threading

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from attnviz.export import html as export
from attnviz.ui import recorder
from tests.apptest import open_page

HOSTILE = "<script>alert(1)</script> $x$ **b**"
LABEL = "Download this view (HTML)"


def _figures(doc: str) -> list[dict]:
    return [json.loads(s)["figure"] for s in re.findall(
        r'<script type="application/json" class="attnviz-figure">(.*?)</script>', doc, re.S)]


def _without_template(spec: str) -> dict:
    fig = json.loads(spec)
    fig["layout"].pop("template", None)
    return fig


@pytest.mark.parametrize("page", ["pages/layer_heads.py", "pages/positions.py",
                                  "pages/head_stats.py"])
def test_page_offers_its_view_and_the_file_holds_its_figures(page):
    at = open_page(page)
    buttons = [b for b in at.sidebar.get("download_button") if b.proto.label == LABEL]
    assert len(buttons) == 1
    rec = at.session_state[recorder.STATE_KEY]
    doc = recorder.html_of(rec)
    shown = [_without_template(c.proto.spec) for c in at.get("plotly_chart")]
    assert shown and _figures(doc) == shown  # every figure the page drew, in order
    assert doc.count(export.plotly_js()) == 1
    for title in (t.value for t in at.title):
        assert export.markdown_html(title, inline=True) in doc
    assert "numbers" in doc.lower() and "base64," in doc  # the page's .npz, embedded


def test_layer_view_holds_the_layer_shown_and_its_numbers():
    at = open_page("pages/layer_heads.py", layer=3)
    doc = recorder.html_of(at.session_state[recorder.STATE_KEY])
    assert "Layer 3: softmax weights" in doc and 'download="attnviz_layer3.npz"' in doc
    assert "tokens · 12 heads" in doc  # the page's caption


def test_typed_text_stays_text_in_the_file():
    at = open_page("pages/layer_heads.py", text=HOSTILE)
    doc = recorder.html_of(at.session_state[recorder.STATE_KEY])
    body = doc.replace(export.plotly_js(), "")
    assert "<script>alert" not in body and "<strong>b" not in body
    assert "sentence: <span>&lt;script&gt;alert(1)&lt;/script&gt; $x$ **b**</span>" in body


def _msg(path: list[int], body: str) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = path
    msg.delta.new_element.markdown.body = body
    return msg


def test_only_the_main_area_is_recorded():
    assert recorder.blocks_of(_msg([0, 2], "main")) == [export.Markdown("main")]
    assert recorder.blocks_of(_msg([1, 0], "sidebar")) == []


def test_a_fragment_rerun_replaces_its_own_part_in_place():
    rec = recorder.Recorded("t")
    rec.add("title")
    rec.tag = "frag"
    rec.add("layer 0 figure")
    rec.add("layer 0 caption")
    rec.tag = None
    rec.add("footer")
    rec.splice("frag", ["layer 2 figure"])
    assert [b for _, b in rec.entries] == ["title", "layer 2 figure", "footer"]
    rec.splice("other", ["new"])
    assert [b for _, b in rec.entries][-1] == "new"


def test_a_recording_belongs_to_its_thread():
    seen: list = []
    started, done = threading.Event(), threading.Event()

    def page_thread():
        with recorder._capturing(recorder.Recorded("mine")):
            started.set()
            done.wait(5)

    t = threading.Thread(target=page_thread)
    t.start()
    started.wait(5)
    seen.append(recorder.active())
    recorder.note_numbers("x", dict, "x.npz", "npz")  # no recording here: ignored
    done.set()
    t.join()
    assert seen == [None]


def test_tables_are_decoded_only_when_a_file_is_made():
    import pyarrow as pa

    table = pa.table({"token": ["saw", "saw"], "w": [1, 2]})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    data = sink.getvalue().to_pybytes()
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = [0, 1]
    msg.delta.new_element.dataframe.arrow_data.data = data
    blocks = recorder.blocks_of(msg)
    assert blocks == [recorder.ArrowTable(data)]  # kept as sent, not decoded on every rerun
    rec = recorder.Recorded("t")
    rec.add(blocks[0])
    assert rec.view().blocks == [export.Table({"token": ["saw", "saw"], "w": [1, 2]})]


def test_a_view_over_the_size_limit_leaves_figures_out_and_says_so():
    rec = recorder.Recorded("t", limit=1000)
    rec.add(export.Figure("x" * 600))
    rec.add(export.Markdown("text is always kept"))
    rec.add(export.Figure("y" * 600))  # 1200 > 1000: left out
    blocks = rec.view().blocks
    assert blocks[0] == export.Figure("x" * 600) and blocks[1].text == "text is always kept"
    assert "left out of the file" in blocks[2].text and "ATTNVIZ_VIEW_MAX_MB" in blocks[2].text
    assert rec.held() == 600


def test_a_fragment_run_alone_gives_back_its_long_trace_lease(monkeypatch):
    """A fragment that reruns alone is a script run of its own: the lease it takes to read a
    long trace (worklist.BIG_TRACES, one at a time) is given back when it ends, however it
    ends. It was kept for the finished thread, and the next student with a long text waited
    for ever (seen in tests/load/memory.py: eight long pastes on the positions page's tabs)."""
    import importlib
    from types import SimpleNamespace

    from attnviz.ui import worklist

    sidebar = importlib.import_module("attnviz.ui.sidebar")  # the module, not ui.sidebar()

    monkeypatch.setattr(recorder, "st", SimpleNamespace(session_state={}))
    monkeypatch.setattr(sidebar, "use_session_language", lambda: "en")
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
