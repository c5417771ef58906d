"""Figures for the families page: the share of attention on later tokens per layer (an
encoder beside a decoder), and a vision transformer's [CLS] attention drawn over the image it
saw (one cell per patch, the image under it)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go

from attnviz.i18n import _

from .common import (
    FONT,
    IMAGE_BACKGROUND,
    WEIGHTS_SCALE,
    category_colour,
    category_dash,
    category_marker,
    escape,
)


def later_weight_chart(curves: Mapping[str, np.ndarray], title: str = "") -> go.Figure:
    """One line per model: layer -> mean weight on later tokens (analysis.families)."""
    data = []
    for i, (name, y) in enumerate(curves.items()):
        y = np.asarray(y, dtype=np.float64)
        data.append(dict(type="scatter", x=np.arange(len(y)), y=y, mode="lines+markers",
                         name=escape(name),
                         line=dict(color=category_colour(i), width=3, dash=category_dash(i)),
                         marker=dict(symbol=category_marker(i), size=8),
                         hovertemplate="<br>".join([
                             escape(name), _("layer") + " %{x}",
                             _("weight on later tokens") + " = %{y:.6f}<extra></extra>"])))
    top = max([float(np.max(c)) for c in curves.values()] + [0.05])
    return go.Figure(data=data, layout=dict(
        title=title, font=FONT, height=340, margin=dict(l=10, r=10, t=60, b=10),
        xaxis=dict(title=dict(text=_("layer")), dtick=1),
        yaxis=dict(title=dict(text=_("mean weight on later tokens")), range=[-0.02, top * 1.1],
                   rangemode="tozero"),
        legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom")))


def image_attention(image: np.ndarray, grid_map: np.ndarray, title: str = "",
                    opacity: float = 0.5) -> go.Figure:
    """The image [H, W, 3] uint8 with the patch grid's values [R, C] drawn over it, one cell
    per patch (a patch covers H/R x W/C pixels); the colour scale runs from 0 to the largest
    value, and each cell's hover gives the exact weight."""
    H, W = image.shape[:2]
    R, C = grid_map.shape
    ph, pw = H / R, W / C
    z = np.asarray(grid_map, dtype=np.float32)
    text = [[_("patch {row},{col}").format(row=r, col=c) for c in range(C)] for r in range(R)]
    return go.Figure(
        data=[
            dict(type="image", z=np.asarray(image, dtype=np.uint8), hoverinfo="skip"),
            dict(type="heatmap", z=z, x0=pw / 2 - 0.5, dx=pw, y0=ph / 2 - 0.5, dy=ph,
                 colorscale=WEIGHTS_SCALE, zmin=0.0, zmax=float(z.max()) or 1.0,
                 opacity=opacity, text=text, colorbar=dict(title=dict(text=_("weights")),
                                                           thickness=12),
                 hovertemplate="%{text}<br>" + _("weight") + " = %{z:.6f}<extra></extra>"),
        ],
        layout=dict(title=title, font=FONT, height=520, margin=dict(l=10, r=10, t=60, b=10),
                    xaxis=dict(visible=False, range=[-0.5, W - 0.5], constrain="domain"),
                    yaxis=dict(visible=False, range=[H - 0.5, -0.5], scaleanchor="x"),
                    plot_bgcolor=IMAGE_BACKGROUND),
    )
