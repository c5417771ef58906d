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
ROOM = 1.5  # the x axis reaches this times the largest count
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
    size = 18 if big else 13
    fig = go.Figure(go.Bar(
        x=list(counts), y=list(range(len(counts))), orientation="h", text=text,
        # big: each count after its bar, at full size (Plotly shrinks a text set inside a bar
        # to the bar's width)
        textposition="outside" if big else "auto", constraintext="none" if big else "both",
        textfont=dict(size=size) if big else None, cliponaxis=False, marker=dict(
            color=[RIGHT if k == right else OTHER for k in range(len(counts))],
            line=dict(color=MINE_LINE, width=[4 if k == mine else 0
                                              for k in range(len(counts))])),
        hovertemplate="%{customdata}: %{x}<extra></extra>", customdata=names))
    fig.update_layout(  # big: the projector's left column, under the question (one screen):
        # bars 34 px apart, no x axis (each bar writes its count)
        title=dict(text=_("The room's answers ({n})").format(n=total), font=dict(size=size + 2)),
        height=(36 + 34 * len(counts)) if big else max(150, 70 + 48 * len(counts)),
        margin=dict(l=10, r=10, t=32 if big else 45, b=4 if big else 30),
        font=dict(size=size), showlegend=False, bargap=0.2 if big else 0.25)
    fig.update_yaxes(tickvals=list(range(len(counts))), ticktext=names, autorange="reversed",
                     automargin=True, tickfont=dict(size=size))
    most = max(counts, default=0) or 1
    # room right of the longest bar for a short bar's count written after it ("2 (40%)"): a
    # phone's plot area is a third of its width once the choices' names are drawn
    fig.update_xaxes(title=None if big else _("answers"), range=[0, most * ROOM],
                     dtick=max(1, most // 5), visible=not big)
    return fig
