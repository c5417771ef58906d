"""Attribution of a similarity score to tokens: one group of bars per token, one bar per
method (integrated gradients, gradient x input, raw attention, rollout, flow). Each method is
scaled so that its largest |value| is 1 (they live on different scales); the hover gives the
unscaled number."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..i18n import _
from .common import FONT, PATTERNS, axis_labels, category_colour, escape, tick_labels


def attribution_bars(tokens: list[str], series: dict[str, np.ndarray], title: str) -> go.Figure:
    """series: {method: values [n]} (None values are skipped)."""
    labels = axis_labels(tokens)
    ticks = tick_labels(tokens)  # thinned past 60 tokens, as the other figures
    data = []
    for k, (name, values) in enumerate(series.items()):
        if values is None:
            continue
        v = np.asarray(values, dtype=np.float64)
        top = float(np.abs(v).max()) or 1.0
        data.append(dict(
            type="bar", x=labels, y=v / top, name=name, customdata=v,
            marker=dict(color=category_colour(k), pattern=dict(shape=PATTERNS[k % len(PATTERNS)])),
            hovertemplate=f"{escape(name)}<br>%{{x}}<br>" + _("value = %{customdata:.5f}")
                          + "<extra></extra>",
        ))
    return go.Figure(data=data, layout=dict(
        title=dict(text=title, y=0.98, yanchor="top"), font=FONT, barmode="group", height=460,
        # a repeated word's places told apart on the ticks (saw #2, saw #4), others bare
        xaxis=dict(type="category", categoryorder="array", categoryarray=labels,
                   tickvals=ticks[0], ticktext=ticks[1], tickangle=-45),
        yaxis=dict(title=dict(text=_("scaled to the method's largest |value|")),
                   range=[-1.05, 1.05], zeroline=True),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
        margin=dict(l=10, r=10, t=160, b=10),  # the title above the legend's rows
    ))


def occlusion_bars(tokens: list[str], series: dict[str, np.ndarray], title: str) -> go.Figure:
    """series: {method: change of the score per token [n]} in the score's own units (not
    scaled: integrated gradients and occlusion drops are both changes of the cosine); nan
    (a token not occluded) leaves a gap."""
    labels = axis_labels(tokens)
    ticks = tick_labels(tokens)
    data = []
    for k, (name, values) in enumerate(series.items()):
        v = np.asarray(values, dtype=np.float64)
        data.append(dict(
            type="bar", x=labels, y=v, name=name,
            marker=dict(color=category_colour(k), pattern=dict(shape=PATTERNS[k % len(PATTERNS)])),
            hovertemplate=f"{escape(name)}<br>%{{x}}<br>" + _("value = %{y:.5f}")
                          + "<extra></extra>",
        ))
    return go.Figure(data=data, layout=dict(
        title=dict(text=title, y=0.98, yanchor="top"), font=FONT, barmode="group", height=420,
        xaxis=dict(type="category", categoryorder="array", categoryarray=labels,
                   tickvals=ticks[0], ticktext=ticks[1], tickangle=-45),
        yaxis=dict(title=dict(text=_("change of the cosine")), zeroline=True),
        legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
        margin=dict(l=10, r=10, t=130, b=10),
    ))
