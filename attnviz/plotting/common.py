"""Helpers every figure uses: safe token labels and the shared colour scales.

Two traps handled here once for the whole project:
- Plotly merges repeated categories ("I saw a saw" would show 3 columns, not 4), so axes
  use one unique label per position ('saw #2', 'saw #4'); as tick text a repeated token
  keeps that label, a token seen once shows bare.
- Plotly renders <b>, <br>, <a> in labels, so every token is HTML-escaped and shows as typed.

Figures are plotly's own `go.Figure`, validated by plotly as it builds them; `Grid` lays out
subplots as plain dicts first (one make_subplots layout per grid shape).
"""

from __future__ import annotations

import copy
import functools
import html
import json

from attnviz.engine.trace import token_labels

# Colour scales are perceptually uniform (equal steps in value look like equal steps in
# lightness), so a pattern in a heatmap is in the numbers, not in the scale.
SCORES_SCALE = "Balance"  # diverging (cmocean): q.k negative blue, positive red, 0 near white
VALUES_SCALE = "PuOr"  # diverging (ColorBrewer, colour-blind safe), distinct from the scores
WEIGHTS_SCALE = "Viridis"  # sequential: softmax weights lie in [0, 1]
FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13)
SLANT_PX = 20  # px a tick label slanted at -45 degrees takes across a panel (FONT's size)

# The one categorical palette (token lines, heads, taggers, modes, behaviours): Okabe & Ito's
# colour-blind safe set (Okabe and Ito 2008, "Color Universal Design"), its black left out so
# every colour reads on a light and on a dark background. Anything that tells categories
# apart by colour also tells them apart by a line dash, a marker or a label (DASHES, MARKERS).
OKABE_ITO: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#CC79A7",  # reddish purple
    "#F0E442",  # yellow
)
NEUTRAL = "#999999"  # grey: "other", "mixed", a baseline; readable on white and on dark grey
DASHES: tuple[str, ...] = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
PATTERNS: tuple[str, ...] = ("", "/", ".", "x", "-", "+")  # bar fills, a cue besides colour
MARKERS: tuple[str, ...] = ("circle", "square", "diamond", "triangle-up", "x", "cross",
                            "star")


# The other fixed colours of the figures, here so that no plotting module invents its own.
ON_IMAGE = "#FFFFFF"  # outlines drawn over a picture or a dark heatmap
IMAGE_BACKGROUND = "#D9D9D9"  # behind pictures and masked cells, in both themes
CELL_TEXT = "#1A1A1A"  # text on the pale table fills below, whatever the theme's text colour
TABLE_FILLS = {  # pale tints: right = the palette's blue, wrong = its orange (plus bold text)
    "right": "#CDE4F4", "wrong": "#F9D9B0", "neutral": "#EEF1F6", "header": "#DDE3EE"}
MASK_SCALE = [[0.0, "#EEF1F6"], [0.5, "#EEF1F6"], [0.5, OKABE_ITO[0]], [1.0, OKABE_ITO[0]]]
# A mask's "off" cells in either theme: a translucent grey over the plot's own background (light
# grey on white, dark grey on the dark theme's near-black), "on" the palette's blue.
MASK_OFF = "rgba(128, 128, 128, 0.22)"
MASK_SCALE_THEMED = [[0.0, MASK_OFF], [0.5, MASK_OFF], [0.5, OKABE_ITO[0]],
                     [1.0, OKABE_ITO[0]]]
ACCURACY_SCALE = "Blues"  # sequential (ColorBrewer) for shares in percent
ORDERED_SHADES = ("#FDD0A2", "#FD8D3C", "#D94801", "#7F2704")  # an ordered series (Oranges)
INFLUENCE_SCALE = "Magma"  # sequential, perceptually uniform (log influence)
DISTANCE_SCALE = "Magma_r"  # sequential: 0 (no change) light, large distances dark
DIFFERENCE_SCALE = "Greys"  # sequential: |difference| 0 white, the largest black
STAT_SCALE = "Cividis"  # sequential, perceptually uniform and colour-blind safe
# VALUES_SCALE for a dark background: the same ColorBrewer PuOr colours (orange below 0, purple
# above), each half in the reverse order of lightness, so the largest |values| are the
# brightest cells and 0 is the background's own near-black, as 0 is white on a white page.
VALUES_SCALE_DARK = [[0.0, "#FEE0B6"], [0.1, "#FDB863"], [0.2, "#E08214"], [0.3, "#B35806"],
                     [0.4, "#7F3B08"], [0.5, "#16181F"], [0.6, "#2D004B"], [0.7, "#542788"],
                     [0.8, "#8073AC"], [0.9, "#B2ABD2"], [1.0, "#D8DAEB"]]


# SCORES_SCALE (cmocean's Balance) for a dark background, made the same way: its blues below 0
# and its reds above, each half in the reverse order of lightness, 0 the background's near-black.
SCORES_SCALE_DARK = [[0.0, "rgb(142, 181, 194)"], [0.12, "rgb(69, 144, 185)"],
                     [0.26, "rgb(11, 102, 189)"], [0.4, "rgb(41, 58, 143)"], [0.5, "#16181F"],
                     [0.6, "rgb(120, 14, 40)"], [0.74, "rgb(172, 43, 36)"],
                     [0.88, "rgb(196, 101, 72)"], [1.0, "rgb(213, 157, 137)"]]
# DISTANCE_SCALE and DIFFERENCE_SCALE for a dark background: the same colours in the reverse
# order, so 0 (no change, no difference) is near-black and the largest values the brightest.
DISTANCE_SCALE_DARK = "Magma"
DIFFERENCE_SCALE_DARK = "Greys_r"
DARK_SCALES = ((VALUES_SCALE, VALUES_SCALE_DARK), (SCORES_SCALE, SCORES_SCALE_DARK),
               (DISTANCE_SCALE, DISTANCE_SCALE_DARK), (DIFFERENCE_SCALE, DIFFERENCE_SCALE_DARK))


def for_dark_background(fig):
    """The Plotly figure `fig` with each scale of DARK_SCALES that is white or light at 0
    (diverging with a white middle: VALUES_SCALE, SCORES_SCALE; sequential with a light low
    end: DISTANCE_SCALE, DIFFERENCE_SCALE; on a dark page 0 draws bright slabs and the darkest
    cells vanish into the background) replaced by its dark version, in its traces and its
    colour axes: a copy, or `fig` itself when it has no such scale (`fig` is never changed)."""
    import plotly.graph_objects as go

    swaps = [(go.Heatmap(colorscale=light).colorscale, dark) for light, dark in DARK_SCALES]

    def dark_of(scale):
        return next((dark for light, dark in swaps if scale == light), None)

    if not any(dark_of(getattr(t, "colorscale", None)) for t in fig.data) and not any(
            dark_of(axis.colorscale) for axis in fig.select_coloraxes()):
        return fig
    out = go.Figure(fig)
    for trace in out.data:
        if (dark := dark_of(getattr(trace, "colorscale", None))) is not None:
            trace.colorscale = dark
    for axis in out.select_coloraxes():
        if (dark := dark_of(axis.colorscale)) is not None:
            axis.colorscale = dark
    return out


def category_colour(i: int) -> str:
    """The i-th categorical colour (cycling through OKABE_ITO)."""
    return OKABE_ITO[int(i) % len(OKABE_ITO)]


def category_dash(i: int) -> str:
    """The i-th line dash: with category_colour(i), a second cue besides colour."""
    return DASHES[int(i) % len(DASHES)]


def category_marker(i: int) -> str:
    """The i-th marker symbol: with category_colour(i), a second cue besides colour."""
    return MARKERS[int(i) % len(MARKERS)]


def escape(text: str) -> str:
    """Token text as Plotly must receive it to show it literally."""
    return html.escape(str(text), quote=False).replace("\n", "\\n")


def axis_labels(tokens: list[str], indices=None) -> list[str]:
    """One unique, escaped category per token: '<token> #<number>' (engine.token_labels:
    words counted from 1, a start token such as [CLS] is #0).

    `indices`: each token's place in the sentence when only some tokens are shown."""
    return [escape(label) for label in token_labels(list(tokens), indices)]


CONTINUES = "…"  # before a word piece that continues a word: '#96 …uation', '…uation'


def continues(pieces: list[str]) -> list[bool]:
    """Whether each piece continues the word before it ('##uation' after 'eval'; a BPE or
    SentencePiece piece without its word-start marker): analysis.words.word_groups."""
    from ..analysis.words import word_groups

    out = [False] * len(pieces)
    for group in word_groups(pieces):
        for i in group[1:]:
            out[i] = True
    return out


def tick_labels(tokens: list[str], max_ticks: int = 60, indices=None,
                labels: list[str] | None = None, sentence: list[str] | None = None,
                pieces: list[str] | None = None) -> tuple[list[str], list[str]]:
    """(tickvals, ticktext) for a category axis of unique labels, thinned for long inputs.

    A token that occurs more than once in the sentence shows its unique label ('saw #2',
    'saw #4'), so the two 'saw' rows of "I saw a saw" read apart, also on an axis that shows
    only one of them; a token that occurs once shows bare. Thinned ticks name their index too
    ('#27 the'), so they are not read as the next row. With `pieces` (the tokenizer's own
    strings of the same tokens, Trace.word_pieces), a piece that continues a word starts with
    CONTINUES ('#96 …uation': not a word of its own).
    `labels`: axis_labels(tokens, indices) when the caller has them already. `sentence`: all
    the sentence's tokens when the axis shows only some (default: `tokens`).
    """
    labels = axis_labels(tokens, indices) if labels is None else labels
    indices = list(range(len(tokens))) if indices is None else list(indices)
    step = max(1, -(-len(tokens) // max_ticks))
    idx = range(0, len(tokens), step)
    seen: dict[str, int] = {}
    for t in (tokens if sentence is None else sentence):
        seen[t] = seen.get(t, 0) + 1
    more = continues(list(pieces)) if pieces is not None and len(pieces) == len(tokens) \
        else [False] * len(tokens)
    mark = [CONTINUES if m else "" for m in more]
    if step == 1:
        text = [mark[i] + (labels[i] if seen.get(tokens[i], 0) > 1 else escape(tokens[i]))
                for i in idx]
    else:
        text = [f"#{labels[i].rsplit(' #', 1)[-1]} {mark[i]}{escape(tokens[i])}" for i in idx]
    return [labels[i] for i in idx], text


def block_reduce(matrix, max_size: int):
    """Max-pool a 2-D array into at most max_size x max_size blocks (for overviews only)."""
    import numpy as np

    n_r, n_c = matrix.shape
    f_r, f_c = -(-n_r // max_size), -(-n_c // max_size)
    if f_r == 1 and f_c == 1:
        return matrix, 1
    pad_r, pad_c = (-n_r) % f_r, (-n_c) % f_c
    m = np.pad(matrix, ((0, pad_r), (0, pad_c)), constant_values=np.nan)
    m = m.reshape(m.shape[0] // f_r, f_r, m.shape[1] // f_c, f_c)
    return np.nanmax(m, axis=(1, 3)), max(f_r, f_c)


class Grid:
    """Subplots built as plain dicts and made a figure once (go.Figure).

    plotly's make_subplots plus add_trace(row=, col=) and update_xaxes(row=, col=) search the
    whole grid and re-dispatch the layout on every call; building the figure from one dict
    does that work once. Usage:

        g = Grid(rows=1, cols=2, subplot_titles=["a", "b"])
        g.add(dict(type="heatmap", z=m), row=1, col=2)  # a dict (or a trace object)
        g.xaxis(1, 2).update(type="category")      # the axis' layout dict, edited in place
        fig = g.figure(title="...")                 # layout keywords merged at the top level
    """

    def __init__(self, rows: int = 1, cols: int = 1, **subplot_args) -> None:
        self.rows, self.cols = rows, cols
        self.layout = copy.deepcopy(_grid_layout(rows, cols, subplot_args))
        self.traces: list = []

    def ref(self, row: int = 1, col: int = 1) -> str:
        """The axis suffix of a subplot ('' for the first, then '2', '3'...): its traces use
        x{ref}/y{ref}, its layout xaxis{ref}/yaxis{ref}, shapes xref=f"x{ref}"."""
        if not (1 <= row <= self.rows and 1 <= col <= self.cols):
            raise ValueError(f"no subplot at row {row}, col {col}")
        i = (row - 1) * self.cols + col  # make_subplots numbers axes row by row
        return "" if i == 1 else str(i)

    def add(self, trace, row: int = 1, col: int = 1):
        sub = self.ref(row, col)
        spec = trace if isinstance(trace, dict) else trace.to_plotly_json()
        self.traces.append({**spec, "xaxis": f"x{sub}", "yaxis": f"y{sub}"})
        return self

    def xaxis(self, row: int = 1, col: int = 1) -> dict:
        return self.layout.setdefault(f"xaxis{self.ref(row, col)}", {})

    def yaxis(self, row: int = 1, col: int = 1) -> dict:
        return self.layout.setdefault(f"yaxis{self.ref(row, col)}", {})

    def figure(self, **layout):
        import plotly.graph_objects as go

        return go.Figure(data=self.traces, layout={**self.layout, **layout})


def _grid_layout(rows: int, cols: int, args: dict) -> dict:
    """make_subplots' layout as a dict, computed once per grid shape (read-only: copy it).

    Subplot titles often name the sentence or a number, so a layout cached with them would
    miss for nearly every figure. It is cached
    with stand-in titles (the same ones empty: those get no annotation) and the real titles
    are put into the copy's annotations."""
    titles = args.get("subplot_titles")
    if not titles:
        return _grid_layout_of(rows, cols, json.dumps(args, sort_keys=True, default=_plain))
    marks = [f"\x00{i}" if t else "" for i, t in enumerate(titles)]
    base = _grid_layout_of(rows, cols, json.dumps({**args, "subplot_titles": marks},
                                                  sort_keys=True, default=_plain))
    real = {m: t for m, t in zip(marks, titles, strict=True) if m}
    notes = [{**a, "text": real[a["text"]]} if a.get("text") in real else a
             for a in base.get("annotations", ())]
    return {**base, "annotations": notes}


def _plain(value):
    """NumPy scalars as Python numbers (for the JSON key)."""
    return value.item()


@functools.lru_cache(maxsize=256)  # thread-safe; keyed on the grid's shape and arguments
def _grid_layout_of(rows: int, cols: int, args_json: str) -> dict:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    layout = make_subplots(rows=rows, cols=cols, figure=go.Figure(),
                           **json.loads(args_json)).layout.to_plotly_json()
    # The default template rides along as a big dict: every figure gets the default when it
    # is built, not copied from here.
    layout.pop("template", None)
    return layout


# Room for labels, reserved up front. Plotly's automargin draws a figure, measures its labels,
# and when they need more margin than the layout gives, draws the whole figure a second time
# (for a 512 x 512 heatmap that second pass is as long as the first). A margin that already
# holds the labels is drawn once; automargin stays on, so a label longer than estimated still
# gets its room (one more pass), never clipped.
_EM_NARROW = 0.66  # an upper estimate of a Latin character's width, in em (digits ~0.56)
_EM_WIDE = 1.05  # a CJK (East Asian wide or full-width) character
TICK_PAD = 8  # px between an axis and its tick labels, tick length included
TITLE_ROOM = 24  # px of an axis title beside its tick labels (one line of FONT)
LEGEND_ROW = 32  # px of one row of a horizontal legend below a figure


def text_width(text: str, size: float = FONT["size"], narrow: float = _EM_NARROW) -> float:
    """An upper estimate of `text`'s width in px at font size `size` (px): the sum over its
    characters of `narrow` em (0.66; 1.05 em for a wide CJK character). HTML entities of
    escaped labels count as their source characters (an over-estimate)."""
    import unicodedata

    return size * sum(_EM_WIDE if unicodedata.east_asian_width(c) in "WF" else narrow
                      for c in text)


def label_room(labels, angle: float = 0.0, size: float = FONT["size"], titled: bool = True,
               across: bool = True) -> int:
    """px a category axis's tick labels (and its title when `titled`) take from the figure's
    edge: for labels beside the axis (`across`: a y axis's, or an x axis's rotated by
    `angle` degrees) the longest label's extent w|cos a| + h|sin a| (h = one line), for
    unrotated x labels one line; plus TICK_PAD and TITLE_ROOM."""
    import math

    longest = max((text_width(str(t), size) for t in labels), default=0.0)
    a = math.radians(angle)
    if across:  # y axis: the label's run is horizontal (angle 0)
        extent = longest * abs(math.cos(a)) + size * abs(math.sin(a))
    else:  # x axis: the run is vertical only as far as the label is rotated
        extent = longest * abs(math.sin(a)) + size * abs(math.cos(a))
    return int(math.ceil(extent + TICK_PAD + (TITLE_ROOM if titled else 0)))


def colorbar_room(title: str, ticks: str = "0.00", size: float = FONT["size"],
                  thickness: int = 12) -> int:
    """px a vertical colour bar on the right takes: its offset and pads (60 px), then the
    wider of its title (Plotly writes it above the bar) and the bar with tick labels like
    `ticks`."""
    return int(60 + max(text_width(title, size), thickness + TICK_PAD + text_width(ticks, size)))


COLORBAR_BELOW = 70  # px under the x labels: a horizontal colour bar, its title and its ticks


def colorbar_below(title: str, drop: float, plot: float, thickness: int = 12,
                   length: float = 0.6, x: float = 0.0, **extra) -> dict:
    """A horizontal colour bar `drop` px below the plot area (under its x labels: keep
    COLORBAR_BELOW px more in the bottom margin), `plot` px being the plot area's height;
    its title above it; starting at `x` (paper: the plot area's left edge by default),
    `length` of the plot area long. Below the plot, from its left edge, it stays on screen
    where a phone shows a wide chart's left part only, and a bar on the right is the first
    thing cut off."""
    return dict(title=dict(text=title, side="top"), orientation="h", thickness=thickness,
                len=length, lenmode="fraction", x=x, xanchor="left", xref="paper",
                y=-drop / max(plot, 1.0), yanchor="top", yref="paper", ypad=0, **extra)
