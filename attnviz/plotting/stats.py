"""Head statistics (Clark et al. 2019) as layers x heads heatmaps, and attention rollout
(Abnar & Zuidema 2020) next to the raw last-layer attention.

Each statistic is one [layers, heads] heatmap: rows = layers, columns = heads, so one cell
is one head. Shares of weight use one colour scale from 0 to 1; entropy (nats) its own.
Clicking a cell selects that head (the page reads the point's x = head, y = layer).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .common import FONT, WEIGHTS_SCALE, Grid, axis_labels, escape


def stats_heatmaps(stats: dict[str, np.ndarray], titles: dict[str, str], cols: int = 4,
                   selected: tuple[int, int] | None = None,
                   spread: dict[str, np.ndarray] | None = None) -> go.Figure:
    """One [layers, heads] heatmap per statistic; hover gives layer, head and the exact value
    (and "± spread" when `spread` {name: [layers, heads]} is given, e.g. over sentences).

    Built as dicts on a `Grid` and validated once (see common.Grid): the page redraws it on
    every click.
    """
    names = list(stats)
    rows = -(-len(names) // cols)
    g = Grid(rows=rows, cols=cols, subplot_titles=[titles.get(k, k) for k in names],
             horizontal_spacing=0.05, vertical_spacing=0.14)
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
            marker=dict(size=14, opacity=0, color="white"), showlegend=False,
            hovertemplate=(f"layer %{{y}}, head %{{x}}<br>{titles.get(name, name)} = "
                           f"{value}{extra}<extra></extra>"),
        ), r, c)
        g.yaxis(r, c).update(range=[L - 0.5, -0.5], dtick=1,
                             title=dict(text="layer") if c == 1 else None)
        g.xaxis(r, c).update(range=[-0.5, H - 0.5], dtick=2, title=dict(text="head"))
        if selected is not None:
            layer, head = selected
            sub = str(i + 1) if i else ""  # the panel's axes: x, x2, ... (row by row)
            shapes.append(dict(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5,
                               y1=layer + 0.5, line=dict(color="crimson", width=2),
                               xref=f"x{sub}", yref=f"y{sub}"))
    return g.figure(
        shapes=shapes,
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0.0, cmax=1.0,
                       colorbar=dict(title=dict(text="share"), thickness=12, x=1.0, len=0.45,
                                     y=0.78)),
        coloraxis2=dict(colorscale="Cividis",
                        colorbar=dict(title=dict(text="entropy"), thickness=12, x=1.0,
                                      len=0.45, y=0.22)),
        font=FONT, height=int(300 * rows + 60), margin=dict(l=10, r=60, t=50, b=10),
        clickmode="event+select", hovermode="closest",
    )


def rollout_pair(raw: np.ndarray, rolled: np.ndarray, tokens: list[str],
                 raw_title: str, rolled_title: str) -> go.Figure:
    """Two [query, key] matrices side by side, each with its own colour scale, exact hover."""
    n = len(tokens)
    labels = axis_labels(tokens)
    step = max(1, -(-n // 40))
    g = Grid(rows=1, cols=2, subplot_titles=[raw_title, rolled_title], horizontal_spacing=0.2)
    common = dict(type="category", categoryorder="array", categoryarray=labels,
                  tickvals=labels[::step], ticktext=[escape(t) for t in tokens[::step]])
    for c, (m, name, x) in enumerate(((raw, "weight", 0.41), (rolled, "rollout", 1.0)), start=1):
        m = np.asarray(m, dtype=np.float32)
        g.add(dict(
            type="heatmap", z=m, x=labels, y=labels, colorscale=WEIGHTS_SCALE, zmin=0.0,
            zmax=float(m.max()) or 1.0, name=name,
            colorbar=dict(title=dict(text=name), thickness=10, x=x),
            hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{name} = %{{z:.6f}}<extra></extra>",
        ), 1, c)
        g.yaxis(1, c).update(autorange="reversed", **common)
        g.xaxis(1, c).update(tickangle=-45, **common)
    return g.figure(font=FONT, height=int(min(800, max(380, 24 * n + 160))),
                    margin=dict(l=10, r=10, t=50, b=10))


def maps_side_by_side(matrices: list[np.ndarray], titles: list[str], tokens: list[str],
                      indices=None, value: str = "share") -> go.Figure:
    """Several [output/query, input/key] maps of the same tokens in one row, each on its own
    colour scale from 0 to its largest value (a flat map such as attention flow would vanish
    on a shared one), with its colour bar under it; exact hover."""
    n = len(tokens)
    labels = axis_labels(tokens, indices)
    step = max(1, -(-n // 40))
    k = len(matrices)
    gap = 0.06 if k > 2 else 0.12
    g = Grid(rows=1, cols=k, subplot_titles=titles, horizontal_spacing=gap)
    axis = dict(type="category", categoryorder="array", categoryarray=labels,
                tickvals=labels[::step], ticktext=[escape(t) for t in tokens[::step]])
    width = (1 - gap * (k - 1)) / k
    axes = {}
    for c, m in enumerate(matrices, start=1):
        ca = "coloraxis" if c == 1 else f"coloraxis{c}"
        g.add(dict(
            type="heatmap", z=np.asarray(m, dtype=np.float32), x=labels, y=labels,
            coloraxis=ca, name=titles[c - 1],
            hovertemplate=(f"{escape(titles[c - 1])}<br>output %{{y}}<br>input %{{x}}<br>"
                           f"{value} = %{{z:.6f}}<extra></extra>"),
        ), 1, c)
        g.yaxis(1, c).update(autorange="reversed", showticklabels=c == 1, **axis)
        g.xaxis(1, c).update(tickangle=-45, **axis)
        axes[ca] = dict(colorscale=WEIGHTS_SCALE, cmin=0.0, cmax=float(np.max(m)) or 1.0,
                        colorbar=dict(orientation="h", thickness=10, len=width * 0.9,
                                      x=(c - 1) * (width + gap) + width / 2, xanchor="center",
                                      y=-0.32, yanchor="top", title=dict(text=value,
                                                                         side="top")))
    side = max(300, min(560, 18 * n + 140))
    return g.figure(font=FONT, height=int(side + 110), margin=dict(l=10, r=10, t=50, b=110),
                    **axes)
