"""Figures for self-attention step by step (seeds 003/004; Vaswani et al. 2017, eq. 1).

Small matrices print their numbers in the cells so a class can redo them on paper; wide ones
(a real BERT head: hidden 384, d_k 32) are plain heatmaps whose hover gives the exact value.
Token axes use numeric coordinates with escaped tokens as tick text, so repeated tokens
("I saw a saw") stay distinct columns. Nothing here imports streamlit.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import FONT, SCORES_SCALE, WEIGHTS_SCALE, axis_labels, escape

VALUES_SCALE = "PuOr"  # diverging, distinct from the scores' red-blue
MAX_PRINTED_CELLS = 144  # matrices up to this size print their numbers
MAX_TICKS = 40
MAX_LABELLED_CELLS = 4096  # larger matrices hover with indices only


def dim_labels(prefix: str, size: int) -> list[str]:
    """Unique labels for the coordinates of a vector: 'q_1' ... (1-based, as on paper)."""
    return [f"{prefix}_{t + 1}" for t in range(size)]


def token_axis(tokens: list[str]) -> list[str]:
    """Escaped, unique labels for token axes: 'saw #2', 'saw #4'."""
    return axis_labels(tokens)


def _colors(kind: str, z: np.ndarray) -> dict:
    if kind == "weights":
        return dict(colorscale=WEIGHTS_SCALE, zmin=0.0, zmax=1.0)
    lim = float(np.nanmax(np.abs(z))) if z.size else 1.0
    scale = SCORES_SCALE if kind == "scores" else VALUES_SCALE
    return dict(colorscale=scale, zmid=0.0, zmin=-(lim or 1.0), zmax=lim or 1.0)


def _ticks(labels: list[str]) -> tuple[list[int], list[str]]:
    step = max(1, -(-len(labels) // MAX_TICKS))
    idx = list(range(0, len(labels), step))
    return idx, [labels[i] for i in idx]


def _heatmap(z, rows, cols, kind, decimals, numbers, showscale=False, name="") -> go.Heatmap:
    z = np.asarray(z, dtype=np.float64)
    printed = z.size <= MAX_PRINTED_CELLS if numbers is None else numbers
    if z.size <= MAX_LABELLED_CELLS:  # hover names the row and column
        custom = np.empty(z.shape + (2,), dtype=object)
        custom[..., 0] = np.asarray(rows, dtype=object)[:, None]
        custom[..., 1] = np.asarray(cols, dtype=object)[None, :]
        where = "row %{customdata[0]}<br>column %{customdata[1]}"
    else:  # big matrices (W_O 384 x 384): plain indices keep the page light
        custom, where = None, "row %{y}<br>column %{x}"
    return go.Heatmap(
        z=z.astype(np.float32) if z.size > MAX_LABELLED_CELLS else z,
        x=list(range(z.shape[1])), y=list(range(z.shape[0])), customdata=custom,
        texttemplate=f"%{{z:.{decimals}f}}" if printed else None,
        textfont=dict(size=12), showscale=showscale, name=name,
        hovertemplate=f"{name}<br>{where}<br>value = %{{z:.6g}}<extra></extra>",
        colorbar=dict(thickness=10), **_colors(kind, z),
    )


def _axes(fig, rows, cols, row=None, col=None) -> None:
    kw = {} if row is None else dict(row=row, col=col)
    yv, yt = _ticks(rows)
    xv, xt = _ticks(cols)
    fig.update_yaxes(tickvals=yv, ticktext=yt, autorange="reversed", showgrid=False, **kw)
    fig.update_xaxes(tickvals=xv, ticktext=xt, tickangle=-45 if len(cols) > 4 else 0,
                     showgrid=False, side="bottom", **kw)


def matrix_figure(
    matrix: np.ndarray,
    rows: list[str],
    cols: list[str],
    title: str,
    kind: str = "values",
    decimals: int = 2,
    numbers: bool | None = None,
    height: int | None = None,
) -> go.Figure:
    """One matrix as a heatmap; numbers printed in the cells when it is small enough."""
    fig = go.Figure(_heatmap(matrix, rows, cols, kind, decimals, numbers, showscale=True))
    _axes(fig, rows, cols)
    r = len(rows)
    fig.update_layout(title=title, font=FONT, margin=dict(l=10, r=10, t=50, b=10),
                      height=height or int(min(700, max(220, 34 * min(r, 16) + 130))))
    return fig


def matrices_figure(
    panels: list[tuple[np.ndarray, list[str], list[str], str, str]],
    ops: list[str],
    title: str,
    decimals: int = 2,
    numbers: bool | None = None,
    height: int | None = None,
) -> go.Figure:
    """Matrices side by side joined by operators, e.g. W^q · A = Q.

    panels: (matrix, row labels, column labels, panel title, kind); ops: one symbol between
    consecutive panels. Panel widths follow the number of columns (clamped), like on paper.
    """
    widths = np.array([min(max(p[0].shape[1], 2), 24) for p in panels], dtype=float)
    fig = make_subplots(rows=1, cols=len(panels), column_widths=list(widths / widths.sum()),
                        subplot_titles=[p[3] for p in panels], horizontal_spacing=0.1)
    for i, (z, rows, cols, name, kind) in enumerate(panels):
        fig.add_trace(_heatmap(z, rows, cols, kind, decimals, numbers, name=name), row=1,
                      col=i + 1)
        _axes(fig, rows, cols, row=1, col=i + 1)
    for i, op in enumerate(ops):  # the operator sits in the gap after panel i
        dom = fig.layout[f"xaxis{i + 1 if i else ''}"].domain
        fig.add_annotation(text=f"<b>{escape(op)}</b>", x=dom[1] + 0.025, y=0.5, xref="paper",
                           yref="paper", showarrow=False, font=dict(size=26))
    r = max(p[0].shape[0] for p in panels)
    fig.update_layout(title=title, font=FONT, margin=dict(l=10, r=10, t=80, b=10),
                      height=height or int(min(700, max(260, 34 * min(r, 16) + 150))))
    return fig


def dot_product_latex(q: np.ndarray, k: np.ndarray, i: int, j: int, decimals: int = 2) -> str:
    r"""\alpha_{i,j} = q^i \cdot k^j = \sum_t q^i_t k^j_t, written term by term (1-based)."""
    pairs = zip(np.asarray(q), np.asarray(k), strict=True)
    terms = " + ".join(f"({a:.{decimals}f})({b:.{decimals}f})" for a, b in pairs)
    return (rf"\alpha_{{{i + 1},{j + 1}}} = q^{{{i + 1}}}\cdot k^{{{j + 1}}} = {terms} "
            rf"= {float(np.dot(q, k)):.4f}")


def dot_terms_figure(terms: np.ndarray, title: str) -> go.Figure:
    """The products q_t k_t whose sum is the score, one bar per coordinate t."""
    terms = np.asarray(terms, dtype=np.float64)
    colors = np.where(terms >= 0, "#b2182b", "#2166ac")
    fig = go.Figure(go.Bar(x=list(range(1, len(terms) + 1)), y=terms, marker_color=colors,
                           hovertemplate="t = %{x}<br>q_t k_t = %{y:.6g}<extra></extra>"))
    fig.update_layout(title=f"{title}: sum = {terms.sum():.4f}", font=FONT, height=300,
                      xaxis=dict(title="coordinate t", dtick=1), yaxis_title="q_t · k_t",
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def weights_bar_figure(rows: dict[str, np.ndarray], tokens: list[str], title: str) -> go.Figure:
    """One query's weights over the keys, one bar group per setting (e.g. per temperature)."""
    labels = token_axis(tokens)
    x = list(range(len(tokens)))
    fig = go.Figure([go.Bar(x=x, y=np.asarray(w, dtype=np.float64), name=escape(name),
                            customdata=labels,
                            hovertemplate="key %{customdata}<br>weight = %{y:.4f}<extra></extra>")
                     for name, w in rows.items()])
    xv, xt = _ticks(labels)
    fig.update_layout(title=title, font=FONT, height=320, barmode="group",
                      yaxis=dict(range=[0, 1.02], title="weight"),
                      xaxis=dict(tickvals=xv, ticktext=xt), margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.25))
    return fig


def temperature_figure(sweep: dict, current: float, n: int) -> go.Figure:
    """Largest weight and entropy / ln(n) of one query's softmax as the temperature varies."""
    t = sweep["temperature"]
    norm = np.log(n) if n > 1 else 1.0
    fig = go.Figure([
        go.Scatter(x=t, y=sweep["max_weight"], name="largest weight (1 = one-hot)"),
        go.Scatter(x=t, y=sweep["entropy"] / norm, name="entropy / ln n (1 = uniform)"),
    ])
    fig.add_vline(x=current, line_dash="dot", annotation_text=f"T = {current:g}")
    fig.add_vline(x=1.0, line_color="grey", line_width=1, annotation_text="T = 1",
                  annotation_position="bottom right")
    fig.update_layout(title="Temperature: softmax(s / (T·sqrt(d_k)))", font=FONT, height=320,
                      xaxis=dict(type="log", title="temperature T"),
                      yaxis=dict(range=[0, 1.05]), margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.3))
    return fig


def dk_figure(sweep: dict, d_k: int | None = None) -> go.Figure:
    """Why sqrt(d_k): spread of the scores and the largest softmax weight, raw vs scaled."""
    d = sweep["d_k"]
    fig = make_subplots(rows=1, cols=2, subplot_titles=[
        "spread (std) of the scores", "mean largest softmax weight (8 keys)"])
    for tag, name, color in (("raw", "q·k", "#b2182b"), ("scaled", "q·k / sqrt(d_k)", "#1b7837")):
        fig.add_trace(go.Scatter(x=d, y=sweep[f"{tag}_std"], name=name, line_color=color,
                                 legendgroup=tag), row=1, col=1)
        fig.add_trace(go.Scatter(x=d, y=sweep[f"max_weight_{tag}"], name=name, line_color=color,
                                 legendgroup=tag, showlegend=False), row=1, col=2)
    if d_k:
        fig.add_vline(x=d_k, line_dash="dot", annotation_text=f"d_k = {d_k}")
    fig.update_xaxes(type="log", title="d_k", tickvals=list(d))
    fig.update_yaxes(range=[0, 1.02], row=1, col=2)
    fig.update_layout(title="As d_k grows, raw scores spread like sqrt(d_k); scaled ones do not",
                      font=FONT, height=340, margin=dict(l=10, r=10, t=70, b=10),
                      legend=dict(orientation="h", y=-0.3))
    return fig


def weighted_sum_figure(contrib: np.ndarray, tokens: list[str], query: int,
                        dims: tuple[int, int] = (0, 1)) -> go.Figure:
    """b^i = sum_j alpha'_{i,j} v^j drawn head to tail in two coordinates of the values."""
    c = np.asarray(contrib, dtype=np.float64)[:, list(dims)]  # [n, 2]
    ends = np.cumsum(c, axis=0)
    starts = ends - c
    labels = token_axis(tokens)
    fig = go.Figure()
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f"]
    for j in range(len(c)):
        color = palette[j % len(palette)]
        fig.add_trace(go.Scatter(x=[starts[j, 0], ends[j, 0]], y=[starts[j, 1], ends[j, 1]],
                                 mode="lines+markers", name=f"α'·v of {labels[j]}",
                                 line=dict(color=color, width=3),
                                 marker=dict(symbol="arrow", angleref="previous", size=12),
                                 hovertemplate="(%{x:.4f}, %{y:.4f})"))  # name in the <extra>
    fig.add_trace(go.Scatter(x=[0, ends[-1, 0]], y=[0, ends[-1, 1]], mode="lines+markers",
                             name=f"b<sup>{query + 1}</sup> (the sum)",
                             line=dict(color="black", dash="dash"),
                             marker=dict(symbol="arrow", angleref="previous", size=14)))
    a, b = dims
    fig.update_layout(title=f"Weighted values adding up to b<sup>{query + 1}</sup> "
                            f"(coordinates {a + 1}, {b + 1})", font=FONT, height=420,
                      xaxis_title=f"coordinate {a + 1}", yaxis_title=f"coordinate {b + 1}",
                      yaxis=dict(scaleanchor="x"), margin=dict(l=10, r=10, t=50, b=10))
    return fig


def contributions_figure(contrib: np.ndarray, tokens: list[str], query: int) -> go.Figure:
    """Every coordinate of b^i as a stack of the weighted values alpha'_{i,j} v^j_t."""
    c = np.asarray(contrib, dtype=np.float64)  # [n, p]
    labels = token_axis(tokens)
    x = list(range(1, c.shape[1] + 1))
    fig = go.Figure([go.Bar(x=x, y=c[j], name=f"α'·v of {labels[j]}",
                            hovertemplate="t = %{x}<br>%{y:.5f}")  # the name shows beside
                     for j in range(c.shape[0])])
    fig.add_trace(go.Scatter(x=x, y=c.sum(0), mode="markers", name=f"b<sup>{query + 1}</sup>",
                             marker=dict(symbol="diamond", size=11, color="black")))
    fig.update_layout(barmode="relative", title=f"b<sup>{query + 1}</sup>, coordinate by "
                      "coordinate", font=FONT, height=360,
                      xaxis=dict(title="coordinate t", dtick=1),
                      margin=dict(l=10, r=10, t=50, b=10), legend=dict(orientation="h", y=-0.3))
    return fig


def heads_figure(weights: np.ndarray, tokens: list[str], title: str, decimals: int = 2,
                 numbers: bool | None = None) -> go.Figure:
    """Each head's weights [h, n, n] side by side (rows = queries), numbers when small."""
    h = weights.shape[0]
    cols = min(h, 4)
    rows = -(-h // cols)
    labels = token_axis(tokens)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"head {g}" for g in range(h)],
                        horizontal_spacing=0.05, vertical_spacing=0.12)
    for g in range(h):
        r, c = g // cols + 1, g % cols + 1
        fig.add_trace(_heatmap(weights[g], labels, labels, "weights", decimals, numbers,
                               name=f"head {g}"), row=r, col=c)
        _axes(fig, labels, labels, row=r, col=c)
        if c > 1:  # one set of query labels per row of panels, so panels never overlap them
            fig.update_yaxes(showticklabels=False, row=r, col=c)
    fig.update_layout(title=title, font=FONT, height=int(300 * rows + 90),
                      margin=dict(l=10, r=10, t=80, b=10))
    return fig


def entropy_by_heads_figure(sweep: dict) -> go.Figure:
    """Mean entropy of the weights and mean largest weight for each number of heads."""
    fig = go.Figure([
        go.Bar(x=[str(h) for h in sweep["heads"]], y=sweep["max_weight"],
               name="mean largest weight"),
        go.Bar(x=[str(h) for h in sweep["heads"]], y=sweep["entropy_norm"],
               name="mean entropy / ln n"),
    ])
    fig.update_layout(title="Same parameters, different numbers of heads", font=FONT, height=300,
                      xaxis=dict(title="heads h (d_h = m / h)", type="category"),
                      yaxis=dict(range=[0, 1.02]),
                      barmode="group", margin=dict(l=10, r=10, t=50, b=10),
                      legend=dict(orientation="h", y=-0.35))
    return fig


# ------------------------------------------------ the walkthrough's matrix products, ready-made
def projection_figure(walk, name: str, decimals: int = 2) -> go.Figure:
    """W^name · A = name.upper() for name in q, k, v (seeds' column layout), with shapes."""
    w = {"q": walk.w_q, "k": walk.w_k, "v": walk.w_v}[name]  # [d, m]
    out = {"q": walk.queries, "k": walk.keys, "v": walk.values}[name]  # [n, d]
    rows, a_rows, labels = dim_labels(name, w.shape[0]), dim_labels("a", walk.m), \
        token_axis(walk.tokens)
    big = name.upper()
    return matrices_figure([
        (w, rows, a_rows, f"W<sup>{name}</sup> ({w.shape[0]} × {w.shape[1]})", "values"),
        (walk.inputs.T, a_rows, labels, f"A ({walk.m} × {walk.n})", "values"),
        (out.T, rows, labels, f"{big} ({out.shape[1]} × {walk.n})", "values")],
        ["·", "="], f"{big} = W<sup>{name}</sup> A", decimals=decimals)


def scores_figure(walk, rows: str = "queries", decimals: int = 2,
                  score_decimals: int = 4) -> go.Figure:
    """All scores at once: Q^T K (rows = queries, attnviz) or K^T Q (rows = keys, seed 003)."""
    labels = token_axis(walk.tokens)
    q_rows, k_rows = dim_labels("q", walk.d_k), dim_labels("k", walk.d_k)
    if rows == "queries":
        left, right, s = ((walk.queries, q_rows, "Q<sup>T</sup>"), (walk.keys, k_rows, "K"),
                          walk.scores)
    elif rows == "keys":
        left, right, s = ((walk.keys, k_rows, "K<sup>T</sup>"), (walk.queries, q_rows, "Q"),
                          walk.scores.T)
    else:
        raise ValueError("rows must be 'queries' or 'keys'")
    n, d = walk.n, walk.d_k
    fig = matrices_figure([
        (left[0], labels, left[1], f"{left[2]} ({n} × {d})", "values"),
        (right[0].T, right[1], labels, f"{right[2]} ({d} × {n})", "values"),
        (s, labels, labels, f"scores, rows = {rows} ({n} × {n})", "scores")],
        ["·", "="], f"All scores at once: {left[2]} {right[2]}", decimals=decimals)
    if fig.data[2].texttemplate:  # scores carry twice the decimals of q and k
        fig.data[2].texttemplate = f"%{{z:.{score_decimals}f}}"
    return fig


def outputs_figure(walk, decimals: int = 3) -> go.Figure:
    """O = V A'^T: column i of O is b^i = sum_j alpha'_{i,j} v^j (seeds' column layout)."""
    labels, v_rows = token_axis(walk.tokens), dim_labels("v", walk.p)
    n, p = walk.n, walk.p
    return matrices_figure([(walk.values.T, v_rows, labels, f"V ({p} × {n})", "values"),
                            (walk.weights.T, labels, labels, f"A'<sup>T</sup> ({n} × {n})",
                             "weights"),
                            (walk.outputs.T, v_rows, labels, f"O ({p} × {n})", "values")],
                           ["·", "="], "O = V A'<sup>T</sup>", decimals=decimals)


def output_projection_figure(mh, decimals: int = 2) -> go.Figure:
    """B = W_O O: the heads' outputs stacked (concat) and mixed by W_O (+ b_O in BERT)."""
    m, n = mh.w_o.shape[0], len(mh.tokens)
    labels, o_rows, b_rows = token_axis(mh.tokens), dim_labels("o", m), dim_labels("b", m)
    return matrices_figure([(mh.w_o, b_rows, o_rows, f"W_O ({m} × {m})", "values"),
                            (mh.concat.T, o_rows, labels, f"concat O ({m} × {n})", "values"),
                            (mh.outputs.T, b_rows, labels, f"B ({m} × {n})", "values")],
                           ["·", "="], "Heads concatenated, then W_O", decimals=decimals)
