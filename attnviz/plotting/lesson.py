"""Figures of the "I saw a saw" lesson (the lecture's example): tags, receptive fields,
accuracies by distance, parameters and overfitting, cosines.

Every word label is HTML-escaped and made unique by position ('saw #2', 'saw #4': words
counted from 1, as the lecture's a^1..a^4), so the two saws never merge on a categorical axis
and read alike on every page. `big=True` is the projector size: large type in
the text, the tick labels, the legend and the titles, not only in the colour bar.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import N_, _
from .common import (
    ACCURACY_SCALE,
    COLORBAR_BELOW,
    FONT,
    MASK_SCALE_THEMED,
    ORDERED_SHADES,
    Grid,
    axis_labels,
    category_colour,
    category_dash,
    category_marker,
    escape,
    label_room,
)
from .common import NEUTRAL as GREY

# Translucent tints of the palette's blue (right) and orange (wrong) over the page's own
# background, and the theme's text colour: a table that reads in the light and the dark theme.
RIGHT, WRONG = "rgba(0, 114, 178, 0.30)", "rgba(230, 159, 0, 0.45)"
NEUTRAL, HEADER = "rgba(128, 128, 128, 0.12)", "rgba(128, 128, 128, 0.28)"
TABLE_LINE = "rgba(128, 128, 128, 0.45)"
HIDDEN = "?"  # a tag the class predicts before it is revealed
METRICS = (("near", N_("neighbour<br>decides")), ("far", N_("decided 2+<br>words back")),
           ("double_role", N_("double-role<br>words")))  # column labels of the accuracy grid
BASELINE_COLOUR = GREY
FIELD_NAMES = {"per word": N_("per word"), "window": N_("window"),
               "self-attention": N_("self-attention")}  # analysis.lesson.receptive_fields
SMALL, LARGE = 14, 22  # font sizes: screen, projector
MODEBAR_ROOM = 30  # px over a table: the toolbar (camera, SVG) shows there, not on the header


def _size(big: bool) -> int:
    return LARGE if big else SMALL


def _font(big: bool) -> dict:
    return dict(FONT, size=_size(big))


def projector(fig: go.Figure, big: bool) -> go.Figure:
    """Any figure in projector size when `big`: larger type in the layout, every axis' tick
    labels and titles, the legend, the annotations (subplot titles) and colour bars."""
    if not big:
        return fig
    size = _size(True)
    fig.layout.font = _font(True)  # plain assignments: cheaper than update_* re-dispatch
    for name in list(fig.layout.to_plotly_json()):
        if name.startswith(("xaxis", "yaxis")):
            axis = fig.layout[name]
            if axis.tickfont.size is None or axis.tickfont.size < size - 2:
                axis.tickfont.size = size  # a figure's own large-enough size is kept
            axis.title.font = dict(size=size)
    fig.layout.legend.font = dict(size=size - 2)
    if fig.layout.legend.title.text:
        fig.layout.legend.title.font = dict(size=size - 2)
    fig.layout.title.font = dict(size=size)
    for note in fig.layout.annotations:
        note.font.size = size - 2
    for trace in fig.data:
        if "colorbar" in trace:
            trace.colorbar.tickfont = dict(size=size - 4)
    if fig.layout.coloraxis.colorbar is not None:
        fig.layout.coloraxis.colorbar.tickfont = dict(size=size - 4)
    return fig


def projector_grid(fig: go.Figure, height: int) -> go.Figure:
    """A heads grid (plotting.heads_grid) in projector size and `height` px tall, for the
    figure column of a 1280x720 screen: large type (the slanted key labels and the title a
    little smaller, so the title keeps to one line), and the colour bar placed again under
    the key labels at their projector size (heads_grid places it for its own small labels
    and height)."""
    fig = projector(fig, True)
    size = LARGE - 4
    fig.layout.title.font = dict(size=size)
    fig.layout.xaxis.tickfont.size = size
    below = 10 + label_room(list(fig.layout.xaxis.ticktext or []), angle=-45, size=size,
                            across=False, titled=False)
    fig.layout.margin.b = below + COLORBAR_BELOW
    fig.layout.height = height
    plot = height - (fig.layout.margin.t or 0) - fig.layout.margin.b
    if fig.layout.coloraxis.colorbar is not None:
        fig.layout.coloraxis.colorbar.y = -below / max(plot, 1)
    return fig


PRESENT_TITLE_ROOM = 36  # px of an axis title at the projector's size, beside its tick labels
PRESENT_COLORBAR_BELOW = COLORBAR_BELOW + 16  # a horizontal colour bar, title and ticks, big


def projector_heatmap(fig: go.Figure, height: int) -> go.Figure:
    """One attention map (plotting.attention_heatmap, its colour bar below the key labels) in
    projector size and `height` px tall: large type, and the room its labels take measured
    again at that size: the query labels and "queries" on the left, the slanted key labels,
    then "keys", then the colour bar with its title under them (attention_heatmap places them
    for its own small labels, so the big ones ran into one another)."""
    fig = projector(fig, True)
    size = _size(True)
    x, y = fig.layout.xaxis, fig.layout.yaxis
    below = 10 + label_room(list(x.ticktext or []), angle=x.tickangle or 0, size=size,
                            across=False, titled=False) + PRESENT_TITLE_ROOM
    fig.layout.margin.l = 10 + label_room(list(y.ticktext or []), size=size, titled=False) \
        + PRESENT_TITLE_ROOM
    fig.layout.height = height
    bar = fig.data[0].colorbar
    if bar.orientation == "h" and bar.yanchor == "top":  # below the keys: moved down with them
        fig.layout.margin.b = below + PRESENT_COLORBAR_BELOW
        plot = height - (fig.layout.margin.t or 0) - fig.layout.margin.b
        bar.y = -below / max(plot, 1)
        bar.title.font = dict(size=size - 4)
    else:  # above the plot (a long text) or beside it: only the key labels' room
        fig.layout.margin.b = below
    return fig


TITLE_LINES_LOST = 36  # px a phone can take from a plot's height: its title on two more lines
BAR_ROOM_MORE = 24  # px added under a heads grid so its colour bar can sit lower


def bar_at_bottom(fig: go.Figure) -> go.Figure:
    """A heads grid (plotting.heads_grid) whose colour bar stays clear of the key labels when
    the plot gets shorter than drawn (on a phone its title breaks into more lines): the bar's
    place, a fraction of the plot's height, is reckoned for a plot TITLE_LINES_LOST px
    shorter, and the figure has BAR_ROOM_MORE px more at the bottom for the bar to sit lower
    when the plot keeps its height. (Placed from the figure's bottom edge instead, Plotly
    drew the bar's title over the bar.)"""
    bar = fig.layout.coloraxis.colorbar
    m = fig.layout.margin
    if bar is None or bar.orientation != "h" or bar.yanchor != "top" or not fig.layout.height:
        return fig
    plot = fig.layout.height - (m.t or 0) - (m.b or 0)
    below = (m.b or 0) - COLORBAR_BELOW  # the key labels' room under the plot
    bar.y = -(below + 8) / max(plot - TITLE_LINES_LOST, 1)
    m.b = (m.b or 0) + BAR_ROOM_MORE
    fig.layout.height += BAR_ROOM_MORE
    return fig


def word_labels(words: Sequence[str]) -> list[str]:
    """Each word as a table shows it, escaped: a word that occurs once bare, a repeated one
    with its number (engine.token_labels: counted from 1, as the lecture's a^1..a^4), so the
    two saws of "I saw a saw" read 'saw #2' and 'saw #4'."""
    labels = axis_labels(list(words))
    return [label if list(words).count(w) > 1 else escape(w)
            for w, label in zip(words, labels, strict=True)]


ROWS_AS_WORDS = 3  # a table of at most this many tag rows turns: one row per word
WORDS_LARGE_BIG = 5  # on the projector, a tag table of at most this many words in LARGE type,
WORDS_ACROSS_BIG = 7  # up to this many across in BAND_SIZE type (7 tags fit a 586 px column),
BAND_WORDS = 5  # a longer sentence across in bands of at most this many words
BAND_SIZE = 18  # px, the projector's smallest text
BAND_CELL, BAND_EXTRA = 2 * BAND_SIZE, round(BAND_SIZE * 1.3)  # px: a row (a CJK line takes
# 36 px), each further line of a wrapped name
CLEAR = "rgba(0, 0, 0, 0)"
CJK = "\u2e80-\u9fff\uff00-\uffef"  # a line may break before or after one of these
CJK_CLOSE = "\uff0c\u3002\u3001\uff1a\uff1b\uff01\uff1f\uff09"  # ，。、：；！？）: never first
LINE_UNITS = 20  # a name column's line: Latin letters (a CJK character counts two)
COLUMN_PX = 586  # the figure column of a 1280x720 screen when presenting (the table's width)
# px of one unit of a name's line (wrap), per px of type: Latin letters (one unit each, 0.39 em
# measured at 22 px) and a line with CJK characters (two units each, a character one em wide)
UNIT_EM, UNIT_EM_CJK = 0.4, 0.5
NAME_UNITS = 15  # the name column's line off the projector when the words run across: a 390 px
# phone holds '(d) attention +' (Plotly breaks a longer line itself, past the known height)


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrap(text: str, units: int = LINE_UNITS) -> tuple[str, int]:
    """`text` escaped and broken into lines of at most `units` (a CJK character counts two,
    and a line may break before or after one; Latin text breaks between words; a longer word
    keeps its own line), joined by <br>, and how many lines: a table's row then holds the
    same lines on a phone and on a projector, and its height is known here."""
    pieces = re.findall(rf"[^\s{CJK}]+|[{CJK}][{CJK_CLOSE}]*|\s+", text)
    lines, line = [], ""
    for piece in pieces:
        if piece.isspace():
            line += " " if line else ""
            continue
        if line and _width(line) + _width(piece) > units:
            lines.append(line.rstrip())
            line = ""
        line += piece
    lines.append(line.rstrip())
    return "<br>".join(escape(x) for x in lines), len(lines)


def tag_table(words: Sequence[str], rows: Mapping[str, Sequence[str]],
              gold: Sequence[str] | None = None, big: bool = False,
              title: str | None = None, first_width: float = 2.6,
              units: int | None = None, across: int = WORDS_ACROSS_BIG) -> go.Figure:
    """A table of tags: blue = gold tag, orange = wrong, grey = "?" (HIDDEN: not revealed).

    `rows` maps a tagger's name to its tags; `gold` (when known) comes first. With at most
    ROWS_AS_WORDS of them the table has one row per word (narrow: it fits a phone's width),
    except on the projector (`big`): there the words run across, a few rows high, so the
    step's figure fits under it on one 1280x720 screen (over WORDS_LARGE_BIG words in
    BAND_SIZE type); with more tag rows, one column per word and one row per tagger. On the
    projector a sentence of more than `across` words (default WORDS_ACROSS_BIG) runs across
    in bands (`_banded`: at most BAND_WORDS words each).
    `layout.meta["words_as_rows"]` says which (and `meta["bands"]`, how many bands). Tagger
    names are broken into lines here (`wrap`), so the height is known; it leaves room for a
    numbered word ('saw #2') wrapping in a narrow header. The
    fills are translucent tints and the text takes the theme's colour, so the table reads
    in the light and the dark theme. `first_width`: the name column's width relative to a
    tag column; `units`: the longest line of a name when the words run across (default:
    on the projector as many as the name column of a COLUMN_PX table holds, LINE_UNITS at
    most; NAME_UNITS elsewhere).
    """
    names = ([_("gold")] if gold is not None else []) + list(rows)
    tag_rows = ([list(gold)] if gold is not None else []) + [list(t) for t in rows.values()]
    fills = []  # [tag row][word]
    for r in tag_rows:
        fills.append([NEUTRAL if gold is None or r[i] == HIDDEN or gold[i] == HIDDEN
                      else RIGHT if r[i] == gold[i] else WRONG for i in range(len(words))])
    heads = word_labels(words)
    small = big and len(words) > WORDS_LARGE_BIG  # on the projector: BAND_SIZE type
    size = BAND_SIZE if small else _size(big)
    turned = len(names) <= ROWS_AS_WORDS and not big
    if big and len(words) > across:
        return _banded(heads, names, tag_rows, fills, BAND_WORDS, first_width,
                       units or LINE_UNITS)
    if turned:  # one row per word: columns = the word, then each tag row
        wrapped = [wrap(n, 12 if len(names) > 1 else 24) for n in names]  # a phone's column
        header = ["", *[w for w, _k in wrapped]]
        cells = [heads, *tag_rows]
        colours = [[NEUTRAL] * len(words), *fills]
        widths = [1.4] + [first_width * 0.7] * len(names)
        row_lines = [1] * len(words)
        head_lines = max(k for _w, k in wrapped)
    else:  # one column per word
        name_px = (COLUMN_PX - 10) * first_width / (first_width + len(words)) - 16
        wrapped = [wrap(n, units or (  # the projector: as many units as the name column holds
            min(LINE_UNITS, int(name_px / (size * (UNIT_EM_CJK if re.search(f"[{CJK}]", n)
                                                   else UNIT_EM)))) if big else NAME_UNITS))
            for n in names]
        header = ["", *heads]
        cells = [[w for w, _k in wrapped]] + [[r[i] for r in tag_rows]
                                              for i in range(len(words))]
        colours = [[NEUTRAL] * len(names)] + [[f[i] for f in fills] for i in range(len(words))]
        widths = [first_width] + [1] * len(words)
        row_lines = [k for _w, k in wrapped]
        head_lines = 2 if any(" " in h for h in heads) else 1  # 'saw #2' in a narrow column
    line = dict(color=TABLE_LINE, width=1)
    cell_h, head_h = (int(size * 1.8),) * 2 if big else (int(size * 2.1), int(size * 2.2))
    extra = int(size * 1.25)  # a wrapped line
    if small:
        cell_h, head_h, extra = BAND_CELL, BAND_CELL, BAND_EXTRA
    height = (head_h + extra * (head_lines - 1) + sum(cell_h + extra * (k - 1) for k in row_lines)
              + (60 if title else MODEBAR_ROOM + 11))
    return _strong_header(go.Figure(data=[dict(
        type="table", columnwidth=widths,
        header=dict(values=header, fill_color=HEADER, line=line,
                    font=dict(size=size, weight="bold"), height=head_h),
        cells=dict(values=cells, fill_color=colours, line=line, font=dict(size=size),
                   height=cell_h, align=["left"] + ["center"] * (len(cells) - 1)),
    )], layout=dict(
        title=title, font=dict(FONT, size=size),
        margin=dict(l=5, r=5, t=40 if title else MODEBAR_ROOM, b=5),
        meta={"words_as_rows": turned}, height=height)))


def _banded(heads: list[str], names: list[str], tag_rows: list[list[str]],
            fills: list[list[str]], band: int, first_width: float, units: int) -> go.Figure:
    """A projector's tag table for a sentence too long to run across in one row of words:
    the words split into bands of at most `band` (as even as can be), each band a row of
    its words in bold on the header's grey, then a row per tagger (named again in each
    band), all in BAND_SIZE type; so nine characters fit the figure column of a 1280x720
    screen in two bands, each tag in a column wide enough for it."""
    n = len(heads)
    count = -(-n // band)
    per = -(-n // count)
    wrapped = [wrap(name, units) for name in names]
    cols = [[] for _k in range(per + 1)]
    colours = [[] for _k in range(per + 1)]
    heights = []
    cell_h, extra = BAND_CELL, BAND_EXTRA
    for start in range(0, n, per):
        cols[0].append("")
        colours[0].append(HEADER)
        for k in range(per):
            cols[k + 1].append(f"<b>{heads[start + k]}</b>".replace(" ", "\u00a0")
                               if start + k < n else "")  # 'saw #2' on one line
            colours[k + 1].append(HEADER)
        heights.append(cell_h)
        for (name, lines), tags, fill in zip(wrapped, tag_rows, fills, strict=True):
            cols[0].append(name)
            colours[0].append(NEUTRAL)
            for k in range(per):
                i = start + k
                cols[k + 1].append(tags[i] if i < n else "")
                colours[k + 1].append(fill[i] if i < n else CLEAR)
            heights.append(cell_h + extra * (lines - 1))
    line = dict(color=TABLE_LINE, width=1)
    return _strong_header(go.Figure(data=[dict(
        type="table", columnwidth=[first_width] + [1] * per,
        header=dict(values=[""] * (per + 1), height=0, line=dict(width=0),
                    fill_color=CLEAR),
        cells=dict(values=cols, fill_color=colours, line=line, font=dict(size=BAND_SIZE),
                   height=cell_h, align=["left"] + ["center"] * per),
    )], layout=dict(
        font=dict(FONT, size=BAND_SIZE), margin=dict(l=5, r=5, t=MODEBAR_ROOM, b=5),
        meta={"words_as_rows": False, "bands": count},
        height=sum(heights) + MODEBAR_ROOM + 11)))


def _strong_header(fig: go.Figure) -> go.Figure:
    """The header's text in the colour the figure's template gives the cells' text (under
    the app's theme template: the theme's strongest text colour, light or dark, where its
    own header text is a pale grey on the grey header)."""
    defaults = fig.layout.template.data.table
    if defaults and defaults[0].cells.font.color is not None:
        defaults[0].header.font.color = defaults[0].cells.font.color
    return fig


def far_table(labels: Sequence[str], gold: Sequence[str], tags: Mapping[str, Sequence[str]],
              big: bool = False) -> go.Figure:
    """One row per sentence (`labels`), its gold tag, then each tagger's tag (`tags` maps a
    tagger's column label to one tag per sentence); blue = gold, orange = wrong,
    "?" = hidden."""
    cols = [[escape(x) for x in labels], list(gold), *[list(t) for t in tags.values()]]
    colours = [[NEUTRAL] * len(labels), [NEUTRAL] * len(labels)]
    for t in tags.values():
        colours.append([NEUTRAL if x == HIDDEN else RIGHT if x == g else WRONG
                        for x, g in zip(t, gold, strict=True)])
    size = _size(big)
    line = dict(color=TABLE_LINE, width=1)
    return _strong_header(go.Figure(data=[dict(
        type="table", columnwidth=[2.2, 1.3] + [1] * len(tags),  # 'gold' in Chinese: 4 chars
        header=dict(values=["", _("gold"), *[escape(k) for k in tags]], fill_color=HEADER,
                    line=line, font=dict(size=size, weight="bold"), height=int(size * 2.2)),
        cells=dict(values=cols, fill_color=colours, line=line, font=dict(size=size),
                   height=int(size * 2.1), align=["left"] + ["center"] * (len(tags) + 1)),
    )], layout=dict(font=_font(big), margin=dict(l=5, r=5, t=MODEBAR_ROOM, b=5),
                    height=int(size * 2.2 * (len(labels) + 1) + 15 + MODEBAR_ROOM))))


def receptive_field(words: Sequence[str], fields: Mapping[str, np.ndarray],
                    big: bool = False, height: int | None = None) -> go.Figure:
    """Side by side: which words (columns) each word's tag (rows) can depend on. A repeated
    word is numbered on both axes (word_labels), so the two saws read saw #2 and saw #4.
    The cells a tag cannot see are a translucent grey over the page's own background
    (MASK_SCALE_THEMED), so the map reads in the dark theme too, not as pale slabs. On the
    projector the key labels of a sentence over WORDS_LARGE_BIG words stand upright.
    `height`: px (default 360 on the projector, 340 elsewhere)."""
    labels = axis_labels(list(words))
    text = word_labels(words)
    names = [_(FIELD_NAMES[k]) if k in FIELD_NAMES else k for k in fields]
    # a projector's long sentence: its key labels upright, one line each (level ones crossed)
    upright = big and len(words) > WORDS_LARGE_BIG
    g = Grid(rows=1, cols=len(fields), subplot_titles=names, horizontal_spacing=0.06)
    for c, (name, mask) in enumerate(zip(names, fields.values(), strict=True), start=1):
        g.add(dict(
            type="heatmap", z=np.asarray(mask, dtype=np.float32), x=labels, y=labels, zmin=0,
            zmax=1, colorscale=MASK_SCALE_THEMED, showscale=False, xgap=2,
            ygap=2,
            hovertemplate=_("tag of %{y}<br>sees %{x}: %{z}") + "<extra>" + escape(name)
            + "</extra>",
        ), 1, c)
        g.yaxis(1, c).update(type="category", autorange="reversed", ticktext=text,
                             tickvals=labels, showticklabels=(c == 1), showgrid=False)
        g.xaxis(1, c).update(type="category", ticktext=text, tickvals=labels, showgrid=False,
                             tickangle=-90 if upright else None)
        # (grid lines showed through the translucent hidden cells)
    for note in g.layout.get("annotations", []):  # the panel titles
        note["font"] = {**note.get("font", {}), "size": _size(big)}
    return projector(g.figure(
        font=_font(big), height=height or (360 if big else 340),
        title=_("What each word's tag can see (rows: the word tagged)"),
        margin=dict(l=10, r=10, t=80, b=10)), big)


def accuracy_by_distance(curves: Mapping[str, Mapping[int, float]],
                         baseline: Mapping[int, float], counts: Mapping[int, int],
                         big: bool = False) -> go.Figure:
    """Held-out accuracy on ambiguous words (y) by the distance of their deciding word (x):
    one line per tagger, the majority-tag baseline dashed. Hover gives the word counts."""
    dist = sorted(counts)
    ticks = [f"{d}<br>({counts[d]})" for d in dist]
    data = [dict(type="scatter", x=dist, y=[100 * float(baseline[d]) for d in dist],
                 mode="lines", name=_("majority tag"), line=dict(dash="dash", width=3,
                                                                 color=BASELINE_COLOUR),
                 hovertemplate=_("majority tag") + "<br>" + _("distance %{x}: %{y:.1f}%")
                 + "<extra></extra>")]
    for k, (name, acc) in enumerate(curves.items()):  # a tagger: colour, dash and marker
        data.append(dict(
            type="scatter", x=dist, y=[100 * float(acc[d]) for d in dist],
            mode="lines+markers", name=escape(name),
            line=dict(width=3, color=category_colour(k), dash=category_dash(k)),
            marker=dict(size=9, symbol=category_marker(k)),
            hovertemplate=escape(name) + "<br>" + _("distance %{x}: %{y:.1f}%")
            + "<extra></extra>"))
    return projector(go.Figure(data=data, layout=dict(
        font=_font(big), height=360 if big else 420, margin=dict(l=10, r=10, t=10, b=10),
        xaxis=dict(title=dict(text=_("words back to the deciding word (held-out words)")),
                   tickvals=dist, ticktext=ticks),
        yaxis=dict(title=dict(text=_("held-out accuracy (%)")), range=[0, 104]),
        legend=dict(orientation="h", y=1.02, x=0, yanchor="bottom"))), big)


def accuracy_grid(scores: Mapping[str, object], baseline: Mapping[str, float] | None = None,
                  big: bool = False) -> go.Figure:
    """Held-out accuracy of each tagger (rows) on three groups of ambiguous words (columns:
    deciding word next to them, 2+ words away, double-role words), as a table of coloured
    cells with the percentage written in each.

    `scores` maps a tagger's name to an object with .near, .far, .double_role. `baseline`
    (the same groups for always giving each word its majority tag) is the last row.
    """
    names = list(scores) + ([_("majority tag per word")] if baseline is not None else [])
    z = [[100 * float(getattr(scores[n], a)) for a, _m in METRICS] for n in scores]
    if baseline is not None:
        z.append([100 * float(baseline[a]) for a, _m in METRICS])
    return projector(go.Figure(data=[dict(
        type="heatmap", z=z, x=[_(label) for _m, label in METRICS],
        y=[escape(n) for n in names], zmin=40, zmax=100, xgap=3, ygap=3,
        colorscale=ACCURACY_SCALE, showscale=False,
        texttemplate="%{z:.1f}%", textfont=dict(size=_size(big)),
        hovertemplate="%{y}<br>%{x}: %{z:.2f}%<extra></extra>")],
        layout=dict(font=_font(big), height=(46 if big else 38) * len(names) + 110,
                    xaxis=dict(side="top", type="category", tickangle=0,
                               tickfont=dict(size=_size(big) - 2)),
                    yaxis=dict(autorange="reversed", type="category", automargin=True),
                    margin=dict(l=10, r=10, t=10, b=10))), big)


COST_GAP = 0.4  # of a row of the cost figure: the room over a group of bars for its name


def cost_figure(parameters: Mapping[str, int], sizes: Sequence[int],
                gaps: Mapping[str, Sequence], big: bool = False) -> go.Figure:
    """One row per tagger (the keys of `gaps`, labelled with its number of parameters): its
    training minus held-out accuracy on ambiguous words (points) when trained on each number
    of sentences in `sizes`, one bar per size: how much it overfits. A tagger's gaps are
    [sizes] (one run: the bar is labelled with its value) or [seeds, sizes]: the bar is then
    the mean over the seeds and its whisker runs from the smallest to the largest seed's gap
    (no label, which the whisker would cross: the hover and the table beside it give them)."""
    names = list(gaps)
    runs = {n: np.atleast_2d(np.asarray(gaps[n], dtype=np.float64)) * 100 for n in names}
    n_seeds = runs[names[0]].shape[0]
    rows = [escape(n) + "<br>" + _("{count} parameters").format(count=f"{parameters[n]:,}")
            for n in names]
    shades = ORDERED_SHADES
    data = []
    for k, n in enumerate(sizes):
        mean = [float(runs[name][:, k].mean()) for name in names]
        low = [m - float(runs[name][:, k].min()) for m, name in zip(mean, names, strict=True)]
        high = [float(runs[name][:, k].max()) - m for m, name in zip(mean, names, strict=True)]
        spread = ("<br>" + _("seeds: %{customdata}")) if n_seeds > 1 else ""
        data.append(dict(
            type="bar", orientation="h", y=rows, x=mean, name=_("{n} sentences").format(n=n),
            marker=dict(color=shades[k % len(shades)]),
            text=[f"{v:.1f}" for v in mean] if n_seeds == 1 else None,
            textposition="outside", textfont=dict(size=_size(big) - 2), cliponaxis=False,
            constraintext="none",
            error_x=dict(type="data", array=high, arrayminus=low, visible=n_seeds > 1,
                         color=GREY, thickness=1.5, width=4),
            customdata=[", ".join(f"{g:.1f}" for g in runs[name][:, k]) for name in names],
            hovertemplate="%{y}<br>" + _("{n} training sentences: %{{x:.1f}} points").format(n=n)
                          + spread + "<extra></extra>"))
    values = [float(v) for r in runs.values() for v in r.ravel()]
    # Each tagger's name over its bars, from the plot's left edge (in the gap between two
    # groups, GAP of a row), not as tick labels beside them: the bars keep the plot's width
    # on a phone as on a projector.
    labels = [dict(text=escape(n) + " · " + _("{count} parameters").format(
                       count=f"{parameters[n]:,}"),
                   x=0, xref="paper", xanchor="left", y=k - (1 - COST_GAP) / 2, yref="y",
                   yanchor="bottom", yshift=1, showarrow=False,
                   font=dict(size=_size(big) - (2 if big else 0)))
              for k, n in enumerate(names)]
    return projector(go.Figure(data=data, layout=dict(
        barmode="group", bargap=COST_GAP, font=_font(big), annotations=labels,
        height=(96 if big else 110) * len(names) + 140,
        xaxis=dict(title=dict(text=_("training minus held-out (points),<br>mean of {n} seeds")
                              .format(n=n_seeds) if n_seeds > 1
                              else _("training minus held-out (points)")),
                   range=[min(0.0, min(values) - 0.15 * max(values)) - 1,
                          1.2 * max(values) + 3]),
        yaxis=dict(autorange="reversed", showticklabels=False, ticks=""),
        legend=dict(orientation="h", y=1.03, x=0, yanchor="bottom", traceorder="normal",
                    title=dict(text=_("trained on"))),
        margin=dict(l=10, r=10, t=10, b=10))), big)


def length_figure(values: Mapping[str, Mapping[str, np.ndarray]], big: bool = False) -> go.Figure:
    """The length test: for each kind of position (the outer keys) and each group of
    ambiguous words (the inner keys, e.g. held out, long inputs' early places, late places),
    the accuracy over the seeds ([seeds], shares in 0..1): a bar at the mean, a whisker from
    the smallest to the largest seed's, the mean written above it."""
    kinds = list(values)
    groups = list(values[kinds[0]])
    data = []
    for k, g in enumerate(groups):
        runs = [100 * np.asarray(values[kind][g], dtype=np.float64) for kind in kinds]
        mean = [float(r.mean()) for r in runs]
        data.append(dict(
            type="bar", x=[escape(kind) for kind in kinds], y=mean, name=escape(g),
            marker=dict(color=ORDERED_SHADES[(k + 1) % len(ORDERED_SHADES)],
                        pattern=dict(shape=("", "/", ".")[k % 3])),
            text=[f"{m:.1f}" for m in mean], textposition="outside", cliponaxis=False,
            textfont=dict(size=_size(big) - 2),
            error_y=dict(type="data", array=[float(r.max()) - m for r, m in zip(runs, mean,
                                                                               strict=True)],
                         arrayminus=[m - float(r.min()) for r, m in zip(runs, mean,
                                                                        strict=True)],
                         visible=len(runs[0]) > 1, color=GREY, thickness=1.5, width=4),
            customdata=[", ".join(f"{x:.1f}" for x in r) for r in runs],
            hovertemplate="%{x}<br>" + escape(g) + ": %{y:.1f}%<br>"
            + _("seeds: %{customdata}") + "<extra></extra>"))
    return projector(go.Figure(data=data, layout=dict(
        barmode="group", font=_font(big), height=440 if big else 420,
        margin=dict(l=10, r=10, t=10, b=10),
        xaxis=dict(title=dict(text=_("positions"))),
        yaxis=dict(title=dict(text=_("accuracy on ambiguous words (%)")), range=[0, 110]),
        legend=dict(orientation="h", y=1.02, x=0, yanchor="bottom"))), big)


def cosine_by_layer(curves: Mapping[str, np.ndarray], word: str, big: bool = False,
                    pair: tuple[int, int] | None = None) -> go.Figure:
    """cos(first copy, second copy) of `word` after each layer, one line per condition.

    `pair` (token positions of the two copies) is named in the title when given.
    """
    data = []
    for k, (name, cos) in enumerate(curves.items()):
        cos = np.asarray(cos, dtype=np.float64)
        data.append(dict(
            type="scatter", x=list(range(len(cos))), y=cos, mode="lines+markers+text",
            line=dict(color=category_colour(k), dash=category_dash(k)),
            marker=dict(symbol=category_marker(k)),
            name=escape(name), text=[""] * (len(cos) - 1) + [f"{cos[-1]:.3f}"],
            textposition="middle right", cliponaxis=False,
            hovertemplate=_("after layer %{x}<br>cosine %{y:.6f}") + "<extra>" + escape(name)
            + "</extra>",
        ))
    n = max(len(c) for c in curves.values())
    low = min(float(np.min(c)) for c in curves.values())
    low = min(0.9, low - 0.1 * (1.0 - low) - 0.02)
    # The legend under the x axis's title, placed in px: a fraction of the plot's height put
    # it on the title wherever the plot was short (a phone) or the type large (a projector).
    size = _size(big)
    height, under = (500 if big else 420), 8 + size + 24 + int(size * 1.4) + 10
    bottom = under + 2 * (size + 12)  # the legend: room for two rows on a narrow screen
    plot = height - 50 - bottom
    return projector(go.Figure(data=data, layout=dict(
        font=_font(big), height=height, margin=dict(l=10, r=70, t=50, b=bottom),
        title=(_("cosine of {word} #{a} and {word} #{b}, layer by layer").format(
            word=escape(word), a=pair[0], b=pair[1]) if pair else
            _("cosine of the two '{word}' vectors, layer by layer").format(word=escape(word))),
        xaxis=dict(title=dict(text=_("layer (0 = embeddings)")), tickmode="array",
                   tickvals=list(range(n)), range=[-0.3, n - 0.2]),
        yaxis=dict(title=dict(text=_("cosine") if big
                              else _("cosine similarity (1 = same direction)")),
                   range=[low, 1.02]),
        legend=dict(orientation="h", x=0, xanchor="left", y=-under / plot, yanchor="top"),
    )), big)


def loss_curves(losses: Mapping[str, Sequence[float]], big: bool = False,
                height: int | None = None) -> go.Figure:
    """Mean training loss (cross-entropy) per epoch for each tagger. `height`: px, for the
    projector's figure column: the legend two taggers a row, placed in px under the epoch
    axis's title (a fraction of the plot put it on the title or past the figure's bottom)."""
    fig = projector(go.Figure(
        data=[dict(type="scatter", x=list(range(1, len(ls) + 1)), y=list(ls),
                   mode="lines+markers", name=escape(name),
                   line=dict(color=category_colour(k), dash=category_dash(k)),
                   marker=dict(symbol=category_marker(k)))
              for k, (name, ls) in enumerate(losses.items())],
        layout=dict(font=_font(big), height=380, margin=dict(l=10, r=10, t=40, b=10),
                    title=_("training loss per epoch"), xaxis=dict(title=dict(text=_("epoch"))),
                    yaxis=dict(title=dict(text=_("cross-entropy"))),
                    legend=dict(orientation="h", y=-0.25))), big)
    if height:
        size = _size(big)
        under = 8 + size + 8 + int(size * 1.4) + 10  # the tick labels, the axis title
        bottom = under + -(-len(losses) // 2) * int(size * 1.5) + 10
        plot = height - 40 - bottom
        fig.layout.height, fig.layout.margin.b = height, bottom
        fig.layout.legend = dict(orientation="h", x=0, xanchor="left", y=-under / plot,
                                 yanchor="top", entrywidth=0.5, entrywidthmode="fraction",
                                 font=fig.layout.legend.font)
    return fig
