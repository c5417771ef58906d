"""Figures of ablation and patching (analysis.ablation): a layer x head map of effects, the two
repeated tokens' cosine per layer with positions on and off, a layer's attention removed, the
pruning curve, the patching maps (layer x head, layer x token), one head's removal as every
later layer's weight differences, and importance beside Clark et al.'s statistics."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..i18n import _
from .common import (
    FONT,
    OKABE_ITO,
    SLANT_PX,
    STAT_SCALE,
    VALUES_SCALE,
    Grid,
    axis_labels,
    category_dash,
    category_marker,
    escape,
    label_room,
    tick_labels,
)
from .stats import PAGE_WIDTH, fitted_title


def _diverging(z: np.ndarray) -> dict:
    top = float(np.abs(z).max()) or 1.0
    return dict(colorscale=VALUES_SCALE, zmin=-top, zmax=top, zmid=0.0)


def head_map(effect: np.ndarray, title: str, value: str,
             selected: tuple[int, int] | None = None, signed: bool = True) -> go.Figure:
    """effect [layers, heads] on a diverging scale centred at 0 (signed=False: a size >= 0 on
    the sequential scale of the head statistics' layer x head maps, STAT_SCALE, dark at 0 and
    light at the top, which reads on a light and on a dark page; a scale white at 0 drew a
    dark page's unchanged layers as white slabs); hover: layer, head, value. Clicking a cell
    reports x = head, y = layer."""
    L, H = effect.shape
    scale = _diverging(effect) if signed else dict(
        colorscale=STAT_SCALE, zmin=0.0, zmax=float(np.max(effect)) or 1.0)
    fig = go.Figure(go.Heatmap(
        z=np.asarray(effect, dtype=np.float64), x=list(range(H)), y=list(range(L)),
        colorbar=dict(title=dict(text=escape(value)), thickness=12),
        hovertemplate=_("layer %{y}, head %{x}") + f"<br>{escape(value)} = "
                      "%{z:.6f}<extra></extra>", **scale))
    layers, heads = np.divmod(np.arange(L * H), H)
    fig.add_trace(go.Scatter(x=heads, y=layers, mode="markers", hoverinfo="skip",
                             marker=dict(size=14, opacity=0), showlegend=False))
    if selected is not None:
        layer, head = selected
        fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5,
                      line=dict(color=OKABE_ITO[3], width=2))
    fig.update_yaxes(range=[L - 0.5, -0.5], dtick=1, title=_("layer"))
    fig.update_xaxes(range=[-0.5, H - 0.5], dtick=1, title=_("head"))
    fig.update_layout(title=dict(text=title), font=FONT, height=120 + 34 * L,
                      margin=dict(l=10, r=10, t=50, b=10), clickmode="event+select",
                      hovermode="closest")
    return fig


def saw_cosines(on: np.ndarray, off: np.ndarray, label_i: str, label_j: str) -> go.Figure:
    """cos of the two tokens' vectors after each layer (0 = the embeddings), positions on and
    off: two lines with their own dash and marker."""
    x = list(range(len(on)))
    fig = go.Figure()
    for k, (ys, name) in enumerate(((on, _("positions on")), (off, _("positions off")))):
        fig.add_trace(go.Scatter(
            x=x, y=ys, name=name, mode="lines+markers",
            line=dict(color=OKABE_ITO[k], dash=category_dash(k)),
            marker=dict(symbol=category_marker(k), size=9),
            hovertemplate=name + "<br>" + _("layer %{x}") + "<br>cos = %{y:.6f}<extra></extra>"))
    fig.update_xaxes(title=_("after layer (0 = embeddings)"), dtick=1)
    fig.update_yaxes(title=_("cosine"), range=[min(0.0, float(np.min(on)) - 0.05), 1.05])
    fig.update_layout(title=dict(text=_("cos({a}, {b}) layer by layer").format(
        a=escape(label_i), b=escape(label_j))), font=FONT, height=360,
        legend=dict(orientation="h", y=-0.25), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def layer_bars(base: float, values: np.ndarray, value: str,
               title: str | None = None) -> go.Figure:
    """The measure with each layer's whole attention left out, beside the plain value."""
    L = len(values)
    fig = go.Figure(go.Bar(x=list(range(L)), y=values - base, marker_color=OKABE_ITO[0],
                           customdata=values, name=value,
                           hovertemplate=_("layer %{x}") + "<br>" + escape(value)
                           + " = %{customdata:.6f}<br>" + _("change") + " = %{y:+.6f}"
                           "<extra></extra>"))
    fig.update_xaxes(title=_("layer whose attention is removed"), dtick=1)
    fig.update_yaxes(title=_("change of the measure"), zeroline=True)
    fig.update_layout(title=dict(text=title or _("Removing a whole layer's attention")), font=FONT,
                      height=320, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def pruning(curve: np.ndarray, heads: list[tuple[int, int]], value: str,
            title: str | None = None) -> go.Figure:
    """The measure after removing the k least important heads, k = 0..all."""
    k = np.arange(len(curve))
    last = [""] + [_("layer {l}, head {h}").format(l=a, h=b) for a, b in heads]
    fig = go.Figure(go.Scatter(x=k, y=curve, mode="lines+markers", customdata=last,
                               line=dict(color=OKABE_ITO[1]), marker=dict(size=5),
                               hovertemplate=_("{k} heads removed").format(k="%{x}")
                               + "<br>%{customdata}<br>" + escape(value)
                               + " = %{y:.6f}<extra></extra>"))
    fig.update_xaxes(title=_("heads removed, least important first"))
    fig.update_yaxes(title=escape(value))
    fig.update_layout(title=dict(text=title or _("Pruning curve")), font=FONT, height=320,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def residual_map(restored: np.ndarray, tokens: list[str], other: list[str]) -> go.Figure:
    """restored [layers, tokens]: patching layer l's input at one token; columns keep repeated
    tokens apart ('saw #2', 'saw #4') and say what the corrupted sentence had there."""
    L, n = restored.shape
    labels = axis_labels(tokens)
    vals, text = tick_labels(tokens)
    text = [t if tokens[i] == other[i] else f"{t} / {escape(other[i])}"
            for t, i in zip(text, range(len(text)), strict=True)] if len(text) == n else text
    fig = go.Figure(go.Heatmap(
        z=np.asarray(restored, dtype=np.float64), x=labels, y=list(range(L)),
        # the title beside the bar: above it, it ran into the top tick (1) on a phone
        colorbar=dict(title=dict(text=_("restored"), side="right"), thickness=12),
        hovertemplate=_("layer %{y}, token %{x}") + "<br>" + _("restored")
                      + " = %{z:.4f}<extra></extra>", **_diverging(restored)))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels,
                     tickvals=vals, ticktext=text, tickangle=-45, title=_("token patched"))
    fig.update_yaxes(range=[L - 0.5, -0.5], dtick=1, title=_("input of layer"))
    fig.update_layout(title=dict(text=_("Patching one layer's input at one token")), font=FONT,
                      height=140 + 34 * L, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def token_cosines(cos: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """cos(final vector with the head removed, plain final vector) per token."""
    labels = axis_labels(tokens)
    vals, text = tick_labels(tokens)
    fig = go.Figure(go.Bar(x=labels, y=cos, marker_color=OKABE_ITO[0],
                           hovertemplate="%{x}<br>cos = %{y:.6f}<extra></extra>"))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels,
                     tickvals=vals, ticktext=text, tickangle=-45)
    low = float(np.min(cos)) if len(cos) else 0.0
    fig.update_yaxes(title=_("cosine to the plain run"), range=[min(low - 0.02, 0.9), 1.0])
    fig.update_layout(title=dict(text=title), font=FONT, height=320,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


PANELS_WIDTH = 540  # px the later layers' panels span on a 1280 px page (the colour bar aside)
ROW_PX = 16  # px a row label takes down a panel (one line of FONT)


def weight_diffs(maps: list[tuple[int, np.ndarray]], tokens: list[str], head: int | None,
                 cols: int = 3, keys: list[str] | None = None) -> go.Figure:
    """One [query, key] map of ablated minus plain weights per later layer (`maps`: (layer,
    [n, m])), on one diverging scale centred at 0 shared by every panel (so panels compare);
    rows = who looks (`tokens`), columns = who is looked at (`keys`, default the same);
    exact hover."""
    keys = tokens if keys is None else keys
    n = max(len(tokens), len(keys))
    labels, key_labels = axis_labels(tokens), axis_labels(keys)
    cols = min(cols, len(maps))
    rows = -(-len(maps) // cols)
    side = max(280, min(420, 14 * n + 160))  # px of figure height per row of panels
    down = min(0.3, 0.5 / rows) if rows > 1 else 0.1
    # as many labels as a panel holds apart (40 rows at most): a long text's panel is about
    # 106 x 290 px, where 40 row labels or 16 key labels lay on one another
    tall = 0.9 * side * rows * (1 - (rows - 1) * down) / rows
    vals, text = tick_labels(tokens, max_ticks=max(2, min(40, int(tall / ROW_PX))))
    name = _("mean of the layer's heads") if head is None else _("head {h}").format(h=head)
    titles = [_("layer {l}").format(l=layer) for layer, _m in maps]
    # every panel names its rows (a phone lays the panels out again, two to a row: a panel
    # that was first in its row may be second), with room for them between the panels
    across = max(0.06, min(0.2, (label_room(text, titled=False) + 16) / PANELS_WIDTH))
    wide = PANELS_WIDTH * (1 - (cols - 1) * across) / cols
    kvals, ktext = tick_labels(keys, max_ticks=max(2, int(wide / SLANT_PX)))
    g = Grid(rows=rows, cols=cols, subplot_titles=titles, horizontal_spacing=across,
             vertical_spacing=down)
    top = max((float(np.abs(m).max()) for _l, m in maps), default=0.0) or 1.0
    axis = dict(type="category", categoryorder="array", categoryarray=labels)
    key_axis = dict(type="category", categoryorder="array", categoryarray=key_labels)
    value = _("change of the weight")
    for i, (_layer, m) in enumerate(maps):
        r, c = i // cols + 1, i % cols + 1
        g.add(dict(type="heatmap", z=np.asarray(m, dtype=np.float64), x=key_labels, y=labels,
                   coloraxis="coloraxis", name=titles[i],
                   hovertemplate=escape(titles[i]) + ", " + escape(name) + "<br>"
                   + _("query %{y}<br>key %{x}")
                   + f"<br>{escape(value)} = %{{z:+.6f}}<extra></extra>"), r, c)
        g.yaxis(r, c).update(autorange="reversed", tickvals=vals, ticktext=text, **axis)
        g.xaxis(r, c).update(tickangle=-45, tickvals=kvals, ticktext=ktext, **key_axis)
    return g.figure(
        # three numbers on the bar (-top, 0, top), written across: a short horizontal bar
        # under a phone's panels turned a longer row of them sideways
        coloraxis=dict(colorscale=VALUES_SCALE, cmin=-top, cmax=top, cmid=0.0,
                       colorbar=dict(title=dict(text=escape(value), side="top"), thickness=12,
                                     tickvals=[-top, 0.0, top], tickangle=0,
                                     ticktext=[f"{-top:.2g}", "0", f"{top:.2g}"])),
        title=dict(text=_("Later layers' weights, with the head removed minus without: "
                          "{which}").format(which=escape(name))),
        font=FONT, height=int(side * rows + 80), margin=dict(l=10, r=10, t=70, b=10))


def importance_vs_stats(size: np.ndarray, stats: dict[str, np.ndarray], titles: dict[str, str],
                        rho: dict[str, float], value: str, cols: int = 4) -> go.Figure:
    """One panel per statistic: every head as a point, x = the statistic, y = |effect| of its
    removal; the panel's title gives Spearman's rank correlation over the heads."""
    names = list(stats)
    rows = -(-len(names) // cols)
    L, H = size.shape
    layers, heads = np.divmod(np.arange(L * H), H)
    gap = 0.06
    room = ((1 - (cols - 1) * gap) / cols + gap) * (PAGE_WIDTH - 20)  # px over a panel
    panel = [fitted_title(escape(titles.get(k, k)), room) + "<br>ρ = "
             + ("—" if np.isnan(rho[k]) else f"{rho[k]:+.2f}") for k in names]
    three = any(t.count("<br>") > 1 for t in panel)
    g = Grid(rows=rows, cols=cols, subplot_titles=panel, horizontal_spacing=gap,
             vertical_spacing=(0.3 if three else 0.22) if rows > 1 else 0.1)
    y = np.asarray(size, dtype=np.float64).ravel()
    for i, k in enumerate(names):
        r, c = i // cols + 1, i % cols + 1
        x = np.asarray(stats[k], dtype=np.float64).ravel()
        g.add(dict(type="scatter", x=x, y=y, mode="markers", name=titles.get(k, k),
                   customdata=np.stack([layers, heads], axis=1), showlegend=False,
                   marker=dict(color=OKABE_ITO[4], size=6, symbol=category_marker(0),
                               line=dict(width=0.5, color=OKABE_ITO[2])),
                   hovertemplate=_("layer %{customdata[0]}, head %{customdata[1]}")
                   + f"<br>{escape(titles.get(k, k))} = %{{x:.4f}}<br>{escape(value)} = "
                   "%{y:.6f}<extra></extra>"), r, c)
        g.yaxis(r, c).update(title=dict(text=escape(value)) if c == 1 else None, rangemode="tozero")
        g.xaxis(r, c).update(rangemode="tozero")
    return g.figure(title=dict(text=_("Does the head matter where it looks? Every head: its "
                                      "statistic (x) and its removal's effect (y)")),
                    font=FONT, height=int(280 * rows + 140),
                    margin=dict(l=10, r=10, t=140 if three else 100, b=10),
                    hovermode="closest")
