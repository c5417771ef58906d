// How a chart drawn in place (live_chart.js) is laid out on a narrow screen (a phone).
//
// `phoneShaped(figure, width, div)`, which the chart calls before it draws, takes the figure
// (its `data` and `layout`, as the server sent them), the width in CSS pixels its frame has,
// and the chart's element; it returns the figure to draw (the same object where nothing
// changes). `phoneKey(figure, width)` names the layout a width gets (how many panels to a row,
// how many lines, a title broken or not): the chart lays itself out anew from an empty plot
// when the key changes.
//
// A figure of panels side by side (plotly subplots: one x/y axis pair per panel) that a frame
// narrower than PHONE.narrow px cannot show at their width is laid out again, generically,
// from its subplot grid: as many panels to a row as fit at PHONE.minPanel px (and their
// titles' width), PHONE.gap px apart, or, where every panel names its own rows (its y tick
// labels written out), as far apart as the widest of those names needs (the left margin as
// wide too), in the original order (row by row); each panel keeps its height (less when
// it gets narrower than it was drawn at 760 px, its shape kept); each subplot title (a paper
// annotation centred over a panel's top) moves with its panel; each colour bar lies horizontal
// under the last row of the panels it serves, as wide as those panels; the figure grows a
// row's height per row, and the chart's element loses its `attnviz-wide` class (the page's
// phone style keeps a wide chart at 760 px and scrolls it in its frame): the figure now fits
// its frame. A figure whose panels pair up down its columns (layout.meta.phone_layout "pairs":
// a window's mask over its weights) is laid out column by column, each mask followed by its
// weights.
//
// An equation of matrices (layout.meta.phone_layout "equation", or panels of unequal widths:
// W^q · I = Q, the steps of one score), whose order across is its meaning, flows instead: its
// columns of panels go into lines, as many to a line as fit at the width they were drawn at,
// each line stretched a little or shrunk to the frame and centred, each operator between the
// two matrices it joins (under the line it follows when the next matrix starts a line), a
// line's first panel showing the rows' names, an axis title too long for the frame broken
// into lines.
//
// A frame is a phone's when it is narrower than PHONE.narrow px on a screen (the page's
// viewport: the component is drawn in the page, not in a frame of its own) narrower than
// PHONE.screen px: a narrow column of a laptop's or projector's page (presentation mode's
// figure column) is left as drawn. Left as they are: a figure of one panel per row (a heads
// grid is one heatmap), a frame that is wide enough, and a wide screen. A heads grid whose
// panels are too narrow for their titles ("head 10") is titled by the heads' numbers under
// one heading per row of panels (phoneHeads). A title broken into lines grows the figure by
// as much (phoneTitle).
//
// Once drawn, the chart is measured where Plotly decides what it draws (phoneDrawn: the plot
// areas and tick labels on the page, read from the DOM), and `phoneAgain(figure, width,
// drawn, hint)` says what a second layout needs (null where nothing): the gap between panels
// of a row as wide as the tick labels Plotly drew there reach left of their panel (numbers
// Plotly chose itself, unknown before), the left margin as wide as the first column's labels
// and axis title, a category axis whose names the server thinned to every k-th
// (common.tick_labels: '#27 the'; a heads grid's, panel by panel) thinned further, every m-th
// of them, where a name lies on the next (rows closer than a line, slanted keys closer than a
// line across their slant), and a numbered axis ticked every dtick (layers 0-29) ticked every
// m dticks where its numbers lie that close.
// `phoneShaped(figure, width, div, hint)` and `phoneKey(figure, width, hint)` take that hint.
//
// A plain script (no module syntax): the component's module is this file followed by
// live_chart.js (ui.live_chart), and the Node tests run it followed by their own lines.
/* exported phoneShaped, phoneKey, phoneDrawn, phoneAgain */

const PHONE = {narrow: 640, screen: 1000, minPanel: 140, gap: 36, titleLine: 18, barRoom: 100,
               ticks: 24, axisTitle: 28, rowGap: 16, drawnAt: 760, opBand: 48, opGap: 30,
               minColumn: 60, stretch: 1.5, labelGap: 12, titleGap: 12};

// Whether a frame `width` px wide is a phone's: narrower than PHONE.narrow on a screen (the
// page's viewport, the component being drawn in the page itself) narrower than PHONE.screen.
// A laptop's or projector's narrow column (presentation mode's figure column at 1280 px) keeps
// the figure as it is drawn there.
function phoneNarrow(width) {
  if (!(width > 0) || width >= PHONE.narrow) return false;
  const screen = typeof window !== "undefined" && window ? window.innerWidth : 0;
  return !(screen >= PHONE.screen);
}

// An upper estimate of a text's width in px (Latin 0.56 em, CJK 1.05 em) and its lines.
function phoneTextBox(text, size) {
  const lines = String(text || "").split(/<br\s*\/?>/i).map(l => l.replace(/<[^>]*>/g, "")
    .replace(/&[a-z#0-9]+;/gi, "x"));
  const w = l => [...l].reduce((s, c) => s + (/[\u1100-\u9fff\uac00-\ud7af\uff00-\uffef]/
                                                  .test(c) ? 1.05 : 0.56), 0) * size;
  return {width: Math.max(0, ...lines.map(w)), lines: lines.length};
}

// The figure's panels: an x axis that a trace is drawn on, anchored to a y axis (overlaying
// axes ride on their base). Each {x: "xaxis2", y: "yaxis2", ref: "x2", xd, yd}.
function phonePanels(layout, data) {
  const used = new Set((data || []).map(t => t.xaxis || "x"));
  const out = [];
  for (const [name, ax] of Object.entries(layout)) {
    const m = /^xaxis(\d*)$/.exec(name);
    if (!m || !ax || typeof ax !== "object" || ax.overlaying || !used.has("x" + m[1])) continue;
    const yName = "yaxis" + String(ax.anchor || "y").slice(1);
    const yAx = layout[yName];
    if (!/^y\d*$/.test(String(ax.anchor || "y")) || !yAx || yAx.overlaying) continue;
    out.push({x: name, y: yName, ref: "x" + m[1], yref: "y" + yName.slice(5),
              xd: ax.domain || [0, 1], yd: yAx.domain || [0, 1]});
  }
  return out;
}

// Panels grouped in rows (top first), each row left to right.
function phoneRows(panels) {
  const rows = [];
  for (const p of [...panels].sort((a, b) => b.yd[1] - a.yd[1] || a.xd[0] - b.xd[0])) {
    const row = rows.find(r => Math.abs(r[0].yd[1] - p.yd[1]) < 0.02);
    if (row) row.push(p); else rows.push([p]);
  }
  rows.forEach(r => r.sort((a, b) => a.xd[0] - b.xd[0]));
  return rows;
}

// The colour bars: {owner, path, axis, refs} for each shown colour bar, where `owner`/`path`
// say where its settings live (a trace or the layout) and `refs` the x axes it serves.
function phoneBars(figure) {
  const layout = figure.layout || {}, data = figure.data || [];
  const bars = [];
  const SCALED = new Set(["heatmap", "contour", "histogram2d", "histogram2dcontour"]);
  const byAxis = new Map();
  data.forEach((t, i) => {
    const ref = t.xaxis || "x";
    const axes = [t.coloraxis, t.marker && t.marker.coloraxis].filter(Boolean);
    axes.forEach(a => { if (!byAxis.has(a)) byAxis.set(a, new Set()); byAxis.get(a).add(ref); });
    if (!t.coloraxis && SCALED.has(t.type || "scatter") && t.showscale !== false) {
      bars.push({trace: i, where: "trace", refs: new Set([ref])});
    } else if (t.marker && !t.marker.coloraxis && t.marker.showscale === true) {
      bars.push({trace: i, where: "marker", refs: new Set([ref])});
    }
  });
  for (const [axis, refs] of byAxis) {
    const ca = layout[axis];
    if (ca && ca.showscale === false) continue;
    bars.push({axis, where: "layout", refs});
  }
  return bars;
}

// Whether a frame `width` px wide lays the figure out otherwise, and how: null (as it is) or
// {rows, cols, panelWidth, ...} for phoneShaped.
function phonePlan(figure, width, hint) {
  const layout = figure && figure.layout;
  if (!layout || !phoneNarrow(width) || phoneKind(layout) === "equation") return null;
  const panels = phonePanels(layout, figure.data);
  if (panels.length < 2) return null;
  const rows = phoneRows(panels);
  const across = Math.max(...rows.map(r => r.length));
  if (across < 2) return null;
  const widths = panels.map(p => p.xd[1] - p.xd[0]);
  if (Math.max(...widths) - Math.min(...widths) > 0.02) return null;  // unequal: an equation
  const margin = layout.margin || {};
  const fontSize = (layout.font && layout.font.size) || 12;
  // A figure whose panels pair up down its columns ("pairs": a window's mask over the weights
  // it leaves) keeps each column's panels together.
  const paired = phoneKind(layout) === "pairs";
  // Every panel naming its own rows (a panel of any column may begin a row, or not): the gap
  // between two panels of a row holds the widest of those names, and the left margin the
  // first column's (Plotly would otherwise grow it and press the panels, gaps included,
  // together).
  // A hint (phoneAgain) holds what the drawn chart's labels measured: as wide at least.
  const labels = paired ? 0 : Math.max(phoneOwnLabels(layout, panels, fontSize),
                                       (hint && hint.labels) || 0);
  const gap = Math.max(PHONE.gap, labels && labels + PHONE.labelGap);
  const l = Math.max(margin.l ?? 80, labels, (hint && hint.left) || 0);
  const r = Math.min(margin.r ?? 80, 20);
  const plotW = width - l - r;
  const titles = phoneTitles(layout, panels);
  const titleW = Math.max(0, ...[...titles.values()].map(a => phoneTextBox(
    a.text, (a.font && a.font.size) || fontSize + 4).width));
  const need = Math.max(PHONE.minPanel, titleW);
  const cols = Math.max(1, Math.min(across, Math.floor((plotW + gap) / (need + gap))));
  if (cols >= across) return null;
  return {panels: paired ? phoneColumnsFirst(rows) : rows.flat(), paired, cols, l, r, plotW,
          titles, fontSize, gap,
          panelWidth: (plotW - (cols - 1) * gap) / cols};
}

// The width (px) of the row names (y tick labels written as text: ticktext) when every panel
// shows its own, else 0: the widest, as phoneLabelsWidth estimates it, or as the page's font
// measures it where there is a page (a canvas's measureText, the labels' own font) when that
// is wider. Numbered rows (no ticktext) keep PHONE.gap.
function phoneOwnLabels(layout, panels, fontSize) {
  const axes = panels.map(p => layout[p.y] || {});
  if (!axes.every(ax => ax.showticklabels !== false && ax.side !== "right" &&
                        Array.isArray(ax.ticktext) && ax.ticktext.length)) return 0;
  return Math.max(...axes.map(ax => {
    const font = {...(layout.font || {}), ...(ax.tickfont || {})};
    const size = font.size || fontSize;
    return Math.max(phoneLabelsWidth(ax, size),
                    Math.max(0, ...ax.ticktext.map(t => phoneMeasured(t, size, font.family)))
                    + 10);
  }));
}

// A label's width in px as the page's font draws it (its HTML tags out, its entities read as
// the characters they stand for; nothing is parsed as HTML), or 0 where no page can measure
// it (Node).
function phoneMeasured(text, size, family) {
  if (typeof document === "undefined" || !document || !document.createElement) return 0;
  const canvas = phoneMeasured.canvas || (phoneMeasured.canvas = document.createElement(
    "canvas"));
  const ctx = canvas.getContext && canvas.getContext("2d");
  if (!ctx) return 0;
  const named = {amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'", nbsp: "\u00a0"};
  const plain = String(text || "").replace(/<br\s*\/?>/gi, " ").replace(/<[^>]*>/g, "")
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (all, e) => {
      if (e[0] !== "#") return named[e] ?? all;
      const code = /^#x/i.test(e) ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : "x";
    });
  ctx.font = `${size}px ${family || "sans-serif"}`;
  return ctx.measureText(plain).width;
}

// What a figure says of its own layout on a phone (layout.meta.phone_layout): "equation" (its
// order across is its meaning: phoneFlowPlan), "pairs" (each column's panels belong together:
// laid out column by column), or "" (row by row).
function phoneKind(layout) {
  const meta = layout && layout.meta;
  return meta && typeof meta === "object" && typeof meta.phone_layout === "string" ?
    meta.phone_layout : "";
}

// Panels column by column (left first), each column top to bottom.
function phoneColumnsFirst(rows) {
  const out = [];
  const across = Math.max(...rows.map(r => r.length));
  for (let c = 0; c < across; c++) rows.forEach(r => { if (r[c]) out.push(r[c]); });
  return out;
}

// The subplot titles: panel's x axis name -> its annotation (a paper annotation centred over
// the panel's top edge).
function phoneTitles(layout, panels) {
  const out = new Map();
  (layout.annotations || []).forEach(a => {
    if (a.xref !== "paper" || a.yref !== "paper" || a.showarrow) return;
    const p = panels.find(p => Math.abs((p.xd[0] + p.xd[1]) / 2 - a.x) < 0.02 &&
                               Math.abs(p.yd[1] - a.y) < 0.03 && !out.has(p.x));
    if (p) out.set(p.x, a);
  });
  return out;
}

// The figure's title broken into lines that fit `room` px (at spaces, or between CJK
// characters), the top margin and the figure's height grown by a line for each line added;
// null when it fits.
function phoneTitle(layout, room) {
  const title = layout.title;
  const text = typeof title === "string" ? title : title && title.text;
  if (typeof text !== "string" || !text) return null;
  const size = ((title.font && title.font.size) || 16) * 1.08;  // bold
  const broken = phoneBreak(text, size, room);
  if (!broken) return null;
  const {lines, added} = broken;
  const m = layout.margin || {};
  // at the figure's top edge, its lines downwards (a title centred in the top margin would
  // grow onto the subplot titles); Plotly anchors such a title by its first line's baseline,
  // hence a line's height more of padding
  // the figure grows by as much, so its plot area keeps its height (a token lines chart's
  // names stay a line apart)
  const grown = 22 * added + 1.6 * size;
  return {title: {...(typeof title === "string" ? {} : title), text: lines.join("<br>"),
                  yref: "container", y: 1, yanchor: "top", pad: {t: 8 + 1.6 * size, b: 0}},
          margin: {...m, t: (m.t ?? 100) + grown},
          height: Math.round((layout.height || 450) + grown)};
}

// `text` broken into lines that fit `room` px at font `size` (at spaces, or between CJK
// characters): {lines, added}, or null when it fits as it is.
function phoneBreak(text, size, room) {
  if (phoneTextBox(text, size).width <= room) return null;
  const CJK = "\u3000-\u9fff\uac00-\ud7af\uff00-\uffef";
  const parts = new RegExp(`<br\\s*/?>|<[^>]*>|&[#a-z0-9]+;|[${CJK}]|\\s+|[^\\s<&${CJK}]+|[<&]`,
                           "gi");
  const lines = [];
  let line = "", added = 0;
  for (const part of text.match(parts) || []) {
    if (/^<br/i.test(part)) { lines.push(line); line = ""; continue; }
    if (/^\s+$/.test(part)) { if (line) line += " "; continue; }
    const next = line + part;
    if (line.trim() && !/^</.test(part) && phoneTextBox(next, size).width > room) {
      lines.push(line.trimEnd()); line = part; added++;
    } else {
      line = next;
    }
  }
  lines.push(line);
  return added ? {lines, added} : null;
}

// The figure with its title broken into lines for a phone's frame, where it needs it (else
// the same object).
function phoneTitled(figure, width) {
  const titled = phoneNarrow(width) && figure && figure.layout ?
    phoneTitle(figure.layout, width - 24) : null;
  return titled ? {...figure, layout: {...figure.layout, ...titled}} : figure;
}

// A heads grid (plotting.heads_grid: one heatmap whose panels are the heads, placed by
// layout.meta.panels) in a frame `width` px wide whose panels lie closer than their titles
// need (two neighbours' titles, as wide as the page's font draws them or phoneTextBox
// estimates them, and PHONE.titleGap px between them): each panel titled by its short form
// (meta.panels.short: the head's number) and the heading (meta.panels.heading: "head") at the
// titles' height left of each row of panels, right-aligned in the left margin (as wide as it
// needs), as a table's header names its columns; both a little higher where a panel's first
// row name reaches above the panel (many short rows). The same object where the titles fit, on a
// wide screen, or for any other figure.
function phoneHeads(figure, width) {
  const layout = figure && figure.layout;
  const meta = layout && layout.meta;
  const panels = meta && typeof meta === "object" ? meta.panels : null;
  if (!panels || !phoneNarrow(width) || !Array.isArray(panels.titles) ||
      !Array.isArray(panels.short) || panels.short.length !== panels.titles.length ||
      !Array.isArray(panels.starts) || panels.starts.length !== panels.titles.length ||
      typeof panels.heading !== "string") return figure;
  const ax = layout.xaxis || {};
  const cats = Array.isArray(ax.categoryarray) ? ax.categoryarray.length : 0;
  const notes = layout.annotations || [];
  const at = panels.titles.map(t => notes.findIndex(a => a && a.xref === "paper" &&
                                                         a.text === t && !a.showarrow));
  if (!cats || at.some(i => i < 0)) return figure;
  const m = layout.margin || {};
  const wide = (text, a) => {
    const font = {...(layout.font || {}), ...((a && a.font) || {})};
    const size = font.size || 12;
    return phoneMeasured(text, size, font.family) || phoneTextBox(text, size).width;
  };
  const domain = ax.domain || [0, 1];
  const pitch = l => (width - l - (m.r ?? 80)) * (domain[1] - domain[0]) / cats;  // px a column
  // neighbours in a row of panels: their titles' half widths and PHONE.titleGap between them
  const fits = (texts, l) => panels.starts.every(([r0, c0], h) => {
    const right = panels.starts.map(([, c], k) => ({c, k})).filter(p => p.k !== h &&
      panels.starts[p.k][0] === r0 && p.c > c0).sort((a, b) => a.c - b.c)[0];
    return !right || (right.c - c0) * pitch(l) >= PHONE.titleGap +
      (wide(texts[h], notes[at[h]]) + wide(texts[right.k], notes[at[right.k]])) / 2;
  });
  if (fits(panels.titles, m.l ?? 80)) return figure;
  const first = notes[at[0]];
  const l = Math.max(m.l ?? 80, Math.ceil(wide(panels.heading, first)) + 12);
  // A panel's first row name centred less than half a line under its top (many short rows)
  // reaches above it, where the heading stands: the heading and the numbers rise together
  // by as much.
  const yAx = layout.yaxis || {};
  const yCats = Array.isArray(yAx.categoryarray) ? yAx.categoryarray : [];
  const top = Array.isArray(yAx.tickvals) && yAx.tickvals.length ?
    yCats.indexOf(yAx.tickvals[0]) : -1;
  const rowPx = Math.max(0, (layout.height || 450) - (m.t ?? 100) - (m.b ?? 80)) /
    Math.max(1, yCats.length);
  const size = (yAx.tickfont && yAx.tickfont.size) || (layout.font && layout.font.size) || 12;
  const rise = top >= 0 ? Math.max(0, Math.ceil(0.6 * size - (top + 0.5) * rowPx) + 2) : 0;
  const up = a => (rise ? {yshift: (a.yshift || 0) + rise} : {});
  const out = notes.map((a, i) => {
    const h = at.indexOf(i);
    return h < 0 ? a : {...a, text: panels.short[h], ...up(a)};
  });
  const rows = [...new Set(panels.starts.map(([r0]) => r0))];
  rows.forEach(r0 => {
    const a = notes[at[panels.starts.findIndex(([r]) => r === r0)]];
    out.push({...a, text: panels.heading, x: 0, xanchor: "right", xshift: -6, ...up(a)});
  });
  return {...figure, layout: {...layout, annotations: out, margin: {...m, l}}};
}

// The layout a frame `width` px wide gives the figure, as a string: "0" (as drawn), the
// number of panels to a row, or "f" and the number of lines of a flowed equation; "t" after
// it when the title is broken into lines.
function phoneKey(figure, width, hint) {
  const titled = phoneTitled(figure, width);
  const plan = phonePlan(titled, width, hint);
  const flow = plan ? null : phoneFlowPlan(titled, width);
  return String(plan ? plan.cols : flow ? "f" + flow.lines.length : 0) +
         (titled !== figure ? "t" : "") + (phoneHeads(titled, width) !== titled ? "h" : "");
}

function phoneShaped(figure, width, div, hint) {
  figure = phoneThinned(phoneHeads(phoneTitled(figure, width), width), hint && hint.thin);
  const plan = phonePlan(figure, width, hint);
  const flow = plan ? null : phoneFlowPlan(figure, width);
  if (flow) return phoneFlowed(figure, flow, div);
  if (!plan) return figure;
  let layout = figure.layout;
  if (plan.paired) {  // a panel now beside (not over) the one below it shows its x labels
    const shown = plan.panels.some(p => (layout[p.x] || {}).showticklabels !== false);
    layout = {...layout};
    plan.panels.forEach(p => {
      if (shown && (layout[p.x] || {}).showticklabels === false) {
        layout[p.x] = {...layout[p.x], showticklabels: true};
      }
    });
  }
  const {panels, cols, titles, panelWidth} = plan;
  const m = layout.margin || {};
  const t = m.t ?? 100, b = m.b ?? 80;
  const oldH = layout.height || 450;
  const oldPlotH = Math.max(1, oldH - t - b);
  const oldPlotW = PHONE.drawnAt - (m.l ?? 80) - (m.r ?? 80);
  const bars = phoneBars(figure);
  // A panel's height: as drawn, less when it gets narrower than it was at 760 px.
  const heights = panels.map(p => {
    const h = (p.yd[1] - p.yd[0]) * oldPlotH, w = (p.xd[1] - p.xd[0]) * oldPlotW;
    return Math.max(Math.min(h, 120), h * Math.min(1, panelWidth / w));
  });
  const rowsN = Math.ceil(panels.length / cols);
  const rowOf = i => Math.floor(i / cols);
  const index = new Map(panels.map((p, i) => [p.ref, i]));
  // Each bar under the last row of its panels.
  const placed = bars.map(bar => {
    const mine = [...bar.refs].map(ref => index.get(ref)).filter(i => i !== undefined);
    if (!mine.length) return null;
    const last = Math.max(...mine.map(rowOf));
    return {...bar, row: last, inRow: mine.filter(i => rowOf(i) === last)};
  }).filter(Boolean);
  const rowH = [], above = [], below = [], belowTicks = [];
  for (let r = 0; r < rowsN; r++) {
    const members = panels.map((p, i) => i).filter(i => rowOf(i) === r);
    rowH.push(Math.max(...members.map(i => heights[i])));
    const lines = Math.max(0, ...members.map(i => titles.has(panels[i].x) ?
      phoneTextBox(titles.get(panels[i].x).text, 16).lines : 0));
    above.push(r === 0 ? 0 : lines * PHONE.titleLine + 8);
    // under a panel: its x tick labels (slanted ones as tall as they reach) and axis title
    const labels = Math.max(16, ...members.map(i => phoneUnder(layout[panels[i].x],
                                                                 plan.fontSize)));
    below.push(labels + (placed.some(p => p.row === r) ? PHONE.barRoom : PHONE.rowGap));
    belowTicks.push(labels);
  }
  // Pixels from the plot area's top: each row's top edge.
  const tops = [];
  let y = 0;
  for (let r = 0; r < rowsN; r++) { y += above[r]; tops.push(y); y += rowH[r] + below[r]; }
  const plotH = y - below[rowsN - 1] + Math.max(0, below[rowsN - 1] - b);
  const newB = Math.max(b, 10);
  const paperY = px => 1 - px / plotH;
  const out = {...layout, height: Math.round(plotH + t + newB),
               margin: {...m, l: plan.l, r: plan.r, b: newB}};
  const colX = c => [c * (panelWidth + plan.gap) / plan.plotW,
                     (c * (panelWidth + plan.gap) + panelWidth) / plan.plotW];
  // Axes of an empty cell of the grid (no trace drawn on them): hidden.
  const inUse = new Set(panels.flatMap(p => [p.x, p.y]));
  for (const [k, ax] of Object.entries(layout)) {
    if (/^[xy]axis\d*$/.test(k) && !inUse.has(k) && ax && !ax.overlaying) {
      out[k] = {...ax, visible: false};
    }
  }
  const firstY = layout[panels[0].y] || {};
  const moved = new Map();  // x axis name -> {xd, yd}
  panels.forEach((p, i) => {
    const r = rowOf(i), c = i % cols;
    const xd = colX(c).map(v => Math.min(1, Math.max(0, v)));
    const yd = [paperY(tops[r] + rowH[r]), paperY(tops[r])].map(v => Math.min(1, Math.max(0, v)));
    moved.set(p.x, {xd, yd});
    out[p.x] = {...layout[p.x], domain: xd};
    const yAx = {...layout[p.y], domain: yd};
    // A panel that begins a row shows its y labels as the figure's first panel does.
    if (c === 0 && yAx.showticklabels === false && firstY.showticklabels !== false) {
      yAx.showticklabels = true;
    }
    // Panels that share their rows' labels (a figure drawn with them on its first column only)
    // show them on the first of a row only: elsewhere they would lie on the panel to the left.
    if (c > 0 && plan.paired) yAx.showticklabels = false;
    out[p.y] = yAx;
  });
  // Annotations: subplot titles move with their panels; others in paper coordinates above or
  // below the plot keep their distance from it in px.
  const titleOf = new Map([...titles].map(([x, a]) => [a, x]));
  out.annotations = (layout.annotations || []).map(a => {
    const x = titleOf.get(a);
    if (x) {
      const {xd, yd} = moved.get(x);
      return {...a, x: (xd[0] + xd[1]) / 2, y: yd[1]};
    }
    return a.yref === "paper" ? phoneOutside(a, oldPlotH, plotH) : a;
  });
  if (layout.legend && (layout.legend.y ?? 1) < 0) out.legend = phoneOutside(layout.legend,
                                                                          oldPlotH, plotH);
  // Colour bars: horizontal, under the last row of their panels, as wide as those panels.
  const data = (figure.data || []).slice();
  placed.forEach(bar => {
    const xs = bar.inRow.map(i => moved.get(panels[i].x).xd);
    const x0 = Math.min(...xs.map(d => d[0])), x1 = Math.max(...xs.map(d => d[1]));
    const r = bar.row;
    const top = tops[r] + rowH[r] + belowTicks[r] + 4;  // nearer its panels than the next
    const spot = {orientation: "h", x: (x0 + x1) / 2, xanchor: "center", xref: "paper",
                  len: Math.max(0.2, (x1 - x0) * 0.9), lenmode: "fraction", y: paperY(top),
                  yanchor: "top", yref: "paper", thickness: 10,
                  title: {side: "top"}};
    const with_ = cb => ({...(cb || {}), ...spot,
                          title: {...((cb && cb.title) || {}), side: "top"}});
    if (bar.where === "layout") {
      const ca = layout[bar.axis] || {};
      out[bar.axis] = {...ca, colorbar: with_(ca.colorbar)};
    } else if (bar.where === "trace") {
      data[bar.trace] = {...data[bar.trace], colorbar: with_(data[bar.trace].colorbar)};
    } else {
      const tr = data[bar.trace];
      data[bar.trace] = {...tr, marker: {...tr.marker, colorbar: with_(tr.marker.colorbar)}};
    }
  });
  if (div) div.classList.remove("attnviz-wide");
  return {...figure, data, layout: out};
}

// The room under a panel (px): its x tick labels (slanted ones as tall as they reach) and its
// axis title.
function phoneUnder(ax, fontSize) {
  ax = ax || {};
  const title = ax.title && (typeof ax.title === "string" ? ax.title : ax.title.text);
  let room = title ? PHONE.axisTitle : 0;
  if (ax.showticklabels === false || ax.side === "top") return room;
  room += PHONE.ticks;
  if (!ax.tickangle) return room;
  const longest = Math.max(0, ...(ax.ticktext || ax.categoryarray || []).map(
    s => phoneTextBox(s, fontSize).width));
  return room + Math.min(120, longest * Math.abs(Math.sin(ax.tickangle * Math.PI / 180)));
}

// The width (px) of a y axis's tick labels, 0 where it shows none.
function phoneLabelsWidth(ax, fontSize) {
  if (!ax || ax.showticklabels === false) return 0;
  const texts = ax.ticktext || ax.categoryarray;
  if (!texts || !texts.length) return 40;
  return Math.max(...texts.map(t => phoneTextBox(t, fontSize).width)) + 10;
}

// An equation of matrices (panels of unequal widths side by side, their order across the
// meaning, e.g. W^q · I = Q, and the steps of one score) that a phone's frame cannot show at
// their width: the columns of panels (panels stacked at one x) flow into lines, left to right,
// as many to a line as fit at their drawn width (each at least PHONE.minColumn px); a line is
// stretched to its frame's width (at most PHONE.stretch times) or shrunk to it, and centred.
// null where the figure fits or is no such equation.
function phoneFlowPlan(figure, width) {
  const layout = figure && figure.layout;
  if (!layout || !phoneNarrow(width)) return null;
  const panels = phonePanels(layout, figure.data);
  if (panels.length < 2) return null;
  const cols = [];
  for (const p of [...panels].sort((a, b) => a.xd[0] - b.xd[0])) {
    const col = cols.find(c => Math.abs(c.xd[0] - p.xd[0]) < 0.005 &&
                               Math.abs(c.xd[1] - p.xd[1]) < 0.005);
    if (col) col.panels.push(p); else cols.push({xd: p.xd, panels: [p]});
  }
  if (cols.length < 2 || phoneBars(figure).length) return null;
  for (let i = 1; i < cols.length; i++) if (cols[i].xd[0] < cols[i - 1].xd[1] - 0.005) return null;
  const m = layout.margin || {};
  const l = m.l ?? 80, r = Math.min(m.r ?? 80, 20);
  const plotW = width - l - r;
  const oldPlotW = PHONE.drawnAt - (m.l ?? 80) - (m.r ?? 80);
  const fontSize = (layout.font && layout.font.size) || 12;
  const shows = panels.some(p => (layout[p.y] || {}).showticklabels !== false);
  // The operators: paper annotations in the gap after a column, at mid height.
  const ops = new Map();  // column index -> annotation
  (layout.annotations || []).forEach(a => {
    if (a.xref !== "paper" || a.yref !== "paper" || a.showarrow) return;
    const i = cols.findIndex((c, k) => k + 1 < cols.length && a.x > c.xd[1] - 0.005 &&
                                       a.x < cols[k + 1].xd[0] + 0.005);
    if (i >= 0 && !ops.has(i)) ops.set(i, a);
  });
  cols.forEach(c => {
    c.panels.sort((a, b) => b.yd[1] - a.yd[1]);
    c.drawn = (c.xd[1] - c.xd[0]) * oldPlotW;
    c.need = Math.max(PHONE.minColumn, c.drawn);
  });
  if (cols.reduce((s, c) => s + c.need, 0) + PHONE.gap * (cols.length - 1) <= plotW) return null;
  // Its y labels: its own, or (a column that begins a line) those every column shares.
  const labelsOf = (c, first) => {
    const ax = layout[c.panels[c.panels.length - 1].y] || {};
    if (first && ax.showticklabels === false && shows) {
      return phoneLabelsWidth({...ax, showticklabels: true}, fontSize);
    }
    return phoneLabelsWidth(ax, fontSize);
  };
  const lines = [];
  let line = null, x = 0;
  cols.forEach((c, i) => {
    const gap = (ops.has(i - 1) ? PHONE.opGap : 12) + labelsOf(c, false);
    if (line && x + gap + c.need <= plotW) {
      line.push(c); c.gap = gap; x += gap + c.need;
    } else {
      line = [c]; lines.push(line); c.gap = labelsOf(c, true); x = c.gap + c.need;
    }
    c.line = lines.length - 1;
  });
  return {lines, cols, ops, l, r, plotW, fontSize, shows};
}

function phoneFlowed(figure, plan, div) {
  // An axis title wider than the frame is broken into lines (each 18 px more under it).
  const layout = {...figure.layout};
  const extra = new Map();  // x axis name -> lines added to its title
  plan.cols.forEach(c => c.panels.forEach(p => {
    const ax = layout[p.x] || {};
    const text = ax.title && (typeof ax.title === "string" ? ax.title : ax.title.text);
    const broken = typeof text === "string" && phoneBreak(text, 14, plan.plotW - 10);
    if (!broken) return;
    layout[p.x] = {...ax, title: {...(typeof ax.title === "string" ? {} : ax.title),
                                  text: broken.lines.join("<br>")}};
    extra.set(p.x, broken.added);
  }));
  const {lines, cols, ops, plotW, fontSize, shows} = plan;
  const m = layout.margin || {};
  const t = m.t ?? 100, b = m.b ?? 80;
  const oldPlotH = Math.max(1, (layout.height || 450) - t - b);
  const titles = phoneTitles(layout, cols.flatMap(c => c.panels));
  const out = {...layout, margin: {...m, r: plan.r}};
  const colX = new Map();  // column -> [left, right] px in the plot area
  const lineY = [];  // each line's [top, bottom] px of its panels
  let y = 0;
  lines.forEach((line, k) => {
    const fixed = line.reduce((s, c) => s + c.gap, 0);
    const want = line.reduce((s, c) => s + c.need, 0);
    const scale = Math.min(PHONE.stretch, (plotW - fixed) / want);
    const used = fixed + want * scale;
    let x = Math.max(0, (plotW - used) / 2);
    let tall = 0;
    line.forEach(c => {
      x += c.gap;
      colX.set(c, [x, x + c.need * scale]);
      x += c.need * scale;
      const top = c.panels[0].yd[1], bottom = Math.min(...c.panels.map(p => p.yd[0]));
      // a column drawn narrower than it was keeps its shape (its height shrinks with it)
      c.hScale = Math.min(1, Math.max(120 / ((top - bottom) * oldPlotH),
                                      c.need * scale / Math.max(1, c.drawn)));
      c.top = top;
      tall = Math.max(tall, (top - bottom) * oldPlotH * c.hScale);
    });
    if (k > 0) {
      const heads = Math.max(0, ...line.map(c => {
        const a = titles.get(c.panels[0].x);
        return a && String(a.text || "").trim() ? phoneTextBox(a.text, 16).lines : 0;
      }));
      y += heads * PHONE.titleLine + (heads ? 8 : 0);
    }
    lineY.push([y, y + tall]);
    line.forEach(c => { c.y0 = y; });
    y += tall;
    const under = Math.max(16, ...line.flatMap(c => c.panels.map(
      p => phoneUnder(layout[p.x], fontSize) + 18 * (extra.get(p.x) || 0))));
    const last = line[line.length - 1];
    const opAfter = k + 1 < lines.length && ops.has(cols.indexOf(last));
    lineY[k].push(y + under);  // where the room under its panels ends
    y += under + (k + 1 < lines.length ? (opAfter ? PHONE.opBand : 2 * PHONE.rowGap) : 0);
  });
  // the plot area ends under the last line's panels; their labels lie in the bottom margin
  const last = lineY[lineY.length - 1];
  const totalH = Math.max(1, last[1]);
  const newB = Math.max(b, last[2] - last[1] + 10);
  out.margin.b = newB;
  out.height = Math.round(totalH + t + newB);
  // Axes of an empty cell of the grid (no trace drawn on them): hidden.
  const inUse = new Set(cols.flatMap(c => c.panels.flatMap(p => [p.x, p.y])));
  for (const [k, ax] of Object.entries(layout)) {
    if (/^[xy]axis\d*$/.test(k) && !inUse.has(k) && ax && !ax.overlaying) {
      out[k] = {...ax, visible: false};
    }
  }
  const paperX = px => Math.min(1, Math.max(0, px / plotW));
  const paperY = px => Math.min(1, Math.max(0, 1 - px / totalH));
  const moved = new Map();
  cols.forEach(c => {
    const [x0, x1] = colX.get(c);
    const xd = [paperX(x0), paperX(x1)];
    c.panels.forEach(p => {
      const top = c.y0 + (c.top - p.yd[1]) * oldPlotH * c.hScale;
      const bottom = c.y0 + (c.top - p.yd[0]) * oldPlotH * c.hScale;
      const yd = [paperY(bottom), paperY(top)];
      moved.set(p.x, {xd, yd});
      out[p.x] = {...layout[p.x], domain: xd};
      const yAx = {...layout[p.y], domain: yd};
      // a column that begins a line shows the rows' labels the figure shows
      if (lines[c.line][0] === c && yAx.showticklabels === false && shows) {
        yAx.showticklabels = true;
      }
      out[p.y] = yAx;
    });
  });
  const opOf = new Map([...ops].map(([i, a]) => [a, i]));
  out.annotations = (layout.annotations || []).map(a => {
    const ref = [...titles].find(([, n]) => n === a);
    if (ref) {
      const {xd, yd} = moved.get(ref[0]);
      return {...a, x: (xd[0] + xd[1]) / 2, y: yd[1]};
    }
    if (opOf.has(a)) {
      const i = opOf.get(a), c = cols[i], next = cols[i + 1];
      const k = c.line;
      if (next.line === k) {  // in the gap, beside the next column's labels
        const x = colX.get(c)[1] + PHONE.opGap / 2;
        return {...a, x: paperX(x), xanchor: "center",
                y: paperY((lineY[k][0] + lineY[k][1]) / 2), yanchor: "middle"};
      }
      // between the lines, under the middle of the line it follows
      const [x0, x1] = [colX.get(lines[k][0])[0], colX.get(c)[1]];
      return {...a, x: paperX((x0 + x1) / 2), xanchor: "center",
              y: paperY(lineY[k][2] + PHONE.opBand / 2), yanchor: "middle"};
    }
    return a.yref === "paper" ? phoneOutside(a, oldPlotH, totalH) : a;
  });
  if (div) div.classList.remove("attnviz-wide");
  return {...figure, layout: out};
}

// A paper-placed item (annotation, legend) above or below the plot area, kept as many px from
// it in a plot area `newH` px tall as it was in one `oldH` px tall.
function phoneOutside(item, oldH, newH) {
  const y = item.y;
  if (typeof y !== "number" || (y >= 0 && y <= 1)) return item;
  return {...item, y: y < 0 ? y * oldH / newH : 1 + (y - 1) * oldH / newH};
}

// How many categories lie between two neighbouring ticks of a category axis whose names are
// every k-th category (common.tick_labels), in one run or in runs (a heads grid's panels,
// each naming every k-th of its own tokens): k where the ticks are k apart within each run
// (farther between runs), else 0.
function phoneTickStep(ax) {
  const idx = phoneTickIndex(ax);
  if (!idx) return 0;
  const apart = idx.slice(1).map((v, i) => v - idx[i]);
  const step = Math.min(...apart);
  return step > 0 ? step : 0;
}

// The categories' places (indices in categoryarray) of an axis's ticks, or null where its
// ticks are not names of its categories.
function phoneTickIndex(ax) {
  if (!ax || !Array.isArray(ax.tickvals) || !Array.isArray(ax.ticktext) ||
      !Array.isArray(ax.categoryarray) || ax.tickvals.length < 2 ||
      ax.ticktext.length !== ax.tickvals.length) return null;
  const at = new Map(ax.categoryarray.map((c, i) => [c, i]));
  const idx = ax.tickvals.map(v => at.get(v));
  return idx.some(i => i === undefined) ? null : idx;
}

// A numbered axis ticked every `dtick` (layers 0, 1, 2, ...): its dtick, else 0.
function phoneDtick(ax) {
  return ax && typeof ax.dtick === "number" && ax.dtick > 0 && !Array.isArray(ax.tickvals) &&
    ax.tickmode !== "array" && ax.type !== "category" ? ax.dtick : 0;
}

// The figure with the names of its axes thinned as `thin` says ({axis name: m}): every m-th
// of the names the server chose, from the first (each still a token's own label), or a
// numbered axis ticked every m dticks; the same object where there is nothing to thin.
function phoneThinned(figure, thin) {
  const names = Object.entries(thin || {}).filter(([name, m]) => m > 1 && figure.layout &&
    (phoneTickStep(figure.layout[name]) || phoneDtick(figure.layout[name])));
  if (!names.length) return figure;
  const layout = {...figure.layout};
  for (const [name, m] of names) {
    const ax = layout[name];
    // every m-th of each run of ticks evenly apart, from its first
    const idx = phoneTickIndex(ax) || [], step = phoneTickStep(ax);
    let run = 0;
    const nth = idx.map((v, i) => (run = i && v - idx[i - 1] === step ? run + 1 : 0));
    const keep = (v, i) => nth[i] % m === 0;
    layout[name] = phoneTickStep(ax) ?
      {...ax, tickvals: ax.tickvals.filter(keep), ticktext: ax.ticktext.filter(keep)} :
      {...ax, dtick: ax.dtick * m};
  }
  return {...figure, layout};
}

// The drawn chart as the page shows it, or null where there is no page (Node): for each
// panel (its subplot's id, "x2y2"), its plot area {l, t, r, b} and its tick labels, y and x:
// {n: how many, h: the tallest line (unturned), w: the widest, pitch: the least px between
// two neighbours' centres along the axis, reach: px from the plot's left edge to the
// leftmost of its y labels and axis title}; `left`: the chart's left edge. Read
// with public DOM calls (getBoundingClientRect, SVG getBBox) on the elements Plotly draws.
function phoneDrawn(div) {
  if (!div || typeof div.querySelectorAll !== "function" || !div.getBoundingClientRect) {
    return null;
  }
  const panels = {};
  div.querySelectorAll(".cartesianlayer > g.subplot").forEach(g => {
    const id = [...g.classList].find(c => /^x\d*y\d*$/.test(c));
    const drag = id && div.querySelector(`.draglayer > g.${id} .nsewdrag`);
    if (!drag) return;
    const r = drag.getBoundingClientRect();
    const plot = {l: r.left, t: r.top, r: r.right, b: r.bottom};
    const labels = sel => [...g.querySelectorAll(sel)].filter(t => t.textContent.trim())
      .map(t => ({rect: t.getBoundingClientRect(), box: t.getBBox ? t.getBBox() : null}))
      .filter(t => t.rect.width > 0 || t.rect.height > 0);
    const sized = (list, across) => {
      const at = list.map(t => across ? (t.rect.left + t.rect.right) / 2
                                      : (t.rect.top + t.rect.bottom) / 2).sort((a, b) => a - b);
      const apart = at.slice(1).map((v, i) => v - at[i]);
      return {n: list.length, pitch: apart.length ? Math.min(...apart) : 0,
              h: Math.max(0, ...list.map(t => t.box ? t.box.height : t.rect.height)),
              w: Math.max(0, ...list.map(t => t.box ? t.box.width : t.rect.width))};
    };
    const ys = labels(".yaxislayer-above text"), xs = labels(".xaxislayer-above text");
    const yName = id.slice(id.indexOf("y"));
    const title = div.querySelector(`.g-${yName}title`);
    const titleBox = title && title.getBoundingClientRect();
    const lefts = ys.map(t => t.rect.left);
    if (titleBox && titleBox.width > 0) lefts.push(titleBox.left);
    panels[id] = {plot, y: {...sized(ys, false),
                            reach: lefts.length ? plot.l - Math.min(...lefts) : 0},
                  x: sized(xs, true)};
  });
  return {left: div.getBoundingClientRect().left, panels};
}

// What a second layout of the figure needs, given the chart as drawn with `hint` (phoneDrawn's
// `drawn`): a new hint {labels, left, thin}, or null where the drawn chart's labels fit. A
// category axis whose names lie closer than a line (y) or than a line across their slant
// (slanted x; upright x: their width) is thinned to every m-th name, a numbered axis whose
// numbers lie that close (a 30-layer model's layers 0-29) ticked every m dticks (their
// pitch as drawn); panels side by side
// (phonePlan) get the gap their neighbours' y labels reach into, and the left margin the
// first column's labels and title.
function phoneAgain(figure, width, drawn, hint) {
  if (!drawn || !figure || !figure.layout || !phoneNarrow(width)) return null;
  hint = hint || {};
  const next = {labels: hint.labels || 0, left: hint.left || 0, thin: {...(hint.thin || {})}};
  let changed = false;
  const titled = phoneThinned(phoneHeads(phoneTitled(figure, width), width), hint.thin);
  const layout = titled.layout;
  for (const [id, d] of Object.entries(drawn.panels)) {
    const [, xs, ys] = /^x(\d*)y(\d*)$/.exec(id);
    for (const [name, seen] of [["xaxis" + xs, d.x], ["yaxis" + ys, d.y]]) {
      const ax = layout[name];
      const step = phoneTickStep(ax);
      const names = step && phoneTickStep(figure.layout[name]) >= 2;  // thinned: "#27 the"
      const numbers = !step && phoneDtick(ax) && seen.n > 1 && seen.pitch > 1;
      if (!seen.n || !(names || numbers)) continue;
      const along = name[0] === "y" ? d.plot.b - d.plot.t : d.plot.r - d.plot.l;
      const range = Array.isArray(ax.range) && ax.range.length === 2 ?
        Math.abs(ax.range[1] - ax.range[0]) : names ? ax.categoryarray.length : 0;
      // px between two names (numbers: as drawn)
      const pitch = names ? along / Math.max(1, range) * step : seen.pitch;
      const slant = Math.abs(Math.sin((ax.tickangle || 0) * Math.PI / 180));
      const need = name[0] === "y" ? seen.h : slant > 0.34 ? seen.h / slant : seen.w + 6;
      const m = Math.ceil(need / Math.max(pitch, 1e-6) - 0.02);
      if (m > 1) {
        next.thin[name] = (hint.thin && hint.thin[name] || 1) * m;
        changed = true;
      }
    }
  }
  const plan = phonePlan(titled, width, hint);
  const ids = Object.keys(drawn.panels).filter(id => drawn.panels[id].y.n);
  if (plan && ids.length) {
    const first = Math.min(...ids.map(id => drawn.panels[id].plot.l));
    for (const id of ids) {
      const {plot, y} = drawn.panels[id];
      if (plot.l - first < 2) {  // begins a row: the left margin holds its labels and title
        if (y.reach + 4 > plan.l + 1) { next.left = Math.ceil(y.reach + 4); changed = true; }
      } else if (y.reach + PHONE.labelGap > plan.gap + 1) {
        next.labels = Math.max(next.labels, Math.ceil(y.reach));
        changed = true;
      }
    }
  }
  return changed ? next : null;
}
