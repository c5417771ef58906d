"""Figures of the "I saw a saw" lesson (the lecture's example): tags, receptive fields,
scores, cosines.

Every word label is HTML-escaped and made unique by position ('saw #1', 'saw #3'), so the
two saws never merge on a categorical axis. `big=True` is the projector size (large type).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .common import FONT, Grid, axis_labels, escape

RIGHT, WRONG, NEUTRAL = "#c8efd4", "#f7c6c5", "#eef1f6"
HIDDEN = "?"  # a tag the class predicts before it is revealed
METRICS = (("overall", "all words"), ("ambiguous", "ambiguous words"),
           ("double_role", "double-role words"))


def _font(big: bool) -> dict:
    return dict(FONT, size=22 if big else 14)


def projector(fig: go.Figure, big: bool) -> go.Figure:
    """Any figure in projector size: larger type everywhere when `big`."""
    if big:  # plain assignments: update_annotations re-dispatches the layout per annotation
        fig.layout.font = _font(True)
        for note in fig.layout.annotations:
            note.font.size = 20
    return fig


def tag_table(words: Sequence[str], rows: Mapping[str, Sequence[str]],
              gold: Sequence[str] | None = None, big: bool = False,
              title: str | None = None) -> go.Figure:
    """A table: one column per word, one row per tagger; green = gold tag, red = wrong.

    `rows` maps a tagger's name to its tags; `gold` (when known) is shown as the first row.
    A tag "?" (HIDDEN) is not revealed yet and stays grey.
    """
    labels = ["", *[escape(w) for w in words]]
    names = (["gold"] if gold is not None else []) + list(rows)
    tag_rows = ([list(gold)] if gold is not None else []) + [list(t) for t in rows.values()]
    cells = [[escape(n) for n in names]] + [[r[i] for r in tag_rows] for i in range(len(words))]
    colours = [[NEUTRAL] * len(names)]
    for i in range(len(words)):
        col = []
        for r in tag_rows:
            if gold is None or r[i] == HIDDEN or gold[i] == HIDDEN:
                col.append(NEUTRAL)
            else:
                col.append(RIGHT if r[i] == gold[i] else WRONG)
        colours.append(col)
    size = 22 if big else 14
    return go.Figure(data=[dict(
        type="table", columnwidth=[2.6] + [1] * len(words),
        header=dict(values=labels, fill_color="#dde3ee", font=dict(size=size, weight="bold"),
                    height=int(size * 2.2)),
        cells=dict(values=cells, fill_color=colours, font=dict(size=size),
                   height=int(size * 2.1), align=["left"] + ["center"] * len(words)),
    )], layout=dict(
        title=title, font=_font(big), margin=dict(l=5, r=5, t=40 if title else 5, b=5),
        height=int(size * 2.2 * (len(names) + 1) + (60 if title else 20))))


def receptive_field(words: Sequence[str], fields: Mapping[str, np.ndarray],
                    big: bool = False) -> go.Figure:
    """Side by side: which words (columns) each word's tag (rows) can depend on."""
    labels = axis_labels(list(words))
    text = [escape(w) for w in words]
    g = Grid(rows=1, cols=len(fields), subplot_titles=list(fields), horizontal_spacing=0.06)
    for c, (name, mask) in enumerate(fields.items(), start=1):
        g.add(dict(
            type="heatmap", z=np.asarray(mask, dtype=np.float32), x=labels, y=labels, zmin=0,
            zmax=1, colorscale=[[0, "#f4f4f4"], [1, "#2f6fb0"]], showscale=False, xgap=2,
            ygap=2,
            hovertemplate="tag of %{y}<br>sees %{x}: %{z}<extra>" + escape(name) + "</extra>",
        ), 1, c)
        g.yaxis(1, c).update(type="category", autorange="reversed", ticktext=text,
                             tickvals=labels, showticklabels=(c == 1))
        g.xaxis(1, c).update(type="category", ticktext=text, tickvals=labels)
    for note in g.layout.get("annotations", []):  # the panel titles
        note["font"] = {**note.get("font", {}), "size": 22 if big else 14}
    return g.figure(font=_font(big), height=460 if big else 340,
                    title="What each word's tag can see (row: the word tagged; blue: the words "
                          "it sees)", margin=dict(l=10, r=10, t=80, b=10))


def accuracy_bars(scores: Mapping[str, object], baseline: float | None = None,
                  big: bool = False) -> go.Figure:
    """Held-out accuracy of each tagger (grouped: all / ambiguous / double-role words).

    `scores` maps a tagger's name to an object with .overall, .ambiguous, .double_role.
    `baseline` is drawn as a dashed line: the best a one-tag-per-word tagger can do on the
    ambiguous words.
    """
    names = list(scores)
    x = [escape(n) for n in names]
    data = []
    for attr, label in METRICS:
        vals = [100 * float(getattr(scores[n], attr)) for n in names]
        data.append(dict(type="bar", x=x, y=vals, name=label,
                         text=[f"{v:.1f}%" for v in vals], textposition="outside",
                         hovertemplate="%{x}<br>" + label + ": %{y:.2f}%<extra></extra>"))
    if baseline is not None:
        data.append(dict(
            type="scatter", x=x, y=[100 * baseline] * len(names), mode="lines",
            line=dict(dash="dash", color="#444", width=2),
            name=f"best one-tag-per-word, ambiguous words ({100 * baseline:.1f}%)",
            hovertemplate="one tag per word form: at most %{y:.2f}% on ambiguous words"
                          "<extra></extra>"))
    return go.Figure(data=data, layout=dict(
        barmode="group", font=_font(big), height=520 if big else 400,
        yaxis=dict(title=dict(text="held-out accuracy (%)"), range=[0, 112]),
        legend=dict(orientation="h", y=1.12), margin=dict(l=10, r=10, t=40, b=10),
        uniformtext=dict(minsize=10)))


def cosine_by_layer(curves: Mapping[str, np.ndarray], word: str, big: bool = False,
                    pair: tuple[int, int] | None = None) -> go.Figure:
    """cos(first copy, second copy) of `word` after each layer, one line per condition.

    `pair` (token positions of the two copies) is named in the title when given.
    """
    data = []
    for name, cos in curves.items():
        cos = np.asarray(cos, dtype=np.float64)
        data.append(dict(
            type="scatter", x=list(range(len(cos))), y=cos, mode="lines+markers+text",
            name=escape(name), text=[""] * (len(cos) - 1) + [f"{cos[-1]:.3f}"],
            textposition="middle right",
            hovertemplate="after layer %{x}<br>cosine %{y:.6f}<extra>" + escape(name) + "</extra>",
        ))
    n = max(len(c) for c in curves.values())
    low = min(float(np.min(c)) for c in curves.values())
    low = min(0.9, low - 0.1 * (1.0 - low) - 0.02)
    return go.Figure(data=data, layout=dict(
        font=_font(big), height=480 if big else 380, margin=dict(l=10, r=10, t=50, b=10),
        title=(f"cosine of '{escape(word)}' #{pair[0]} and '{escape(word)}' #{pair[1]}"
               if pair else f"cosine of the two '{escape(word)}' vectors") + ", layer by layer",
        xaxis=dict(title=dict(text="layer (0 = embeddings)"), tickmode="array",
                   tickvals=list(range(n)), range=[-0.3, n - 0.2]),
        yaxis=dict(title=dict(text="cosine similarity (1 = same direction)"),
                   range=[low, 1.02]),
        legend=dict(orientation="h", y=-0.2),
    ))


def loss_curves(losses: Mapping[str, Sequence[float]], big: bool = False) -> go.Figure:
    """Mean training loss (cross-entropy) per epoch for each tagger."""
    return go.Figure(
        data=[dict(type="scatter", x=list(range(1, len(ls) + 1)), y=list(ls),
                   mode="lines+markers", name=escape(name)) for name, ls in losses.items()],
        layout=dict(font=_font(big), height=360, margin=dict(l=10, r=10, t=40, b=10),
                    title="training loss per epoch", xaxis=dict(title=dict(text="epoch")),
                    yaxis=dict(title=dict(text="cross-entropy")),
                    legend=dict(orientation="h", y=-0.25)))
