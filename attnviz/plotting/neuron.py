"""Inside one score (bertviz's neuron view, continued through the values).

For query i of one head (numbers from `analysis.views.inside_score`):

    q^i ∘ k^j  ->  s_j = sum(q^i ∘ k^j) = q^i · k^j  ->  s_j / sqrt(d)  ->  w_j = softmax_j
    then  w_j v^j  and  o^i = sum_j w_j v^j   (the head's output for token i)

`score_steps` draws the first line (rows = keys j, columns = the d vector components),
`value_steps` the second. Every cell's hover is the exact number; the per-key columns
(scores, scaled, weights) also print their values when there are few keys.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from attnviz.i18n import _

from .common import FONT, SCORES_SCALE, WEIGHTS_SCALE, Grid, axis_labels, tick_labels

TEXT_MAX_KEYS = 40  # print numbers in the per-key columns up to this many keys


def _vec(z: np.ndarray, y: list[str], name: str, fmt: str = ".4f") -> dict:
    """A diverging heatmap [rows, d] of vector components, centred on 0 (a trace dict: the
    figure validates it once, in Grid.figure)."""
    z = np.atleast_2d(np.asarray(z, dtype=np.float32))
    lim = float(np.abs(z).max()) or 1.0
    return dict(
        type="heatmap", z=z, y=y, x=list(range(z.shape[1])), colorscale=SCORES_SCALE,
        zmin=-lim, zmax=lim, showscale=False, name=name,
        hovertemplate=(f"{name}<br>%{{y}}<br>{_('component')} %{{x}}<br>%{{z:{fmt}}}"
                       "<extra></extra>"),
    )


def _col(z: np.ndarray, y: list[str], name: str, scale=SCORES_SCALE, fmt: str = ".4f",
         weights: bool = False) -> dict:
    """One number per key as a one-column heatmap, printed when there are few keys."""
    z = np.asarray(z, dtype=np.float64)[:, None]
    lim = float(np.abs(z).max()) or 1.0
    rng = dict(zmin=0.0, zmax=1.0) if weights else dict(zmin=-lim, zmax=lim)
    return dict(
        type="heatmap", z=z, y=y, x=[name], colorscale=scale, showscale=False, name=name,
        **rng,
        texttemplate=f"%{{z:{fmt}}}" if len(y) <= TEXT_MAX_KEYS else None,
        hovertemplate=f"{name}<br>{_('key')} %{{y}}<br>%{{z:.6f}}<extra></extra>",
    )


MIN_STRIP = 0.06  # the one-row strip's least share of the plot's height


def _row_heights(n: int) -> list[float]:
    """A one-row strip as tall as one key row (at least MIN_STRIP of the plot)."""
    strip = max(MIN_STRIP, 1.0 / (n + 1))
    return [strip, 1.0 - strip]


def _score_grid(n: int, query_label: str) -> Grid:
    return Grid(
        rows=2, cols=5, row_heights=_row_heights(n), vertical_spacing=0.02,
        horizontal_spacing=0.02, column_widths=[0.32, 0.32, 0.12, 0.12, 0.12],
        subplot_titles=[_("query q of {token}").format(token=query_label), "", "", "", ""],
    )


def _value_grid(n: int) -> Grid:
    return Grid(
        rows=2, cols=3, row_heights=_row_heights(n)[::-1], vertical_spacing=0.02,
        horizontal_spacing=0.02, column_widths=[0.12, 0.44, 0.44],
        subplot_titles=[_("weight w<sub>j</sub>"), _("values v<sup>j</sup>"),
                        _("w<sub>j</sub> v<sup>j</sup> (each value scaled by its weight)")],
    )


def prepare_grids() -> int:
    """Lay out both figures' grids for every number of keys at which they differ (1 key up to
    the first whose strip is MIN_STRIP; from there on they are all alike), once per process:
    a number of keys not laid out yet costs a make_subplots call for each, which the page's
    first visitor with a sentence of that length would pay (a class server's warm-up calls
    this). The grids' layouts do not depend on the titles' text (common._grid_layout). Returns
    how many numbers of keys were laid out."""
    last = math.ceil(1.0 / MIN_STRIP) - 1  # 1 / (n + 1) <= MIN_STRIP from here on
    for n in range(1, last + 1):
        _score_grid(n, "q")
        _value_grid(n)
    return last


def score_steps(numbers: dict, tokens: list[str], query: int, indices=None,
                title: str = "") -> go.Figure:
    """q, each k^j, q∘k^j, q·k^j, q·k^j/sqrt(d), softmax: rows = keys j."""
    labels = axis_labels(tokens, indices)
    d, n = numbers["q"].shape[0], len(labels)
    g = _score_grid(n, labels[query])
    g.add(_vec(numbers["q"], [labels[query]], _("query q")), 1, 1)
    g.add(_vec(numbers["keys"], labels, _("key k")), 2, 1)
    g.add(_vec(numbers["products"], labels, "q ∘ k", fmt=".5f"), 2, 2)
    g.add(_col(numbers["scores"], labels, "q·k", fmt=".2f"), 2, 3)
    g.add(_col(numbers["scaled"], labels, "q·k/√d", fmt=".2f"), 2, 4)
    g.add(_col(numbers["weights"], labels, _("weight"), WEIGHTS_SCALE, fmt=".3f", weights=True),
          2, 5)
    for c, name in enumerate([_("keys k<sup>j</sup>"), _("q ∘ k<sup>j</sup> (elementwise)"),
                              _("q·k<sup>j</sup> (sum)"), f"÷ √{d}", "softmax w<sub>j</sub>"], 1):
        g.xaxis(2, c)["title"] = dict(text=name)
    return _finish(g, labels, title, tokens, indices)


def value_steps(numbers: dict, tokens: list[str], query: int, indices=None,
                title: str = "") -> go.Figure:
    """softmax w_j, values v^j, w_j v^j, and their sum o^i (the head's output for the query)."""
    labels = axis_labels(tokens, indices)
    n = len(labels)
    g = _value_grid(n)
    g.add(_col(numbers["weights"], labels, _("weight"), WEIGHTS_SCALE, fmt=".3f", weights=True),
          1, 1)
    g.add(_vec(numbers["values"], labels, _("value v")), 1, 2)
    g.add(_vec(numbers["weighted"], labels, "w v", fmt=".5f"), 1, 3)
    g.add(_vec(numbers["output"], [labels[query]], _("output o")), 2, 3)
    g.xaxis(2, 3)["title"] = dict(text=_(
        "output o = Σ<sub>j</sub> w<sub>j</sub> v<sup>j</sup> of {token} (the column sums "
        "above)").format(token=labels[query]))
    return _finish(g, labels, title, tokens, indices)


def _finish(g: Grid, labels: list[str], title: str, tokens: list[str],
            indices=None) -> go.Figure:
    """The axes every panel shares, then the figure, validated once. A repeated token keeps
    its number on the axis ('saw #2', 'saw #4'), a token seen once shows bare; past 50 tokens
    every k-th is named with its number (common.tick_labels)."""
    n = len(labels)
    tickvals, ticktext = tick_labels(tokens, max_ticks=50, indices=indices, labels=labels)
    for r in range(1, g.rows + 1):
        for c in range(1, g.cols + 1):
            g.yaxis(r, c).update(type="category", autorange="reversed",
                                 showticklabels=(c == 1), tickvals=tickvals, ticktext=ticktext)
            g.xaxis(r, c)["showticklabels"] = False
    # on a phone (ui.phone_layout) the steps flow into lines, in their order
    return g.figure(title=title, font=FONT, height=int(min(1600, max(380, 24 * n + 190))),
                    margin=dict(l=10, r=10, t=80, b=10), meta=dict(phone_layout="equation"))
