"""Figures for "what positional encoding does" (the lecture notes: no position information in
self-attention; e^i + a^i -> q^i, k^i, v^i; Vaswani et al. 2017 sinusoids; BERT's learned table;
rotary positions, Su et al. 2021: q and k turned by their place).

Every function takes arrays from `attnviz.analysis.positions` or the engine's Trace and returns
a Plotly Figure; nothing here computes a number the page shows. Token axes use one unique
label per position ('saw #2', 'saw #4') so repeated words never merge (FIELD_NOTES).
"""

from __future__ import annotations

import html
import re

import numpy as np
import plotly.graph_objects as go

from attnviz.i18n import N_, _

from .common import (
    COLORBAR_BELOW,
    DISTANCE_SCALE,
    FONT,
    LEGEND_ROW,
    NEUTRAL,
    OKABE_ITO,
    SCORES_SCALE,
    WEIGHTS_SCALE,
    Grid,
    axis_labels,
    colorbar_below,
    colorbar_room,
    escape,
    label_room,
    text_width,
    tick_labels,
)
from .stats import PAGE_WIDTH

MODE_NAMES = {  # marked for the catalogue; looked up with _() where shown
    "learned": N_("learned positions (BERT)"),
    "none": N_("no positions"),
    "sinusoidal": N_("sinusoids (scaled)"),
    "shuffled": N_("learned, shuffled"),
    "rotary": N_("rotary positions (RoPE)"),
}
# untrained; a superscript as Plotly draws one (a caret would show as typed: 'b^i')
TOY_NAMES = {"none": N_("no positions"), "sinusoidal": N_("a<sup>i</sup> + sinusoid e<sup>i</sup>")}
MODE_COLORS = {"learned": OKABE_ITO[0], "none": OKABE_ITO[3], "sinusoidal": OKABE_ITO[2],
               "shuffled": OKABE_ITO[5], "rotary": OKABE_ITO[4]}
MODE_PATTERNS = {"learned": "", "none": "/", "sinusoidal": ".", "shuffled": "x",
                 "rotary": "-"}  # not colour alone


# Text that Plotly does not wrap, broken into lines here: a figure's title (bold, TITLE_SIZE px
# where the page does not set its own smaller one) and the subplot titles (SUBTITLE_SIZE px,
# centred over their panels), each line measured by common.text_width as token_lines measures
# its labels: an upper estimate of LATIN_EM em a Latin character, 1.05 em a CJK or full-width
# one (BOLD times that in bold). The page shows a figure PAGE_WIDTH px wide at 1280 px; a
# phone's frame breaks a title further (ui/components/live_chart/phone_layout.js), never
# joins these lines.
TITLE_SIZE = round(FONT["size"] * 1.4)  # px: Plotly's title font (1.4 x the layout's font)
SUBTITLE_SIZE = 16  # px: Plotly's subplot titles
LATIN_EM, BOLD = 0.56, 1.08
TITLE_LINE, SUBTITLE_LINE = 24, 21  # px a further line of the title, of a subplot title, takes
TOP = 60  # px over the plot: a one-line title and a one-line row of subplot titles
# A title of more lines hangs from the figure's top edge: Plotly places its first line's
# baseline TITLE_PAD px down (so the first line's height is in the pad), the others below it;
# TITLE_GAP px under its last line, then the subplot titles' lines (as phone_layout.js does).
TITLE_PAD, TITLE_GAP = 8 + round(1.6 * TITLE_SIZE), 10
SIDES = 10  # px: the figures' left and right margins
CJK = "\u2e80-\u9fff\uac00-\ud7af\uff00-\uffef"
OPENING = "(（《“「"  # never last on a line
CLOSING = ")）》”」，。、：；！？"  # never first on a line
_PIECE = re.compile(rf"<br\s*/?>|<[^>]*>|[{CJK}]|\s+|(?:[^\s<{CJK}])+|<")
_TAG = re.compile(r"<[^>]*>")


def text_px(text: str, size: float = SUBTITLE_SIZE, bold: bool = False) -> float:
    """An upper estimate of `text`'s width in px at `size` px: tags take none, entities count
    as the character they stand for."""
    shown = html.unescape(_TAG.sub("", text))
    return text_width(shown, size, narrow=LATIN_EM) * (BOLD if bold else 1.0)


def _pieces(text: str) -> list[str]:
    """`text` cut where a line may break: at spaces (kept as pieces of their own), between
    CJK characters, never inside a tag or an entity, never after an opening bracket or before
    a closing one or a CJK comma."""
    out: list[str] = []
    for p in _PIECE.findall(text):
        glue = (out and not p.isspace() and not out[-1].isspace()
                and not re.match(r"<br", p) and not re.match(r"<br", out[-1])
                and (p[0] in CLOSING or out[-1][-1] in OPENING or p.startswith("<")
                     or out[-1].endswith(">") or not (re.match(f"[{CJK}]", p[0])
                                                       or re.match(f"[{CJK}]", out[-1][-1]))))
        if glue:
            out[-1] += p
        else:
            out.append(p)
    return out


def fit_lines(text: str, room: float, size: float = SUBTITLE_SIZE,
              bold: bool = False) -> list[str]:
    """`text` as the fewest lines that each fit `room` px (text_px), broken where _pieces may
    break (a <br> in it always breaks); two lines broken before a bracket where both fit
    ('sinusoids' / '(scaled)', '正弦位置编码' / '（已缩放）': the closing bracketed group on a
    line of its own), else as evenly as they can be.
    A piece wider than `room` keeps a line of its own."""
    lines, line = [], ""
    for p in _pieces(text):
        if re.match(r"<br", p):
            lines.append(line.rstrip())
            line = ""
        elif p.isspace():
            line += " " if line else ""
        elif line.strip() and text_px(line + p, size, bold) > room:
            lines.append(line.rstrip())
            line = p
        else:
            line += p
    lines.append(line.rstrip())
    if len(lines) != 2 or "<br" in text:
        return lines
    pieces = _pieces(text)
    cuts = []  # (not before a bracket, the wider line's px, first, second)
    for i in range(1, len(pieces)):
        first, second = "".join(pieces[:i]).strip(), "".join(pieces[i:]).strip()
        wide = max(text_px(first, size, bold), text_px(second, size, bold))
        if first and second and not pieces[i].isspace() and wide <= room:
            cuts.append((not _one_group(_TAG.sub("", second)), wide, first, second))
    return list(min(cuts)[2:]) if cuts else lines


def _one_group(text: str) -> bool:
    """Whether `text` is one bracketed group: '(scaled)', '（各行 ... 的平均）'."""
    depth = 0
    for k, c in enumerate(text):
        depth += (c in "(（") - (c in ")）")
        if depth <= 0 and k < len(text) - 1:
            return False
    return depth == 0 and len(text) > 1 and text[0] in "(（"


def _title(title: str, width: float = PAGE_WIDTH) -> tuple[str, int]:
    """The figure's title broken into lines that fit a figure `width` px wide, and how many."""
    lines = fit_lines(title, width - 2 * SIDES, TITLE_SIZE, bold=True)
    return "<br>".join(lines), len(lines)


def subplot_titles(titles: list[str], room: float) -> tuple[list[str], int]:
    """Subplot titles, each broken into lines that fit `room` px (its panel and one gap, so
    neighbours never meet), and the most lines any has."""
    fitted = [fit_lines(t, room) for t in titles]
    return ["<br>".join(f) for f in fitted], max((len(f) for f in fitted), default=1)


def panel_room(cols: int, gap: float, width: float) -> float:
    """px over one of `cols` panels `gap` (paper) apart in a plot area `width` px wide: the
    panel and one gap."""
    return ((1 - (cols - 1) * gap) / cols + gap) * width


def _layout(title: str, height: int, subtitle_lines: int = 0, **more) -> dict:
    """The layout every figure here shares, as a dict for one go.Figure(data, layout) call:
    the title broken into lines that fit the page (_title); where it takes more than one line,
    or the subplot titles do (`subtitle_lines`: the most any has), the title hangs from the
    top edge and the top margin holds all their lines, the height grown by as much, so the
    plot area keeps its height.

    Figures are built from dicts and validated once: add_trace / update_* on a built figure
    re-validate each time and cost several ms per call on the class server.
    """
    text, lines = _title(title)
    if lines == 1 and subtitle_lines <= 1:  # Plotly's own place for it, in TOP px
        head, top = dict(text=text), TOP
    else:
        head = dict(text=text, yref="container", y=1, yanchor="top", pad=dict(t=TITLE_PAD))
        top = TITLE_PAD + TITLE_LINE * (lines - 1) + TITLE_GAP + SUBTITLE_LINE * subtitle_lines
    return dict(title=head, height=height + top - TOP, font=FONT,
                margin=dict(l=SIDES, r=SIDES, t=top, b=10), **more)


def mode_name(mode: str) -> str:
    """A position mode's name in the session's language (the mode itself if unknown)."""
    return _(MODE_NAMES[mode]) if mode in MODE_NAMES else escape(mode)


def _sym(m: np.ndarray) -> float:
    return float(np.nanmax(np.abs(m))) or 1.0


# ------------------------------------------------------------------ 1. shuffled words
def permutation_figure(tokens: list[str], perm: np.ndarray, title: str | None = None) -> go.Figure:
    """Original order on top, shuffled order below; a line joins each token's two places."""
    perm = np.asarray(perm)
    n = len(tokens)
    data = []
    for moved, color in ((False, NEUTRAL), (True, OKABE_ITO[0])):  # one trace each, None-separated
        xs: list = []
        ys: list = []
        for new, old in enumerate(perm):
            if (old != new) == moved:
                xs += [int(old), new, None]
                ys += [1, 0, None]
        data.append(dict(type="scatter", x=xs, y=ys, mode="lines", hoverinfo="skip",
                         showlegend=False, name="moved" if moved else "stays",
                         line=dict(color=color, width=1.5)))
    # a repeated word keeps its own label ('saw #2', 'saw #4') wherever it moves; others bare
    labels, counts = axis_labels(tokens), {t: list(tokens).count(t) for t in tokens}
    toks = [lab if counts[t] > 1 else escape(t) for t, lab in zip(tokens, labels, strict=True)]
    mode = "markers+text" if n <= 40 else "markers"  # labels would overlap on long inputs
    data.append(dict(
        type="scatter", x=np.arange(n), y=np.ones(n), mode=mode, text=toks,
        textposition="top center", marker=dict(size=9, color=NEUTRAL), showlegend=False,
        hovertemplate=_("original position %{x}: %{text}") + "<extra></extra>"))
    data.append(dict(
        type="scatter", x=np.arange(n), y=np.zeros(n), mode=mode, text=[toks[o] for o in perm],
        textposition="bottom center", marker=dict(size=9, color=NEUTRAL), showlegend=False,
        customdata=perm, hovertemplate=_("shuffled position %{x}: %{text} (was #%{customdata})")
        + "<extra></extra>"))
    return go.Figure(data=data, layout=_layout(
        title or _("The shuffle: token perm[i] moves to position i"), 260,
        yaxis=dict(tickvals=[0, 1], ticktext=[_("shuffled"), _("original")], range=[-0.6, 1.6],
                   zeroline=False, showgrid=False),
        xaxis=dict(title=dict(text=_("position")), showgrid=False, zeroline=False)))


def _short(v: float) -> str:
    """Two significant digits, the exponent without padding ('1.2e-6', not '1.2e-06'): a
    label as narrow as its bar."""
    text = f"{v:.2g}"
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent)}" if e else text


def equivariance_figure(diffs: dict[str, np.ndarray], title: str | None = None) -> go.Figure:
    """Bars of max |Y' - P Y| per layer (0 = embeddings), one group per position mode.

    Log scale: without positions the differences are float rounding (~1e-6), with them of
    order 1; on a linear axis the first would be invisible. The axis runs from the decade
    below the smallest bar's to the decade above five times the largest (room for its label):
    whole decades, so that the axis stays put when float rounding (the threads that summed)
    moves the smallest bar. An exact 0 has no bar on a log axis: its label "0" sits on the
    axis floor instead.
    """
    data, notes, labels = [], [], []
    x = None
    positive = np.concatenate([np.asarray(d, dtype=np.float64).ravel() for d in diffs.values()])
    positive = positive[positive > 0]
    floor = 10.0 ** (np.floor(np.log10(positive.min())) - 1) if positive.size else 1e-8
    top = 10.0 ** np.ceil(np.log10(positive.max() * 5)) if positive.size else 1.0
    for k, (mode, d) in enumerate(diffs.items()):
        d = np.asarray(d, dtype=np.float64)
        x = [_("layer {i}").format(i=i) if i else _("embeddings") for i in range(len(d))]
        data.append(dict(
            type="bar", x=x, y=np.where(d > 0, d, np.nan),
            name=mode_name(mode), marker_color=MODE_COLORS.get(mode),
            marker_pattern_shape=MODE_PATTERNS.get(mode, ""),
            offsetgroup=str(k),
            hovertemplate=_("%{x}: max |difference| = %{y:.3g}") + "<extra></extra>"))
        # each bar's value above it, clear of it: a text over an invisible marker on the bar's
        # top, grouped as the bars are (layout.scattermode); a bar's own outside text touches
        labels.append(dict(
            type="scatter", x=x, y=np.where(d > 0, d, np.nan), mode="markers+text",
            marker=dict(size=14, opacity=0), text=[_short(v) for v in d],
            textposition="top center", textfont=dict(size=11), offsetgroup=str(k),
            showlegend=False,
            hoverinfo="skip", cliponaxis=False, name=mode_name(mode)))
        notes += [dict(x=x[i], y=np.log10(floor), xref="x", yref="y", text="0",
                       showarrow=False, yanchor="bottom", font=dict(
                           color=MODE_COLORS.get(mode)), xshift=(k - (len(diffs) - 1) / 2) * 30)
                  for i in np.flatnonzero(d == 0)]
    # the layer names slanted (one slant on every screen), the legend under them: at -0.2 of
    # the plot a phone's upright names ran into it
    below = 10 + label_room(x or [], angle=-45, across=False, titled=False)
    height, above, bottom = 440, TOP, below + 2 * LEGEND_ROW  # the legend: two rows on a phone
    layout = _layout(
        title or _("Outputs of the shuffled sentence vs the original outputs, shuffled the "
                   "same way"), height, barmode="group", scattermode="group",
        legend=dict(orientation="h", x=0, xanchor="left", y=-below / (height - above - bottom),
                    yanchor="top"),
        xaxis=dict(tickangle=-45),
        annotations=notes,
        yaxis=dict(title=dict(text=_("max |difference| (log scale)")), type="log",
                   range=[np.log10(floor), np.log10(top)], exponentformat="power"))
    layout["margin"] = dict(layout["margin"], b=bottom)  # the top grown with the title
    return go.Figure(data=data + labels, layout=layout)


# ------------------------------------------------------------------------ 2. two saws
def cosine_curve(curves: dict[str, np.ndarray], pair_label: str,
                 title: str | None = None) -> go.Figure:
    """cos(x_i, x_j) per layer, one line per position mode."""
    data = []
    for mode, c in curves.items():
        c = np.asarray(c, dtype=np.float64)
        data.append(dict(
            type="scatter", x=np.arange(len(c)), y=c, mode="lines+markers",
            name=mode_name(mode),
            line=dict(color=MODE_COLORS.get(mode), width=3 if mode == "none" else 2,
                      dash="dash" if mode == "none" else None),
            hovertemplate=_("layer %{x}: cosine = %{y:.6f}") + "<extra></extra>"))
    n = len(next(iter(curves.values())))
    step = -(-n // 13)  # a label every `step` layers: at most 13 (SmolLM2's 31 fit a phone)
    ticks = list(range(0, n, step))
    return go.Figure(data=data, layout=_layout(
        title or _("Cosine similarity of {pair}, layer by layer").format(pair=pair_label), 420,
        xaxis=dict(title=dict(text=_("layer (0 = embeddings, before any attention)")),
                   tickvals=ticks, ticktext=[_("emb") if i == 0 else str(i) for i in ticks]),
        yaxis=dict(title=dict(text=_("cosine similarity")),
                   range=[min(-0.05, _lo(curves)), 1.05]),
        legend=dict(orientation="h", y=-0.32)))


def _lo(curves: dict[str, np.ndarray]) -> float:
    return float(min(np.min(c) for c in curves.values())) - 0.05


def attention_rows(rows: dict[str, np.ndarray], tokens: list[str], i: int, j: int,
                   title: str | None = None) -> go.Figure:
    """For each mode, the weight rows of queries i and j ([2, n]) as grouped bars over keys."""
    modes = list(rows)
    labels = axis_labels(tokens)
    xv, xt = tick_labels(tokens)
    gap = 0.2 / len(modes)  # make_subplots' own spacing
    titles, lines = subplot_titles([mode_name(m) for m in modes], panel_room(
        len(modes), gap, PAGE_WIDTH - 2 * SIDES - label_room(["0.8"])))
    g = Grid(rows=1, cols=len(modes), shared_yaxes=True, horizontal_spacing=gap,
             subplot_titles=titles)
    for c, mode in enumerate(modes, start=1):
        for r, (q, color) in enumerate(((i, OKABE_ITO[1]), (j, OKABE_ITO[4]))):
            g.add(dict(
                type="bar", x=labels, y=np.asarray(rows[mode][r], dtype=np.float32),
                name=_("query {token}").format(token=labels[q]), marker_color=color,
                showlegend=c == 1, legendgroup=str(r),
                hovertemplate=_("query {token}<br>key %{{x}}<br>weight = %{{y:.4f}}").format(
                    token=labels[q]) + "<extra></extra>"), 1, c)
        g.xaxis(1, c).update(type="category", categoryorder="array", categoryarray=labels,
                             tickvals=xv, ticktext=xt, tickangle=-45)
    g.yaxis(1, 1).update(title=dict(text=_("weight")), range=[0, 1])
    return g.figure(**_layout(
        title or _("Their attention rows (each sums to 1)"), 420, lines, barmode="group",
        legend=dict(orientation="h", y=-0.3, x=0.5, xanchor="center")))


def weights_comparison(w_with: np.ndarray, w_without: np.ndarray, tokens: list[str],
                       title: str | None = None) -> go.Figure:
    """Three heatmaps of one head: weights with positions, without, and their difference."""
    labels = axis_labels(tokens)
    titles, lines = subplot_titles([
        _("with learned positions"), _("without positions"),
        _("difference (with - without)")], panel_room(3, 0.07, PAGE_WIDTH - 2 * SIDES - label_room(
            tick_labels(tokens, max_ticks=30)[1], titled=False)))
    g = Grid(rows=1, cols=3, horizontal_spacing=0.07, subplot_titles=titles)
    diff = np.asarray(w_with, np.float32) - np.asarray(w_without, np.float32)
    for c, (m, axis, name) in enumerate(((w_with, "coloraxis", _("weight")),
                                         (w_without, "coloraxis", _("weight")),
                                         (diff, "coloraxis2", _("difference"))), start=1):
        g.add(dict(
            type="heatmap", z=np.asarray(m, dtype=np.float32), x=labels, y=labels,
            coloraxis=axis,
            hovertemplate=_("query %{y}<br>key %{x}") + f"<br>{name} = %{{z:.4f}}<extra></extra>"),
            1, c)
        _token_axes(g, tokens, row=1, col=c, yticks=c == 1)
    lim = _sym(diff)
    n = max(len(tokens), 6)
    height = int(min(700, max(330, 24 * n + 160))) + COLORBAR_BELOW
    below = 10 + label_room(g.xaxis(1, 1)["ticktext"], angle=-45, across=False, titled=False)
    plot = height - 60 - below - COLORBAR_BELOW
    first, second, third = (g.xaxis(1, c)["domain"] for c in (1, 2, 3))
    layout = _layout(
        title or _("One head's weights"), height, lines,
        # each colour bar under its own panels: the weights' under the first two
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0, cmax=1, colorbar=colorbar_below(
            _("weight"), below, plot, thickness=10, x=first[0], length=second[1] - first[0])),
        coloraxis2=dict(colorscale=SCORES_SCALE, cmid=0, cmin=-lim, cmax=lim,
                        colorbar=colorbar_below(_("diff"), below, plot, thickness=10,
                                                x=third[0], length=third[1] - third[0])))
    layout["margin"] = dict(layout["margin"], b=below + COLORBAR_BELOW)
    return g.figure(**layout)


def _token_axes(g: Grid, tokens: list[str], row: int, col: int, yticks: bool = True) -> None:
    labels = axis_labels(tokens)
    v, t = tick_labels(tokens, max_ticks=30)
    g.yaxis(row, col).update(type="category", categoryorder="array", categoryarray=labels,
                             tickvals=v, ticktext=t, autorange="reversed",
                             showticklabels=yticks)
    g.xaxis(row, col).update(type="category", categoryorder="array", categoryarray=labels,
                             tickvals=v, ticktext=t, tickangle=-45)


# ----------------------------------------------------------------- 3. the encodings
def encoding_heatmap(pe: np.ndarray, title: str, clip: float | None = None) -> go.Figure:
    """A [positions, dimensions] table of position vectors e^p.

    With `clip` (a percentile, e.g. 99) the colour scale stops at that percentile of |e|, so a
    few outliers do not wash out the rest; the hover still shows the exact value.
    """
    pe = np.asarray(pe, dtype=np.float32)
    lim = _sym(pe)
    if clip is not None:
        lim = float(np.percentile(np.abs(pe), clip)) or lim
    return go.Figure(data=[dict(
        type="heatmap", z=pe, colorscale=SCORES_SCALE, zmid=0, zmin=-lim, zmax=lim,
        colorbar=dict(title=dict(text=_("value")), thickness=10),
        hovertemplate=_("position %{y}<br>dimension %{x}<br>value = %{z:.4f}")
        + "<extra></extra>")],
        layout=_layout(title, 380, yaxis=dict(title=dict(text=_("position p")),
                                              autorange="reversed"),
                       xaxis=dict(title=dict(text=_("dimension")))))


def position_matrix(m: np.ndarray, title: str, name: str | None = None) -> go.Figure:
    """A [positions, positions] matrix (dot products or cosines of position vectors)."""
    m = np.asarray(m, dtype=np.float32)
    lim = _sym(m)
    name = _("cosine") if name is None else name
    return go.Figure(data=[dict(
        type="heatmap", z=m, colorscale=SCORES_SCALE, zmid=0, zmin=-lim, zmax=lim,
        colorbar=dict(title=dict(text=name), thickness=10),
        hovertemplate=_("position %{y} vs %{x}") + f"<br>{name} = %{{z:.4f}}<extra></extra>")],
        layout=_layout(title, 420, yaxis=dict(title=dict(text=_("position p")),
                                              autorange="reversed", scaleanchor="x"),
                       xaxis=dict(title=dict(text=_("position q")))))


def pca_scatter(coords: np.ndarray, ratio: np.ndarray, title: str | None = None,
                first: int = 0) -> go.Figure:
    """Positions first, first + 1, ... projected on two principal components, coloured by index."""
    coords = np.asarray(coords, dtype=np.float64)
    idx = np.arange(first, first + len(coords))
    return go.Figure(data=[
        dict(type="scatter", x=coords[:, 0], y=coords[:, 1], mode="lines", hoverinfo="skip",
             line=dict(color=NEUTRAL, width=1), showlegend=False),
        dict(type="scatter", x=coords[:, 0], y=coords[:, 1], mode="markers", customdata=idx,
             showlegend=False,
             marker=dict(color=idx, colorscale="Viridis", size=6,
                         colorbar=dict(title=dict(text=_("position")), thickness=10)),
             hovertemplate=_("position %{customdata}<br>PC1 %{x:.3f}, PC2 %{y:.3f}")
             + "<extra></extra>"),
    ], layout=_layout(title or _("Learned positions, 2-D projection (PCA)"), 420,
                      xaxis=dict(title=dict(text=_("PC1 ({share:.1f}% of variance)").format(
                          share=100 * ratio[0]))),
                      yaxis=dict(title=dict(text=_("PC2 ({share:.1f}% of variance)").format(
                          share=100 * ratio[1])))))


# ------------------------------------------------------- 4. how much each mode changes
def mode_divergence_grid(divergences: dict[str, np.ndarray], reference: str = "learned",
                         title: str | None = None) -> go.Figure:
    """One layers x heads heatmap per mode: mean JS divergence of weight rows vs the reference."""
    modes = list(divergences)
    gap, right = 0.04, colorbar_room(_("bits"), "0.8", thickness=10)
    titles, lines = subplot_titles([mode_name(m) for m in modes],
                                   panel_room(len(modes), gap, PAGE_WIDTH - SIDES - right))
    g = Grid(rows=1, cols=len(modes), horizontal_spacing=gap, subplot_titles=titles)
    vmax = max(float(np.max(d)) for d in divergences.values()) or 1.0
    for c, mode in enumerate(modes, start=1):
        d = np.asarray(divergences[mode], dtype=np.float32)  # [L, H]
        g.add(dict(
            type="heatmap", z=d, coloraxis="coloraxis",
            hovertemplate=f"{mode_name(mode)}<br>"
            + _("layer %{y}, head %{x}<br>mean JS = %{z:.4f} bits") + "<extra></extra>"), 1, c)
        g.yaxis(1, c).update(autorange="reversed", dtick=1,
                             title=dict(text=_("layer")) if c == 1 else None)
        g.xaxis(1, c).update(title=dict(text=_("head")), dtick=2)
    ref = mode_name(reference)
    layout = _layout(
        title or _("How much each head's weights move, compared with {ref} (mean "
                   "Jensen-Shannon divergence of rows)").format(ref=ref), 340, lines,
        coloraxis=dict(colorscale=DISTANCE_SCALE, cmin=0, cmax=vmax,
                       colorbar=dict(title=dict(text=_("bits")), thickness=10)))
    layout["margin"] = dict(layout["margin"], r=right)  # the colour bar's room, known here
    return g.figure(**layout)


def final_change_figure(cosines: dict[str, np.ndarray], tokens: list[str],
                        reference: str = "learned", title: str | None = None) -> go.Figure:
    """Per token: cosine of its final vector under each mode with the reference mode's."""
    labels = axis_labels(tokens)
    xv, xt = tick_labels(tokens)
    data = [dict(type="bar", x=labels, y=np.asarray(c, dtype=np.float64),
                 name=mode_name(mode), marker_color=MODE_COLORS.get(mode),
                 marker_pattern_shape=MODE_PATTERNS.get(mode, ""),
                 hovertemplate=f"{mode_name(mode)}<br>"
                 + _("%{x}: cosine = %{y:.6f}") + "<extra></extra>")
            for mode, c in cosines.items()]
    ref = mode_name(reference)
    return go.Figure(data=data, layout=_layout(
        title or _("Final vectors: how close each mode stays to {ref}").format(ref=ref), 380,
        xaxis=dict(type="category", categoryorder="array", categoryarray=labels, tickvals=xv,
                   ticktext=xt, tickangle=-45),
        yaxis=dict(title=dict(text=_("cosine with the reference")),
                   range=[min(0.0, _lo(cosines)), 1.05]),
        barmode="group", legend=dict(orientation="h", y=1.08)))


# ------------------------------------------------------------------ toy vectors
TOY_X_LABELS = 36  # px of the toy panels' x labels ('dim 0'...: one unslanted line, its pad)


def toy_outputs(toy: dict[str, dict], words: list[str], title: str | None = None) -> go.Figure:
    """The toy layer's outputs b^i ([n, d]) without and with positions, side by side."""
    modes = list(toy)
    labels = axis_labels(words)
    v, t = tick_labels(words)
    titles, lines = subplot_titles([_("outputs b<sup>i</sup>, {mode}").format(
        mode=_(TOY_NAMES[m]) if m in TOY_NAMES else escape(m)) for m in modes], panel_room(
            len(modes), 0.08, PAGE_WIDTH - 2 * SIDES - label_room(t, titled=False)))
    g = Grid(rows=1, cols=len(modes), horizontal_spacing=0.08, subplot_titles=titles)
    lim = max(_sym(v["outputs"]) for v in toy.values())
    for c, mode in enumerate(modes, start=1):
        y = np.asarray(toy[mode]["outputs"], dtype=np.float64)
        g.add(dict(
            type="heatmap", z=y, y=labels, x=[_("dim {k}").format(k=k) for k in range(y.shape[1])],
            coloraxis="coloraxis", text=np.round(y, 3), texttemplate="%{text}",
            hovertemplate="%{y}, %{x}: %{z:.6f}<extra></extra>"), 1, c)
        # the words label the first panel only: the rows are the same words in every panel,
        # and labels beside the second ran into the first
        g.yaxis(1, c).update(type="category", categoryorder="array", categoryarray=labels,
                             tickvals=v, ticktext=t, autorange="reversed",
                             showticklabels=c == 1)
    height, below = 300 + COLORBAR_BELOW, 10 + TOY_X_LABELS
    layout = _layout(
        title or _("Toy self-attention on 4-dimensional vectors"), height, lines,
        coloraxis=dict(colorscale=SCORES_SCALE, cmid=0, cmin=-lim, cmax=lim,
                       colorbar=colorbar_below(_("value"), below,
                                               height - 60 - below - COLORBAR_BELOW,
                                               thickness=10)))
    layout["margin"] = dict(layout["margin"], b=below + COLORBAR_BELOW)
    return g.figure(**layout)


# ------------------------------------------------------------------ rotary positions (RoPE)
ROTATION_COLORS = (OKABE_ITO[0], OKABE_ITO[1])  # the query's arrows, the key's


def rotation_figure(turned: dict[str, np.ndarray], places, theta: float,
                    title: str | None = None) -> go.Figure:
    """2-D vectors turned by their place: for each name (e.g. "q", "k") the vector at each
    place of `places` ([len(places), 2] each), drawn as arrows from the origin, labelled
    with the place; the angle per place θ in the title."""
    data, lim = [], max(float(np.abs(v).max()) for v in turned.values()) * 1.3
    for c, (name, vecs) in enumerate(turned.items()):
        vecs = np.asarray(vecs, dtype=np.float64)
        color, dash = ROTATION_COLORS[c % 2], ("solid", "dash")[c % 2]
        xs: list = []
        ys: list = []
        for x, y in vecs:  # one trace of None-separated segments per vector name
            xs += [0.0, x, None]
            ys += [0.0, y, None]
        data.append(dict(type="scatter", x=xs, y=ys, mode="lines", hoverinfo="skip",
                         line=dict(color=color, width=2, dash=dash), name=escape(name)))
        data.append(dict(
            type="scatter", x=vecs[:, 0], y=vecs[:, 1], mode="markers+text",
            marker=dict(color=color, size=9, symbol=("circle", "square")[c % 2]),
            text=[f"{escape(name)} @{int(m)}" for m in places], textposition="top center",
            showlegend=False, customdata=np.asarray(places),
            hovertemplate=escape(name) + " " + _("at place %{customdata}: (%{x:.3f}, %{y:.3f})")
            + "<extra></extra>"))
    return go.Figure(data=data, layout=_layout(
        title or _("A 2-D pair turned by its place: {deg:.1f}° per place").format(
            deg=float(np.degrees(theta))), 420,
        xaxis=dict(range=[-lim, lim], zeroline=True, constrain="domain",
                   title=dict(text=_("dimension 1"))),
        yaxis=dict(range=[-lim, lim], zeroline=True, scaleanchor="x", constrain="domain",
                   title=dict(text=_("dimension 2"))),
        legend=dict(orientation="h", y=-0.2)))


def rotary_scores_figure(scores: np.ndarray, title: str | None = None) -> go.Figure:
    """S[m, p]: one query placed at m (rows) and one key placed at p (columns), q·k after RoPE."""
    s = np.asarray(scores, dtype=np.float64)
    lim = _sym(s)
    return go.Figure(data=[dict(
        type="heatmap", z=s, colorscale=SCORES_SCALE, zmid=0, zmin=-lim, zmax=lim,
        colorbar=dict(title=dict(text=_("q·k")), thickness=10),
        hovertemplate=_("query at place %{y}, key at place %{x}<br>q·k = %{z:.4f}")
        + "<extra></extra>")],
        layout=_layout(title or _("The same two words at every pair of places"), 440,
                       yaxis=dict(title=dict(text=_("query's place m")), autorange="reversed",
                                  scaleanchor="x", constrain="domain"),
                       xaxis=dict(title=dict(text=_("key's place p")), constrain="domain")))


def distance_curve(distances: np.ndarray, means: np.ndarray,
                   title: str | None = None) -> go.Figure:
    """The score read along the diagonals: one value per distance m - p."""
    return go.Figure(data=[dict(
        type="scatter", x=np.asarray(distances), y=np.asarray(means, dtype=np.float64),
        mode="lines+markers", line=dict(color=OKABE_ITO[0]), showlegend=False,
        hovertemplate=_("m - p = %{x}: q·k = %{y:.4f}") + "<extra></extra>")],
        layout=_layout(title or _("q·k as a function of the distance m - p alone"), 340,
                       xaxis=dict(title=dict(text=_("distance m - p (query's place minus "
                                                    "key's)"))),
                       yaxis=dict(title=dict(text=_("q·k")))))


def spectrum_figure(wavelength: np.ndarray, context: int | None = None,
                    title: str | None = None) -> go.Figure:
    """Each pair i's wavelength 2π/θ_i in tokens (log scale); a dotted line at `context`
    tokens (pairs above it never turn once within that many tokens)."""
    w = np.asarray(wavelength, dtype=np.float64)
    shapes = [] if context is None else [dict(
        type="line", xref="paper", x0=0, x1=1, y0=context, y1=context,
        line=dict(color=NEUTRAL, dash="dot", width=2))]
    notes = [] if context is None else [dict(
        xref="paper", x=0.99, xanchor="right", y=float(np.log10(context)), yanchor="top",
        text=_("{n:,} tokens").format(n=int(context)), showarrow=False)]
    return go.Figure(data=[dict(
        type="scatter", x=np.arange(len(w)), y=w, mode="markers", showlegend=False,
        marker=dict(color=OKABE_ITO[0], size=7),
        hovertemplate=_("pair %{x}: turns once every %{y:,.1f} tokens") + "<extra></extra>")],
        layout=_layout(title or _("Each pair's wavelength 2π/θ<sub>i</sub>"), 380,
                       shapes=shapes, annotations=notes,
                       xaxis=dict(title=dict(text=_("pair i (dimensions i and i + d/2)"))),
                       yaxis=dict(title=dict(text=_("tokens per turn (log scale)")),
                                  type="log", exponentformat="power")))
