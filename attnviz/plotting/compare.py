"""Two sentences side by side: one head's weights on the aligned tokens of A and of B (one
sequential scale), and their difference A - B (diverging, 0 in white)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..i18n import _
from .common import FONT, SCORES_SCALE, WEIGHTS_SCALE, Grid, escape


def compare_figure(wa: np.ndarray, wb: np.ndarray, diff: np.ndarray, tokens: list[str],
                   titles: tuple[str, str, str]) -> go.Figure:
    """Three [query, key] panels over the m aligned tokens (`tokens`, A's spelling)."""
    labels = [f"{escape(t)} ·{k}" for k, t in enumerate(tokens)]  # unique per aligned slot
    g = Grid(rows=1, cols=3, subplot_titles=list(titles), horizontal_spacing=0.07)
    top = max(float(wa.max(initial=0)), float(wb.max(initial=0))) or 1.0
    lim = float(np.abs(diff).max(initial=0)) or 1.0
    axis = dict(type="category", categoryorder="array", categoryarray=labels, tickvals=labels,
                ticktext=[escape(t) for t in tokens])
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
    return g.figure(
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0.0, cmax=top,
                       colorbar=dict(title=dict(text=_("weight")), thickness=12, x=1.0, len=0.42,
                                     y=0.78)),
        coloraxis2=dict(colorscale=SCORES_SCALE, cmin=-lim, cmax=lim,
                        colorbar=dict(title=dict(text="A - B"), thickness=12, x=1.0, len=0.42,
                                      y=0.22)),
        font=FONT, height=int(max(460, min(640, 20 * n + 200))),
        margin=dict(l=10, r=60, t=50, b=10),
    )
