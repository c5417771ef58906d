"""Token lines (bertviz's head view): queries on the left, keys on the right, one line per
(query, key) pair whose opacity is the softmax weight W_ij; several heads in distinct colours
and line dashes (common.OKABE_ITO, common.DASHES).

Plotly gives one opacity per trace, so the lines of each head are grouped into `levels`
opacity steps: a line of weight w is drawn at opacity 0.15 + 0.85 * ceil(w * levels) / levels
(the floor keeps the faint lines of long inputs visible). Lines below
`min_weight` are left out (they would be invisible anyway), which keeps 512-token inputs
drawable; for one picked token its 10 strongest lines always show. The exact weight of
each drawn line is in the hover of its midpoint.

The tokens are a labelled dot each, up to LABELS_UP_TO of them, a line (LABEL_GAP px) apart
(the figure grows taller for it: 1,880 px at 127 tokens); past that (the labels would
overlap) each side is one line through the tokens' places, hovered per token, labelled at
every k-th token (its number and text, LABEL_GAP px apart), and the chosen query a diamond
on top.

One query of a long input (FOCUS_FROM tokens or more, where a token gets under 2 px of the
figure's 1500 and neither its label nor its lines read apart): focused_lines draws only the
keys that matter, each labelled on its own row: its `top` strongest keys in each head and
the WINDOW keys on each side of it (its own place among them; never a key of weight 0 in
every head, as a decoder's later tokens are), in sentence order, a gap row
"⋮" where keys are skipped. focus_keys names them and focus_shares their share of the row.

The labels stand in the figure's side margins, each as wide as its side's longest label
(label_room: an upper estimate of the text's width), so a label is whole at any width, a
phone's 390 px included, and the lines take the width left between them.
"""

from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go

from attnviz.i18n import _

from .common import (
    FONT,
    LEGEND_ROW,
    NEUTRAL,
    OKABE_ITO,
    axis_labels,
    category_colour,
    category_dash,
    tick_labels,
)

LABELS_UP_TO = 127  # tokens up to which each token is a dot with its label
LABEL_GAP = 14  # px between two labels (a line of FONT's 13 px, as Chromium draws it)
GAP = "\u2002"  # an en space: not XML white space, so SVG text keeps it
QUERY_MARK = 10  # px: the chosen query's diamond
CLEAR = "rgba(0,0,0,0)"
FOCUS_FROM = 640  # tokens from which one query's lines go to its chosen keys only
WINDOW = 5  # keys drawn on each side of the chosen query, past FOCUS_FROM tokens
SKIPPED = "\u22ee"  # ⋮: keys left out between two drawn ones
X_RANGE = [0.0, 1.0]  # the queries' dots at x = 0, the keys' at 1: the plot area's edges
CJK = re.compile("[\u1100-\u9fff\uac00-\ud7af\uff00-\uffef]")


def label_room(texts) -> int:
    """px a side's labels need beside their dots: an upper estimate of the widest text at
    FONT's size (Latin 0.56 em, CJK and full-width 1.05 em a character), its dot and a gap."""
    size = FONT["size"]
    widest = max((sum(1.05 if CJK.match(c) else 0.56 for c in str(t)) * size for t in texts),
                 default=0.0)
    return math.ceil(widest) + QUERY_MARK + 4


def side_margins(left, right) -> dict:
    """The figure's left and right margins: room for the queries' and the keys' labels."""
    return dict(l=10 + label_room(left), r=10 + label_room(right))


def line_opacity(level: int, levels: int) -> float:
    """Opacity of the lines in weight step `level` (1..levels)."""
    return 0.15 + 0.85 * level / levels


def head_lines(y_from, y_to, vals, levels: int, head: int, name: str, colour: str,
               dash: str) -> list[dict]:
    """One head's lines from y_from[i] (the query, x = 0) to y_to[i] (the key, x = 1), one
    trace per opacity level of their weights `vals`, then its legend entry."""
    y_from, y_to = np.asarray(y_from, dtype=np.float64), np.asarray(y_to, dtype=np.float64)
    level = np.clip(np.ceil(np.asarray(vals) * levels), 1, levels).astype(int)
    out: list[dict] = []
    for lv in range(1, levels + 1):
        sel = level == lv
        m = int(sel.sum())
        if not m:
            continue
        out.append(dict(
            type="scatter", x=np.tile([0.0, 1.0, np.nan], m),
            y=np.column_stack([y_from[sel], y_to[sel], np.full(m, np.nan)]).ravel(),
            mode="lines", line=dict(color=colour, width=2, dash=dash),
            opacity=line_opacity(lv, levels), hoverinfo="skip", legendgroup=f"h{head}",
            name=name, showlegend=False))
    out.append(dict(type="scatter", x=[None], y=[None], mode="lines", name=name,
                    line=dict(color=colour, width=4, dash=dash), legendgroup=f"h{head}"))
    return out


def hover_points(hx: list, hy: list, hdata: list) -> dict:
    """Invisible points at the lines' middles that carry their hover (head, query, key,
    weight)."""
    return dict(
        type="scatter", x=np.asarray(hx, dtype=np.float64), y=np.asarray(hy, dtype=np.float64),
        mode="markers", marker=dict(size=6, opacity=0), customdata=hdata, showlegend=False,
        name="lines", hovertemplate="<br>".join([
            "%{customdata[0]}", _("query") + " %{customdata[1]}", _("key") + " %{customdata[2]}",
            _("weight") + " = %{customdata[3]:.6f}<extra></extra>"]))


def token_lines(
    matrices: np.ndarray,
    heads: list[int],
    tokens: list[str],
    indices: list[int] | None = None,
    query: int | None = None,
    min_weight: float = 0.02,
    levels: int = 8,
    title: str = "",
    top: int = 10,
    pieces: list[str] | None = None,
    focus_from: int = FOCUS_FROM,
) -> go.Figure:
    """Lines for weights [k, n, n] of the heads `heads` (their numbers, for the legend).

    query: a row index to show only that token's lines (None: every token's lines); then its
    `top` strongest lines are drawn even when they fall below `min_weight`. pieces: the
    tokenizer's own strings (Trace.word_pieces), so a label says when its token continues a
    word (common.tick_labels). From `focus_from` tokens one query's lines are
    focused_lines.
    """
    n = matrices.shape[1]
    if query is not None and n >= focus_from:
        return focused_lines(matrices, heads, tokens, indices, query, levels, title, top,
                             pieces)
    labels = axis_labels(tokens, indices)
    rows = range(n) if query is None else [query]
    data: list[dict] = []  # trace dicts, validated once by go.Figure (not one add_trace each)
    hx, hy, hdata = [], [], []
    for idx, head in enumerate(heads):
        name = _("head {head}").format(head=head)
        colour, dash = category_colour(idx), category_dash(idx)  # two cues, not colour alone
        w = np.asarray(matrices[idx], dtype=np.float64)
        cut = min_weight
        if query is not None:  # one token: always show at least its `top` strongest lines
            cut = min(min_weight, float(np.sort(w[query])[-min(top, n)]))
        qi, kj = np.nonzero(w[list(rows)] >= cut)
        qi = np.asarray(list(rows))[qi]
        vals = w[qi, kj]
        data += head_lines(qi, kj, vals, levels, head, name, colour, dash)
        hx += [0.5] * len(vals)
        hy += list((qi + kj) / 2.0)
        hdata += [[name, labels[a], labels[b], float(v)] for a, b, v in
                  zip(qi, kj, vals, strict=True)]
    data.append(hover_points(hx, hy, hdata))
    px = max(2.5, min(24.0, 1400 / max(n, 1)))
    height = int(min(1500, max(320, px * n + 120)))
    show_text = n <= LABELS_UP_TO
    if show_text:  # every token named: its label a line (LABEL_GAP px) from the next one's
        height = max(height, math.ceil(LABEL_GAP * n + 70 + LEGEND_ROW))
    drawn_px = (height - 60 - 10 - LEGEND_ROW) / max(n, 1)  # a token's px in the plot area
    # a repeated token as 'saw #2', a token seen once bare
    names = tick_labels(tokens, max_ticks=n, indices=indices, labels=labels, pieces=pieces)[1]

    side_texts: dict[float, list[str]] = {}

    def token_hover(role: str) -> str:
        return f"{role} %{{customdata}}<extra></extra>"

    for side, x, pos, one in (("queries", 0.0, "middle left", _("query")),
                              ("keys", 1.0, "middle right", _("key"))):
        if show_text:  # a dot per token, its label beside it
            dot = dict(size=5, color=NEUTRAL)
            if query is not None and x == 0.0:  # the query's label stands clear of its
                # diamond: a dot of the diamond's size under it (Plotly sets a point's text
                # off by its own marker's size), drawn clear, the diamond on top
                dot = dict(size=[QUERY_MARK if i == query else 5 for i in range(n)],
                           color=[CLEAR if i == query else NEUTRAL for i in range(n)])
            marks = dict(mode="markers+text", text=names, textposition=pos, marker=dot,
                         cliponaxis=False)
            side_texts[x] = names
        else:
            # Past LABELS_UP_TO tokens the dots (2.7 px apart at 512) touch anyway: one line
            # through the tokens' places, hovered at each, is one SVG path where n dots were
            # n SVG elements that Plotly styles one by one.
            marks = dict(mode="lines", line=dict(color=NEUTRAL, width=4), cliponaxis=False)
        data.append(dict(
            type="scatter", x=np.full(n, x), y=np.arange(n), name=side, showlegend=False,
            customdata=labels, hovertemplate=token_hover(one), **marks,
        ))
        if not show_text:  # every k-th token named ('#27 the'), LABEL_GAP px or more apart
            shown, text = tick_labels(tokens, max_ticks=max(1, int(drawn_px * n // LABEL_GAP)),
                                      indices=indices, labels=labels, pieces=pieces)
            at = {label: i for i, label in enumerate(labels)}
            # an en space between a label and the line (4 px wide), so the line never covers
            # the label's last (queries) or first (keys) character
            text = [f"{t}{GAP}" if x == 0.0 else f"{GAP}{t}" for t in text]
            side_texts[x] = text
            data.append(dict(
                type="scatter", x=np.full(len(shown), x), y=[at[v] for v in shown],
                mode="text", text=text, textposition=pos, name=f"{side} labels",
                showlegend=False, cliponaxis=False,
                hoverinfo="skip"))
    if query is not None:  # the chosen query token, on top
        data.append(dict(
            type="scatter", x=[0.0], y=[query], mode="markers", name=_("query"),
            showlegend=False,
            marker=dict(size=QUERY_MARK, symbol="diamond", color=OKABE_ITO[3]),
            customdata=[labels[query]], hovertemplate=token_hover(_("query")), cliponaxis=False,
        ))
    return go.Figure(data=data, layout=dict(
        xaxis=dict(visible=False, range=X_RANGE),
        # the tokens' rows fill the plot area (no padding of Plotly's): drawn_px apart
        yaxis=dict(visible=False, range=[n - 0.5, -0.5]),
        title=title, font=FONT, height=height,
        # b: one row of the legend below, reserved up front (drawn once, not twice).
        margin=dict(**side_margins(side_texts[0.0], side_texts[1.0]), t=60,
                    b=10 + LEGEND_ROW), hovermode="closest",
        legend=dict(orientation="h", y=0, x=0.5, xanchor="center", yanchor="top"),
        annotations=[dict(x=0, y=1.0, xref="x", yref="paper", text=_("queries"), showarrow=False,
                          yanchor="bottom"),
                     dict(x=1, y=1.0, xref="x", yref="paper", text=_("keys"), showarrow=False,
                          yanchor="bottom")],
    ))


def focus_keys(rows: np.ndarray, query: int, top: int = 10, window: int = WINDOW) -> np.ndarray:
    """The keys drawn for `query` (focused_lines), in sentence order: the `top` largest
    weights of each head's row `rows[h]` ([k, n]) and the `window` keys on each side of
    `query`, itself included; a key of weight 0 in every head (a decoder's later tokens,
    masked) is never drawn."""
    rows = np.asarray(rows, dtype=np.float64)
    n = rows.shape[1]
    keep = set(range(max(0, query - window), min(n, query + window + 1)))
    for row in rows:
        keep.update(int(j) for j in np.argsort(row, kind="stable")[-min(top, n):])
    seen = rows.max(axis=0) > 0
    return np.array(sorted(j for j in keep if seen[j] or j == query), dtype=int)


def focus_shares(rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Each head's share of its row's weight ([k, n]) held by `keys` (of the row as shown:
    its sum, 1 unless keys are hidden)."""
    rows = np.asarray(rows, dtype=np.float64)
    return rows[:, keys].sum(axis=1) / rows.sum(axis=1)


def focused_lines(matrices, heads, tokens, indices, query, levels=8, title="", top=10,
                  pieces=None) -> go.Figure:
    """One query's lines to its focus_keys only, each key a labelled row, a row "⋮" where
    keys are left out; the query a diamond on the row of its own key. layout.meta: keys
    (drawn), n_keys (all), shares (focus_shares, one per head)."""
    n = matrices.shape[1]
    labels = axis_labels(tokens, indices)
    names = tick_labels(tokens, max_ticks=n, indices=indices, labels=labels, pieces=pieces)[1]
    rows = np.asarray(matrices, dtype=np.float64)[:, query, :]  # [k, n]
    keys = focus_keys(rows, query, top)
    place, at, gaps = {}, 0, []
    for i, j in enumerate(keys):
        if i and j > keys[i - 1] + 1 or i == 0 and j > 0:
            gaps.append(at)
            at += 1
        place[int(j)] = at
        at += 1
    if keys[-1] < n - 1:
        gaps.append(at)
        at += 1
    ky = np.array([place[int(j)] for j in keys], dtype=np.float64)
    qy = float(place[query])
    data: list[dict] = []
    hx, hy, hdata = [], [], []
    for idx, head in enumerate(heads):
        name = _("head {head}").format(head=head)
        colour, dash = category_colour(idx), category_dash(idx)
        vals = rows[idx, keys]
        data += head_lines(np.full(len(keys), qy), ky, vals, levels, head, name, colour, dash)
        hx += [0.5] * len(keys)
        hy += list((qy + ky) / 2.0)
        hdata += [[name, labels[query], labels[int(j)], float(v)] for j, v in
                  zip(keys, vals, strict=True)]
    data.append(hover_points(hx, hy, hdata))
    data.append(dict(
        type="scatter", x=np.ones(len(keys)), y=ky, mode="markers+text", name="keys",
        text=[f"{GAP}{names[int(j)]}" for j in keys], textposition="middle right",
        cliponaxis=False,
        marker=dict(size=5, color=NEUTRAL), customdata=[labels[int(j)] for j in keys],
        hovertemplate=_("key") + " %{customdata}<extra></extra>", showlegend=False))
    if gaps:
        data.append(dict(type="scatter", x=np.ones(len(gaps)), y=gaps, mode="text",
                         text=[SKIPPED] * len(gaps), textposition="middle center",
                         name="skipped", showlegend=False, hoverinfo="skip",
                         cliponaxis=False))
    data.append(dict(
        type="scatter", x=[0.0], y=[qy], mode="markers+text", name=_("query"),
        text=[f"{names[query]}{GAP}"], textposition="middle left", showlegend=False,
        cliponaxis=False,
        marker=dict(size=10, symbol="diamond", color=OKABE_ITO[3]),
        customdata=[labels[query]], hovertemplate=_("query") + " %{customdata}<extra></extra>"))
    shares = focus_shares(rows, keys)
    return go.Figure(data=data, layout=dict(
        xaxis=dict(visible=False, range=X_RANGE),
        yaxis=dict(visible=False, autorange="reversed"),
        title=title, font=FONT, height=int(max(320, 18 * at + 130)),
        margin=dict(**side_margins([f"{names[query]}{GAP}"],
                                   [f"{GAP}{names[int(j)]}" for j in keys]),
                    t=60, b=10 + LEGEND_ROW), hovermode="closest",
        legend=dict(orientation="h", y=0, x=0.5, xanchor="center", yanchor="top"),
        meta=dict(keys=[int(j) for j in keys], n_keys=n, shares=[float(v) for v in shares]),
        annotations=[dict(x=0, y=1.0, xref="x", yref="paper", text=_("query"),
                          showarrow=False, yanchor="bottom"),
                     dict(x=1, y=1.0, xref="x", yref="paper",
                          text=_("keys: {k} of {n}").format(k=len(keys), n=n),
                          showarrow=False, yanchor="bottom")],
    ))
