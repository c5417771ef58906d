"""A Plotly chart that stays on the page from rerun to rerun and is redrawn in place.

Streamlit's own chart (st.plotly_chart) gives every new figure a new element id (the id hashes
the figure), so the browser unmounts the old chart and mounts a new one. `live_chart` draws a
figure through a Streamlit v2 component (`st.components.v2.component`) kept under a fixed
key: the element stays mounted, a new figure arrives as bytes (the figure's JSON, parsed once)
and is drawn with `Plotly.react`, which updates the existing plot.

Plotly.js is the copy the installed `plotly` package ships (`plotly.offline.get_plotlyjs()`,
package_data/plotly.min.js): nothing is fetched from elsewhere. It comes to the page once per
session, after the first chart's payload (`payload`); the browser runs it once and keeps it for
the page, and every chart of the page waits for that copy. A page that has none (reloaded on the
same session) says so to the server (the component's "missing" trigger), which sends it again.

The chart looks and behaves like the app's other charts: the same hover, the same toolbar with
its PNG download, the theme's fonts and colours (from the CSS variables Streamlit gives its
components), light or dark. Its toolbar adds an SVG download, drawn in the browser as the PNG
is, and a full-screen button.
"""

from __future__ import annotations

import functools
import json

import plotly.graph_objects as go

from ..i18n import _
from .per_figure import figure_json
from .phone_layout import JS as PHONE_JS

NAME = "attnviz_live_chart"
SENT = "attnviz_plotly_js_sent"  # session state: this session's page was sent plotly.js

JS = PHONE_JS + r"""
// The page's one copy of plotly.js, which every chart drawn in place waits for.
function registry() {
  let r = window.attnvizPlotly;
  if (!r) {
    r = {state: "none"};  // none -> asked -> loading -> ready | failed
    r.ready = new Promise((resolve, reject) => { r.resolve = resolve; r.reject = reject; });
    r.ready.catch(() => {});  // a chart that waits for it says so itself
    window.attnvizPlotly = r;
  }
  return r;
}

// plotly.min.js is a UMD bundle: given a `module`, it hands Plotly to it. It also sets
// window.Plotly, which is put back as it was (Streamlit's own charts keep their copy there).
function load(r, source) {
  r.state = "loading";
  // Its first run holds the page's main thread a while: it starts when the page is idle
  // (the page's other charts drawn), within a second and a half.
  if (window.requestIdleCallback) requestIdleCallback(() => run(r, source), {timeout: 1500});
  else setTimeout(() => run(r, source), 0);
}

function run(r, source) {
  const holder = {exports: {}};
  window.attnvizPlotlyModule = holder;
  const blob = new Blob([
    "(function (module, before) {\n", source,
    "\n;if (before === undefined) delete window.Plotly; else window.Plotly = before;\n" +
    "})(window.attnvizPlotlyModule, window.Plotly);\n//# sourceURL=attnviz-plotly.min.js\n",
  ], {type: "text/javascript"});
  const url = URL.createObjectURL(blob);
  const script = document.createElement("script");
  const done = (error) => {
    URL.revokeObjectURL(url);
    script.remove();
    delete window.attnvizPlotlyModule;
    const P = holder.exports;
    if (!error && P && typeof P.react === "function") {
      r.state = "ready";
      r.resolve(P);
    } else {
      r.state = "failed";
      r.reject(error || new Error("plotly.js did not load"));
    }
  };
  script.onload = () => done(null);
  script.onerror = () => done(new Error("plotly.js could not be read"));
  script.src = url;
  document.head.appendChild(script);
}

let asking = null;

// No copy on this page and none on its way: ask the server (a rerun sends it), and again
// every few seconds until one comes.
function ask(r, setTriggerValue) {
  if (asking !== null) return;
  const tick = () => {
    if (r.state !== "none" && r.state !== "asked") { asking = null; return; }
    r.state = "asked";
    setTriggerValue("missing", true);
    asking = setTimeout(tick, 3000);
  };
  asking = setTimeout(tick, 0);  // after this run's other charts: one may bring it
}

const charts = new WeakMap();  // parent element -> {div, seq, text, plotly, fullscreen}

function css(el, name, fallback) {
  const v = getComputedStyle(el).getPropertyValue(name).trim();
  return v && v !== "unset" ? v : fallback;
}

// [r, g, b] of any CSS colour the browser knows (null if it knows none).
function rgbOf(color) {
  const probe = document.createElement("span");
  probe.style.color = color;
  document.body.appendChild(probe);
  const rgb = (getComputedStyle(probe).color.match(/[\d.]+/g) || []).slice(0, 3).map(Number);
  probe.remove();
  return rgb.length === 3 ? rgb : null;
}

function withAlpha(color, alpha) {
  const rgb = rgbOf(color);
  return rgb ? `rgba(${rgb.join(", ")}, ${alpha})` : color;
}

// A background is light when its relative luminance passes 0.5 (as Streamlit decides).
function isLight(color) {
  const rgb = rgbOf(color);
  if (!rgb) return true;
  const [r, g, b] = rgb.map(c => { c /= 255; return c <= 0.04045 ? c / 12.92
                                                               : ((c + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5;
}

// The greys of Streamlit's palette its own chart uses (st.plotly_chart, theme="streamlit"),
// chosen by the background's lightness: text, lines (grid, ticks), legend text.
const GREYS = {light: ["#808495", "#e6eaf1", "#262730"], dark: ["#e6eaf1", "#31333F", "#fafafa"]};

// The colours the "streamlit" plotly template (which the server's figures carry) leaves as
// placeholders: #000001-#000010 categorical, -#000020 sequential, -#000030 diverging, then
// increasing, decreasing, total, lines, text, legend text, background, faint lines, header.
function placeholders(el, [text, lines, legend], bg) {
  const list = name => css(el, name, "").split(",").map(c => c.trim()).filter(Boolean);
  const out = new Map();
  const put = (from, colours) => colours.slice(0, 10).forEach(
    (c, i) => out.set("#" + String(from + i).padStart(6, "0"), c));
  put(1, list("--st-chart-categorical-colors"));
  put(11, list("--st-chart-sequential-colors"));
  put(21, list("--st-chart-diverging-colors"));
  put(32, [css(el, "--st-green-color", "#21c354"), css(el, "--st-red-color", "#ff4b4b"),
           css(el, "--st-blue-color", "#1c83e1"), lines, text, legend, bg,
           withAlpha(css(el, "--st-text-color", text), 0.05),
           css(el, "--st-secondary-background-color", bg)]);
  return out;
}

// A copy of `value` with every placeholder colour replaced.
function replaced(value, colours) {
  if (typeof value === "string") return colours.get(value.toLowerCase()) || value;
  if (Array.isArray(value)) return value.map(v => replaced(v, colours));
  if (value && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = replaced(v, colours);
    return out;
  }
  return value;
}

// `over` merged into a copy of `base` (objects key by key, `over` winning).
function merged(base, over) {
  const out = {...base};
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    out[k] = v && typeof v === "object" && !Array.isArray(v) && b && typeof b === "object" &&
             !Array.isArray(b) ? merged(b, v) : v;
  }
  return out;
}

// The app theme's look as Streamlit's own chart gives it to a figure: the figure's template
// (its placeholder colours made the theme's) under Streamlit's chart theme, from the CSS
// variables Streamlit gives its components and its palette's greys; what the figure's layout
// sets itself wins; the title bold.
function themed(layout, el) {
  const bg = css(el, "--st-background-color", "#ffffff");
  const font = css(el, "--st-font", "\"Source Sans\", sans-serif");
  const headingColor = css(el, "--st-heading-color", css(el, "--st-text-color", "#31333F"));
  const greys = GREYS[isLight(bg) ? "light" : "dark"];
  const [text, lines] = greys;
  const rem = parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
  const px = r => r * rem;
  const axisTitle = {font: {color: text, size: px(0.875)}};
  const theme = {
    font: {color: text, family: font, size: px(0.75),
           weight: Number(css(el, "--st-base-font-weight", "400")) || 400},
    title: {font: {family: css(el, "--st-heading-font", font), size: px(1), color: headingColor},
            pad: {l: px(0.25)}, xanchor: "left", x: 0},
    legend: {title: {font: {size: px(0.75), color: text}, side: "top"}, valign: "top",
             bordercolor: "rgba(0, 0, 0, 0)", borderwidth: 0,
             font: {size: px(0.75), color: greys[2]}},
    paper_bgcolor: bg, plot_bgcolor: bg,
    yaxis: {ticklabelposition: "outside", zerolinecolor: lines, title: {...axisTitle,
            standoff: px(1.5)}, tickcolor: lines, tickfont: {color: text, size: px(0.75)},
            gridcolor: lines, minor: {gridcolor: lines}, automargin: true},
    xaxis: {zerolinecolor: lines, gridcolor: lines, showgrid: false,
            tickfont: {color: text, size: px(0.75)}, tickcolor: lines,
            title: {...axisTitle, standoff: px(1.25)}, minor: {gridcolor: lines},
            zeroline: false, automargin: true,
            rangeselector: {bgcolor: bg, bordercolor: lines, borderwidth: 1, x: 0}},
    margin: {pad: px(0.5), r: 0, l: 0},
    hoverlabel: {bgcolor: bg, bordercolor: css(el, "--st-border-color", lines),
                 font: {color: text, family: font, size: px(0.75)}},
    coloraxis: {colorbar: {thickness: 16, xpad: px(1.5), ticklabelposition: "outside",
                           outlinecolor: "rgba(0, 0, 0, 0)", outlinewidth: 8, len: 0.75,
                           y: 0.5745, title: {font: {color: text, size: px(0.875)}},
                           tickfont: {color: text, size: px(0.75)}}},
  };
  const given = layout.template && typeof layout.template === "object" ? layout.template : {};
  const template = replaced(given, placeholders(el, greys, bg));
  template.layout = merged(template.layout || {}, theme);
  const out = {...layout, template};
  const title = layout.title;
  const titleText = typeof title === "string" ? title : title && title.text;
  if (typeof titleText === "string" && !titleText.startsWith("<b>")) {
    out.title = {...(typeof title === "string" ? {} : title), text: "<b>" + titleText + "</b>"};
  }
  return out;
}

// Streamlit's charts have a "Fullscreen" button in their toolbar; this one has it too.
const EXPAND = {width: 512, height: 512,
                path: "M0 0h192v64H64v128H0zM320 0h192v192h-64V64H320zM0 320h64v128h128v64H0z" +
                      "M448 320h64v192H320v-64h128z"};

// A page with a corner folded, and "SVG" written on it: the vector download.
const SVG_ICON = {width: 1000, height: 1000,
                  path: "M150 50h480l220 220v680H150zM620 90v190h190zM260 760q40 40 95 40q60 0 60" +
                        "-50q0-35-55-55q-95-35-95-100q0-95 100-95q55 0 90 30l-30 45q-30-25-60-25q" +
                        "-40 0-40 40q0 30 55 50q95 35 95 105q0 105-120 105q-70 0-120-50zM470 460h" +
                        "70l55 230l55-230h70l-90 340h-70z"};

// The buttons are made once per chart (kept in its record): Plotly.react compares the config
// it is given with the last one, and a new click function every time would read as a new
// config, which Plotly answers by drawing the whole chart anew instead of updating it. The
// SVG button draws the file in the browser, from the chart as shown (Plotly.downloadImage),
// under the name the PNG gets (read at the click, as the camera reads it).
function withButtons(config, chart, words) {
  if (!chart.fullscreen) {
    const div = chart.div;
    chart.fullscreen = {name: "fullscreen", title: words.fullscreen, icon: EXPAND,
                        click: () => document.fullscreenElement ? document.exitFullscreen()
                                                                : div.requestFullscreen()};
    chart.svg = {name: "svg", title: words.svg, icon: SVG_ICON, click: gd => {
      const options = (gd._context && gd._context.toImageButtonOptions) || {};
      chart.plotly.downloadImage(gd, {format: "svg", filename: options.filename || "figure"});
    }};
  }
  return {...config, modeBarButtonsToAdd: [...(config.modeBarButtonsToAdd || []), chart.svg,
                                           chart.fullscreen]};
}

export default function ({data, parentElement, setTriggerValue}) {
  // The payload: the chart's JSON, and once per session a newline and plotly.js.
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const cut = bytes.indexOf(10);
  const r = registry();
  if (cut >= 0) {
    if (asking !== null) { clearTimeout(asking); asking = null; }
    if (r.state === "none" || r.state === "asked") load(r, bytes.subarray(cut + 1));
  } else if (r.state === "none" || r.state === "asked") {
    ask(r, setTriggerValue);
  }
  const text = new TextDecoder().decode(cut >= 0 ? bytes.subarray(0, cut) : bytes);
  let chart = charts.get(parentElement);
  if (!chart) {
    const div = document.createElement("div");
    div.className = "attnviz-live-chart";
    div.setAttribute("data-testid", "attnvizLiveChart");
    div.setAttribute("role", "figure");
    parentElement.appendChild(div);
    chart = {div, seq: 0, text: null, plotly: null};
    charts.set(parentElement, chart);
  }
  // On unmount: free the plot (a later draw's run keeps it).
  const cleanup = (seq => () => {
    if (seq !== chart.seq) return;
    if (chart.plotly) chart.plotly.purge(chart.div);
    chart.div.remove();
    charts.delete(parentElement);
  });
  if (text === chart.text) return cleanup(chart.seq);  // the same figure: nothing to redraw
  chart.text = text;
  const payload = JSON.parse(text);
  const seq = ++chart.seq;
  chart.div.setAttribute("aria-label", payload.alt || "");
  // Three subplots or more: a wider chart on a phone (the page's style), set before drawing.
  chart.div.classList.toggle("attnviz-wide", !!payload.wide);
  const fig = payload.figure;
  r.ready.then(P => {
    if (seq !== chart.seq) return;
    chart.plotly = P;
    const config = withButtons(payload.config, chart, payload.words);
    // Plotly.react draws the whole chart anew when the config differs from the last one
    // (gd._context). The PNG's file name follows the figure's title, which changes with the
    // head: it is put where the camera reads it at a click, so the config compares equal.
    const last = chart.div._context;
    if (last && last.toImageButtonOptions && config.toImageButtonOptions) {
      last.toImageButtonOptions = {...config.toImageButtonOptions};
    }
    // A narrow frame (a phone) may lay the figure out otherwise (ui.phone_layout).
    const shaped = phoneShaped(fig, parentElement.getBoundingClientRect().width, chart.div);
    return P.react(chart.div, shaped.data, themed(shaped.layout || {}, parentElement), config);
  }).then(() => {
    // A chart that takes clicks (payload.select) tells the server which point was clicked,
    // with the fields st.plotly_chart's selection gives (x, y, z, curve_number, ...).
    chart.select = payload.select ? setTriggerValue : null;
    if (payload.select && !chart.listening) {
      chart.listening = true;
      chart.div.on("plotly_click", event => {
        if (!chart.select) return;
        chart.select("select", {points: (event.points || []).map(p => ({
          x: p.x, y: p.y, z: p.z, curve_number: p.curveNumber, point_number: p.pointNumber,
          point_index: p.pointIndex, customdata: p.customdata}))});
      });
    }
    // A frame that changes width (a phone turned): laid out again (ui.phone_layout).
    phoneWatch(chart.div, chart.plotly);
    if (seq === chart.seq) chart.div.setAttribute("data-drawn", String(seq));
  }).catch(error => {  // say so on the page (as text), not only in the console
    console.error("attnviz: a chart could not be drawn", error);
    if (seq !== chart.seq) return;
    chart.div.textContent = payload.failed + " (" + String(error) + ")";
  });
  return cleanup(seq);
}
"""


# Full screen, the chart keeps the page's background (a bare element would be black).
CSS = """
.attnviz-live-chart:fullscreen {background: var(--st-background-color, #ffffff);
                                padding: 1rem; overflow: auto;}
"""


@functools.cache
def plotly_js() -> bytes:
    """The installed plotly package's plotly.js (package_data/plotly.min.js), as UTF-8."""
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode()


@functools.cache
def _component():
    """The chart as a st.components.v2 component; None where this Streamlit has none."""
    import streamlit as st

    v2 = getattr(st.components, "v2", None)
    if v2 is None or not hasattr(v2, "component"):
        return None
    # Not isolated in a shadow root: Plotly puts its modebar and hover styles in the
    # document's head, which a shadow root would not see.
    return v2.component(NAME, js=JS, css=CSS, isolate_styles=False)


def available() -> bool:
    """Whether figures can be drawn in place here (v2 components and plotly's plotly.js)."""
    try:
        return _component() is not None and bool(plotly_js())
    except Exception:  # noqa: BLE001 - an older or newer Streamlit: st.plotly_chart instead
        return False


def payload(fig: go.Figure, config: dict, alt: str | None,
            script: bytes | None = None, select: bool = False) -> bytes:
    """What the browser gets: the figure's JSON (as st.plotly_chart sends it:
    plotly.io.to_json without validation), the chart's config, its text alternative, what
    to say (as text) if the chart cannot be drawn and whether a click is sent back (`select`),
    as one line of JSON in UTF-8; then, when `script` is given (plotly.js), a newline and the
    script."""
    spec, n_panels = figure_json(fig)
    failed = _("This chart could not be drawn here. Reload the page to try again; its numbers "
               "stay under \"Numbers in this figure\".")
    words = {"svg": _("Download as SVG (vector)"), "fullscreen": _("Fullscreen")}
    head = json.dumps({"config": config, "alt": alt or "", "failed": failed, "words": words,
                       "select": bool(select), "wide": n_panels >= 3}, ensure_ascii=False)
    parts = [head[:-1].encode(), b', "figure": ', spec, b"}"]
    if script is not None:
        parts += [b"\n", script]
    return b"".join(parts)


def _send_again() -> None:
    """The page has no plotly.js (its loader asked): the next loader sends it."""
    import streamlit as st

    st.session_state[SENT] = False


def live_chart(fig: go.Figure, key: str, config: dict, alt: str | None = None,
               on_select=None) -> None:
    """Draw `fig` under `key`, redrawn in place when a later run draws another figure there.
    The session's first chart drawn in place (or the first after its page asked) brings
    plotly.js with it. With `on_select` (a callback), a click on a point calls it, as
    st.plotly_chart's on_select does; `clicked_points(key)` reads the points inside it."""
    import streamlit as st
    from streamlit.errors import StreamlitAPIException

    send = not st.session_state.get(SENT, False)
    events = {"on_select_change": on_select} if on_select is not None else {}
    data = payload(fig, config, alt, plotly_js() if send else None, select=on_select is not None)
    try:
        _component()(key=f"live_{key}", data=data, on_missing_change=_send_again, **events)
    except StreamlitAPIException:
        # Some Streamlit versions keep registered components per runtime (a server started
        # again in the same process, e.g. a test harness): register it again, once.
        _component.cache_clear()
        _component()(key=f"live_{key}", data=data, on_missing_change=_send_again, **events)
    st.session_state[SENT] = True


def clicked_points(key: str) -> list[dict]:
    """The points of the last click on the chart drawn under `key` (its on_select callback
    reads them here): from a live chart's "select" event or st.plotly_chart's selection."""
    import streamlit as st

    live = st.session_state.get(f"live_{key}")
    if live is not None:
        event = live.get("select") if hasattr(live, "get") else None
        return list((event or {}).get("points") or [])
    chart = st.session_state.get(key)
    if chart is None:
        return []
    selection = chart.get("selection") if hasattr(chart, "get") else None
    return list((selection or {}).get("points") or [])


def spec_of(data: bytes) -> tuple[str, dict] | None:
    """(figure JSON, config) from a live chart's payload (for the view recorder)."""
    try:
        found = json.loads(data.split(b"\n", 1)[0])
        return json.dumps(found["figure"]), dict(found.get("config") or {})
    except (ValueError, KeyError, TypeError):
        return None
