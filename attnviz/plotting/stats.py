"""Head statistics (Clark et al. 2019) as layers x heads heatmaps, and attention rollout
(Abnar & Zuidema 2020) next to the raw last-layer attention.

Each statistic is one [layers, heads] heatmap: rows = layers, columns = heads, so one cell
is one head. Shares of weight use one colour scale from 0 to 1; entropy (nats) its own.
Clicking a cell selects that head (the page reads the point's x = head, y = layer).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..i18n import _
from .common import (
    FONT,
    OKABE_ITO,
    ON_IMAGE,
    SLANT_PX,
    STAT_SCALE,
    WEIGHTS_SCALE,
    Grid,
    axis_labels,
    escape,
    label_room,
    text_width,
    tick_labels,
)

PAGE_WIDTH = 820  # px: the chart beside the sidebar on a 1280 px screen (a projector, a laptop)
TITLE_SIZE = 16  # px: Plotly's subplot titles


def fitted_title(title: str, room: float) -> str:
    """A panel's title as it fits over its panel, `room` px wide (the panel and one gap):
    as it is when common.text_width's upper estimate fits, else on two lines, broken at the
    space nearest its middle ("weight on the previous token" ran into its neighbour's title
    at 1280 and 1400 px, seen in screenshots). A title without a space stays one line."""
    spaces = [i for i, c in enumerate(title) if c == " "]
    if text_width(title, TITLE_SIZE) <= room or not spaces:
        return title
    middle = min(spaces, key=lambda i: abs(i - len(title) / 2))
    return title[:middle] + "<br>" + title[middle + 1:]


def stats_heatmaps(stats: dict[str, np.ndarray], titles: dict[str, str], cols: int = 4,
                   selected: tuple[int, int] | None = None,
                   spread: dict[str, np.ndarray] | None = None) -> go.Figure:
    """One [layers, heads] heatmap per statistic; hover gives layer, head and the exact value
    (and "± spread" when `spread` {name: [layers, heads]} is given, e.g. over sentences).

    Built as dicts on a `Grid` and validated once (see common.Grid): the page redraws it on
    every click. Entropy, on its own scale, is the last panel, and each colour bar stands
    beside its own panels: the shares' beside the first row, entropy's right after its panel
    (where the shares fill at most one row, entropy starts the next).
    """
    names = [k for k in stats if k != "entropy"] + [k for k in stats if k == "entropy"]
    if "entropy" in stats and 0 < len(names) - 1 <= cols:  # entropy on a row of its own,
        cols = len(names) - 1  # so the two colour bars never stand in one place
    rows = -(-len(names) // cols)
    gap = 0.05
    margin = dict(l=10, r=60, t=50, b=10)  # r: the two colour bars
    room = ((1 - (cols - 1) * gap) / cols + gap) * (PAGE_WIDTH - margin["l"] - margin["r"])
    panel_titles = [fitted_title(titles.get(k, k), room) for k in names]  # px over a panel
    two_lines = any("<br>" in t for t in panel_titles)
    if two_lines:
        margin["t"] = 66  # room for the second line of the top row's titles
    g = Grid(rows=rows, cols=cols, subplot_titles=panel_titles, horizontal_spacing=gap,
             vertical_spacing=0.21 if two_lines else 0.17)
    shapes = []
    for i, name in enumerate(names):
        z = np.asarray(stats[name], dtype=np.float64)
        L, H = z.shape
        r, c = i // cols + 1, i % cols + 1
        g.add(dict(type="heatmap", z=z, x=list(range(H)), y=list(range(L)), name=name,
                   coloraxis="coloraxis2" if name == "entropy" else "coloraxis",
                   hoverinfo="skip"), r, c)
        # Heatmap cells cannot be selected in Plotly: an invisible marker per cell carries the
        # hover (exact value) and the click (Streamlit's on_select reports x = head, y = layer).
        layers, heads = np.divmod(np.arange(L * H), H)
        extra = ""
        custom = z.ravel()
        if spread is not None and name in spread:
            custom = np.stack([z.ravel(), np.asarray(spread[name], np.float64).ravel()], axis=1)
            extra = " ± %{customdata[1]:.4f}"
        value = "%{customdata[0]:.4f}" if extra else "%{customdata:.4f}"
        g.add(dict(
            type="scatter", x=heads, y=layers, mode="markers", customdata=custom, name=name,
            marker=dict(size=14, opacity=0, color=ON_IMAGE), showlegend=False,
            hovertemplate=(_("layer %{y}, head %{x}") + f"<br>{titles.get(name, name)} = "
                           f"{value}{extra}<extra></extra>"),
        ), r, c)
        g.yaxis(r, c).update(range=[L - 0.5, -0.5], dtick=1,
                             title=dict(text=_("layer")) if c == 1 else None)
        g.xaxis(r, c).update(range=[-0.5, H - 0.5], dtick=2, title=dict(text=_("head")))
        if selected is not None:
            layer, head = selected
            sub = str(i + 1) if i else ""  # the panel's axes: x, x2, ... (row by row)
            shapes.append(dict(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5,
                               y1=layer + 0.5, line=dict(color=OKABE_ITO[3], width=2),
                               xref=f"x{sub}", yref=f"y{sub}"))
    return g.figure(
        shapes=shapes,
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0.0, cmax=1.0, colorbar=dict(
            title=dict(text=_("share")), thickness=12,
            **_beside(g, min(cols, len(names)) - 1 if names[0] != "entropy" else 0, cols))),
        coloraxis2=dict(colorscale=STAT_SCALE, colorbar=dict(
            title=dict(text=_("entropy")), thickness=12,
            **_beside(g, len(names) - 1, cols))),
        font=FONT, height=int(310 * rows + 60),  # + the x title between the rows
        margin=margin, clickmode="event+select", hovermode="closest",
    )


def _beside(g: Grid, panel: int, cols: int) -> dict:
    """A vertical colour bar's place right of panel `panel` (0-based, row by row) of `g`, as
    tall as its row."""
    r, c = panel // cols + 1, panel % cols + 1
    x0, x1 = g.xaxis(r, c)["domain"]
    y0, y1 = g.yaxis(r, c)["domain"]
    return dict(x=x1 + 0.01, xanchor="left", y=(y0 + y1) / 2, yanchor="middle",
                len=y1 - y0, lenmode="fraction")


def rollout_pair(raw: np.ndarray, rolled: np.ndarray, tokens: list[str],
                 raw_title: str, rolled_title: str) -> go.Figure:
    """Two [query, key] matrices side by side, each with its own colour scale, exact hover."""
    n = len(tokens)
    labels = axis_labels(tokens)
    step = max(1, -(-n // 40))
    g = Grid(rows=1, cols=2, subplot_titles=[raw_title, rolled_title], horizontal_spacing=0.2)
    common = dict(type="category", categoryorder="array", categoryarray=labels,
                  tickvals=labels[::step], ticktext=[escape(t) for t in tokens[::step]])
    for c, (m, name, x) in enumerate(((raw, _("weight"), 0.41), (rolled, _("rollout"), 1.0)),
                                     start=1):
        m = np.asarray(m, dtype=np.float32)
        g.add(dict(
            type="heatmap", z=m, x=labels, y=labels, colorscale=WEIGHTS_SCALE, zmin=0.0,
            zmax=float(m.max()) or 1.0, name=name,
            colorbar=dict(title=dict(text=name), thickness=10, x=x),
            hovertemplate=_("query %{y}<br>key %{x}") + f"<br>{name} = %{{z:.6f}}<extra></extra>",
        ), 1, c)
        g.yaxis(1, c).update(autorange="reversed", **common)
        g.xaxis(1, c).update(tickangle=-45, **common)
    return g.figure(font=FONT, height=int(min(800, max(380, 24 * n + 160))),
                    margin=dict(l=10, r=10, t=50, b=10))


CLIP_FROM = 64  # tokens from which maps_side_by_side clips its colour scales
CLIP_PERCENTILE = 99
MAX_X_TICKS = 48  # slanted column labels shared by the panels of one row (40 rows fit)


def colour_top(m: np.ndarray) -> tuple[float, bool]:
    """(top of the colour scale, whether it is clipped) for one [n, n] map: its largest
    value, or past CLIP_FROM tokens the CLIP_PERCENTILE-th percentile of its values when
    that is lower."""
    m = np.asarray(m, dtype=np.float64)
    top = float(np.max(m)) if m.size else 0.0
    if m.shape[0] >= CLIP_FROM:
        pct = float(np.percentile(m, CLIP_PERCENTILE))
        if 0 < pct < top:
            return pct, True
    return top or 1.0, False


def maps_side_by_side(matrices: list[np.ndarray], titles: list[str], tokens: list[str],
                      indices=None, value: str | None = None,
                      clip_note: bool = True) -> go.Figure:
    """Several [output/query, input/key] maps of the same tokens in one row, each on its own
    colour scale (a flat map such as attention flow would vanish on a shared one), with its
    colour bar under it; exact hover.

    Rows name 40 tokens at most, columns as many as slanted names fit across a panel on a
    PAGE_WIDTH page (every k-th, tick_labels): a short sentence names every token.

    Each scale runs from 0 to `colour_top(m)`: the largest value for short inputs, the
    CLIP_PERCENTILE-th percentile past CLIP_FROM tokens, where a few large cells (the
    diagonal, [CLS]) would otherwise leave every other cell of n^2 at the bottom colour.
    `value`: the name of the numbers in hover and colour bars ("share" when None).
    `clip_note=False`: a clipped scale's colour bar is titled `value` alone (the caller says
    once, in its text, that the top cells share the top colour): three long titles side by
    side run into each other."""
    value = _("share") if value is None else value
    n = len(tokens)
    labels = axis_labels(tokens, indices)
    k = len(matrices)
    gap = 0.06 if k > 2 else 0.12
    width = (1 - gap * (k - 1)) / k
    tickvals, ticktext = tick_labels(tokens, max_ticks=40, indices=indices)
    # as many slanted column names as fit across a panel on a PAGE_WIDTH page (the first
    # panel's row names in the left margin): at ~100 tokens three panels are ~200 px wide,
    # where 16 names lay on one another; a short sentence keeps every name
    across = width * (PAGE_WIDTH - 20 - label_room(ticktext, titled=False))
    x_vals, x_text = tick_labels(tokens, max_ticks=max(2, min(MAX_X_TICKS // k,
                                                              int(across / SLANT_PX))),
                                 indices=indices)
    g = Grid(rows=1, cols=k, subplot_titles=titles, horizontal_spacing=gap)
    axis = dict(type="category", categoryorder="array", categoryarray=labels)
    axes = {}
    for c, m in enumerate(matrices, start=1):
        ca = "coloraxis" if c == 1 else f"coloraxis{c}"
        g.add(dict(
            type="heatmap", z=np.asarray(m, dtype=np.float32), x=labels, y=labels,
            coloraxis=ca, name=titles[c - 1],
            hovertemplate=(f"{escape(titles[c - 1])}<br>" + _("output %{y}<br>input %{x}")
                           + f"<br>{value} = %{{z:.6f}}<extra></extra>"),
        ), 1, c)
        g.yaxis(1, c).update(autorange="reversed", showticklabels=c == 1, tickvals=tickvals,
                             ticktext=ticktext, **axis)
        g.xaxis(1, c).update(tickangle=-45, tickvals=x_vals, ticktext=x_text, **axis)
        top, clipped = colour_top(m)
        axes[ca] = dict(colorscale=WEIGHTS_SCALE, cmin=0.0, cmax=top,
                        colorbar=dict(orientation="h", thickness=10, len=width * 0.9,
                                      x=(c - 1) * (width + gap) + width / 2, xanchor="center",
                                      y=-0.32, yanchor="top", title=dict(
                                          text=_("{value} (top {share}% of cells at the top "
                                                 "colour; hover: exact)").format(
                                              value=value, share=100 - CLIP_PERCENTILE)
                                          if clipped and clip_note else value, side="top")))
    side = max(300, min(560, 18 * n + 140))
    return g.figure(font=FONT, height=int(side + 110), margin=dict(l=10, r=10, t=50, b=110),
                    **axes)
