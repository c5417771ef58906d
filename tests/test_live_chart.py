"""ui.live_chart, the chart redrawn in place: what the browser gets is the figure's exact JSON
(as st.plotly_chart would send it); the Plotly.js it uses is the installed plotly package's
own copy, served as a static file named by its hash, never on a session's websocket (a raw
client that asks again and again gets nothing large: there is nothing to ask for); the
chart's script draws with Plotly.react; show_figure uses it only where asked (and falls back
to st.plotly_chart where it cannot); a dark page gets diverging scales made for it; and
"Download this view (HTML)" records its figure like any other. The browser side (drawn,
redrawn in place, hover, toolbar, plotly.js fetched once and kept) is checked in
tests/e2e/test_e2e_explore.py."""

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


def test_plotly_js_is_a_static_file_named_by_its_hash(tmp_path):
    """The app's static folder gets the package's plotly.js under a name made of its SHA-256
    (a new plotly: a new name, the old copy removed); a copy that differs is written again; a
    folder that cannot be written gives None (figures then go through st.plotly_chart)."""
    import hashlib

    script = live_chart.plotly_js()
    name = f"plotly-{hashlib.sha256(script).hexdigest()[:12]}.min.js"
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "plotly-000000000000.min.js").write_text("an older plotly")
    path = live_chart.plotly_file(tmp_path)
    assert path == tmp_path / "static" / name and path.read_bytes() == script
    assert sorted(p.name for p in (tmp_path / "static").iterdir()) == [name]
    live_chart.plotly_file.cache_clear()
    path.write_bytes(script[:-1] + b" ")  # same size, other bytes
    assert live_chart.plotly_file(tmp_path).read_bytes() == script
    live_chart.plotly_file.cache_clear()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the app's folder should be")
    assert live_chart.plotly_file(blocked) is None
    live_chart.plotly_file.cache_clear()
    # The app's own: under the folder Streamlit serves at app/static/ (config.toml turns
    # static serving on), the URL path the browser fetches.
    served = live_chart.plotly_file()
    assert served == live_chart.APP_ROOT / "static" / name
    assert live_chart.plotly_url() == f"/app/static/{name}"


def test_the_script_draws_with_plotly_react_on_the_pages_copy():
    # The chart waits for the page's one copy and updates its plot with Plotly.react, given
    # the chart's config with every draw.
    assert "r.ready.then(" in live_chart.JS
    reacts = re.findall(r"P\.react\(([^;]*)\);", live_chart.JS)
    assert reacts and all(r.rstrip(")").endswith(", config") for r in reacts), reacts
    assert "P.react(div, shaped.data, layout, config)" in live_chart.JS
    assert not re.search(r"window\.Plotly\.\w+\(", live_chart.JS)  # not whichever copy is there
    # The page's first chart runs the file its payload names as a script of the page (the
    # browser's HTTP cache and code cache keep it), nothing asks the server to send it.
    assert "if (r.state === \"none\") load(r, payload.plotly)" in live_chart.JS
    assert "script.src = url;" in live_chart.JS
    assert "fetch(" not in live_chart.JS and "Blob(" not in live_chart.JS
    assert "missing" not in live_chart.JS
    # Run without a module, plotly.min.js sets window.Plotly, and its UMD wrapper
    # window.moduleName: the two names the script puts back.
    js = live_chart.plotly_js().decode()
    assert 'root.moduleName = factory();' in js[:2000]
    assert js.rstrip().endswith("window.Plotly = Plotly;\nreturn Plotly;\n}));")
    assert 'const SET_BY_PLOTLY = ["Plotly", "moduleName"];' in live_chart.JS


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
    data = live_chart.payload(heatmap, config, "a heatmap's text", "/app/static/p.min.js")
    got = json.loads(data)
    assert got["figure"] == json.loads(pio.to_json(heatmap, validate=False))
    assert got["config"] == config and got["alt"] == "a heatmap's text"
    assert "could not be drawn" in got["failed"]
    assert set(got) == {"config", "alt", "failed", "figure", "select", "wide", "words",
                        "plotly"}  # where plotly.js is, never the script itself
    assert got["plotly"] == "/app/static/p.min.js"
    assert got["words"] == {"svg": "Download as SVG (vector)", "fullscreen": "Fullscreen"}
    assert got["select"] is False  # no click is sent back unless asked
    assert got["wide"] is False  # one panel
    np.testing.assert_array_equal(decode(got["figure"]["data"][0]["z"]), heatmap.data[0].z)
    assert got["figure"]["data"][0]["x"] == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4",
                                             "[SEP] #5"]  # two distinct saws
    spec, cfg = live_chart.spec_of(data)
    assert json.loads(spec) == got["figure"] and cfg == config
    assert live_chart.spec_of(b"not json") is None and live_chart.spec_of(b"{}") is None
    assert b"\n" not in data  # one line of JSON


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


def test_the_explore_page_draws_its_open_head_and_lines_in_place():
    at = open_page("pages/explore.py", timeout=180)
    overview, el, lines = _live(at)  # the mosaic, the open head and its token lines
    assert overview.proto.id.endswith("live_ex_overview")
    assert el.proto.id.endswith("live_ex_one") and lines.proto.id.endswith("live_ex_lines")
    spec, config = live_chart.spec_of(el.proto.bytes)
    assert json.loads(spec)["layout"]["title"]["text"] == "Layer 0, head 0"
    assert config["toImageButtonOptions"]["filename"] == "attnviz_layer_0_head_0"
    first_id = el.proto.id
    # plotly.js is never in a payload: each one names the static file (tens of kB at most,
    # whatever the session asks).
    url = live_chart.plotly_url()
    for chart in (overview, el, lines):
        assert json.loads(chart.proto.bytes)["plotly"] == url
        assert len(chart.proto.bytes) < 200_000 and b"module.exports" not in chart.proto.bytes
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
    assert all(len(c.proto.bytes) < 200_000 for c in (overview, el, lines))


def test_a_chart_of_three_panels_or_more_is_marked_wide(heatmap):
    from plotly.subplots import make_subplots

    three = make_subplots(rows=1, cols=3)
    for col in (1, 2, 3):
        three.add_heatmap(z=[[0, 1]], row=1, col=col)
    panels = lambda fig: figure_json(fig)[1]  # noqa: E731
    assert panels(heatmap) == 1 and panels(three) == 3
    wide = json.loads(live_chart.payload(three, {}, None, "/p.js"))["wide"]
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


def test_on_a_dark_page_diverging_scales_are_made_for_a_dark_background():
    """A diverging scale with a white middle (the scores' Balance, the values' PuOr) is drawn
    with its dark version on a dark page: 0 the background's near-black, the largest |values|
    the brightest cells; a light page, and a figure without one, keep theirs, the same
    object; the dark copy is made once per figure."""
    from attnviz.plotting.common import (
        SCORES_SCALE_DARK,
        VALUES_SCALE,
        VALUES_SCALE_DARK,
        for_dark_background,
    )
    from attnviz.plotting.compare import compare_figure

    rng = np.random.default_rng(1)
    w = rng.random((5, 5))
    fig = compare_figure(w, w.T, w - w.T, ["[CLS]", "i", "saw", "a", "[SEP]"],
                         ("A", "B", "A - B"))
    assert live_chart.for_theme(fig, dark=False) is fig
    dark = live_chart.for_theme(fig, dark=True)
    assert dark is not fig and live_chart.for_theme(fig, dark=True) is dark  # made once
    scale = [list(s) for s in dark.layout.coloraxis2.colorscale]
    assert scale == SCORES_SCALE_DARK and dark.layout.coloraxis.colorscale == \
        fig.layout.coloraxis.colorscale  # the weights' sequential scale stays
    assert fig.layout.coloraxis2.colorscale != dark.layout.coloraxis2.colorscale  # unchanged
    values = go.Figure(go.Heatmap(z=w - 0.5, colorscale=VALUES_SCALE))
    assert [list(s) for s in for_dark_background(values).data[0].colorscale] == \
        VALUES_SCALE_DARK
    assert for_dark_background(heatmap_of_weights := go.Figure(go.Heatmap(z=w))) is \
        heatmap_of_weights

    def lightness(colour: str) -> float:
        from plotly.colors import hex_to_rgb, unlabel_rgb

        rgb = hex_to_rgb(colour) if colour.startswith("#") else unlabel_rgb(colour)
        return sum(rgb) / 3

    middle = dict(SCORES_SCALE_DARK)[0.5]
    ends = [dict(SCORES_SCALE_DARK)[0.0], dict(SCORES_SCALE_DARK)[1.0]]
    assert lightness(middle) < 40 and all(lightness(e) > 150 for e in ends)
