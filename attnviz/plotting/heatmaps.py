"""Attention matrices as heatmaps: rows = queries (who looks), columns = keys (looked at)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.i18n import N_, _

from .common import (
    COLORBAR_BELOW,
    FONT,
    SCORES_SCALE,
    WEIGHTS_SCALE,
    axis_labels,
    block_reduce,
    colorbar_below,
    colorbar_room,
    label_room,
    tick_labels,
)

MAX_X_TICKS = 30  # slanted key labels of one head's heatmap
SQUARE_FROM = 40  # tokens from which one head's heatmap keeps square cells
LONG_TICKS = 24  # row labels of one head's heatmap past SQUARE_FROM tokens
LONG_X_TICKS = 16  # its slanted column labels (on a phone's ~360 px plot, 22 px apart)
LONG_HEIGHT = 780  # px, its most past SQUARE_FROM: on a phone the square plot is ~360 px
GRID_TICKS = 12  # token labels per panel of a heads grid past 24 tokens
GRID_X_TICKS = 28  # upright token labels along a heads grid's bottom, all panels together
GRID_PANEL_X_TICKS = 6  # at most, under one panel: a phone's ~65 px panel fits 6 upright ones
GRID_X_SIZE = 10  # px, those labels' text: one line (~12 px) per ~11 px cell on a phone
PANEL_GAPS = (0.13, 0.2)  # blank cells between a heads grid's panels, across / down, per cell
PANEL_MARK = "\u200b"  # zero-width space: marks a heads grid's categories per panel column/row

KINDS = {
    "scores": dict(title=N_("Q·K similarity (raw scores)"), scale=SCORES_SCALE, fmt=".3f"),
    "weights": dict(title=N_("softmax weights"), scale=WEIGHTS_SCALE, fmt=".6f"),
}  # titles looked up with _() where drawn
# colour bar title and the hover's value name of each kind, looked up where drawn
KIND_NAMES = {"scores": N_("scores"), "weights": N_("weights")}
VALUE_NAMES = {"scores": N_("score"), "weights": N_("weight")}


def _cell_hover(kind: str, head: int | None = None) -> str:
    """A heatmap cell's hover: (head,) query, key and the value with its exact digits."""
    lines = [] if head is None else [_("head {head}").format(head=head)]
    lines += [_("query") + " %{y}", _("key") + " %{x}",
              f"{_(VALUE_NAMES[kind])} = %{{z:{KINDS[kind]['fmt']}}}"]
    return "<br>".join(lines) + "<extra></extra>"


def _color_args(kind: str, matrix: np.ndarray) -> dict:
    if kind == "scores":
        lim = float(np.nanmax(np.abs(matrix))) or 1.0
        return dict(colorscale=SCORES_SCALE, zmid=0.0, zmin=-lim, zmax=lim)
    return dict(colorscale=WEIGHTS_SCALE, zmin=0.0, zmax=1.0)


def attention_heatmap(
    matrix: np.ndarray,
    tokens: list[str],
    kind: str = "weights",
    title: str | None = None,
    key_tokens: list[str] | None = None,
    height: int | None = None,
    indices=None,
    zmax: float | None = None,
    colorbar: str = "below",
    pieces: list[str] | None = None,
) -> go.Figure:
    """One [query, key] matrix at full resolution; hover names both tokens and the exact value.

    `indices`: each row's place in the sentence when some tokens are hidden (labels keep it);
    `zmax`: the top of the colour scale (default: 1 for weights, the largest |score|);
    `colorbar`: "below" (horizontal, under the keys' labels: it stays on a phone's screen;
    past SQUARE_FROM tokens above the plot, under the title) or "right" (vertical, beside
    the plot); `pieces`: the tokenizer's own strings of `tokens` (Trace.word_pieces), so a
    label says when its token continues a word ('#96 …uation': common.tick_labels).

    Past SQUARE_FROM tokens the cells stay square (a 138-token matrix is 138 x 138 squares,
    not a strip) and each axis names every k-th token, at most LONG_TICKS rows and
    LONG_X_TICKS slanted columns, so the labels never overlap; every cell's hover names its
    two tokens in full.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {tuple(KINDS)}")
    if colorbar not in ("below", "right"):
        raise ValueError('colorbar must be "below" or "right"')
    key_indices = indices if key_tokens is None else None
    key_tokens = tokens if key_tokens is None else key_tokens
    rows, cols = axis_labels(tokens, indices), axis_labels(key_tokens, key_indices)
    colors = _color_args(kind, matrix)
    if zmax is not None:
        colors["zmax"] = zmax
    long = max(len(tokens), len(key_tokens)) > SQUARE_FROM
    x, y = _axis_props(tokens, key_tokens, indices=indices, key_indices=key_indices,
                       max_x=LONG_X_TICKS if long else MAX_X_TICKS,
                       max_y=LONG_TICKS if long else 60, rows=rows, cols=cols,
                       pieces=pieces if key_tokens is tokens else None)
    if long:  # square cells, not a squeezed strip; spare height goes below the plot
        y.update(scaleanchor="x", constrain="domain", constraintoward="top")
        x.update(constrain="domain")
    n = max(len(tokens), 8)
    size = height or int(min(LONG_HEIGHT if long else 900, max(320, 28 * n + 140)))
    bottom, top = 10 + label_room(x["ticktext"], angle=x["tickangle"], across=False), 50
    if colorbar == "below":
        size += 0 if height else COLORBAR_BELOW
        plot = size - top - bottom - COLORBAR_BELOW
        bar = colorbar_below(_(KIND_NAMES[kind]), bottom, plot)
        if long:  # above the square plot, under the title: a narrow screen's square plot
            # leaves its spare height below the keys' labels, not between them and the bar
            top += COLORBAR_BELOW + 12  # and clear of the title
            plot = size - top - bottom
            bar.update(y=1 + 28 / plot, yanchor="bottom")  # its tick labels hang below it
        else:
            bottom += COLORBAR_BELOW
        right = 20
    else:
        bar = dict(title=dict(text=_(KIND_NAMES[kind])), thickness=12)
        right = colorbar_room(kind, ticks="-0.00" if kind == "scores" else "0.00")
    return go.Figure(
        data=[dict(
            type="heatmap", z=np.asarray(matrix, dtype=np.float32), x=cols, y=rows,
            hovertemplate=_cell_hover(kind), colorbar=bar, **colors,
        )],
        layout=dict(
            xaxis={**x, "title": dict(text=_("keys"))},
            yaxis={**y, "title": dict(text=_("queries"))},
            title=title or _(KINDS[kind]["title"]), height=size, font=FONT,
            # Room for the labels and the colour bar up front: drawn once, not twice.
            margin=dict(l=10 + label_room(y["ticktext"]), t=top, r=right, b=bottom),
        ),
    )


def _axis_props(tokens, key_tokens, show_x: bool = True, show_y: bool = True,
                indices=None, key_indices=None, max_x: int = 60, max_y: int = 60,
                rows: list[str] | None = None, cols: list[str] | None = None,
                pieces: list[str] | None = None) -> tuple[dict, dict]:
    """(x axis, y axis) properties for a categorical [query, key] heatmap, at most max_x /
    max_y tick labels (slanted column labels need more room than row labels). `rows`,
    `cols`: the axes' labels (axis_labels) when the caller has them already; `pieces`: the
    tokenizer's strings of the tokens of both axes (tick_labels)."""
    rows = axis_labels(tokens, indices) if rows is None else rows
    cols = axis_labels(key_tokens, key_indices) if cols is None else cols
    yv, yt = tick_labels(tokens, max_ticks=max_y, indices=indices, labels=rows, pieces=pieces)
    xv, xt = tick_labels(key_tokens, max_ticks=max_x, indices=key_indices, labels=cols,
                         pieces=pieces)
    y = dict(type="category", categoryorder="array", categoryarray=rows,
             tickvals=yv, ticktext=yt, autorange="reversed", showticklabels=show_y, title=None)
    x = dict(type="category", categoryorder="array", categoryarray=cols, tickvals=xv,
             ticktext=xt, tickangle=-45, showticklabels=show_x, side="bottom")
    return x, y


def heads_grid(
    matrices: np.ndarray,
    tokens: list[str],
    kind: str = "weights",
    cols: int = 4,
    max_cells: int = 96,
    title: str | None = None,
) -> go.Figure:
    """All heads of one layer, [heads, n, n], as small multiples sharing one colour scale.

    Inputs longer than `max_cells` tokens are max-pooled into blocks for this overview (the
    title says so); the single-head view shows exact values.

    Drawn as ONE heatmap on one pair of category axes: the heads are its blocks, panel by
    panel, with blank (NaN) categories between them and each head's title an annotation; its
    `customdata` holds each cell's head for the hover. Twelve subplots (24 axes) are many
    more for Plotly to draw; twelve heatmaps on one pair of category axes cannot hover (Plotly
    spreads each over every category, so the top one answers everywhere). A panel column's
    categories are the token labels followed by as many zero-width spaces (PANEL_MARK) as the
    column's number, so 'saw #2' of two panel columns are two categories that read the same;
    tick text drops the marks.
    `layout.meta["panels"]` says where each head is (`summary.grid_panels` reads it back: the
    figure's number tables, one per head, and the tests), and each title's short form (`short`:
    the head's number; `heading`: "head"), which a phone whose panels are too narrow for the
    titles shows as a table's header does: the heading left of each row of panels, each
    panel's number over it (ui.phone_layout's phoneHeads).
    """
    H, n = matrices.shape[0], matrices.shape[-1]
    used = max(1, min(cols, H))  # panel columns that hold a head
    rows = -(-H // used)
    reduced, factor = zip(*(block_reduce(np.asarray(m, dtype=np.float32), max_cells)
                            for m in matrices), strict=True)
    factor = factor[0]
    m = reduced[0].shape[0]  # cells along a panel's side
    fmt = KINDS[kind]["fmt"]
    labels = axis_labels(tokens)
    # x: slanted labels shared by the panels of a row, at least 4 a panel; y: all up to 24
    # tokens, then GRID_TICKS a panel (a panel is ~250 px); thinned ticks name their number
    x_most, y_most = max(4, min(GRID_PANEL_X_TICKS, GRID_X_TICKS // used)), GRID_TICKS
    if factor == 1:
        names = labels
        y_ticks = tick_labels(tokens, max_ticks=n if n <= 24 else y_most, labels=labels)
        x_ticks = tick_labels(tokens, max_ticks=x_most, labels=labels)
    else:  # a block is named by its first and last token ('the #12 – sat #13')
        starts = range(0, n, factor)
        names = [f"{labels[s_]} – {labels[min(s_ + factor, n) - 1]}" for s_ in starts]
        first = [labels[s_].rsplit(" #", 1) for s_ in starts]  # [token, number]
        text = [f"#{num} {tok}" for tok, num in first]

        def thinned(most: int) -> tuple[list[str], list[str]]:
            step = max(1, -(-m // most))
            return names[::step], text[::step]

        y_ticks, x_ticks = thinned(y_most), thinned(x_most)
    gap_x, gap_y = (max(1, round(share * m)) for share in PANEL_GAPS)

    def categories(count: int, gap: int, letter: str,
                   ticks: tuple[list[str], list[str]]) -> tuple[list[str], list[str], list[str]]:
        tick_vals, tick_text = ticks
        cats, vals, text = [], [], []
        for p in range(count):
            mark = PANEL_MARK * p
            cats += [nm + mark for nm in names]
            vals += [v + mark for v in tick_vals]
            text += tick_text
            if p < count - 1:  # blank categories between panels (NaN: no hover)
                cats += [f"{letter}{p} gap {g}" for g in range(gap)]
        return cats, vals, text

    xcat, xvals, xtext = categories(used, gap_x, "x", x_ticks)
    ycat, yvals, ytext = categories(rows, gap_y, "y", y_ticks)
    z = np.full((len(ycat), len(xcat)), np.nan, dtype=np.float32)
    head = np.full(z.shape, -1, dtype=np.int8 if H <= 127 else np.int32)
    notes, starts = [], []
    # The panels keep the size a full row of `cols` panels gives them: fewer heads than `cols`
    # take part of the width (two heads: half), not stretched panels.
    full = cols * m + (cols - 1) * gap_x
    width = (used * m + (used - 1) * gap_x) / max(full, len(xcat))
    titles = [_("head {head}").format(head=h) for h in range(H)]
    for h, block in enumerate(reduced):
        r0, c0 = (h // used) * (m + gap_y), (h % used) * (m + gap_x)
        z[r0:r0 + m, c0:c0 + m] = block
        head[r0:r0 + m, c0:c0 + m] = h
        starts.append((r0, c0))
        # centred over the panel, just above its top row (paper coordinates; the y axis is
        # reversed, its range [-0.5, len - 0.5])
        notes.append(dict(text=titles[h], showarrow=False, xref="paper", yref="paper",
                          x=width * (c0 + m / 2) / len(xcat), y=1 - r0 / len(ycat),
                          xanchor="center", yanchor="bottom", font=dict(size=FONT["size"] + 2)))
    which = _("head {head}").format(head="%{customdata}")
    if factor == 1:
        hover = which + "<br>" + _cell_hover(kind)
    else:
        hover = "<br>".join([which, _("queries from") + " %{y}", _("keys from") + " %{x}",
                             _("block max") + f" = %{{z:{fmt}}}<extra></extra>"])
    ca = _color_args(kind, matrices)
    # x labels upright (px below the panels): slanted, a phone's 11 px cells overlapped them
    below = 10 + label_room(xtext, angle=-90, size=GRID_X_SIZE, across=False, titled=False)
    axis = dict(type="category", categoryorder="array", showgrid=False, zeroline=False)
    return go.Figure(
        data=[dict(type="heatmap", z=z, x=xcat, y=ycat, customdata=head, hoverongaps=False,
                   coloraxis="coloraxis", hovertemplate=hover)],
        layout=dict(
            xaxis=dict(axis, categoryarray=xcat, tickvals=xvals, ticktext=xtext,
                       tickangle=-90, tickfont=dict(size=GRID_X_SIZE), side="bottom",
                       domain=[0, width]),
            yaxis=dict(axis, categoryarray=ycat, tickvals=yvals, ticktext=ytext,
                       autorange="reversed"),
            annotations=notes,
            coloraxis=dict(colorscale=ca["colorscale"], cmin=ca["zmin"], cmax=ca["zmax"],
                           colorbar=colorbar_below(_(KIND_NAMES[kind]), below,
                                                   260 * rows + 80 - 70 - below,
                                                   length=0.35)),  # on a phone too
            height=int(260 * rows + 80 + COLORBAR_BELOW), font=FONT,
            margin=dict(l=10 + label_room(ytext, titled=False), r=10, t=70,
                        b=below + COLORBAR_BELOW),
            plot_bgcolor="rgba(0,0,0,0)",  # the gaps show the page, as between subplots
            meta=dict(panels=dict(titles=titles, starts=starts, size=m,
                                  short=[str(h) for h in range(H)], heading=_("head"))),
            title=(_("{title} (overview: blocks of {factor} tokens, max)").format(
                title=title or _(KINDS[kind]["title"]), factor=factor) if factor > 1
                else title or _(KINDS[kind]["title"])),
        ))
