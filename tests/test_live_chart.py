"""ui.live_chart, the chart redrawn in place: what the browser gets is the figure's exact JSON
(as st.plotly_chart would send it), the Plotly.js it uses is the installed plotly package's
own copy, sent to the page once per session after the first chart's JSON (again when the page
asks), the chart's script draws with Plotly.react, show_figure uses it only where asked (and
falls back to st.plotly_chart where it cannot), and "Download this view (HTML)" records its
figure like any other. The browser side (drawn, redrawn in place, hover, toolbar, a page that asks
for plotly.js again) is checked in tests/e2e/test_e2e_explore.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import plotly
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.ui import figures, live_chart, recorder
from attnviz.ui.per_figure import figure_json
from tests.apptest import open_page
from tests.plotly_json import decode, specs

TOKENS = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]


@pytest.fixture
def heatmap() -> go.Figure:
    w = np.random.default_rng(0).random((6, 6)).astype(np.float32)
    return attention_heatmap(w / w.sum(1, keepdims=True), TOKENS, "weights", "Layer 1, head 2")


def test_plotly_js_is_the_plotly_packages_own_copy():
    shipped = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    assert live_chart.plotly_js() == shipped.read_bytes()
    assert live_chart.available()
    # Nothing from Streamlit's own bundle, nothing from elsewhere.
    assert "PlotlyChart" not in live_chart.JS and "http" not in live_chart.JS
    assert "import(" not in live_chart.JS


def test_the_script_draws_with_plotly_react_on_the_pages_copy():
    # The chart waits for the page's one copy and updates its plot with Plotly.react, given
    # the chart's config with every draw.
    assert "r.ready.then(" in live_chart.JS
    reacts = re.findall(r"P\.react\(([^;]*)\);", live_chart.JS)
    assert reacts and all(r.rstrip(")").endswith(", config") for r in reacts), reacts
    assert "P.react(div, shaped.data, layout, config)" in live_chart.JS
    assert not re.search(r"window\.Plotly\.\w+\(", live_chart.JS)  # not whichever copy is there
    # The bytes after the chart's JSON run as a script that hands Plotly to the page's copy;
    # a page with none asks for it.
    assert "load(r, bytes.subarray(cut + 1))" in live_chart.JS
    assert 'setTriggerValue("missing", true)' in live_chart.JS
    # plotly.min.js is a UMD bundle that gives a CommonJS-style `module` its Plotly.
    head = live_chart.plotly_js()[:2000].decode()
    assert 'typeof module === "object" && module.exports' in head
    assert "module.exports = factory()" in head


COMPONENT = Path(live_chart.__file__).parent / "components" / "live_chart"


def test_the_script_and_style_are_the_components_files():
    """The component's module is phone_layout.js then live_chart.js, its style live_chart.css,
    read from the package's files: no JavaScript or CSS written inside the Python."""
    assert live_chart.JS == ((COMPONENT / "phone_layout.js").read_text(encoding="utf-8")
                             + (COMPONENT / "live_chart.js").read_text(encoding="utf-8"))
    assert live_chart.CSS == (COMPONENT / "live_chart.css").read_text(encoding="utf-8")
    assert live_chart.JS.count("export default function") == 1


def test_the_script_uses_only_public_plotly_and_streamlit_names():
    """No private plotly.js name (gd._context, _fullLayout, _fullData, ...) read or written;
    the theme comes from CSS variables Streamlit gives its components: each `--st-` name the
    script reads is one of the theme's keys in the installed Streamlit's component code."""
    code = re.sub(r"//[^\n]*", "", live_chart.JS)
    assert not re.findall(r"\._[A-Za-z]\w*", code)
    names = set(re.findall(r"--st-([a-z-]+)", code))
    assert {"background-color", "text-color", "font", "chart-categorical-colors"} <= names
    import streamlit

    bundle = list((Path(streamlit.__file__).parent / "static").rglob("BidiComponent*.js"))
    if not bundle:
        pytest.skip("this Streamlit has no v2 component bundle to read the theme's keys from")
    keys = bundle[0].read_text(encoding="utf-8", errors="replace")
    for name in names:
        camel = re.sub(r"-([a-z])", lambda m: m.group(1).upper(), name)
        assert re.search(rf"\b{camel}:", keys), name


def test_the_payload_holds_the_figure_exactly(heatmap):
    config = {**figures.PLOT_CONFIG, "responsive": True}
    data = live_chart.payload(heatmap, config, "a heatmap's text")
    got = json.loads(data)
    assert got["figure"] == json.loads(pio.to_json(heatmap, validate=False))
    assert got["config"] == config and got["alt"] == "a heatmap's text"
    assert "could not be drawn" in got["failed"]
    assert set(got) == {"config", "alt", "failed", "figure", "select", "wide",
                        "words"}  # no script
    assert got["words"] == {"svg": "Download as SVG (vector)", "fullscreen": "Fullscreen"}
    assert got["select"] is False  # no click is sent back unless asked
    assert got["wide"] is False  # one panel
    np.testing.assert_array_equal(decode(got["figure"]["data"][0]["z"]), heatmap.data[0].z)
    assert got["figure"]["data"][0]["x"] == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4",
                                             "[SEP] #5"]  # two distinct saws
    spec, cfg = live_chart.spec_of(data)
    assert json.loads(spec) == got["figure"] and cfg == config
    assert live_chart.spec_of(b"not json") is None and live_chart.spec_of(b"{}") is None
    # With plotly.js: one line of JSON (no raw newline in it), a newline, the script.
    both = live_chart.payload(heatmap, config, "a heatmap's text", b"script\nbytes")
    assert b"\n" not in data and both == data + b"\nscript\nbytes"
    assert live_chart.spec_of(both) == (spec, cfg)


def test_show_figure_draws_in_place_unless_it_cannot(monkeypatch, heatmap):
    drawn = []
    monkeypatch.setattr(live_chart, "live_chart", lambda *a, **k: drawn.append((a, k)))
    monkeypatch.setattr(figures.st, "plotly_chart", lambda *a, **k: drawn.append("streamlit"))
    monkeypatch.setattr(figures, "show_numbers", lambda *a, **k: None)
    figures.show_figure(heatmap, key="one")  # the default
    (fig, key, config, alt), kw = drawn.pop()
    assert fig is heatmap and key == "one" and alt and kw == {"on_select": None}
    assert config["toImageButtonOptions"] == {"format": "png", "scale": 2,
                                              "filename": "attnviz_layer_1_head_2"}
    picked = lambda: None  # noqa: E731
    figures.show_figure(heatmap, key="one", on_select=picked, selection_mode="points")
    assert drawn.pop()[1] == {"on_select": picked}  # clicks come back through the chart
    figures.show_figure(heatmap, key="one", in_place=False)  # asked not to
    figures.show_figure(heatmap, key="one", on_select="rerun")  # no callback to call
    figures.show_figure(heatmap, key="one", on_select=picked, selection_mode="box")  # boxes
    figures.show_figure(heatmap)  # no key: nothing to keep it under
    monkeypatch.setattr(live_chart, "available", lambda: False)  # e.g. another Streamlit
    figures.show_figure(heatmap, key="one")
    assert drawn == ["streamlit"] * 5


def _live(at) -> list:
    """The charts drawn in place, in page order."""
    found = at.get("bidi_component")
    assert all(e.proto.component_name == live_chart.NAME for e in found)
    return found


def _script(el) -> bytes | None:
    """The plotly.js a chart's payload brings (after its JSON line), or None."""
    _head, sep, script = el.proto.bytes.partition(b"\n")
    return script if sep else None


def test_the_explore_page_draws_its_open_head_and_lines_in_place():
    at = open_page("pages/explore.py", timeout=180)
    overview, el, lines = _live(at)  # the mosaic, the open head and its token lines
    assert overview.proto.id.endswith("live_ex_overview")
    assert el.proto.id.endswith("live_ex_one") and lines.proto.id.endswith("live_ex_lines")
    spec, config = live_chart.spec_of(el.proto.bytes)
    assert json.loads(spec)["layout"]["title"]["text"] == "Layer 0, head 0"
    assert config["toImageButtonOptions"]["filename"] == "attnviz_layer_0_head_0"
    first_id = el.proto.id
    # plotly.js goes to the page once: with the session's first chart drawn in place, on the
    # page the session opened first (open_page starts at the app's default page).
    assert at.session_state[live_chart.SENT] is True
    assert _script(overview) is None and _script(el) is None and _script(lines) is None
    # "Download this view (HTML)" holds the page's three figures, the live ones included.
    doc = recorder.html_of(at.session_state[recorder.STATE_KEY])
    found = [json.loads(m)["figure"] for m in re.findall(
        r'<script type="application/json" class="attnviz-figure">(.*?)</script>', doc, re.S)]
    shown = [json.loads(spec) for spec in specs(at)]
    for fig in shown:
        fig["layout"].pop("template", None)
    assert len(found) == 3 and found == shown
    at.button_group(key="ex_head").set_value(7).run()
    overview, el, lines = _live(at)
    # The same element (its id comes from the key alone), holding the new head.
    assert el.proto.id == first_id
    assert json.loads(live_chart.spec_of(el.proto.bytes)[0])["layout"]["title"]["text"] == \
        "Layer 0, head 7"
    assert _script(el) is None and _script(lines) is None  # sent already
    # A page that has none (reloaded on the same session) asks: the chart's trigger calls
    # _send_again, and the next run's first chart brings plotly.js again.
    at.session_state[live_chart.SENT] = False
    at.run()
    overview, el, lines = _live(at)
    assert _script(overview) == live_chart.plotly_js()
    assert _script(el) is None and _script(lines) is None
    assert at.session_state[live_chart.SENT] is True


def test_a_chart_of_three_panels_or_more_is_marked_wide(heatmap):
    from plotly.subplots import make_subplots

    three = make_subplots(rows=1, cols=3)
    for col in (1, 2, 3):
        three.add_heatmap(z=[[0, 1]], row=1, col=col)
    panels = lambda fig: figure_json(fig)[1]  # noqa: E731
    assert panels(heatmap) == 1 and panels(three) == 3
    wide = json.loads(live_chart.payload(three, {}, None).split(b"\n")[0])["wide"]
    assert wide is True
    grid = go.Figure(go.Heatmap(z=[[0, 1]]))  # a heads grid: one heatmap, a title per block
    for k in range(12):
        grid.add_annotation(text=f"head {k}", x=k, y=0, showarrow=False)
    assert panels(grid) == 1


def test_a_narrow_column_on_a_wide_screen_is_no_phone():
    """ui.phone_layout (under Node, with the page's window): a frame under 640 px lays a
    figure of panels out again on a phone's screen (390 px), never in a narrow column of a
    laptop's or projector's screen (presentation mode's figure column, 595 px of 1280)."""
    import shutil
    import subprocess

    from attnviz.plotting.steps import dk_figure
    from tests.test_plotting_screens import phone_layout_js

    node = shutil.which("node")
    if node is None:
        pytest.skip("no Node.js to run the chart's script")
    fig = dk_figure({"d_k": [4, 16, 64], "raw_std": [2.0, 4.0, 8.0], "scaled_std": [1.0] * 3,
                     "max_weight_raw": [0.5, 0.7, 0.9], "max_weight_scaled": [0.4] * 3})
    fig.update_layout(title="Why the scores are divided by the square root of d_k, drawn wide")
    script = phone_layout_js() + """
const fig = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const out = {};
for (const [screen, frame] of [[390, 358], [844, 512], [1280, 595], [1280, 358], [1400, 620]]) {
  globalThis.window = {innerWidth: screen};
  out[screen + "/" + frame] = phoneShaped(fig, frame, null) !== fig;
}
console.log(JSON.stringify(out));
"""
    done = subprocess.run([node, "-e", script], input=pio.to_json(fig, validate=False),
                          capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == {"390/358": True, "844/512": True, "1280/595": False,
                                       "1280/358": False, "1400/620": False}


def test_layout_passes_run_one_at_a_time_the_last_for_the_frames_width_then(tmp_path):
    """live_chart.js's layOut (under Node, with a stand-in Plotly whose react takes 20 ms and a
    frame that changes width while the first pass draws: a phone turned, 812 px, then the
    sidebar open, 512 px, each change calling layOut as the chart's ResizeObserver does): no
    react starts before the last one ended, each gets the chart's config, and the second pass
    lays the chart out for the frame's width when it begins (512 px: the 812 px the frame has
    left is never drawn), from an empty plot (a new shape), the element then saying 512."""
    import shutil
    import subprocess

    from plotly.subplots import make_subplots

    node = shutil.which("node")
    if node is None:
        pytest.skip("no Node.js to run the chart's script")
    fig = make_subplots(rows=1, cols=4, subplot_titles=["a", "b", "c", "d"])
    for col in range(1, 5):
        fig.add_heatmap(z=[[0, 1], [1, 0]], row=1, col=col, coloraxis="coloraxis")
    (tmp_path / "live_chart.mjs").write_text(live_chart.JS, encoding="utf-8")
    (tmp_path / "figure.json").write_text(pio.to_json(fig, validate=False), encoding="utf-8")
    harness = tmp_path / "passes.mjs"
    harness.write_text("""
import {readFileSync} from "node:fs";
const figure = JSON.parse(readFileSync(new URL("./figure.json", import.meta.url), "utf8"));
globalThis.window = {innerWidth: 390};
globalThis.document = {documentElement: {}};
globalThis.getComputedStyle = () => ({getPropertyValue: () => "", color: "rgb(1, 2, 3)",
                                      fontFamily: "serif", fontSize: "16px"});
const {layOut} = await import(new URL("./live_chart.mjs", import.meta.url));
const sleep = ms => new Promise(done => setTimeout(done, ms));
let width = 358, drawing = 0, overlapped = false;
const calls = [], config = {displaylogo: false};
const cls = new Set(), attrs = {};
const div = {isConnected: true, setAttribute: (k, v) => { attrs[k] = v; },
             classList: {contains: c => cls.has(c), remove: c => cls.delete(c),
                         toggle: (c, on) => on ? cls.add(c) : cls.delete(c)}};
const frame = {getBoundingClientRect: () => ({width})};
const P = {react: async (gd, data, layout, given) => {
  if (drawing) overlapped = true;
  drawing++;
  calls.push({width, traces: data.length, config: given === config,
              rows: new Set(Object.keys(layout).filter(k => /^yaxis/.test(k))
                            .map(k => layout[k].domain[1].toFixed(3))).size});
  if (calls.length === 1) {
    await sleep(5); width = 812; window.innerWidth = 844; layOut(chart);  // turned
    await sleep(5); width = 512; layOut(chart);  // the sidebar open
  }
  await sleep(20);
  drawing--;
  return gd;
}};
const chart = {div, frame, plotly: P, figure, config, wide: true, want: 1};
await layOut(chart);
console.log(JSON.stringify({overlapped, calls, attrs, wide: cls.has("attnviz-wide")}));
""", encoding="utf-8")
    done = subprocess.run([node, str(harness)], capture_output=True, text=True, timeout=60,
                          check=True)
    out = json.loads(done.stdout)
    assert not out["overlapped"]
    assert [(c["width"], c["traces"]) for c in out["calls"]] == [(358, 4), (512, 0), (512, 4)]
    assert all(c["config"] for c in out["calls"])
    assert out["calls"][0]["rows"] == 4 and out["calls"][2]["rows"] == 2  # 1, then 2 a row
    assert out["attrs"] == {"data-drawn": "1", "data-laid-out-width": "512"}
    assert not out["wide"]  # 512 px on an 844 px screen: a phone's frame, laid out again
