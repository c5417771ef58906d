"""The notebook views' figures (attnviz.head_view / model_view), one self-contained Plotly
figure each, interactive without Python (a layer menu, a legend to hide heads), so a saved
HTML file works offline.

- `layer_lines`: bertviz's head view. Queries on the left, keys on the right (they may be
  different tokens: cross-attention's decoder rows and encoder columns); one line per
  (query, key) pair drawn with opacity W_ij, as bertviz draws it, a colour per head, a menu to
  pick the layer. Plotly gives one opacity per trace, so the lines of a head are grouped by
  their weight rounded to the nearest 1/`levels` (opacity off by at most 1/(2 levels)); a
  pair whose weight rounds to 0 (opacity 0, invisible) is not drawn, nor one below
  `min_weight` (default 0: none). A note under the figure says both. More levels: finer
  opacities, more lines and a larger figure (bench_attribution measures both at 512
  tokens); pass more for short inputs.
- `mosaic`: bertviz's model view. Every layer (rows) x head (columns) weight matrix as tiles
  of one heatmap; inputs longer than `max_cells` tokens are max-pooled into blocks.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ..i18n import _
from .common import (
    FONT,
    NEUTRAL,
    WEIGHTS_SCALE,
    axis_labels,
    block_reduce,
    category_colour,
    escape,
    tick_labels,
)


def line_levels(w: np.ndarray, levels: int) -> np.ndarray:
    """The opacity level of each weight: round(W_ij * levels), an int in 0..levels; the line
    is drawn with opacity level / levels."""
    return np.clip(np.rint(np.asarray(w, dtype=np.float64) * levels), 0, levels).astype(int)


def _lines_of(w: np.ndarray, min_weight: float, levels: int):
    """(level, x, y) polylines for one head's [m, n] weights: x in {0, 1}, y = row / column."""
    all_levels = line_levels(w, levels)
    qi, kj = np.nonzero((all_levels >= 1) & (w >= min_weight))
    level = all_levels[qi, kj]
    for lv in range(1, levels + 1):
        sel = level == lv
        if sel.any():
            xs = np.tile([0.0, 1.0, np.nan], int(sel.sum()))
            ys = np.column_stack([qi[sel], kj[sel], np.full(sel.sum(), np.nan)]).ravel()
            yield lv, xs, ys


def layer_lines(weights: np.ndarray, query_tokens: list[str], key_tokens: list[str],
                layer: int = 0, heads: list[int] | None = None, min_weight: float = 0.0,
                levels: int = 20, title: str = "") -> go.Figure:
    """Token lines for weights [layers, heads, m, n], one layer shown at a time (a menu picks
    it), the heads `heads` (default all) in distinct colours.

    A line's opacity is round(W_ij * levels) / levels (bertviz: W_ij); pairs whose level is 0
    or whose weight is below `min_weight` are not drawn.
    """
    if levels < 1:
        raise ValueError("levels must be at least 1")
    L, H, m, n = weights.shape
    heads = list(range(H)) if heads is None else [int(h) for h in heads]
    if not 0 <= layer < L or any(not 0 <= h < H for h in heads):
        raise ValueError(f"layer must be 0..{L - 1} and heads 0..{H - 1}")
    span = max(m, n)
    # rows of the shorter side are spread over the same height as the longer one
    y_q, y_k = np.linspace(0, span - 1, m) if m > 1 else np.zeros(1), (
        np.linspace(0, span - 1, n) if n > 1 else np.zeros(1))
    data: list[dict] = []
    owner: list[int] = []  # the layer of each trace (-1: always shown)
    for li in range(L):
        for idx, h in enumerate(heads):
            colour, head_name = category_colour(idx), _("head {head}").format(head=h)
            w = np.asarray(weights[li, h], dtype=np.float64)
            for lv, xs, ys in _lines_of(w, min_weight, levels):
                ys = ys.copy()
                ys[0::3] = y_q[ys[0::3].astype(int)]
                ys[1::3] = y_k[ys[1::3].astype(int)]
                xs, ys = xs.astype(np.float32), ys.astype(np.float32)  # half the bytes
                data.append(dict(type="scatter", x=xs, y=ys, mode="lines", hoverinfo="skip",
                                 line=dict(color=colour, width=2), legendgroup=f"h{h}",
                                 opacity=lv / levels, showlegend=False,
                                 visible=li == layer, name=head_name))
                owner.append(li)
    for idx, h in enumerate(heads):  # one legend entry per head: click to hide its lines
        data.append(dict(type="scatter", x=[None], y=[None], mode="lines",
                         name=_("head {head}").format(head=h),
                         legendgroup=f"h{h}", line=dict(color=category_colour(idx),
                                                        width=4)))
        owner.append(-1)
    for side, x, ys, toks, pos in ((_("query"), 0.0, y_q, query_tokens, "middle left"),
                                   (_("key"), 1.0, y_k, key_tokens, "middle right")):
        data.append(dict(type="scatter", x=[x] * len(toks), y=ys, mode="markers+text",
                         # a repeated word's places told apart (saw #2, saw #4), others bare
                         text=tick_labels(toks, max_ticks=max(1, len(toks)))[1],
                         textposition=pos, showlegend=False,
                         marker=dict(size=5, color=NEUTRAL), customdata=axis_labels(toks),
                         hovertemplate=f"{side} %{{customdata}}<extra></extra>"))
        owner.append(-1)
    buttons = [dict(label=_("layer {layer}").format(layer=li), method="restyle",
                    args=[{"visible": [o in (-1, li) for o in owner]}]) for li in range(L)]
    height = int(min(2400, max(360, 22 * span + 140)))
    note = _("Line opacity = attention weight, rounded to the nearest {step:g}; pairs under "
             "{cut:g} are not drawn.").format(step=1 / levels,
                                               cut=max(0.5 / levels, min_weight))
    return go.Figure(data=data, layout=dict(
        title=title, font=FONT, height=height, hovermode="closest",
        annotations=[dict(text=escape(note), xref="paper", yref="paper", x=0, y=0,
                          xanchor="left", yanchor="top", yshift=-6, showarrow=False)],
        xaxis=dict(visible=False, range=[-0.6, 1.6]),
        yaxis=dict(visible=False, autorange="reversed"),
        margin=dict(l=10, r=10, t=70, b=40),
        legend=dict(orientation="h", y=1.0, x=1.0, xanchor="right", yanchor="bottom"),
        updatemenus=[dict(buttons=buttons, active=layer, x=0.0, y=1.0, xanchor="left",
                          yanchor="bottom", direction="down", showactive=True)],
    ))


def mosaic(weights: np.ndarray, query_tokens: list[str], key_tokens: list[str],
           max_cells: int = 48, title: str = "") -> go.Figure:
    """Every layer x head of weights [layers, heads, m, n] as tiles of one heatmap (rows =
    layers, columns = heads), one blank cell between tiles. The hover names the layer, head,
    query and key (a block of tokens when pooled)."""
    L, H, m, n = weights.shape
    tiles = [[block_reduce(np.asarray(weights[li, h], dtype=np.float32), max_cells)[0]
              for h in range(H)] for li in range(L)]
    r, c = tiles[0][0].shape
    fr, fc = -(-m // r), -(-n // c)
    z = np.full((L * (r + 1) - 1, H * (c + 1) - 1), np.nan, dtype=np.float32)
    for li in range(L):
        for h in range(H):
            z[li * (r + 1):li * (r + 1) + r, h * (c + 1):h * (c + 1) + c] = tiles[li][h]

    def names(toks: list[str], f: int, count: int) -> list[str]:
        if f == 1:
            return axis_labels(toks)
        return [f"#{s}-{min(s + f, len(toks)) - 1}" for s in range(0, len(toks), f)][:count]

    q_names, k_names = names(query_tokens, fr, r), names(key_tokens, fc, c)
    row, col = _("layer {layer} · query {query}"), _("head {head} · key {key}")
    ys = [row.format(layer=li, query=q) if q is not None else f"· {i}"
          for i, (li, q) in enumerate((li, q) for li in range(L) for q in [*q_names, None])][:-1]
    xs = [col.format(head=h, key=k) if k is not None else f"· {i}"
          for i, (h, k) in enumerate((h, k) for h in range(H) for k in [*k_names, None])][:-1]
    size = max(360, min(1600, 14 * z.shape[1] + 120))
    return go.Figure(
        data=[dict(type="heatmap", z=z, x=xs, y=ys, colorscale=WEIGHTS_SCALE, zmin=0, zmax=1,
                   hovertemplate="%{y}<br>%{x}<br>" + _("weight") + " = %{z:.4f}<extra></extra>",
                   colorbar=dict(title=dict(text=_("weight")), thickness=12))],
        layout=dict(
            title=title, font=FONT, height=int(max(360, min(1600, size * z.shape[0]
                                                            / z.shape[1] + 120))),
            xaxis=dict(type="category", tickvals=[xs[h * (c + 1) + c // 2] for h in range(H)],
                       ticktext=[_("head {head}").format(head=h) for h in range(H)], side="top"),
            yaxis=dict(type="category", autorange="reversed",
                       tickvals=[ys[li * (r + 1) + r // 2] for li in range(L)],
                       ticktext=[_("layer {layer}").format(layer=li) for li in range(L)]),
            margin=dict(l=10, r=10, t=70, b=10),
        ),
    )
