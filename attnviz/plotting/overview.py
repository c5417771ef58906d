"""All heads at once (after bertviz's model view), drawn as ONE mosaic heatmap, plus the
enlarged single head with exact values.

The mosaic tiles every [query, key] weight matrix W_l,h by layer (rows) and head (columns),
with two aggregate margins that users ask for (bertviz #111):

    column "mean": (1/H) sum_h W_l,h        (the heads of one layer)
    row "mean":    (1/L) sum_l W_l,h        (one head position over all layers)
    corner:        (1/LH) sum_l,h W_l,h

Long inputs are max-pooled into blocks of f x f tokens (f = ceil(n / max_cells)) so the
figure stays small (at 512 tokens, 7 x 13 tiles of 64 x 64 floats ~ 2 MB of JSON instead of
~75 MB); the hover then says "block max". One heatmap draws far faster in a browser than
72 subplots. The single-head view (`heatmaps.attention_heatmap`) always shows every value exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from attnviz.i18n import gettext  # `_` is a throwaway name in this module

from .common import (
    COLORBAR_BELOW,
    FONT,
    OKABE_ITO,
    WEIGHTS_SCALE,
    axis_labels,
    block_reduce,
    label_room,
)

_TILE_NUMBER = r"[^\d·]*(\d+)[^\d·]* ·"  # the number in a cell name's tile part
MOSAIC_TICK_SIZE = 10  # px, the head numbers across the top: 13 fit a phone's ~270 px unslanted
MOSAIC_BAR_GAP = 56  # px from the mosaic's top to its colour bar: head numbers, bar's ticks
MOSAIC_TOP = 90 + MOSAIC_BAR_GAP + COLORBAR_BELOW  # px above the mosaic: title, numbers, bar
OPEN_COLOUR = OKABE_ITO[3]  # vermillion: the open head's outline, seen on every Viridis shade


def _axis_labels(n: int, factor: int, tokens: list[str], indices) -> list[str]:
    """Unique per-cell labels of one tile side: 'saw #4' or '#8-15' for a block."""
    if factor == 1:
        return axis_labels(tokens, indices)
    starts = range(0, n, factor)
    return [f"#{indices[s]}-{indices[min(s + factor, n) - 1]}" for s in starts]


def mosaic_height(n_layers: int) -> int:
    """The mosaic figure's height in px: 70 px a row of tiles (the mean row included), between
    420 and 1100 px for the rows, plus its title, colour bar and head numbers."""
    return int(min(1100, max(420, 70 * (n_layers + 1) + 140))) + MOSAIC_TOP - 90


def mosaic_cells(n_layers: int, most: int = 64) -> int:
    """Cells a tile side may have (overview_mosaic's max_cells) so that a cell is at least one
    screen pixel tall: the tiles are square and the rows share the plot's height, so a
    30-layer decoder's tiles are ~32 px. More cells than pixels and the browser draws only some
    of them (nearest-neighbour scaling): a one-cell column such as each head's sink column
    would show in some tiles and vanish from others."""
    plot = mosaic_height(n_layers) - MOSAIC_TOP - 10
    return max(8, min(most, plot // (n_layers + 1) - 1))


def overview_mosaic(
    weights: np.ndarray,
    means: dict[str, np.ndarray],
    tokens: list[str],
    indices: list[int] | None = None,
    max_cells: int = 64,
    title: str | None = None,
) -> go.Figure:
    """Every layer x head of weights [L, H, n, n] as one heatmap, with the mean margins
    `means` (analysis.views.mean_maps: "layers" [L, n, n], "heads" [H, n, n], "all" [n, n]).

    `indices` are the tokens' places in the sentence (when special tokens are hidden).
    """
    w = np.asarray(weights, dtype=np.float32)
    _, factor = block_reduce(means["all"], max_cells)
    tiles = MosaicTiles(
        heads=np.stack([np.stack([block_reduce(m, max_cells)[0] for m in layer]) for layer in w]),
        layer_means=np.stack([block_reduce(m, max_cells)[0] for m in means["layers"]]),
        head_means=np.stack([block_reduce(m, max_cells)[0] for m in means["heads"]]),
        grand=block_reduce(means["all"], max_cells)[0], factor=factor, n=w.shape[-1])
    return tiled_mosaic(tiles, tokens, indices, title)


@dataclass(frozen=True)
class MosaicTiles:
    """What the mosaic draws: each head's weights and the mean margins, each max-pooled into
    blocks of factor x factor tokens (factor 1: the weights themselves), c x c cells a tile."""

    heads: np.ndarray  # [L, H, c, c]
    layer_means: np.ndarray  # [L, c, c]  pooled (1/H) sum_h W_l,h
    head_means: np.ndarray  # [H, c, c]  pooled (1/L) sum_l W_l,h
    grand: np.ndarray  # [c, c]  pooled (1/LH) sum_l,h W_l,h
    factor: int
    n: int  # tokens per tile side before pooling


def streamed_tiles(layers: Iterable[np.ndarray], max_cells: int = 64) -> MosaicTiles:
    """MosaicTiles from weights given one layer at a time ([H, n, n] each, e.g.
    Trace.layer_weights of a trace that does not hold its weights): the same numbers as
    overview_mosaic's from the whole [L, H, n, n], with one layer and the running sum over
    layers [H, n, n] held at once."""
    heads, layer_means, total, count = [], [], None, 0
    for w in layers:
        w = np.asarray(w, dtype=np.float32)
        heads.append(np.stack([block_reduce(m, max_cells)[0] for m in w]))
        layer_means.append(block_reduce(w.mean(axis=0), max_cells)[0])
        total = w.copy() if total is None else np.add(total, w, out=total)
        count += 1
    if total is None:
        raise ValueError("no layers to draw")
    total /= np.float32(count)  # [H, n, n]: each head's mean over the layers
    grand, factor = block_reduce(total.mean(axis=0), max_cells)
    return MosaicTiles(heads=np.stack(heads), layer_means=np.stack(layer_means),
                       head_means=np.stack([block_reduce(m, max_cells)[0] for m in total]),
                       grand=grand, factor=factor, n=total.shape[-1])


def tiled_mosaic(tiles: MosaicTiles, tokens: list[str], indices: list[int] | None = None,
                 title: str | None = None) -> go.Figure:
    """The mosaic figure of pooled tiles (overview_mosaic, streamed_tiles)."""
    L, H = tiles.heads.shape[:2]
    n, factor = tiles.n, tiles.factor
    indices = list(range(n)) if indices is None else [int(p) for p in indices]
    c = tiles.grand.shape[0]  # cells per tile side
    step = c + 1  # one blank cell between tiles
    z = np.full(((L + 1) * step - 1, (H + 1) * step - 1), np.nan, dtype=np.float32)

    def put(row: int, col: int, m: np.ndarray) -> None:
        z[row * step:row * step + c, col * step:col * step + c] = m

    for layer in range(L):
        for head in range(H):
            put(layer, head, tiles.heads[layer, head])
        put(layer, H, tiles.layer_means[layer])
    for head in range(H):
        put(L, head, tiles.head_means[head])
    put(L, H, tiles.grand)

    q_side = _axis_labels(n, factor, tokens, indices)
    k_side = _axis_labels(n, factor, tokens, indices)
    x, y = [], []
    for col in range(H + 1):
        name = (gettext("head {head}").format(head=col) if col < H
                else gettext("mean of heads"))
        x += [gettext("{name} · key {key}").format(name=name, key=lab) for lab in k_side] + (
            [f"gap {col}"] if col < H else [])
    for row in range(L + 1):
        name = (gettext("layer {layer}").format(layer=row) if row < L
                else gettext("mean of layers"))
        y += [gettext("{name} · query {query}").format(name=name, query=lab) for lab in q_side] + (
            [f"gap {row}"] if row < L else [])
    value = gettext("weight") if factor == 1 else gettext("block max")
    mid = c // 2
    # Plotly cannot select heatmap cells, so each tile gets a clickable point at its centre
    # (Streamlit's on_select reports it; `pick_head` reads its layer and head). The point is
    # invisible and large, so it covers nothing of the tile and a click near the centre hits.
    cx = [x[i * step + mid] for i in range(H + 1)]
    cy = [y[i * step + mid] for i in range(L + 1)]
    height = mosaic_height(L)
    plot = height - MOSAIC_TOP - 10
    heat = dict(
        type="heatmap", z=z, x=x, y=y, colorscale=WEIGHTS_SCALE, zmin=0.0, zmax=1.0,
        hoverongaps=False, hovertemplate=f"%{{y}}<br>%{{x}}<br>{value} = %{{z:.4f}}<extra></extra>",
        # horizontal, above the head numbers: beside the mosaic it squeezed a phone's tiles
        # to ~10 px (their numbers overlapped) and its top tick sat on its title
        colorbar=dict(title=dict(text=gettext("weights"), side="top"), orientation="h",
                      thickness=12, len=0.6, lenmode="fraction", x=0.0, xanchor="left",
                      xref="paper", y=1 + MOSAIC_BAR_GAP / plot, yanchor="bottom",
                      yref="paper", ypad=0),
    )
    points = dict(
        type="scatter", x=[a for _ in cy for a in cx], y=[b for b in cy for _ in cx],
        mode="markers", marker=dict(size=22, symbol="square", color="rgba(0,0,0,0)", opacity=0),
        customdata=[gettext("layer {layer}").format(layer=r) if r < L
                    else gettext("mean of layers") for r in range(L + 1) for _ in range(H + 1)],
        text=[gettext("head {head}").format(head=h) if h < H else gettext("mean of heads")
              for _ in range(L + 1) for h in range(H + 1)],
        hovertemplate=gettext("%{customdata}, %{text}: click to open") + "<extra></extra>",
        showlegend=False, name="open",
    )
    rows = [gettext("layer {layer}").format(layer=i) for i in range(L)] + [gettext("mean")]
    title = title or gettext(
        "Layers x heads: softmax weights (in each tile rows = queries, columns = keys)")
    if factor > 1:
        title = gettext("{title} (blocks of {factor}x{factor} tokens, max)").format(
            title=title, factor=factor)
    return go.Figure(data=[heat, points], layout=dict(
        xaxis=dict(type="category", categoryorder="array", categoryarray=x, tickvals=cx,
                   ticktext=[str(h) for h in range(H)] + [gettext("mean")], side="top",
                   showgrid=False, tickangle=0, tickfont=dict(size=MOSAIC_TICK_SIZE)),
        yaxis=dict(type="category", categoryorder="array", categoryarray=y, tickvals=cy,
                   ticktext=rows, autorange="reversed", showgrid=False, scaleanchor="x",
                   constrain="domain", constraintoward="top"),
        title=title, font=FONT,
        height=height,
        # Room for the row labels up front (drawn once, not twice); the title, the colour bar
        # and the head numbers above the mosaic
        margin=dict(l=10 + label_room(rows, titled=False), r=10, t=MOSAIC_TOP, b=10),
        clickmode="event+select",
        meta=dict(tile=c, step=step, layers=L, heads=H, tokens=n),  # read by mark_head
    ))


def mark_head(fig: go.Figure, layer: int, head: int, colour: str = OPEN_COLOUR) -> go.Figure:
    """A copy of an overview_mosaic figure with the tile of (layer, head) outlined: the head
    the page has open. On a category axis a shape's x is the category's index, so the tile
    spans indices [head * step, head * step + tile) (step = tile + the blank gap)."""
    meta = fig.layout.meta
    c, step = int(meta["tile"]), int(meta["step"])
    if not (0 <= layer < int(meta["layers"]) and 0 <= head < int(meta["heads"])):
        raise ValueError(f"no tile for layer {layer}, head {head}")
    d = fig.to_dict()
    shape = dict(type="rect", xref="x", yref="y", x0=head * step - 0.5,
                 x1=head * step + c - 0.5, y0=layer * step - 0.5, y1=layer * step + c - 0.5,
                 line=dict(color=colour, width=3), fillcolor="rgba(0,0,0,0)",
                 name=gettext("open: layer {layer}, head {head}").format(layer=layer, head=head))
    layout = {k: v for k, v in d["layout"].items() if k != "template"}
    return go.Figure(data=d["data"],
                     layout={**layout, "shapes": [*layout.get("shapes", ()), shape]})


def pick_head(point: dict) -> tuple[int | None, int | None]:
    """(layer, head) of a clicked mosaic cell; None on a 'mean' margin. A cell's name starts
    with its tile's name, the one number before " ·" in either language ('layer 3 · query
    saw #2', '第 3 层 · 查询 saw #2'; 'mean of layers · ...' has none)."""
    ly = re.match(_TILE_NUMBER, str(point.get("y", "")))
    hx = re.match(_TILE_NUMBER, str(point.get("x", "")))
    return (int(ly.group(1)) if ly else None, int(hx.group(1)) if hx else None)
