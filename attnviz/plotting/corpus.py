"""Heads over many sentences: the map of heads (classical MDS of their Jensen-Shannon
distances), one dot per head coloured by its behaviour; clicking a dot picks that head.

The dots are one scatter trace (point index = layer * heads + head, which the page reads from
Streamlit's selection); the legend entries are empty traces, one per behaviour.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from .common import FONT

COLOURS = {"[CLS]": qualitative.D3[0], "[SEP]": qualitative.D3[1],
           "previous": qualitative.D3[2], "next": qualitative.D3[3],
           "broad": qualitative.D3[4], "mixed": "#9e9e9e"}


def head_map(coords: np.ndarray, behaviour: np.ndarray, selected: tuple[int, int] | None = None,
             title: str = "") -> go.Figure:
    """coords [L*H, 2], behaviour [L, H] (str): one dot per head, labelled 'layer.head'."""
    L, H = behaviour.shape
    layers, heads = np.divmod(np.arange(L * H), H)
    kinds = behaviour.ravel()
    data = [dict(
        type="scatter", x=coords[:, 0], y=coords[:, 1], mode="markers+text",
        text=[f"{a}.{b}" for a, b in zip(layers, heads, strict=True)], textposition="top center",
        textfont=dict(size=9, color="#555"),
        marker=dict(size=11, color=[COLOURS.get(k, "#000") for k in kinds],
                    line=dict(width=1, color="white")),
        customdata=np.stack([layers, heads, kinds], axis=1),
        hovertemplate="layer %{customdata[0]}, head %{customdata[1]}<br>%{customdata[2]}"
                      "<br>click to pick<extra></extra>",
        showlegend=False, name="heads",
    )]
    for kind, colour in COLOURS.items():
        if kind in set(kinds):
            data.append(dict(type="scatter", x=[None], y=[None], mode="markers", name=kind,
                             marker=dict(size=11, color=colour)))
    shapes = []
    if selected is not None:
        p = selected[0] * H + selected[1]
        x, y = coords[p]
        r = 0.04 * float(np.ptp(coords[:, 0]) or 1.0)
        shapes.append(dict(type="circle", x0=x - r, x1=x + r, y0=y - r, y1=y + r,
                           line=dict(color="crimson", width=2)))
    return go.Figure(data=data, layout=dict(
        title=title, font=FONT, height=560, shapes=shapes, clickmode="event+select",
        xaxis=dict(title=dict(text="MDS axis 1"), zeroline=False),
        yaxis=dict(title=dict(text="MDS axis 2"), zeroline=False, scaleanchor="x"),
        legend=dict(title=dict(text="behaviour")), margin=dict(l=10, r=10, t=50, b=10),
        hovermode="closest", plot_bgcolor="#fafafa",
    ))
