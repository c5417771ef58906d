"""A Plotly chart that stays on the page from rerun to rerun and is redrawn in place.

Streamlit's own chart (st.plotly_chart) gives every new figure a new element id (the id hashes
the figure), so the browser unmounts the old chart and mounts a new one, and on mount (and again
in an effect) it turns the whole figure into JSON text, runs its theme's colour replacements over
that text and parses it back. For the all-heads page's enlarged 512 x 512 head that pipeline,
not Plotly's drawing, was most of a head change (README, "Explore at 512 tokens").

`live_chart` draws a figure through a Streamlit v2 component (st.components.v2) kept under a
fixed key: the element stays mounted, a new figure arrives as bytes (the figure's JSON, parsed
once) and is drawn with `Plotly.react`, which updates the existing plot. Plotly.js is the copy
Streamlit itself ships (its lazily loaded PlotlyChart module sets `window.Plotly`), so the page
needs no other script, nothing is fetched from elsewhere, and the chart looks and behaves like
the app's other charts: the same hover, the same toolbar with its PNG download, the theme's
fonts and colours (from the CSS variables Streamlit gives its components).

When this Streamlit has no v2 components, or its Plotly module cannot be found, `available()`
is False and figures go through st.plotly_chart as before.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

import plotly.graph_objects as go

from ..i18n import _
from . import speedups

NAME = "attnviz_live_chart"

JS = r"""
const charts = new WeakMap();  // parent element -> {div, seq, text, fullscreen}

async function plotly(url) {
  if (window.Plotly) return window.Plotly;
  // Streamlit's own Plotly module (the one its charts load): importing it sets window.Plotly.
  await import(new URL(url, document.baseURI).href);
  for (let i = 0; i < 200 && !window.Plotly; i++) await new Promise(r => setTimeout(r, 25));
  if (!window.Plotly) throw new Error("Plotly.js did not load");
  return window.Plotly;
}

function css(el, name, fallback) {
  const v = getComputedStyle(el).getPropertyValue(name).trim();
  return v && v !== "unset" ? v : fallback;
}

// `color` with opacity `alpha` (any CSS colour the browser knows), for Plotly.
function faded(color, alpha) {
  const probe = document.createElement("span");
  probe.style.color = color;
  document.body.appendChild(probe);
  const rgb = (getComputedStyle(probe).color.match(/[\d.]+/g) || []).slice(0, 3);
  probe.remove();
  return rgb.length === 3 ? `rgba(${rgb.join(", ")}, ${alpha})` : color;
}

// The app theme's look, as Streamlit's own chart gives it to figures: a template under the
// figure's layout (what the figure sets itself wins), the theme's fonts and colours from the
// CSS variables Streamlit sets on its components, axis text faded, the title bold.
function themed(layout, el) {
  const text = css(el, "--st-text-color", "#31333F");
  const bg = css(el, "--st-background-color", "#ffffff");
  const font = css(el, "--st-font", "\"Source Sans\", sans-serif");
  const heading = css(el, "--st-heading-font", font);
  const border = css(el, "--st-border-color", "rgba(49, 51, 63, 0.2)");
  const axisText = faded(text, 0.6), lines = faded(text, 0.1);
  const axis = {tickfont: {color: axisText, size: 12}, tickcolor: lines, gridcolor: lines,
                zerolinecolor: lines, title: {font: {color: axisText, size: 14}},
                automargin: true};
  const template = {layout: {
    font: {color: axisText, family: font, size: 12},
    title: {font: {family: heading, size: 16, color: text}, x: 0, xanchor: "left",
            pad: {l: 4}},
    paper_bgcolor: bg, plot_bgcolor: bg,
    hoverlabel: {bgcolor: bg, bordercolor: border, font: {color: text, family: font, size: 12}},
    xaxis: {...axis, showgrid: false, zeroline: false},
    yaxis: axis,
    coloraxis: {colorbar: {title: {font: {color: axisText, size: 14}},
                           tickfont: {color: axisText, size: 12}}},
  }};
  const out = {...layout, template};
  const title = layout.title;
  if (title && typeof title.text === "string" && !title.text.startsWith("<b>")) {
    out.title = {...title, text: "<b>" + title.text + "</b>"};
  }
  return out;
}

// Streamlit's charts have a "Fullscreen" button in their toolbar; this one has it too.
const EXPAND = {width: 512, height: 512,
                path: "M0 0h192v64H64v128H0zM320 0h192v192h-64V64H320zM0 320h64v128h128v64H0z" +
                      "M448 320h64v192H320v-64h128z"};

// The button is made once per chart (kept in its record): Plotly.react compares the config it
// is given with the last one, and a new click function every time would read as a new config,
// which Plotly answers by drawing the whole chart anew (at 512 tokens about twice the time of
// a redraw).
function withFullscreen(config, chart) {
  if (!chart.fullscreen) {
    const div = chart.div;
    chart.fullscreen = {name: "fullscreen", title: "Fullscreen", icon: EXPAND,
                        click: () => document.fullscreenElement ? document.exitFullscreen()
                                                                : div.requestFullscreen()};
  }
  return {...config, modeBarButtonsToAdd: [...(config.modeBarButtonsToAdd || []),
                                           chart.fullscreen]};
}

export default function ({data, parentElement}) {
  const text = typeof data === "string" ? data : new TextDecoder().decode(data);
  let chart = charts.get(parentElement);
  if (!chart) {
    const div = document.createElement("div");
    div.className = "attnviz-live-chart";
    div.setAttribute("data-testid", "attnvizLiveChart");
    div.setAttribute("role", "figure");
    parentElement.appendChild(div);
    chart = {div, seq: 0, text: null};
    charts.set(parentElement, chart);
  }
  // On unmount: free the plot (a later draw's run keeps it).
  const cleanup = (seq => () => {
    if (seq !== chart.seq) return;
    if (window.Plotly) window.Plotly.purge(chart.div);
    chart.div.remove();
    charts.delete(parentElement);
  });
  if (text === chart.text) return cleanup(chart.seq);  // the same figure: nothing to redraw
  chart.text = text;
  const payload = JSON.parse(text);
  const seq = ++chart.seq;
  chart.div.setAttribute("aria-label", payload.alt || "");
  const fig = payload.figure;
  plotly(payload.plotly).then(P => {
    if (seq !== chart.seq) return;
    const config = withFullscreen(payload.config, chart);
    // Plotly.react draws the whole chart anew when the config differs from the last one
    // (gd._context). The PNG's file name follows the figure's title, which changes with the
    // head: it is put where the camera reads it at a click, so the config compares equal.
    const last = chart.div._context;
    if (last && last.toImageButtonOptions && config.toImageButtonOptions) {
      last.toImageButtonOptions = {...config.toImageButtonOptions};
    }
    return P.react(chart.div, fig.data, themed(fig.layout || {}, parentElement), config);
  }).then(() => {
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
def plotly_module() -> str | None:
    """Streamlit's Plotly module as a path relative to the app's URL
    (`static/js/PlotlyChart.<hash>.js`), found without importing streamlit; None if this
    Streamlit has none, or more than one."""
    spec = importlib.util.find_spec("streamlit")
    if spec is None or spec.origin is None:
        return None
    found = sorted((Path(spec.origin).parent / "static" / "static" / "js").glob(
        "PlotlyChart.*.js"))
    return f"static/js/{found[0].name}" if len(found) == 1 else None


@functools.cache
def _component():
    import streamlit as st

    v2 = getattr(st.components, "v2", None)
    if v2 is None or not hasattr(v2, "component"):
        return None
    # Not isolated in a shadow root: Plotly puts its modebar and hover styles in the
    # document's head, which a shadow root would not see.
    return v2.component(NAME, js=JS, css=CSS, isolate_styles=False)


def available() -> bool:
    """Whether figures can be drawn in place here (v2 components and Streamlit's Plotly)."""
    try:
        return plotly_module() is not None and _component() is not None
    except Exception:  # noqa: BLE001 - an older or newer Streamlit: st.plotly_chart instead
        return False


def payload(fig: go.Figure, config: dict, alt: str | None) -> bytes:
    """What the browser gets: the figure's JSON (as st.plotly_chart would send it), the chart's
    config, its text alternative, where Plotly.js is and what to say (as text) if the chart
    cannot be drawn, as one JSON document in UTF-8."""
    spec = speedups.chart_json(fig)  # kept for a cached figure (ui.figures.frozen)
    failed = _("This chart could not be drawn here. Reload the page to try again; its numbers "
               "stay under \"Numbers in this figure\".")
    head = json.dumps({"config": config, "alt": alt or "", "plotly": plotly_module(),
                       "failed": failed})
    return (head[:-1] + ', "figure": ' + spec + "}").encode()


def live_chart(fig: go.Figure, key: str, config: dict, alt: str | None = None) -> None:
    """Draw `fig` under `key`, redrawn in place when a later run draws another figure there."""
    _component()(key=f"live_{key}", data=payload(fig, config, alt))


def spec_of(data: bytes) -> tuple[str, dict] | None:
    """(figure JSON, config) from a live chart's payload (for the view recorder)."""
    try:
        found = json.loads(data)
        return json.dumps(found["figure"]), dict(found.get("config") or {})
    except (ValueError, KeyError, TypeError):
        return None
