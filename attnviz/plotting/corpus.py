"""Heads over many sentences: the map of heads (classical MDS of their Jensen-Shannon
distances), one dot per head coloured by its behaviour; clicking a dot picks that head.

The dots are one scatter trace (point index = layer * heads + head, which the page reads from
Streamlit's selection); the legend entries are empty traces, one per behaviour.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..i18n import N_, _
from .common import (
    FONT,
    NEUTRAL,
    OKABE_ITO,
    ON_IMAGE,
    category_colour,
    category_marker,
)

BEHAVIOURS = ("[CLS]", "[SEP]", "previous", "next", "broad", "mixed")
# the behaviours' names as shown (the keys above stay English: the analysis' labels)
SHOWN = {"previous": N_("previous"), "next": N_("next"), "broad": N_("broad"),
         "mixed": N_("mixed")}


def shown(kind: str) -> str:
    """A behaviour's name in the session's language ([CLS], [SEP] stay as they are)."""
    return _(SHOWN[kind]) if kind in SHOWN else kind
# one colour AND one marker shape per behaviour ("mixed" grey): never colour alone
# (palette entries 0-3 and 5: sky blue, entry 4, sits too close to [CLS]'s blue)
COLOURS = {k: (NEUTRAL if k == "mixed" else category_colour(c))
           for k, c in zip(BEHAVIOURS, (0, 1, 2, 3, 5, None), strict=True)}
SYMBOLS = {k: category_marker(i) for i, k in enumerate(BEHAVIOURS)}


LABEL_PX = (30, 13)  # px a 'layer.head' label needs across and down (9 px text, 5 characters)
PHONE_PLOT = (290, 440)  # px of the map's plot area on a 390 px phone (the widest labels' need)


def label_room(coords: np.ndarray) -> np.ndarray:
    """A label's room (across, down) in the map's units: LABEL_PX at the scale the map has on
    a phone (its axes share one scale; the wider extent across or down sets it). Spaced for a
    phone, the labels stay apart on a wider screen too."""
    xy = np.asarray(coords, dtype=np.float64)
    extent = np.maximum(np.ptp(xy, axis=0), 1e-12)
    units_per_px = float(np.max(extent / np.array(PHONE_PLOT)))
    return np.array(LABEL_PX) * units_per_px


def spaced_labels(coords: np.ndarray, labels: list[str]) -> list[str]:
    """Each dot's label where it has room: a dot whose label would overlap one already kept
    (closer than label_room across and down) shows none; every dot keeps its label in the
    hover. Dots are taken in order (layer by layer), so the label kept is the lowest layer's."""
    xy = np.asarray(coords, dtype=np.float64)
    room = label_room(xy)
    kept: list[np.ndarray] = []
    out = []
    for point, label in zip(xy, labels, strict=True):
        if any((np.abs(point - k) < room).all() for k in kept):
            out.append("")
        else:
            kept.append(point)
            out.append(label)
    return out


MAP_HEIGHT = 640  # px, the whole figure
MAP_BOTTOM = 130  # px under the map: the x axis' numbers and title, then the legend (2-3 rows)
LEGEND_DROP = 52  # px from the map's bottom edge to the legend's top: under the axis title


def head_map(coords: np.ndarray, behaviour: np.ndarray, selected: tuple[int, int] | None = None,
             title: str = "") -> go.Figure:
    """coords [L*H, 2], behaviour [L, H] (str): one dot per head, labelled 'layer.head'."""
    L, H = behaviour.shape
    layers, heads = np.divmod(np.arange(L * H), H)
    kinds = behaviour.ravel()
    data = [dict(
        type="scatter", x=coords[:, 0], y=coords[:, 1], mode="markers+text",
        text=spaced_labels(coords, [f"{a}.{b}" for a, b in zip(layers, heads, strict=True)]),
        textposition="top center",
        textfont=dict(size=9, color=NEUTRAL),
        marker=dict(size=11, color=[COLOURS.get(k, NEUTRAL) for k in kinds],
                    symbol=[SYMBOLS.get(k, "circle") for k in kinds],
                    line=dict(width=1, color=ON_IMAGE)),
        customdata=np.stack([layers, heads, [shown(k) for k in kinds]], axis=1),
        hovertemplate=_("layer %{customdata[0]}, head %{customdata[1]}") + "<br>%{customdata[2]}"
                      "<br>" + _("click to pick") + "<extra></extra>",
        showlegend=False, name="heads",
    )]
    for kind, colour in COLOURS.items():
        if kind in set(kinds):
            data.append(dict(type="scatter", x=[None], y=[None], mode="markers", name=shown(kind),
                             marker=dict(size=11, color=colour, symbol=SYMBOLS[kind])))
    shapes = []
    if selected is not None:
        p = selected[0] * H + selected[1]
        x, y = coords[p]
        r = 0.04 * float(np.ptp(coords[:, 0]) or 1.0)
        shapes.append(dict(type="circle", x0=x - r, x1=x + r, y0=y - r, y1=y + r,
                           line=dict(color=OKABE_ITO[3], width=2)))
    return go.Figure(data=data, layout=dict(
        title=title, font=FONT, height=MAP_HEIGHT, shapes=shapes, clickmode="event+select",
        xaxis=dict(title=dict(text=_("MDS axis 1")), zeroline=False),
        yaxis=dict(title=dict(text=_("MDS axis 2")), zeroline=False, scaleanchor="x"),
        # the legend below the map, from its left edge: on the right it took a phone's map
        legend=dict(title=dict(text=_("behaviour"), side="top"), orientation="h", x=0,
                    xanchor="left", y=-LEGEND_DROP / (MAP_HEIGHT - 50 - MAP_BOTTOM),
                    yanchor="top"),
        margin=dict(l=10, r=10, t=50, b=MAP_BOTTOM),
        hovermode="closest",
    ))
