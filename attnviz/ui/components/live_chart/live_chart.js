// ui.live_chart's browser side: a Plotly chart that stays mounted and is redrawn in place
// (Plotly.react), themed from the CSS variables Streamlit gives its components, laid out for
// its frame's width (phone_layout.js, which comes before this file in the component's module)
// and laid out again when that width changes.
/* global phoneShaped, phoneKey, phoneDrawn, phoneAgain */

// The page's one copy of plotly.js, which every chart drawn in place waits for.
function registry() {
  let r = window.attnvizPlotly;
  if (!r) {
    r = {state: "none"};  // none -> loading -> ready | failed
    r.ready = new Promise((resolve, reject) => { r.resolve = resolve; r.reject = reject; });
    r.ready.catch(() => {});  // a chart that waits for it says so itself
    window.attnvizPlotly = r;
  }
  return r;
}

// plotly.min.js runs from the app's static copy (`url`, named by its content's hash) as a
// script of the page: the browser keeps the file in its HTTP cache and, from a returning
// visitor's third visit, the code V8 compiled from it (a script from a fetched text or a blob
// is compiled anew on every visit). Without a module loader on the page the bundle sets
// window.Plotly, and its UMD wrapper window.moduleName; both are put back as they were
// (Streamlit's own charts keep their copy of Plotly there). Its first run holds the page's
// main thread a while: it starts when the page is idle (the page's other charts drawn),
// within a second and a half.
const SET_BY_PLOTLY = ["Plotly", "moduleName"];

function load(r, url) {
  r.state = "loading";
  const start = () => {
    const before = SET_BY_PLOTLY.map(name => window[name]);
    const script = document.createElement("script");
    const done = (error) => {
      const P = window.Plotly;
      SET_BY_PLOTLY.forEach((name, i) => {
        if (before[i] === undefined) delete window[name]; else window[name] = before[i];
      });
      script.remove();
      if (!error && P && P !== before[0] && typeof P.react === "function") {
        r.state = "ready";
        r.resolve(P);
      } else {
        r.state = "failed";
        r.reject(error || new Error("plotly.js did not load"));
      }
    };
    script.onload = () => done(null);
    script.onerror = () => done(new Error("plotly.js could not be fetched"));
    script.src = url;
    document.head.appendChild(script);
  };
  if (window.requestIdleCallback) requestIdleCallback(start, {timeout: 1500});
  else setTimeout(start, 0);
}

const charts = new WeakMap();  // parent element -> the chart's record (see the default export)

// A CSS variable Streamlit gives its components (`--st-...`), or `fallback` where it is unset.
function css(el, name, fallback) {
  const v = getComputedStyle(el).getPropertyValue(name).trim();
  return v && v !== "unset" ? v : fallback;
}

// The colours of the theme a chart takes, from Streamlit's public CSS variables: text (the
// body's), grey text (tick labels, axis titles), lines (ticks, grid), faint lines, background,
// second background. Where a variable is unset: the element's own text colour, a transparent
// background (the page's shows through).
function palette(el) {
  const own = getComputedStyle(el).color;
  const text = css(el, "--st-text-color", own);
  const lines = css(el, "--st-border-color", text);
  const bg = css(el, "--st-background-color", "rgba(0, 0, 0, 0)");
  return {text, grey: css(el, "--st-gray-text-color", text), lines,
          faint: css(el, "--st-border-color-light", lines), bg,
          second: css(el, "--st-secondary-background-color", bg)};
}

// The colours the "streamlit" plotly template (which the server's figures carry) leaves as
// placeholders: #000001-#000010 categorical, -#000020 sequential, -#000030 diverging, then
// increasing, decreasing, total, lines, text, legend text, background, faint lines, header.
// A placeholder whose variable is unset stays as it is.
function placeholders(el, colours) {
  const list = name => css(el, name, "").split(",").map(c => c.trim()).filter(Boolean);
  const out = new Map();
  const put = (from, values) => values.slice(0, 10).forEach((c, i) => {
    if (c) out.set("#" + String(from + i).padStart(6, "0"), c);
  });
  put(1, list("--st-chart-categorical-colors"));
  put(11, list("--st-chart-sequential-colors"));
  put(21, list("--st-chart-diverging-colors"));
  put(32, [css(el, "--st-green-color", ""), css(el, "--st-red-color", ""),
           css(el, "--st-blue-color", ""), colours.lines, colours.grey, colours.text,
           colours.bg, colours.faint, colours.second]);
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

// The app theme's look for a figure, as Streamlit's own chart lays a figure out: the figure's
// template (its placeholder colours made the theme's) under a chart theme made of the CSS
// variables Streamlit gives its components (colours, fonts, the base font size); what the
// figure's layout sets itself wins; the title bold. Sized by its frame (autosize).
function themed(layout, el) {
  const colours = palette(el);
  const {text, grey, lines, bg} = colours;
  const own = getComputedStyle(el).fontFamily;
  const font = css(el, "--st-font", own);
  const headingColor = css(el, "--st-heading-color", text);
  const rem = parseFloat(css(el, "--st-base-font-size", "")) ||
              parseFloat(getComputedStyle(document.documentElement).fontSize) || 16;
  const px = r => r * rem;
  const axisTitle = {font: {color: grey, size: px(0.875)}};
  const theme = {
    font: {color: text, family: font, size: px(0.75),
           weight: Number(css(el, "--st-base-font-weight", "400")) || 400},
    title: {font: {family: css(el, "--st-heading-font", font), size: px(1), color: headingColor},
            pad: {l: px(0.25)}, xanchor: "left", x: 0},
    legend: {title: {font: {size: px(0.75), color: grey}, side: "top"}, valign: "top",
             bordercolor: "rgba(0, 0, 0, 0)", borderwidth: 0,
             font: {size: px(0.75), color: text}},
    paper_bgcolor: bg, plot_bgcolor: bg,
    yaxis: {ticklabelposition: "outside", zerolinecolor: lines, title: {...axisTitle,
            standoff: px(1.5)}, tickcolor: lines, tickfont: {color: grey, size: px(0.75)},
            gridcolor: lines, minor: {gridcolor: lines}, automargin: true},
    xaxis: {zerolinecolor: lines, gridcolor: lines, showgrid: false,
            tickfont: {color: grey, size: px(0.75)}, tickcolor: lines,
            title: {...axisTitle, standoff: px(1.25)}, minor: {gridcolor: lines},
            zeroline: false, automargin: true,
            rangeselector: {bgcolor: bg, bordercolor: lines, borderwidth: 1, x: 0}},
    margin: {pad: px(0.5), r: 0, l: 0},
    hoverlabel: {bgcolor: bg, bordercolor: lines, font: {color: text, family: font,
                                                         size: px(0.75)}},
    coloraxis: {colorbar: {thickness: 16, xpad: px(1.5), ticklabelposition: "outside",
                           outlinecolor: "rgba(0, 0, 0, 0)", outlinewidth: 8, len: 0.75,
                           y: 0.5745, title: {font: {color: grey, size: px(0.875)}},
                           tickfont: {color: grey, size: px(0.75)}}},
  };
  const given = layout.template && typeof layout.template === "object" ? layout.template : {};
  const template = replaced(given, placeholders(el, colours));
  template.layout = merged(template.layout || {}, theme);
  const out = {...layout, template, autosize: true};
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

// The config a chart draws with: the server's, its PNG file name the chart's own, and two
// buttons more. Plotly.react compares the config it is given with the last one, and one that
// differs (a new click function, a new file name) makes Plotly draw the whole chart anew
// instead of updating it. So the buttons are made once per chart (kept in its record), and so
// is the PNG's file name: one object per chart whose text (toString) is the name the server
// gave the figure drawn last (its title's: it changes with the head), which Plotly's camera
// and the SVG button turn into text when clicked. The SVG button draws the file in the
// browser, from the chart as shown (Plotly.downloadImage).
function withButtons(config, chart, words) {
  if (!chart.fullscreen) {
    const div = chart.div;
    chart.fullscreen = {name: "fullscreen", title: words.fullscreen, icon: EXPAND,
                        click: () => document.fullscreenElement ? document.exitFullscreen()
                                                                : div.requestFullscreen()};
    chart.svg = {name: "svg", title: words.svg, icon: SVG_ICON, click: gd => {
      chart.plotly.downloadImage(gd, {format: "svg", filename: chart.fileName || "figure"});
    }};
    chart.fileNameText = {toString: () => chart.fileName};
  }
  const options = config.toImageButtonOptions || {};
  chart.fileName = options.filename ? String(options.filename) : "";
  const out = {...config, modeBarButtonsToAdd: [...(config.modeBarButtonsToAdd || []),
                                                chart.svg, chart.fullscreen]};
  if (chart.fileName) out.toImageButtonOptions = {...options, filename: chart.fileNameText};
  return out;
}

// One layout pass of a chart: its frame's width read now, the figure shaped for it
// (phone_layout.js) and themed, drawn with Plotly.react and the chart's config. A new shape
// (phoneKey) is drawn from an empty plot: Plotly's margins grown for the previous shape (its
// colour bars, tick labels) would otherwise push the new one's rows together. Once drawn, the
// chart is measured (phoneDrawn) and, where its labels need more room or fewer names than the
// shape gave them (phoneAgain: tick labels Plotly chose, names closer than a line), shaped
// and drawn again with what was measured (at most twice more). Afterwards the element says
// which figure it shows (data-drawn: the payload's number) and the frame width it was laid
// out for (data-laid-out-width).
async function pass(chart) {
  const {div, frame, plotly: P, figure, config, want: seq} = chart;
  const width = frame.getBoundingClientRect().width;
  const fresh = seq !== chart.drawn;
  if (!fresh && (width === chart.width || !(width > 0))) return;  // hidden: laid out when shown
  div.classList.toggle("attnviz-wide", chart.wide);
  // the room a figure's labels took at this width (not its thinning, which depends on the
  // figure's names): the next figure starts from it, so its panels do not move once drawn
  let key = chart.key, hint = width === chart.width ? chart.room : null, used = hint;
  for (let round = 0; round < 3; round++) {
    const now = phoneKey(figure, width, hint);
    const shaped = phoneShaped(figure, width, div, hint);
    const layout = themed(shaped.layout || {}, frame);
    if ((round > 0 || !fresh) && now !== key) {
      await P.react(div, [], {height: layout.height, autosize: true}, config);
    }
    await P.react(div, shaped.data, layout, config);
    key = now;
    used = hint;
    hint = round < 2 ? phoneAgain(figure, width, phoneDrawn(div), hint) : null;
    if (!hint) break;
  }
  const room = used && (used.labels || used.left) ? {labels: used.labels, left: used.left} : null;
  Object.assign(chart, {width, key, drawn: seq, room});
  div.setAttribute("data-drawn", String(seq));
  div.setAttribute("data-laid-out-width", String(width));
}

// Lays the chart out for its frame, one pass at a time: what changes during a pass (a new
// figure, another frame width) is laid out by the next pass, for the frame's width then, so a
// shape made for a width the frame has left is never drawn after one made for its width now.
// The promise settles when the chart is laid out for the figure and the width of the last
// pass.
function layOut(chart) {
  chart.again = true;
  if (!chart.busy) {
    chart.busy = (async () => {
      try {
        while (chart.again && chart.div.isConnected) {
          chart.again = false;
          await pass(chart);
        }
      } finally {
        chart.busy = null;
      }
    })();
  }
  return chart.busy;
}

// A frame that changes width (a phone turned, a sidebar opened): laid out again.
function watch(chart) {
  if (chart.observer || typeof ResizeObserver === "undefined") return;
  chart.observer = new ResizeObserver(() => {
    if (chart.frame.getBoundingClientRect().width === chart.width || !chart.div.isConnected) {
      return;
    }
    layOut(chart).catch(error => console.error("attnviz: a chart could not be laid out again",
                                               error));
  });
  chart.observer.observe(chart.frame);
}

// Streamlit calls this on every run that draws the chart. The payload: the chart's JSON, with
// where the app serves plotly.js (`plotly`), which the page's first chart fetches. The chart's
// record: its element (div) and frame (the component's parent element), the payload it was
// last given (text, and its number seq), plotly.js once loaded, the figure, config and width
// class to draw (figure, config, wide, want: the payload's number), what was drawn (drawn,
// width, key, and room: what its labels' measure added, phoneAgain) and its buttons.
export default function ({data, parentElement, setTriggerValue}) {
  const text = typeof data === "string" ? data : new TextDecoder().decode(data);
  let chart = charts.get(parentElement);
  if (!chart) {
    const div = document.createElement("div");
    div.className = "attnviz-live-chart";
    div.setAttribute("data-testid", "attnvizLiveChart");
    div.setAttribute("role", "figure");
    parentElement.appendChild(div);
    chart = {div, frame: parentElement, seq: 0, text: null, plotly: null};
    charts.set(parentElement, chart);
  }
  // On unmount: free the plot (a later draw's run keeps it).
  const cleanup = (seq => () => {
    if (seq !== chart.seq) return;
    if (chart.observer) chart.observer.disconnect();
    if (chart.plotly) chart.plotly.purge(chart.div);
    chart.div.remove();
    charts.delete(parentElement);
  });
  if (text === chart.text) return cleanup(chart.seq);  // the same figure: nothing to redraw
  chart.text = text;
  const payload = JSON.parse(text);
  const r = registry();
  if (r.state === "none") load(r, payload.plotly);
  const seq = ++chart.seq;
  chart.div.setAttribute("aria-label", payload.alt || "");
  // Three subplots or more: a wider chart on a phone (the page's style), set before drawing.
  chart.div.classList.toggle("attnviz-wide", !!payload.wide);
  r.ready.then(P => {
    if (seq !== chart.seq) return;
    chart.plotly = P;
    Object.assign(chart, {figure: payload.figure, wide: !!payload.wide, want: seq,
                          config: withButtons(payload.config, chart, payload.words)});
    watch(chart);
    return layOut(chart);
  }).then(() => {
    if (seq !== chart.seq || chart.drawn !== seq) return;
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
  }).catch(error => {  // say so on the page (as text), not only in the console
    console.error("attnviz: a chart could not be drawn", error);
    if (seq !== chart.seq) return;
    chart.div.textContent = payload.failed + " (" + String(error) + ")";
  });
  return cleanup(seq);
}

// The layout passes, for the Node test that drives them with a stand-in Plotly and frame.
export {layOut};
