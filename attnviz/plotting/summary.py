"""Text beside a picture: a figure's key numbers as small tables (WCAG's "text alternative").

A chart is a picture to a screen reader and to a keyboard. `summarise(fig)` reads the numbers
back out of the Plotly figure itself, so every figure the app draws gets the same text, made
from exactly what it shows:

- heatmap: for each row (a query), its TOP_K largest cells (keys) and their values, largest
  first: key_r,1 = argmax_c z[r, c], then the next largest, ...; masked cells (NaN) never
  count. Rows and columns are named by the axis' labels ('saw #2', 'saw #4' stay distinct).
- bar: each bar's label and value (bars of one panel sharing labels side by side).
- scatter / lines: a few points: every point (traces sharing x side by side); many points:
  per trace its number of points, min, max (with where) and last value.
- table: its header and cells; image: a sentence of its size.
A figure of several panels (a 12-head grid) gets one table per panel, named by the panel's
title. Tables are capped (MAX_ROWS rows, MAX_TABLES tables) so a 512-token figure stays cheap;
the note says what was left out (the page's download has every number).

Plain Python and NumPy, no Streamlit: ui.figures shows the result under each chart.
"""

from __future__ import annotations

import base64
import html
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import plotly.graph_objects as go

from attnviz.engine.trace import token_labels
from attnviz.i18n import _

TOP_K = 3  # keys named per query of a heatmap
MAX_ROWS = 30  # rows per table
MAX_TABLES = 16  # tables per figure (panels, traces)
FEW_POINTS = 24  # a line with at most this many points is listed point by point
DIGITS = 4  # significant digits of a value in a table

Cell = str | float | int


@dataclass(frozen=True)
class Table:
    """One table of a figure's numbers: `title` (a panel's or trace's name), header, rows,
    and a note saying what was left out."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    note: str = ""


@dataclass(frozen=True)
class Summary:
    """What a figure shows, in words (`text`) and tables."""

    text: str
    tables: tuple[Table, ...] = field(default_factory=tuple)


# ----------------------------------------------------------------------------- text helpers
_TAG = re.compile(r"<[^>]*>")


def plain(text: object) -> str:
    """Plotly label text as a reader should get it: tags (<b>, <br>) dropped, entities
    (&lt;) decoded, spaces collapsed, zero-width spaces (a heads grid's panel marks) gone."""
    if text is None:
        return ""
    return " ".join(html.unescape(_TAG.sub(" ", str(text))).replace("\u200b", "").split())


def number(value: object) -> str:
    """A value with DIGITS significant digits ('0.4123', '1.2e-06'); NaN as '—'."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return plain(value)
    if math.isnan(v):
        return "—"
    if v == int(v) and abs(v) < 1e6:
        return str(int(v))
    return f"{v:.{DIGITS}g}"


def _title(obj) -> str:
    """The text of a Plotly title (a string, a dict or a layout.Title)."""
    if obj is None:
        return ""
    if isinstance(obj, str):
        return plain(obj)
    text = obj.get("text") if isinstance(obj, dict) else getattr(obj, "text", None)
    return plain(text)


def _array(values) -> np.ndarray | None:
    """A trace's array as NumPy: lists, tuples, arrays, or plotly's {"dtype","bdata","shape"}."""
    if values is None:
        return None
    if isinstance(values, dict) and "bdata" in values:
        flat = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        shape = values.get("shape")
        if isinstance(shape, str):
            shape = [int(s) for s in shape.split(",")]
        return flat.reshape(shape) if shape else flat
    if isinstance(values, np.ndarray) and values.dtype.kind in "biuf":
        return values
    if _has_text(values):
        return np.asarray(values, dtype=object)
    try:
        return np.asarray(values, dtype=np.float64)  # None (a gap) becomes NaN
    except (TypeError, ValueError):
        return np.asarray(values, dtype=object)


def _floats(arr: np.ndarray | None) -> np.ndarray | None:
    """An array as float64, or None when it holds text."""
    if arr is None:
        return None
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError):
        return None


def _has_text(values) -> bool:
    """Whether an array holds text (looked at its first elements only: arrays are uniform)."""
    return any(isinstance(v, str) for v in itertools.islice(_flat(values), 64))


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple, np.ndarray)):
            yield from _flat(v)
        else:
            yield v


# --------------------------------------------------------------------------------- axes
def _axis(layout: dict, ref: str | None, letter: str) -> dict:
    """The layout dict of a trace's axis: ref 'x2' -> layout['xaxis2']."""
    suffix = (ref or letter)[1:]
    return layout.get(f"{letter}axis{suffix}") or {}


def labels(coords, n: int, axis: dict) -> list[str]:
    """Names of the n positions along an axis: the axis' tick text when it names every
    position (as drawn: 'i', 'saw #2', 'a', 'saw #4'), else the trace's own labels when they
    are text, else '#<coordinate>'. Repeated names get their position appended, so two
    'saw' stay two."""
    arr = _array(coords)
    if arr is None or arr.ndim != 1 or len(arr) < n:
        arr = np.arange(n)
    arr = arr[:n]
    ticks = {}
    tv, tt = axis.get("tickvals"), axis.get("ticktext")
    if tv is not None and tt is not None:
        ticks = {(_key(v)): plain(t) for v, t in zip(tv, tt, strict=False)}
    if not all(_key(v) in ticks for v in arr):  # thinned ticks: the trace's labels instead
        ticks = {}
    out = []
    for v in arr:
        if _key(v) in ticks:
            out.append(ticks[_key(v)])
        elif isinstance(v, str):
            out.append(plain(v))
        else:
            out.append("#" + number(v))
    out = _bare_singletons(out)
    seen: dict[str, int] = {}
    for name in out:
        seen[name] = seen.get(name, 0) + 1
    return [f"{name} #{i}" if seen[name] > 1 else name for i, name in enumerate(out)]


_NUMBERED = re.compile(r"^(.*) #(\d+)$")


def _bare_singletons(names: list[str]) -> list[str]:
    """Unique axis labels ('i #1', 'saw #2', 'a #3', 'saw #4', plotting.common.axis_labels)
    named as the tick text names them: a token seen once bare ('i'), a repeated one numbered."""
    found = [_NUMBERED.match(n) for n in names]
    if not names or not all(found):
        return names
    base = [m.group(1) for m in found if m]
    count: dict[str, int] = {}
    for b in base:
        count[b] = count.get(b, 0) + 1
    return [b if count[b] == 1 else n for b, n in zip(base, names, strict=True)]


def unique(names: Sequence[str]) -> tuple[str, ...]:
    """Column names made unique (a table cannot hold two columns of one name): a repeated
    name gets ' (2)', ' (3)'..."""
    out, seen = [], {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    return tuple(out)


def _key(v) -> object:
    """A coordinate as a dict key (0, 0.0 and np.int64(0) alike; text as itself)."""
    if isinstance(v, str):
        return v
    try:
        return round(float(v), 9)
    except (TypeError, ValueError):
        return str(v)


def panel_titles(layout: dict) -> dict[str, str]:
    """{x-axis ref: title} for subplots: make_subplots puts a panel's title as a paper
    annotation centred over its x domain, at the top of its y domain."""
    notes = [a for a in layout.get("annotations") or ()
             if a.get("xref") == "paper" and a.get("yref") == "paper" and a.get("text")]
    out: dict[str, str] = {}
    for name, ax in layout.items():
        m = re.fullmatch(r"xaxis(\d*)", name)
        if not m or not isinstance(ax, dict) or "domain" not in ax:
            continue
        y = layout.get(f"yaxis{m.group(1)}") or {}
        x0, x1 = ax["domain"]
        top = (y.get("domain") or (0, 1))[1]
        for a in notes:
            if abs(a.get("x", -1) - (x0 + x1) / 2) < 1e-3 and abs(a.get("y", -1) - top) < 0.03:
                out["x" + m.group(1)] = plain(a["text"])
                break
    return out


# ------------------------------------------------------------------------------ heatmaps
def grid_panels(fig: dict | go.Figure) -> list[tuple[str, np.ndarray, list[str], list[str]]]:
    """A heads grid's panels (plotting.heads_grid: one heatmap, its heads as blocks, where
    they are in `layout.meta["panels"]`) read back from the figure or its JSON:
    [(title, z block, key labels, query labels)] per head, labels without the panel marks."""
    d = fig.to_plotly_json() if isinstance(fig, go.Figure) else fig
    trace, panels = d["data"][0], d["layout"]["meta"]["panels"]
    z, m = _floats(_array(trace["z"])), int(panels["size"])
    xs, ys = [plain(v) for v in trace["x"]], [plain(v) for v in trace["y"]]
    return [(title, z[r0:r0 + m, c0:c0 + m], xs[c0:c0 + m], ys[r0:r0 + m])
            for title, (r0, c0) in zip(panels["titles"], panels["starts"], strict=True)]


def top_keys(z: np.ndarray, k: int = TOP_K) -> tuple[np.ndarray, np.ndarray]:
    """Per row of z [rows, cols]: the column indices of its k largest values, largest first
    (ties: the lower column first), and those values. NaN cells (masked) never count; a row
    with fewer than k numbers pads with index -1 and NaN.  -> ([rows, k] int, [rows, k])"""
    z = np.asarray(z, dtype=np.float64)
    k = min(k, z.shape[1])
    filled = np.where(np.isnan(z), -np.inf, z)
    idx = np.argsort(-filled, axis=1, kind="stable")[:, :k]  # [rows, k]
    vals = np.take_along_axis(z, idx, axis=1)
    missing = np.isnan(vals)
    return np.where(missing, -1, idx), vals


def heatmap_table(trace: dict, layout: dict, title: str, k: int = TOP_K,
                  max_rows: int = MAX_ROWS) -> Table | None:
    """Each row's k largest cells of a heatmap trace, named by the axes' labels."""
    z = _floats(_array(trace.get("z")))
    if z is None or z.ndim != 2 or z.size == 0:
        return None
    n_rows, n_cols = z.shape
    shown = min(n_rows, max_rows)
    xs = labels(trace.get("x"), n_cols, _axis(layout, trace.get("xaxis"), "x"))
    ys = labels(trace.get("y"), n_rows, _axis(layout, trace.get("yaxis"), "y"))
    idx, vals = top_keys(z[:shown].astype(np.float64), k)
    rows = []
    for r in range(shown):
        row: list[Cell] = [ys[r]]
        for j in range(idx.shape[1]):
            c = int(idx[r, j])
            row += [xs[c] if c >= 0 else "—", number(vals[r, j])]
        rows.append(tuple(row))
    y_title = _title(_axis(layout, trace.get("yaxis"), "y").get("title"))
    hover = str(trace.get("hovertemplate") or "")
    head = y_title or (_("query") if "query" in hover else _("row"))
    columns = [head]
    for j in range(1, idx.shape[1] + 1):
        columns += [_("top {k}").format(k=j), _("value {k}").format(k=j)]
    note = (_("First {shown} of {total} rows; the page's download has all of them.").format(
        shown=shown, total=n_rows) if shown < n_rows else "")
    return Table(title, tuple(columns), tuple(rows), note)


# --------------------------------------------------------------------------- bars, lines
def _xy(trace: dict, layout: dict) -> tuple[list[str], np.ndarray, str]:
    """(category labels, values, category axis title) of a bar trace, either orientation."""
    horizontal = trace.get("orientation") == "h"
    cat, val = ("y", "x") if horizontal else ("x", "y")
    values = _floats(_array(trace.get(val)))
    values = np.zeros(0) if values is None else values.ravel()
    axis = _axis(layout, trace.get(f"{cat}axis"), cat)
    return labels(trace.get(cat), len(values), axis), values, _title(axis.get("title"))


def bar_tables(traces: list[dict], layout: dict, title: str,
               max_rows: int = MAX_ROWS) -> list[Table]:
    """Bars of one panel: label and value, one column per trace when they share labels."""
    parts = [(_name(t, i), *_xy(t, layout)) for i, t in enumerate(traces)]
    groups = [parts] if all(p[1] == parts[0][1] for p in parts) else [[p] for p in parts]
    out = []
    for group in groups:
        cats, axis_title = group[0][1], group[0][3]
        shown = min(len(cats), max_rows)
        cols = (axis_title or _("label"),) + tuple(
            p[0] or _("value") for p in group)
        rows = tuple((cats[i], *(number(p[2][i]) for p in group)) for i in range(shown))
        note = (_("First {shown} of {total} rows; the page's download has all of them.")
                .format(shown=shown, total=len(cats)) if shown < len(cats) else "")
        name = title if len(groups) == 1 else " · ".join(filter(None, [title, group[0][0]]))
        out.append(Table(name, cols, rows, note))
    return out


def _name(trace: dict, i: int) -> str:
    return plain(trace.get("name")) or ""


def line_tables(traces: list[dict], layout: dict, title: str,
                few: int = FEW_POINTS) -> list[Table]:
    """Lines and points of one panel: every point when there are few (traces sharing x side
    by side), else per trace its number of points, min, max (where) and last value. Points
    placed on a category axis (text y) are named, not measured."""
    parts = []
    for i, t in enumerate(traces):
        y = _array(t.get("y"))
        if y is None or y.size == 0 or y.ndim != 1:
            continue
        axis = _axis(layout, t.get("xaxis"), "x")
        xs = labels(t.get("x"), len(y), axis)
        text = _array(t.get("text"))
        if text is not None and text.ndim == 1 and len(text) == len(y) and "text" in str(
                t.get("mode") or ""):
            xs = [f"{plain(s)} ({x})" for s, x in zip(text, xs, strict=True)]
        if y.dtype == object:  # a category axis: the points' names are the numbers
            values, cells = None, labels(y, len(y), _axis(layout, t.get("yaxis"), "y"))
        else:
            values = y.astype(np.float64)
            cells = [number(v) for v in values]
        parts.append((_name(t, i) or _("line {i}").format(i=i + 1), xs, values, cells,
                      _title(axis.get("title"))))
    if not parts:
        return []
    x_title = parts[0][4] or "x"
    if all(len(p[3]) <= few for p in parts) and all(p[1] == parts[0][1] for p in parts):
        cols = (x_title, *(p[0] for p in parts))
        rows = tuple((x, *(p[3][i] for p in parts)) for i, x in enumerate(parts[0][1]))
        return [Table(title, cols, rows)]
    if all(len(p[3]) <= few for p in parts) and len(parts) <= 3:
        return [Table(" · ".join(filter(None, [title, p[0]])), (x_title, p[0]),
                      tuple(zip(p[1], p[3], strict=True))) for p in parts]
    cols = (_("line"), _("points"), _("min"), _("min at"), _("max"), _("max at"), _("last"),
            _("last at"))
    rows = []
    for name, xs, y, _cells, _t in parts[:MAX_ROWS]:
        ok = np.zeros(len(xs), bool) if y is None else ~np.isnan(y)
        if y is None or not ok.any():
            rows.append((name, len(xs), "—", "", "—", "", "—", ""))
            continue
        lo = int(np.nanargmin(y))
        hi = int(np.nanargmax(y))
        last = int(np.flatnonzero(ok)[-1])
        rows.append((name, len(y), number(y[lo]), xs[lo], number(y[hi]), xs[hi],
                     number(y[last]), xs[last]))
    note = (_("First {shown} of {total} lines.").format(shown=MAX_ROWS, total=len(parts))
            if len(parts) > MAX_ROWS else "")
    return [Table(title, cols, tuple(rows), note)]


def table_table(trace: dict, title: str, max_rows: int = MAX_ROWS) -> Table | None:
    """A Plotly table trace as a table (its cells are drawn as SVG, unreadable to a reader)."""
    header = (trace.get("header") or {}).get("values")
    cells = (trace.get("cells") or {}).get("values")
    if cells is None:
        return None
    columns_data = [list(_flat([c])) if not isinstance(c, (list, tuple, np.ndarray))
                    else list(c) for c in cells]
    n = max((len(c) for c in columns_data), default=0)
    head = _numbered_header([plain(h) for h in (header or [""] * len(columns_data))])
    rows = tuple(tuple(plain(c[i]) if i < len(c) else "" for c in columns_data)
                 for i in range(min(n, max_rows)))
    note = (_("First {shown} of {total} rows; the page's download has all of them.").format(
        shown=min(n, max_rows), total=n) if n > max_rows else "")
    return Table(title, head, rows, note)


def _numbered_header(names: list[str]) -> tuple[str, ...]:
    """A table's header with each repeated name numbered by its column's place, as the axes
    name tokens ('saw #2', 'saw #4' for the words of "I saw a saw", engine.token_labels);
    places count from the first column after an empty one (the column naming the rows)."""
    offset = 1 if names and names[0] == "" else 0
    count: dict[str, int] = {}
    for name in names:
        count[name] = count.get(name, 0) + 1
    numbers = token_labels(list(names[offset:]))  # the one numbering: words from 1, [CLS] 0
    return tuple(numbers[i - offset] if i >= offset and name and count[name] > 1 else name
                 for i, name in enumerate(names))


# -------------------------------------------------------------------------------- figures
SKIP_HOVER = ("skip", "none")


def summarise(fig: go.Figure, k: int = TOP_K, max_rows: int = MAX_ROWS,
              max_tables: int = MAX_TABLES) -> Summary:
    """The figure's key numbers: one or more tables per panel and a sentence saying what
    they hold (see the module docstring)."""
    return summarise_parts(*_parts(fig), k, max_rows, max_tables)


def _parts(fig: go.Figure) -> tuple[dict, list[dict]]:
    """The figure's layout and traces as plain dicts (plotly's to_plotly_json: copies)."""
    return fig.layout.to_plotly_json(), [t.to_plotly_json() for t in fig.data]


_OUTLINE = ("type", "visible", "hoverinfo", "xaxis")  # what describe() reads of a trace


def _outline(fig: go.Figure) -> tuple[dict, list[dict]]:
    """What describe() reads of a figure, through plotly's properties (no copy of its data):
    the layout's title and meta; each trace's _OUTLINE (an image trace whole)."""
    traces = []
    for t in fig.data:
        if t.type == "image":
            traces.append(t.to_plotly_json())
        else:
            traces.append({name: t[name] for name in _OUTLINE if name in t})
    return {"title": fig.layout.title.text, "meta": fig.layout.meta}, traces


def describe(fig: go.Figure, k: int = TOP_K) -> str:
    """summarise(fig).text without reading a number: the figure's title and what its tables
    hold, for the chart's accessible name on every run (the tables themselves are made only
    when a reader opens them). Only a figure of more than MAX_TABLES tables differs: its
    summary's text also says how many are shown."""
    layout, traces = _outline(fig)
    grid = _heads_grid(layout, traces)
    if grid is not None:  # panels by title, as summarise_parts makes them
        kinds, count, sentences = ["heatmap"], len(dict.fromkeys(grid.get("titles", ()))), []
    else:
        panels = _shown_panels(traces)
        kinds, count, sentences = [], len(panels), []
        for group in panels.values():
            for kind in dict.fromkeys(t.get("type") or "scatter" for t in group):
                kinds.append(kind)
                if kind == "image":
                    sentences.append(_image_sentence(next(
                        t for t in group if (t.get("type") or "scatter") == "image")))
    return " ".join([_describe(_title(layout.get("title")), kinds, count, k),
                     *sentences]).strip()


def _heads_grid(layout: dict, traces: list[dict]) -> dict | None:
    """A heads grid's panels (plotting.heads_grid's layout.meta["panels"]), else None."""
    meta = layout.get("meta")
    return meta["panels"] if isinstance(meta, dict) and meta.get("panels") and traces else None


def _shown_panels(traces: list[dict]) -> dict[str, list[dict]]:
    """{x-axis ref: its shown traces} of a figure."""
    panels: dict[str, list[dict]] = {}
    for t in traces:
        if t.get("visible") is False or t.get("hoverinfo") in SKIP_HOVER:
            continue
        panels.setdefault(t.get("xaxis") or "x", []).append(t)
    return panels


def summarise_parts(layout: dict, traces: list[dict], k: int = TOP_K, max_rows: int = MAX_ROWS,
                    max_tables: int = MAX_TABLES) -> Summary:
    """summarise() of a figure given as its layout and trace dicts (read, never changed)."""
    fig_title = _title(layout.get("title"))
    titles = panel_titles(layout)
    panels = _shown_panels(traces)
    tables: list[Table] = []
    kinds: list[str] = []
    sentences: list[str] = []
    if _heads_grid(layout, traces) is not None:
        # a heads grid (one heatmap, its heads as blocks): a panel and a table a head; the
        # labels are the trace's own, unmarked (its tick text may be thinned)
        hover = traces[0].get("hovertemplate")
        panels = {title: [dict(type="heatmap", z=z, x=xs, y=ys, hovertemplate=hover)]
                  for title, z, xs, ys in grid_panels({"layout": layout, "data": traces})}
        layout, titles = {}, {title: title for title in panels}
    for ref, group in panels.items():
        name = titles.get(ref, "") if len(panels) > 1 else ""
        by_type: dict[str, list[dict]] = {}
        for t in group:
            by_type.setdefault(t.get("type") or "scatter", []).append(t)
        for kind, ts in by_type.items():
            kinds.append(kind)
            if kind == "heatmap":
                for t in ts:
                    tab = heatmap_table(t, layout, name or _name(t, 0), k, max_rows)
                    tables += [tab] if tab else []
            elif kind == "bar":
                tables += bar_tables(ts, layout, name, max_rows)
            elif kind in ("scatter", "scattergl"):
                tables += line_tables(ts, layout, name)
            elif kind == "table":
                for t in ts:
                    tab = table_table(t, name, max_rows)
                    tables += [tab] if tab else []
            elif kind == "image":
                sentences.append(_image_sentence(ts[0]))
    shown = [replace(t, columns=unique(t.columns)) for t in tables[:max_tables]]
    text = _describe(fig_title, kinds, len(panels), k)
    if len(tables) > max_tables:
        text += " " + _("Tables for the first {shown} of {total} parts are shown.").format(
            shown=max_tables, total=len(tables))
    return Summary(" ".join([text, *sentences]).strip(), tuple(shown))


def _image_sentence(trace: dict) -> str:
    z = _array(trace.get("z"))
    if z is not None and z.ndim >= 2:
        return _("An image of {w} × {h} pixels.").format(w=z.shape[1], h=z.shape[0])
    return _("An image.")


def _describe(title: str, kinds: Sequence[str], panels: int, k: int) -> str:
    """One sentence per kind of chart: what the tables below hold."""
    parts = [title + "." if title else ""]
    if panels > 1:
        parts.append(_("{n} panels, one table each.").format(n=panels))
    if "heatmap" in kinds:
        parts.append(_("Heatmap: each row lists its {k} largest cells (column and value), "
                       "largest first.").format(k=k))
    if "bar" in kinds:
        parts.append(_("Bars: each label with its value."))
    if "scatter" in kinds or "scattergl" in kinds:
        parts.append(_("Lines and points: every point when there are few, else each line's "
                       "smallest, largest and last value."))
    return " ".join(p for p in parts if p)
