"""Head statistics (Clark et al. 2019) as layers x heads heatmaps, and attention rollout
(Abnar & Zuidema 2020) next to the raw last-layer attention.

Each statistic is one [layers, heads] heatmap: rows = layers, columns = heads, so one cell
is one head. Shares of weight use one colour scale from 0 to 1; entropy (nats) its own.
Clicking a cell selects that head (the page reads the point's x = head, y = layer).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import FONT, WEIGHTS_SCALE, escape


def stats_heatmaps(stats: dict[str, np.ndarray], titles: dict[str, str], cols: int = 4,
                   selected: tuple[int, int] | None = None) -> go.Figure:
    """One [layers, heads] heatmap per statistic; hover gives layer, head and the exact value."""
    names = list(stats)
    rows = -(-len(names) // cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[titles.get(k, k) for k in names],
                        horizontal_spacing=0.05, vertical_spacing=0.14)
    for i, name in enumerate(names):
        z = np.asarray(stats[name], dtype=np.float64)
        L, H = z.shape
        r, c = i // cols + 1, i % cols + 1
        fig.add_trace(go.Heatmap(
            z=z, x=list(range(H)), y=list(range(L)), name=name,
            coloraxis="coloraxis2" if name == "entropy" else "coloraxis", hoverinfo="skip",
        ), row=r, col=c)
        # Heatmap cells cannot be selected in Plotly: an invisible marker per cell carries the
        # hover (exact value) and the click (Streamlit's on_select reports x = head, y = layer).
        layers, heads = np.divmod(np.arange(L * H), H)
        fig.add_trace(go.Scatter(
            x=heads, y=layers, mode="markers", customdata=z.ravel(), name=name,
            marker=dict(size=14, opacity=0, color="white"), showlegend=False,
            hovertemplate=(f"layer %{{y}}, head %{{x}}<br>{titles.get(name, name)} = "
                           "%{customdata:.4f}<extra></extra>"),
        ), row=r, col=c)
        fig.update_yaxes(range=[L - 0.5, -0.5], dtick=1, row=r, col=c,
                         title=dict(text="layer") if c == 1 else None)
        fig.update_xaxes(range=[-0.5, H - 0.5], dtick=2, title=dict(text="head"), row=r, col=c)
        if selected is not None:
            layer, head = selected
            fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5,
                          y1=layer + 0.5, line=dict(color="crimson", width=2), row=r, col=c)
    fig.update_layout(
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0.0, cmax=1.0,
                       colorbar=dict(title=dict(text="share"), thickness=12, x=1.0, len=0.45,
                                     y=0.78)),
        coloraxis2=dict(colorscale="Cividis",
                        colorbar=dict(title=dict(text="entropy"), thickness=12, x=1.0,
                                      len=0.45, y=0.22)),
        font=FONT, height=int(300 * rows + 60), margin=dict(l=10, r=60, t=50, b=10),
        clickmode="event+select", hovermode="closest",
    )
    return fig


def rollout_pair(raw: np.ndarray, rolled: np.ndarray, tokens: list[str],
                 raw_title: str, rolled_title: str) -> go.Figure:
    """Two [query, key] matrices side by side, each with its own colour scale, exact hover."""
    n = len(tokens)
    labels = [f"{escape(t)} #{i}" for i, t in enumerate(tokens)]
    step = max(1, -(-n // 40))
    fig = make_subplots(rows=1, cols=2, subplot_titles=[raw_title, rolled_title],
                        horizontal_spacing=0.2)
    for c, (m, name, x) in enumerate(((raw, "weight", 0.41), (rolled, "rollout", 1.0)), start=1):
        m = np.asarray(m, dtype=np.float32)
        fig.add_trace(go.Heatmap(
            z=m, x=labels, y=labels, colorscale=WEIGHTS_SCALE, zmin=0.0,
            zmax=float(m.max()) or 1.0, name=name,
            colorbar=dict(title=dict(text=name), thickness=10, x=x),
            hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{name} = %{{z:.6f}}<extra></extra>",
        ), row=1, col=c)
        common = dict(type="category", categoryorder="array", categoryarray=labels,
                      tickvals=labels[::step], ticktext=[escape(t) for t in tokens[::step]])
        fig.update_yaxes(autorange="reversed", row=1, col=c, **common)
        fig.update_xaxes(tickangle=-45, row=1, col=c, **common)
    fig.update_layout(font=FONT, height=int(min(800, max(380, 24 * n + 160))),
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig
