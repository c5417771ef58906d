"""Two sentences side by side: one head's weights on the aligned tokens of A and of B (one
sequential scale), and their difference A - B (diverging, 0 in white)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..i18n import _
from .common import (
    COLORBAR_BELOW,
    FONT,
    SCORES_SCALE,
    WEIGHTS_SCALE,
    Grid,
    axis_labels,
    colorbar_below,
    escape,
    label_room,
    tick_labels,
)


def compare_figure(wa: np.ndarray, wb: np.ndarray, diff: np.ndarray, tokens: list[str],
                   titles: tuple[str, str, str], labels: list[str] | None = None,
                   sentence: list[str] | None = None) -> go.Figure:
    """Three [query, key] panels over the m aligned tokens (`tokens`, A's spelling);
    `labels`: their labels in A (Trace.labels: 'saw #2', 'saw #4'), so they carry A's
    numbers; `sentence`: all of A's tokens, so a word A repeats keeps its number on the axes
    when only one of its copies is aligned. The weights' colour bar lies under the two
    weights panels, the difference's under its own."""
    labels = axis_labels(tokens) if labels is None else [escape(lab) for lab in labels]
    g = Grid(rows=1, cols=3, subplot_titles=list(titles), horizontal_spacing=0.07)
    top = max(float(wa.max(initial=0)), float(wb.max(initial=0))) or 1.0
    lim = float(np.abs(diff).max(initial=0)) or 1.0
    tickvals, ticktext = tick_labels(tokens, max_ticks=40, labels=labels, sentence=sentence)
    axis = dict(type="category", categoryorder="array", categoryarray=labels, tickvals=tickvals,
                ticktext=ticktext)
    for c, (m, ca, name) in enumerate(((wa, "coloraxis", _("weight in A")),
                                       (wb, "coloraxis", _("weight in B")),
                                       (diff, "coloraxis2", "A - B")), start=1):
        g.add(dict(type="heatmap", z=np.asarray(m, np.float32), x=labels, y=labels,
                   coloraxis=ca, name=name,
                   hovertemplate=_("query %{y}<br>key %{x}") + f"<br>{name} = %{{z:.5f}}"
                                 "<extra></extra>"), 1, c)
        g.yaxis(1, c).update(autorange="reversed", showticklabels=c == 1, **axis)
        g.xaxis(1, c).update(tickangle=-45, **axis)
    n = len(tokens)
    height = int(max(460, min(640, 20 * n + 200))) + COLORBAR_BELOW
    below = 10 + label_room(ticktext, angle=-45, across=False, titled=False)
    plot = height - 50 - below - COLORBAR_BELOW
    first, second, third = (g.xaxis(1, c)["domain"] for c in (1, 2, 3))
    return g.figure(
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0.0, cmax=top, colorbar=colorbar_below(
            _("weight"), below, plot, x=first[0], length=second[1] - first[0])),
        coloraxis2=dict(colorscale=SCORES_SCALE, cmin=-lim, cmax=lim, colorbar=colorbar_below(
            "A - B", below, plot, x=third[0], length=third[1] - third[0])),
        font=FONT, height=height, margin=dict(l=10, r=20, t=50, b=below + COLORBAR_BELOW),
    )
