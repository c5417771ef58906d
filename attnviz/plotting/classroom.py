"""The room's answers to one question (class mode, peer instruction): one horizontal bar per
choice with its count, the right choice in green and marked, the viewer's own choice marked.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import plotly.graph_objects as go

from ..i18n import _
from .common import NEUTRAL, OKABE_ITO

RIGHT = OKABE_ITO[2]  # the palette's bluish green
OTHER = NEUTRAL
MINE_LINE = OKABE_ITO[1]  # orange: an outline that reads on the bars and on either theme


def answers_histogram(labels: Sequence[str], counts: Sequence[int], right: int | None,
                      mine: int | None = None, big: bool = False) -> go.Figure:
    """Bars of `counts` (one per choice, `labels` in order, top to bottom); the `right`
    choice green and marked "✓", the viewer's choice `mine` outlined and marked."""
    if len(labels) != len(counts):
        raise ValueError("one count per choice")
    names = []
    for k, label in enumerate(labels):
        name = html.escape(label)
        if k == right:
            name = "✓ " + name
        if k == mine:
            name += " " + _("(your answer)")
        names.append(name)
    total = sum(counts)
    text = [f"{n} ({100 * n / total:.0f}%)" if total else "0" for n in counts]
    fig = go.Figure(go.Bar(
        x=list(counts), y=list(range(len(counts))), orientation="h", text=text,
        textposition="auto", marker=dict(
            color=[RIGHT if k == right else OTHER for k in range(len(counts))],
            line=dict(color=MINE_LINE, width=[4 if k == mine else 0
                                              for k in range(len(counts))])),
        hovertemplate="%{customdata}: %{x}<extra></extra>", customdata=names))
    size = 18 if big else 13
    fig.update_layout(  # big: the projector's left column, under the question (one screen)
        title=dict(text=_("The room's answers ({n})").format(n=total), font=dict(size=size + 2)),
        height=(60 + 44 * len(counts)) if big else max(150, 70 + 48 * len(counts)),
        margin=dict(l=10, r=10, t=40 if big else 45, b=10 if big else 30),
        font=dict(size=size), showlegend=False, bargap=0.25)
    fig.update_yaxes(tickvals=list(range(len(counts))), ticktext=names, autorange="reversed",
                     automargin=True, tickfont=dict(size=size))
    fig.update_xaxes(title=None if big else _("answers"), rangemode="tozero",
                     dtick=max(1, max(counts, default=1) // 5))
    return fig
