"""Screenshots of every page in headless Debian chromium: the assets', or the whole check.

By default: each page of the router's PAGES with the sentence given (default "I saw a
saw"), waited on until the script finished and the Plotly figures are drawn, saved as
assets/screenshots/<page>.png (the visible window, 1400x1000):

    .venv/bin/python scripts/screenshots.py [--text "I saw a saw"] [--out assets/screenshots]

The check (--matrix, `make screenshots`): every page in each window size (a phone 390x844, a
laptop or projector 1280x720, a desktop 1400x1000), each theme (the browser's preferred
colour scheme, which the app follows) and each language (the `lang` URL parameter), saved as
OUT/<width>x<height>/<theme>/<lang>/<page>.png, plus one contact sheet per size,
OUT/sheets/<width>x<height>.png: every page (rows) in every theme and language (columns) on
one image, so a person can look at everything in three pictures. The report lists, page by
page, size, theme and language, what the checks read from the page while shooting (the
functions below, each given plain rectangles): a page that scrolls sideways (wider than the
window), an error box, a page that never finished drawing, text labels of one chart on one
another (tick labels, annotations, titles, colour bar text; rotated labels as rotated boxes),
content past the window's right edge outside a frame that scrolls (cut off; a control kept
for the keyboard and screen readers in a clipped box of 1 px, drawn nowhere, is not), an empty
table cell (an HTML table's, or a data grid's, every cell read from the table the grid keeps
for screen readers, scrolled through), a colour bar standing nearer a panel it does not serve
than any it does, and (the lesson) each step's page height in presentation mode against the
window's (OUT/report.md, a table; OUT/report.json; OUT/report.txt, one line each).

    .venv/bin/python scripts/screenshots.py --matrix --out /tmp/attnviz-check
        [--sizes 390x844,1280x720,1400x1000] [--themes light,dark] [--langs en,zh]
        [--pages lesson,explore] [--full-page] [--no-steps]

--languages: the pictures in Chinese and in the dark theme (LANGUAGE_SHOTS), into
assets/screenshots/ (or --out).

--full-page captures the page's length (up to FULL_PAGE_SCREENS windows) instead of its window.
It needs only the project's venv (`make setup`: playwright, Pillow through streamlit) and a
Chromium (tests/e2e/conftest.ensure_chromium)."""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import ensure_chromium, wait_for_app  # noqa: E402
from tests.pages_list import existing_pages, url_path  # noqa: E402
from tests.serve import CHROME_ARGS, free_port, start_server, stop_server  # noqa: E402

SIZES = ((390, 844), (1280, 720), (1400, 1000))  # phone, laptop or projector, desktop
THEMES = ("light", "dark")
LANGS = ("en", "zh")
FULL_PAGE_SCREENS = 4  # a --full-page shot is at most this many windows tall
PAGES_PER_ROW = {"wide": 1, "phone": 2}  # pages side by side on a contact sheet's row
CELL_WIDTH = {"wide": 360, "phone": 195}  # px of one picture on a contact sheet
# The English and Chinese pictures (--languages): (file, page stem, window, theme,
# language, full page, size saved as (scaled), or the height it is cropped to). Each under
# 300 KB.
LANGUAGE_SHOTS = (
    ("lesson_zh_dark.png", "lesson", (1366, 768), "dark", "zh", False, (1366, 768), 0),
    ("heads_dark.png", "layer_heads", (1920, 1080), "dark", "en", False, (1366, 768), 0),
    ("head_stats_zh.png", "head_stats", (1366, 768), "light", "zh", False, (1366, 768), 0),
    ("phone_zh.png", "lesson", (390, 844), "light", "zh", True, (390, 1060), 1060),
)
PAGE_WAIT_MS = 90_000  # a page that has not drawn by then is reported and shot as it is

# Streamlit scrolls inside its main section, not the document: both are measured.
SIDEWAYS = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  const doc = document.scrollingElement;
  return Math.max(main ? main.scrollWidth - main.clientWidth : 0,
                  doc.scrollWidth - window.innerWidth);
}"""
TALL = ("Math.max(...[...document.querySelectorAll('section, [data-testid=stMain]')]"
        ".map(e => e.scrollHeight))")
ERRORS = ("[...document.querySelectorAll(\"[data-testid='stException'], "
          "[data-testid='stAlertContentError']\")].map(e => e.innerText.slice(0, 200))")

# What the checks read from a page, as plain rectangles ({l, t, r, b} in CSS px of the
# window): each chart's text labels (as the four corners of their own box, so a rotated label
# is a rotated box), its panels (plot areas) and colour bars with the panels each serves;
# elements past the window's right edge (the outermost of each run), with whether a frame that
# scrolls sideways (not the page's own) holds them; every table's cells. The page's chart
# JSON (`data`, `layout`) is read from the chart element, as Plotly's public API keeps it.
#
# CHART_TEXT, the part PROBE and LABELS share: `shown` (drawn at all: not hidden, not see-through,
# not inside a closed expander, a <details>, where nothing is drawn), `corners` (an SVG text's
# box on the screen as four corners, turned as the text is) and `chartLabels` (a chart's text
# labels, {text, corners}, outside its hover boxes and toolbar).
CHART_TEXT = """
  const shown = e => { const s = getComputedStyle(e);
    return s.display !== 'none' && s.visibility !== 'hidden' && Number(s.opacity) !== 0
      && !(e.closest && e.closest('details:not([open])')); };
  const corners = e => {
    const b = e.getBBox(), m = e.getScreenCTM();
    if (!m) return null;
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height],
            [b.x, b.y + b.height]].map(([x, y]) => [m.a * x + m.c * y + m.e,
                                                    m.b * x + m.d * y + m.f]);
  };
  const chartLabels = c => [...c.querySelectorAll('svg text')].filter(e =>
      e.textContent.trim() && !e.closest('.hoverlayer, .modebar') && shown(e)
      && (!e.parentNode.closest || !e.parentNode.closest('[style*="opacity: 0"]')))
    .map(e => ({text: e.textContent.trim().slice(0, 40), corners: corners(e)}))
    .filter(l => l.corners);
  const chartName = (c, n) => { const title = c.querySelector('.gtitle');
    return title ? title.textContent.trim().slice(0, 60) : 'chart ' + (n + 1); };
"""
PROBE = """() => {
  const box = e => { const r = e.getBoundingClientRect();
                     return {l: r.left, t: r.top, r: r.right, b: r.bottom}; };""" + CHART_TEXT + """
  const charts = [...document.querySelectorAll('.js-plotly-plot')].filter(shown).map((c, n) => {
    const labels = chartLabels(c);
    const data = c.data || [], layout = c.layout || {};
    // a panel: its plot area with its axes' tick labels and titles
    const panels = {};
    c.querySelectorAll('.draglayer > g').forEach(g => {
      const d = g.querySelector('.nsewdrag');
      const id = g.getAttribute('class').split(' ')[0];
      const axes = /^(x\\d*)(y\\d*)$/.exec(id);
      if (!d || !axes) return;
      const parts = [box(d), ...[...c.querySelectorAll(axes.slice(1).map(
          a => `.${a}tick text, .g-${a}title`).join(', '))].filter(shown).map(box)
          .filter(p => p.r > p.l && p.b > p.t)];  // an empty title's group has no box
      panels[id] = {l: Math.min(...parts.map(p => p.l)), t: Math.min(...parts.map(p => p.t)),
                    r: Math.max(...parts.map(p => p.r)), b: Math.max(...parts.map(p => p.b))};
    });
    const used = new Set();
    const serves = {};  // colour bar -> panels
    const traceBars = [];
    data.forEach(t => {
      const id = (t.xaxis || 'x') + (t.yaxis || 'y');
      used.add(id);
      const axes = [t.coloraxis, t.marker && t.marker.coloraxis].filter(Boolean);
      axes.forEach(a => (serves['cb' + a] = serves['cb' + a] || []).push(id));
      const scaled = ['heatmap', 'contour', 'histogram2d', 'histogram2dcontour'];
      if ((!t.coloraxis && scaled.includes(t.type) && t.showscale !== false) ||
          (t.marker && !t.marker.coloraxis && t.marker.showscale === true)) traceBars.push(id);
    });
    let k = 0;
    const bars = [...c.querySelectorAll('.colorbar')].filter(shown).map(g => {
      const name = [...g.classList].find(x => x.startsWith('cb')) || 'cb';
      const fill = g.querySelector('.cbfills') || g;
      const mine = name.startsWith('cbcoloraxis') ? serves[name] : [traceBars[k++]];
      return {name: name.slice(2), rect: box(fill), serves: (mine || []).filter(Boolean)};
    });
    return {name: chartName(c, n), labels, bars, panels: Object.fromEntries(
              Object.entries(panels).filter(([id]) => used.has(id)))};
  });
  const main = document.querySelector('[data-testid=stMain]') || document.body;
  const page = new Set([main, document.body, document.documentElement,
                        document.querySelector('[data-testid=stAppViewContainer]'),
                        document.querySelector('[data-testid=stApp]')]);
  const scrolls = e => { for (let a = e.parentElement; a && !page.has(a); a = a.parentElement) {
      const o = getComputedStyle(a).overflowX;
      if (o === 'auto' || o === 'scroll') return true; } return false; };
  const width = window.innerWidth;
  const past = [];
  // A box of at most 1 x 1 px that clips what it holds (overflow hidden, or clipped to
  // nothing) draws nothing of it: the "visually hidden" pattern of a control kept for the
  // keyboard and screen readers only. React-aria wraps the <input type=range> of Streamlit's
  // slider so: the input keeps its own 129 px width, past the window's edge when the thumb
  // stands near the track's right end (the lesson's step slider at step 9 or 10 on a phone),
  // while the page does not get wider; the slider's thumb shows its focus.
  const unseen = e => { const r = e.getBoundingClientRect(), s = getComputedStyle(e);
    return r.width <= 1 && r.height <= 1 && (s.overflowX === 'hidden' || s.overflowX === 'clip'
      || s.clip === 'rect(0px, 0px, 0px, 0px)' || s.clipPath === 'inset(50%)'); };
  const walk = e => {
    // drawn shapes of a picture may be cut by it (KaTeX's stretchy SVGs are); its text may
    // not; KaTeX's MathML copy is for screen readers only
    if (!shown(e) || unseen(e) || e.classList.contains('katex-mathml') ||
        (e instanceof SVGElement && e.tagName !== 'svg' && e.tagName !== 'text' &&
         e.tagName !== 'g')) return;
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > width + 1 && e.tagName !== 'g' &&
        !(e.closest && e.closest('[data-testid=stSidebar]'))) {
      const name = e.getAttribute('aria-label');
      past.push({what: (e.getAttribute('data-testid') || e.tagName.toLowerCase()) +
                       (name ? ` [${name.slice(0, 40)}]` : '') +
                       (e.textContent ? ': ' + e.textContent.trim().slice(0, 40) : ''),
                 right: r.right, scrolls: scrolls(e)});
      return;  // the outermost element of a run past the edge
    }
    for (const child of e.children) walk(child);
  };
  walk(main);
  // a table a canvas holds is a data grid's copy for screen readers: GRIDS reads it whole
  const tables = [...main.querySelectorAll('table')].filter(
    t => shown(t) && !t.closest('canvas')).map((t, n) => ({
    name: (t.closest('[data-testid]') || t).getAttribute('data-testid') + ' ' + (n + 1),
    rows: [...t.rows].map(r => [...r.cells].map(c => c.innerText.trim())),
    head: t.tHead ? t.tHead.rows.length : 0}));
  const tall = Math.max(...[...document.querySelectorAll('section, [data-testid=stMain]')]
                        .map(e => e.scrollHeight));
  return {charts, past, tables, height: tall, width, window: window.innerHeight};
}"""
# The text labels of the charts a CSS selector names (each shown one, as PROBE reads them):
# [{name, labels: [{text, corners}]}], for label_collisions.
LABELS = """(selector) => {""" + CHART_TEXT + """
  return [...document.querySelectorAll(selector)].filter(shown).map(
    (c, n) => ({name: chartName(c, n), labels: chartLabels(c)}));
}"""
# st.dataframe draws its cells on a canvas (glide data grid); for screen readers the grid keeps
# a table of the cells in view inside the canvas (role=grid, each row and cell numbered by
# aria-rowindex / aria-colindex, the grid's size in aria-rowcount / aria-colcount). GRIDS
# scrolls each shown grid's own frame over its whole area, reading that table at each stop
# (waiting until the grid has drawn the new cells), puts the frame back, and returns every
# cell read: {name, head: header rows, rows, cols, cells: [[row, col, text]]} (1-based).
GRIDS = """async () => {
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const out = [];
  const grids = [...document.querySelectorAll('[data-testid=stMain] [data-testid=stDataFrame]')];
  for (const [n, g] of grids.entries()) {
    const table = () => g.querySelector('table[role=grid]');
    const size = g.getBoundingClientRect();
    if (!table() || size.width === 0 || size.height === 0) continue;
    const scroller = [...g.querySelectorAll('div')].find(e => {
      const s = getComputedStyle(e);
      return /auto|scroll/.test(s.overflowX + s.overflowY) &&
        (e.scrollHeight > e.clientHeight + 1 || e.scrollWidth > e.clientWidth + 1); });
    const cells = {};
    const seen = () => [...table().querySelectorAll('[aria-colindex]')].map(c =>
      c.parentNode.getAttribute('aria-rowindex') + ',' + c.getAttribute('aria-colindex'))
      .join(' ');
    const read = () => table().querySelectorAll('tr[aria-rowindex]').forEach(tr => {
      tr.querySelectorAll('[aria-colindex]').forEach(c => {
        cells[tr.getAttribute('aria-rowindex') + ',' + c.getAttribute('aria-colindex')] =
          c.textContent.trim(); }); });
    const go = async (x, y) => {  // scroll, then wait (up to 1 s) for the table to follow
      const before = seen(), at = [scroller.scrollLeft, scroller.scrollTop];
      scroller.scrollTo(x, y);
      if (scroller.scrollLeft === at[0] && scroller.scrollTop === at[1]) return;
      for (let t = 0; t < 1000 && seen() === before; t += 25) await sleep(25);
      await sleep(25);
    };
    read();
    if (scroller) {
      const top = scroller.scrollTop, left = scroller.scrollLeft;
      const dy = Math.max(1, scroller.clientHeight * 0.7);
      const dx = Math.max(1, scroller.clientWidth * 0.7);
      for (let y = 0; ; y += dy) {
        for (let x = 0; ; x += dx) {
          await go(x, y);
          read();
          if (x + scroller.clientWidth >= scroller.scrollWidth) break;
        }
        if (y + scroller.clientHeight >= scroller.scrollHeight) break;
      }
      await go(left, top);
    }
    const t = table();
    out.push({name: 'stDataFrame ' + (n + 1), head: t.tHead ? t.tHead.rows.length : 0,
              rows: Number(t.getAttribute('aria-rowcount')),
              cols: Number(t.getAttribute('aria-colcount')),
              cells: Object.entries(cells).map(([k, v]) => [...k.split(',').map(Number), v])});
  }
  return out;
}"""
LABEL_OVERLAP_PX = 2.0  # labels may touch; overlapping by more than this is a defect


def _overlap_depth(a: list, b: list) -> float:
    """How far two convex polygons (lists of [x, y] corners) overlap: the smallest overlap of
    their projections over every edge normal of both (separating axes), in px; <= 0 when
    apart."""
    import math

    depth = math.inf
    for poly in (a, b):
        for i, (x0, y0) in enumerate(poly):
            x1, y1 = poly[(i + 1) % len(poly)]
            nx, ny = y0 - y1, x1 - x0
            norm = math.hypot(nx, ny)
            if norm == 0:
                continue
            nx, ny = nx / norm, ny / norm
            pa = [x * nx + y * ny for x, y in a]
            pb = [x * nx + y * ny for x, y in b]
            depth = min(depth, min(max(pa), max(pb)) - max(min(pa), min(pb)))
    return depth


def label_collisions(chart: dict) -> list[str]:
    """Every pair of one chart's text labels ({text, corners}) on one another by more than
    LABEL_OVERLAP_PX, as "'a' on 'b'"."""
    labels = chart["labels"]
    return [f"{a['text']!r} on {b['text']!r}" for i, a in enumerate(labels)
            for b in labels[i + 1:]
            if _overlap_depth(a["corners"], b["corners"]) > LABEL_OVERLAP_PX]


def overlapping_labels(chart: dict, limit: int = 3) -> list[str]:
    """Pairs of one chart's text labels on one another (label_collisions): the first `limit`
    named, and how many in all."""
    hits = label_collisions(chart)
    if not hits:
        return []
    more = f" and {len(hits) - limit} more" if len(hits) > limit else ""
    return [f"{chart['name']}: labels overlap: {', '.join(hits[:limit])}{more}"]


def past_right_edge(items: list[dict], width: float) -> list[str]:
    """Elements ({what, right, scrolls}) past the window's right edge (`width`) that no frame
    scrolling sideways holds: cut off, or making the page wider."""
    return [f"past the right edge by {round(i['right'] - width)} px: {i['what']}"
            for i in items if i["right"] > width + 1 and not i["scrolls"]]


def empty_cells(table: dict) -> list[str]:
    """Empty cells of a table ({name, rows: [[text]], head: header rows}); the corner above a
    row index (the first header cell) may be empty; a cell None was not read."""
    out = []
    rows = table["rows"]
    header = rows[table["head"] - 1] if table["head"] else []
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            if text is None or text or (r < table["head"] and c == 0):
                continue  # None: a grid's cell not read
            column = header[c] if c < len(header) and header[c] else f"column {c + 1}"
            label = row[0] if row and row[0] else f"row {r + 1}"
            out.append(f"{table['name']}: empty cell in row {label!r}, column {column!r}")
    return out


def grid_table(grid: dict) -> dict:
    """A data grid's cells as GRIDS read them ({name, head, rows, cols, cells: [[row, col,
    text]]}, 1-based) as a table for empty_cells: rows of texts, None where a cell was not
    read (never called empty)."""
    rows = [[None] * grid["cols"] for _ in range(grid["rows"])]
    for r, c, text in grid["cells"]:
        if 1 <= r <= grid["rows"] and 1 <= c <= grid["cols"]:
            rows[r - 1][c - 1] = text
    return {"name": grid["name"], "head": grid["head"], "rows": rows}


def unread_cells(grid: dict) -> list[str]:
    """A data grid whose cells were not all read (the check then says so)."""
    read = {(r, c) for r, c, _text in grid["cells"]}
    missing = grid["rows"] * grid["cols"] - len(read)
    if missing > 0:
        return [f"{grid['name']}: {missing} of {grid['rows'] * grid['cols']} cells could not "
                f"be read"]
    return []


def _gap(a: dict, b: dict) -> float:
    """Distance in px between two rectangles ({l, t, r, b}); 0 when they touch or overlap."""
    import math

    dx = max(0.0, a["l"] - b["r"], b["l"] - a["r"])
    dy = max(0.0, a["t"] - b["b"], b["t"] - a["b"])
    return math.hypot(dx, dy)


def misplaced_colour_bars(chart: dict) -> list[str]:
    """Colour bars ({name, rect, serves: [panel]}) nearer a panel ({panel: rect}) they do not
    serve than every panel they do (by 2 px or more): a bar beside the wrong panel."""
    out = []
    panels = chart["panels"]
    for bar in chart["bars"]:
        mine = [p for p in bar["serves"] if p in panels]
        others = [p for p in panels if p not in bar["serves"]]
        if not mine or not others:
            continue
        near = min(_gap(bar["rect"], panels[p]) for p in mine)
        wrong = min(others, key=lambda p: _gap(bar["rect"], panels[p]))
        if _gap(bar["rect"], panels[wrong]) + 2 <= near:
            out.append(f"{chart['name']}: colour bar {bar['name']!r} stands by panel "
                       f"{wrong}, which it does not serve (its panels: {', '.join(mine)})")
    return out


def too_tall(height: float, window: float, what: str) -> list[str]:
    """A page (a lesson step) longer than its window: what is below the fold."""
    if height > window + 1:
        return [f"{what}: page {round(height)} px tall in a {round(window)} px window"]
    return []


def defects(found: dict) -> list[str]:
    """Every check on what PROBE read from one page."""
    out = []
    for chart in found["charts"]:
        out += overlapping_labels(chart)
        out += misplaced_colour_bars(chart)
    out += past_right_edge(found["past"], found["width"])
    for table in found["tables"]:
        out += empty_cells(table)
    for grid in found.get("grids", []):
        out += empty_cells(grid_table(grid)) + unread_cells(grid)
    return out


def probe(page) -> dict:
    """What PROBE reads from the page, with its data grids' cells (GRIDS)."""
    return {**page.evaluate(PROBE), "grids": page.evaluate(GRIDS)}


@dataclass
class Shot:
    page: str  # the page file's stem
    path: Path
    problems: list[str]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--text", default="I saw a saw")
    ap.add_argument("--out", type=Path, default=None,
                    help="folder (default assets/screenshots, or /tmp/attnviz-check with "
                         "--matrix)")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--matrix", action="store_true",
                    help="every page x theme x language x size, with contact sheets")
    ap.add_argument("--sizes", default=",".join(f"{w}x{h}" for w, h in SIZES))
    ap.add_argument("--themes", default=",".join(THEMES))
    ap.add_argument("--langs", default=",".join(LANGS))
    ap.add_argument("--pages", default="", help="page stems to shoot (default: all)")
    ap.add_argument("--full-page", action="store_true")
    ap.add_argument("--no-steps", action="store_true",
                    help="with --matrix: skip measuring each lesson step in presentation mode")
    ap.add_argument("--languages", action="store_true",
                    help="the English and Chinese, light and dark pictures "
                         "(LANGUAGE_SHOTS) into --out (default assets/screenshots)")
    args = ap.parse_args(argv)
    if args.languages:
        return language_shots(args.out or ROOT / "assets" / "screenshots", args.text)

    pages = existing_pages()
    if args.pages:
        wanted = set(args.pages.split(","))
        pages = [p for p in pages if Path(p).stem in wanted]
    if not args.matrix:
        out = args.out or ROOT / "assets" / "screenshots"
        shots = shoot(pages, out, [(args.width, args.height)], ["light"], ["en"], args.text,
                      flat=True, full_page=args.full_page)
        print(f"{len(shots)} screenshots in {out}")
        return 0
    out = args.out or Path("/tmp/attnviz-check")
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    themes, langs = args.themes.split(","), args.langs.split(",")
    shots = shoot(pages, out, sizes, themes, langs, args.text, flat=False,
                  full_page=args.full_page)
    steps = []
    if not args.no_steps and any(Path(p).stem == "lesson" for p in pages):
        steps = step_heights(out, [sz for sz in sizes if sz[0] >= 700], langs, args.text)
    lines = []
    for size in dict.fromkeys(size for size, _theme, _lang in shots):
        variants = {f"{theme} · {lang}": group for (sz, theme, lang), group in shots.items()
                    if sz == size}
        print(contact_sheet(variants, out / "sheets" / f"{size}.png", size,
                            phone=int(size.split("x")[0]) < 700))
    rows = [{"size": size, "theme": theme, "lang": lang, "page": s.page, "defect": p}
            for (size, theme, lang), group in shots.items() for s in group for p in s.problems]
    rows += [{"size": size, "theme": "light", "lang": lang, "page": f"lesson step {n}",
              "defect": p} for size, lang, n, _height, found in steps for p in found]
    lines = [f"{r['size']} {r['theme']} {r['lang']} {r['page']}: {r['defect']}" for r in rows]
    (out / "report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_report(out, rows, steps)
    print(f"{sum(len(g) for g in shots.values())} screenshots in {out}; "
          f"{len(lines)} problems listed in {out / 'report.md'}")
    return 0


def write_report(out: Path, rows: list[dict], steps: list[tuple]) -> None:
    """OUT/report.json (every defect, and each lesson step's height) and OUT/report.md (the
    same as tables, defects grouped by page)."""
    import json

    heights = [{"size": size, "lang": lang, "step": n, "height": height}
               for size, lang, n, height, _found in steps]
    (out / "report.json").write_text(json.dumps({"defects": rows, "lesson_steps": heights},
                                                ensure_ascii=False, indent=1), encoding="utf-8")
    cell = lambda text: str(text).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    md = ["# Screenshot check", "", f"{len(rows)} defects.", ""]
    if rows:
        md += ["| page | size | theme | language | defect |", "|---|---|---|---|---|"]
        md += [f"| {cell(r['page'])} | {r['size']} | {r['theme']} | {r['lang']} | "
               f"{cell(r['defect'])} |" for r in sorted(rows, key=lambda r: r["page"])]
    if heights:
        sizes = list(dict.fromkeys((h["size"], h["lang"]) for h in heights))
        md += ["", "## Lesson steps in presentation mode: page height (px)", "",
               "| step | " + " | ".join(f"{s} {lang}" for s, lang in sizes) + " |",
               "|---|" + "---|" * len(sizes)]
        for n in sorted({h["step"] for h in heights}):
            got = {(h["size"], h["lang"]): h["height"] for h in heights if h["step"] == n}
            md.append(f"| {n} | " + " | ".join(str(got.get(k, "")) for k in sizes) + " |")
    (out / "report.md").write_text("\n".join(md) + "\n", encoding="utf-8")


def step_heights(out: Path, sizes, langs, text: str) -> list[tuple]:
    """Each lesson step in presentation mode, in each window size and language: (size,
    language, step, page height, defects: too tall for the window, and the page checks)."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    from attnviz.ui.lesson import N

    if not sizes:
        return []
    port = free_port()
    log = out / ".streamlit-steps.log"
    proc = start_server(port, log)
    base = f"http://127.0.0.1:{port}"
    found = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=ensure_chromium(), args=CHROME_ARGS)
            for width, height in sizes:
                ctx = browser.new_context(viewport={"width": width, "height": height},
                                          device_scale_factor=1)
                page = ctx.new_page()
                page.goto(f"{base}/?" + urllib.parse.urlencode({"text": text}))
                wait_for_app(page, plots=False)
                for lang in langs:
                    for n in range(1, N + 1):
                        query = urllib.parse.urlencode({"lang": lang, "lesson_step": n,
                                                        "lesson_present": "true"})
                        page.goto(f"{base}/lesson?{query}")
                        problems = []
                        try:
                            wait_for_app(page, timeout_ms=PAGE_WAIT_MS, plots=False)
                        except PlaywrightError:
                            problems.append(f"did not finish drawing in "
                                            f"{PAGE_WAIT_MS // 1000} s")
                        try:  # a step's figure, where it has one
                            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=5000)
                        except PlaywrightError:
                            pass
                        page.wait_for_timeout(1500)
                        seen = probe(page)
                        problems += too_tall(seen["height"], seen["window"],
                                             "presentation mode") + defects(seen)
                        found.append((f"{width}x{height}", lang, n, round(seen["height"]),
                                      problems))
                        print(f"lesson step {n} {width}x{height} {lang}: "
                              f"{round(seen['height'])} px" +
                              (f"  ({'; '.join(problems)})" if problems else ""))
                ctx.close()
            browser.close()
    finally:
        stop_server(proc)
        log.unlink(missing_ok=True)
    return found


def language_shots(out: Path, text: str) -> int:
    """LANGUAGE_SHOTS: each shot in its own window, theme and language, scaled (LANCZOS) or
    cropped to its saved size, written as an optimised PNG."""
    import tempfile

    from PIL import Image

    pages = {Path(p).stem: p for p in existing_pages()}
    with tempfile.TemporaryDirectory() as tmp:
        for name, stem, size, theme, lang, full, saved, crop in LANGUAGE_SHOTS:
            folder = Path(tmp) / Path(name).stem
            ((shot,),) = shoot([pages[stem]], folder, [size], [theme], [lang], text, flat=True,
                               full_page=full).values()
            with Image.open(shot.path) as im:
                im = im.convert("RGB")
                if crop:
                    im = im.crop((0, 0, im.width, min(crop, im.height)))
                elif im.size != saved:
                    im = im.resize(saved, Image.Resampling.LANCZOS)
                im.save(out / name, optimize=True)
            print(out / name, "" if not shot.problems else shot.problems)
    return 0


def shoot(pages: list[str], out: Path, sizes, themes, langs, text: str, flat: bool,
          full_page: bool) -> dict[tuple[str, str, str], list[Shot]]:
    """Screenshots of `pages` for every (size, theme, language); one server, one browser."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = out / ".streamlit.log"
    proc = start_server(port, log)
    base = f"http://127.0.0.1:{port}"
    shots: dict[tuple[str, str, str], list[Shot]] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=ensure_chromium(), args=CHROME_ARGS)
            for width, height in sizes:
                for theme in themes:
                    ctx = browser.new_context(viewport={"width": width, "height": height},
                                              color_scheme=theme, device_scale_factor=1)
                    page = ctx.new_page()
                    # "/" first: on a fresh server a direct sub-page link can bypass app.py.
                    page.goto(f"{base}/?" + urllib.parse.urlencode({"text": text}))
                    wait_for_app(page, plots=False)
                    for lang in langs:
                        query = "?" + urllib.parse.urlencode({"text": text, "lang": lang})
                        folder = out if flat else out / f"{width}x{height}" / theme / lang
                        folder.mkdir(parents=True, exist_ok=True)
                        group = shots.setdefault((f"{width}x{height}", theme, lang), [])
                        for path in pages:
                            target = folder / f"{Path(path).stem}.png"
                            problems = []
                            page.goto(base + url_path(path) + query)
                            try:
                                wait_for_app(page, timeout_ms=PAGE_WAIT_MS, plots=True)
                            except PlaywrightError:
                                problems.append("did not finish drawing in "
                                                f"{PAGE_WAIT_MS // 1000} s")
                            page.wait_for_timeout(1000)  # let Plotly finish its transitions
                            wide = int(page.evaluate(SIDEWAYS))
                            if wide > 1:
                                problems.append(f"scrolls sideways by {wide} px")
                            problems += [f"error box: {e!r}" for e in page.evaluate(ERRORS)]
                            problems += defects(probe(page))
                            capture(page, target, width, height, full_page)
                            group.append(Shot(Path(path).stem, target, problems))
                            note = "; ".join(problems)
                            print(f"{target}" + (f"  ({note})" if note else ""))
                    ctx.close()
            browser.close()
    finally:
        stop_server(proc)
        log.unlink(missing_ok=True)
    return shots


def capture(page, target: Path, width: int, height: int, full_page: bool) -> None:
    """The window, or (full_page) the page's length up to FULL_PAGE_SCREENS windows."""
    if full_page:
        tall = int(page.evaluate(TALL))
        page.set_viewport_size({"width": width,
                                "height": max(height, min(tall, FULL_PAGE_SCREENS * height))})
        page.wait_for_timeout(800)
    page.screenshot(path=str(target))
    if full_page:
        page.set_viewport_size({"width": width, "height": height})


def contact_sheet(variants: dict[str, list[Shot]], target: Path, title: str,
                  phone: bool) -> Path:
    """Every picture of one window size on one image: a row per page (PAGES_PER_ROW pages
    side by side on a phone sheet), a column per variant (theme · language), each picture
    scaled to CELL_WIDTH px and named; a picture with a problem is named in red."""
    from PIL import Image, ImageDraw, ImageFont

    cell_w = CELL_WIDTH["phone" if phone else "wide"]
    per_row = PAGES_PER_ROW["phone" if phone else "wide"]
    names = list(variants)
    pages = list(dict.fromkeys(s.page for group in variants.values() for s in group))
    found = {(v, s.page): s for v, group in variants.items() for s in group}
    thumbs: dict[tuple[str, str], Image.Image] = {}
    for key, shot in found.items():
        with Image.open(shot.path) as im:
            im = im.convert("RGB")
            thumbs[key] = im.resize((cell_w, max(1, round(im.height * cell_w / im.width))),
                                    Image.Resampling.LANCZOS)
    label_h, pad, head, gap = 20, 6, 56, 14
    cols = per_row * len(names)
    rows = [pages[i:i + per_row] for i in range(0, len(pages), per_row)]
    row_h = [max((thumbs[k].height for p in row for v in names if (k := (v, p)) in thumbs),
                 default=0) for row in rows]
    width = cols * (cell_w + pad) + (per_row - 1) * gap + pad
    sheet = Image.new("RGB", (width, head + sum(h + label_h + pad for h in row_h) + pad),
                      "#808080")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=13)
    draw.text((pad, 6), title, fill="#000000", font=ImageFont.load_default(size=18))
    for j in range(per_row):
        for i, name in enumerate(names):
            x = pad + j * (len(names) * (cell_w + pad) + gap) + i * (cell_w + pad)
            draw.text((x, 34), name, fill="#000000", font=font)
    y = head
    for row, h in zip(rows, row_h, strict=True):
        for j, page in enumerate(row):
            for i, name in enumerate(names):
                x = pad + j * (len(names) * (cell_w + pad) + gap) + i * (cell_w + pad)
                shot = found.get((name, page))
                if shot is None:
                    continue
                bad = bool(shot.problems)
                draw.text((x, y + 3), page + (" (!)" if bad else ""),
                          fill="#B00000" if bad else "#000000", font=font)
                sheet.paste(thumbs[(name, page)], (x, y + label_h))
        y += h + label_h + pad
    target.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(target, optimize=True)
    return target

if __name__ == "__main__":
    raise SystemExit(main())
