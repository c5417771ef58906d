"""Figures for self-attention step by step (the lecture notes; Vaswani et al. 2017, eq. 1).

Small matrices print their numbers in the cells so a class can redo them on paper; wide ones
(a real BERT head: hidden 384, d_k 32) are plain heatmaps whose hover gives the exact value.
Token axes use numeric coordinates with escaped tokens as tick text, so repeated tokens
("I saw a saw") stay distinct columns. Nothing here imports streamlit.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.i18n import N_, _

from .common import (
    COLORBAR_BELOW,
    FONT,
    NEUTRAL,
    OKABE_ITO,
    PATTERNS,
    SCORES_SCALE,
    VALUES_SCALE,
    WEIGHTS_SCALE,
    Grid,
    axis_labels,
    category_colour,
    category_dash,
    category_marker,
    colorbar_below,
    escape,
    label_room,
)

MAX_PRINTED_CELLS = 144  # matrices up to this size print their numbers
MAX_TICKS = 24  # row labels (a[1] .. a[384] thinned to every 16th)
MAX_X_TICKS = 12  # column labels are slanted and need more room
CLIP_PERCENTILE = 99  # big matrices: colours stop at this percentile of |value| (hover: exact)
MAX_LABELLED_CELLS = 4096  # larger matrices hover with indices only
MARGIN = dict(l=10, r=10, t=50, b=10)
BAR_TITLES = {"weights": N_("weight"), "scores": N_("score"), "values": N_("value")}
BAR_TITLE_ROOM = 22  # px for a colour bar's title line above the bar (colorbar_below)
MIN_PANEL = 10.0  # a panel's least relative width in matrices_figure (24 = the widest)


def dim_labels(prefix: str, size: int) -> list[str]:
    """Unique labels for the components of a vector: 'q[1]', 'q[2]' ... (1-based). Brackets,
    not 'q_1': the lecture writes a^1, q^1 for the first word's vectors, so a label like a_1
    would read as a word; a[1] is component 1 of every column a^i."""
    return [f"{prefix}[{t + 1}]" for t in range(size)]


def token_axis(tokens: list[str]) -> list[str]:
    """Escaped, unique labels for token axes: 'saw #2', 'saw #4'."""
    return axis_labels(tokens)


def _colors(kind: str, z: np.ndarray) -> dict:
    """Weights on [0, 1]; values and scores symmetric around 0, up to max |z|, or for big
    matrices (a BERT W_O, 384 x 384) up to the CLIP_PERCENTILE of |z|, so a few large entries
    do not wash the rest out to white."""
    if kind == "weights":
        return dict(colorscale=WEIGHTS_SCALE, zmin=0.0, zmax=1.0)
    if not z.size:
        lim = 1.0
    elif z.size > MAX_PRINTED_CELLS:  # too big to print: a few outliers would wash it out
        lim = float(np.nanpercentile(np.abs(z), CLIP_PERCENTILE))
    else:
        lim = float(np.nanmax(np.abs(z)))
    scale = SCORES_SCALE if kind == "scores" else VALUES_SCALE
    return dict(colorscale=scale, zmid=0.0, zmin=-(lim or 1.0), zmax=lim or 1.0)


def _ticks(labels: list[str], max_ticks: int = MAX_TICKS) -> tuple[list[int], list[str]]:
    """At most max_ticks evenly spaced labels: (positions, texts)."""
    step = max(1, -(-len(labels) // max_ticks))
    idx = list(range(0, len(labels), step))
    return idx, [labels[i] for i in idx]


def _heatmap(z, rows, cols, kind, decimals, numbers, showscale=False, name="") -> dict:
    """A heatmap trace as a dict: the figure validates it once (see Grid in common)."""
    z = np.asarray(z, dtype=np.float64)
    printed = z.size <= MAX_PRINTED_CELLS if numbers is None else numbers
    if z.size <= MAX_LABELLED_CELLS:  # hover names the row and column
        custom = np.empty(z.shape + (2,), dtype=object)
        custom[..., 0] = np.asarray(rows, dtype=object)[:, None]
        custom[..., 1] = np.asarray(cols, dtype=object)[None, :]
        where = _("row %{customdata[0]}<br>column %{customdata[1]}")
    else:  # big matrices (W_O 384 x 384): plain indices keep the page light
        custom, where = None, _("row %{y}<br>column %{x}")
    return dict(
        type="heatmap", z=z.astype(np.float32) if z.size > MAX_LABELLED_CELLS else z,
        x=list(range(z.shape[1])), y=list(range(z.shape[0])), customdata=custom,
        texttemplate=f"%{{z:.{decimals}f}}" if printed else None,
        textfont=dict(size=12), showscale=showscale, name=name,
        hovertemplate=f"{name}<br>{where}<br>{_('value')} = %{{z:.6g}}<extra></extra>",
        colorbar=dict(thickness=10, title=dict(text=_(BAR_TITLES.get(kind, "value")))),
        **_colors(kind, z),
    )


def _axes(rows, cols) -> tuple[dict, dict]:
    """(x axis, y axis) layout of one matrix panel: ticks thinned, rows top to bottom."""
    yv, yt = _ticks(rows)
    xv, xt = _ticks(cols, MAX_X_TICKS if len(cols) > 16 else MAX_TICKS)
    y = dict(tickvals=yv, ticktext=yt, autorange="reversed", showgrid=False)
    x = dict(tickvals=xv, ticktext=xt, tickangle=-45 if len(cols) > 4 else 0, showgrid=False,
             side="bottom")
    return x, y


def _vline(x: float, text: str, sub: str = "", position: str = "top right", log: bool = False,
           **line) -> tuple[dict, dict]:
    """(shape, annotation) of fig.add_vline(x, annotation_text=text) on subplot `sub`, as dicts
    (add_vline re-dispatches the whole layout on every call). On a log axis (log=True) a
    shape takes the data value but an annotation takes log10 of it (Plotly's convention)."""
    top = position.startswith("top")
    shape = dict(type="line", x0=x, x1=x, xref=f"x{sub}", y0=0, y1=1, yref=f"y{sub} domain",
                 line=line)
    note = dict(text=text, showarrow=False, x=float(np.log10(x)) if log else x,
                xref=f"x{sub}", xanchor="left", y=int(top),
                yref=f"y{sub} domain", yanchor="top" if top else "bottom")
    return shape, note


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
    """One matrix as a heatmap; numbers printed in the cells when it is small enough. Its
    colour bar lies below it, from its left edge (a phone shows the chart's left part)."""
    x, y = _axes(rows, cols)
    r = len(rows)
    size = (height or int(min(700, max(220, 34 * min(r, 16) + 130)))) + COLORBAR_BELOW
    # the bar's title stands above the bar: its line below the labels, not among them
    below = 10 + label_room(x["ticktext"], angle=x["tickangle"], across=False,
                            titled=False) + BAR_TITLE_ROOM
    trace = _heatmap(matrix, rows, cols, kind, decimals, numbers, showscale=True)
    trace["colorbar"] = colorbar_below(trace["colorbar"]["title"]["text"], below,
                                       size - MARGIN["t"] - below - COLORBAR_BELOW,
                                       thickness=10, length=0.5)
    return go.Figure(
        data=[trace],
        layout=dict(xaxis=x, yaxis=y, title=title, font=FONT, height=size,
                    margin=dict(MARGIN, b=below + COLORBAR_BELOW)))


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
    def width(z: np.ndarray) -> float:  # a printed number needs ~(decimals + 4) characters
        printed = z.size <= MAX_PRINTED_CELLS if numbers is None else numbers
        per_column = 0.5 * (decimals + 4) if printed else 1.0
        # at least MIN_PANEL: a narrow panel (K, 32 x 6) needs room for its token labels
        return min(max(max(z.shape[1], 2) * per_column, MIN_PANEL), 24)

    widths = np.array([width(np.asarray(p[0])) for p in panels], dtype=float)
    g = Grid(rows=1, cols=len(panels), column_widths=list(widths / widths.sum()),
             subplot_titles=[p[3] for p in panels], horizontal_spacing=0.1)
    for i, (z, rows, cols, name, kind) in enumerate(panels):
        g.add(_heatmap(z, rows, cols, kind, decimals, numbers, name=name), 1, i + 1)
        x, y = _axes(rows, cols)
        g.xaxis(1, i + 1).update(x)
        g.yaxis(1, i + 1).update(y)
    notes = g.layout.setdefault("annotations", [])
    for i, op in enumerate(ops):  # the operator sits in the gap after panel i
        dom = g.xaxis(1, i + 1)["domain"]
        notes.append(dict(text=f"<b>{escape(op)}</b>", x=dom[1] + 0.025, y=0.5, xref="paper",
                          yref="paper", showarrow=False, font=dict(size=26)))
    r = max(p[0].shape[0] for p in panels)
    # on a phone (ui.phone_layout) the matrices flow into lines, the operators between them
    return g.figure(title=title, font=FONT, margin=dict(l=10, r=10, t=80, b=10),
                    height=height or int(min(700, max(260, 34 * min(r, 16) + 150))),
                    meta=dict(phone_layout="equation"))


def dot_product_latex(q: np.ndarray, k: np.ndarray, i: int, j: int, decimals: int = 2,
                      per_line: int = 2) -> str:
    r"""\alpha_{i,j} = q^i \cdot k^j = \sum_t q^i_t k^j_t, written term by term (1-based), as
    aligned lines of `per_line` terms each, so that a phone's column holds every line."""
    pairs = [f"({a:.{decimals}f})({b:.{decimals}f})"
             for a, b in zip(np.asarray(q), np.asarray(k), strict=True)]
    lines = [" + ".join(pairs[n:n + per_line]) for n in range(0, len(pairs), per_line)]
    terms = r" \\ &\quad + ".join(lines)
    return (rf"\begin{{aligned}}\alpha_{{{i + 1},{j + 1}}} &= q^{{{i + 1}}}\cdot k^{{{j + 1}}} "
            rf"\\ &= {terms} \\ &= {float(np.dot(q, k)):.4f}\end{{aligned}}")


def dot_terms_figure(terms: np.ndarray, title: str) -> go.Figure:
    """The products q_t k_t whose sum is the score, one bar per coordinate t."""
    terms = np.asarray(terms, dtype=np.float64)
    colors = np.where(terms >= 0, OKABE_ITO[3], OKABE_ITO[0])  # sign also in the bar's side
    return go.Figure(
        data=[dict(type="bar", x=list(range(1, len(terms) + 1)), y=terms, marker_color=colors,
                   hovertemplate="t = %{x}<br>q_t k_t = %{y:.6g}<extra></extra>")],
        layout=dict(title=_("{title}: sum = {sum:.4f}").format(title=title, sum=terms.sum()),
                    font=FONT, height=300,
                    # every coordinate named up to 12 of them; past that plotly's spacing
                    # (a real head's 32 labels on a phone ran into each other)
                    xaxis=dict(title=dict(text=_("coordinate t")),
                               dtick=1 if len(terms) <= 12 else None),
                    yaxis=dict(title=dict(text="q_t · k_t")), margin=MARGIN))


def weights_bar_figure(rows: dict[str, np.ndarray], tokens: list[str], title: str) -> go.Figure:
    """One query's weights over the keys, one bar group per setting (e.g. per temperature)."""
    labels = token_axis(tokens)
    x = list(range(len(tokens)))
    xv, xt = _ticks(labels)
    return go.Figure(
        data=[dict(type="bar", x=x, y=np.asarray(w, dtype=np.float64), name=escape(name),
                   customdata=labels, marker=dict(color=category_colour(k),
                                                  pattern=dict(shape=PATTERNS[k % 6])),
                   hovertemplate=_("key %{customdata}<br>weight = %{y:.4f}")
                   + "<extra></extra>")
              for k, (name, w) in enumerate(rows.items())],
        layout=dict(title=title, font=FONT, height=320, barmode="group",
                    yaxis=dict(range=[0, 1.02], title=dict(text=_("weight"))),
                    xaxis=dict(tickvals=xv, ticktext=xt), margin=MARGIN,
                    legend=dict(orientation="h", y=-0.25)))


def temperature_figure(sweep: dict, current: float, n: int) -> go.Figure:
    """Largest weight and entropy / ln(n) of one query's softmax as the temperature varies."""
    t = sweep["temperature"]
    norm = np.log(n) if n > 1 else 1.0
    now = _vline(current, f"T = {current:g}", log=True, dash="dot")
    one = _vline(1.0, "T = 1", position="bottom right", log=True, color=NEUTRAL, width=1)
    return go.Figure(
        data=[dict(type="scatter", x=t, y=sweep["max_weight"],
                   name=_("largest weight (1 = all on one key)"),
                   line=dict(color=category_colour(0), dash=category_dash(0))),
              dict(type="scatter", x=t, y=sweep["entropy"] / norm,
                   name=_("entropy / ln n (1 = uniform)"),
                   line=dict(color=category_colour(1), dash=category_dash(1)))],
        layout=dict(title=_("Temperature: softmax(s / (T·sqrt(d_k)))"), font=FONT, height=320,
                    shapes=[now[0], one[0]], annotations=[now[1], one[1]],
                    xaxis=dict(type="log", title=dict(text=_("temperature T"))),
                    yaxis=dict(range=[0, 1.05]), margin=MARGIN,
                    legend=dict(orientation="h", y=-0.3)))


def dk_figure(sweep: dict, d_k: int | None = None) -> go.Figure:
    """Why sqrt(d_k): spread of the scores and the largest softmax weight, raw vs scaled."""
    d = sweep["d_k"]
    g = Grid(rows=1, cols=2, subplot_titles=[
        _("spread (std) of the scores"), _("mean largest softmax weight (8 keys)")])
    for k, (tag, name) in enumerate((("raw", "q·k"), ("scaled", "q·k / sqrt(d_k)"))):
        line = dict(color=category_colour(3 * k), dash=category_dash(k))
        marker = dict(symbol=category_marker(k))
        g.add(dict(type="scatter", x=d, y=sweep[f"{tag}_std"], name=name, line=line,
                   marker=marker, legendgroup=tag), 1, 1)
        g.add(dict(type="scatter", x=d, y=sweep[f"max_weight_{tag}"], name=name, line=line,
                   marker=marker, legendgroup=tag, showlegend=False), 1, 2)
    shapes = []
    for c, sub in ((1, ""), (2, "2")):
        g.xaxis(1, c).update(type="log", title=dict(text="d_k"), tickvals=list(d))
        if d_k:
            shape, note = _vline(d_k, f"d_k = {d_k}", sub, log=True, dash="dot")
            shapes.append(shape)
            g.layout["annotations"].append(note)
    g.yaxis(1, 2)["range"] = [0, 1.02]
    return g.figure(title=_("As d_k grows, raw scores spread like sqrt(d_k); scaled ones do not"),
                    shapes=shapes, font=FONT, height=340, margin=dict(l=10, r=10, t=70, b=10),
                    legend=dict(orientation="h", y=-0.3))


def weighted_sum_figure(contrib: np.ndarray, tokens: list[str], query: int,
                        dims: tuple[int, int] = (0, 1)) -> go.Figure:
    """b^i = sum_j alpha'_{i,j} v^j drawn head to tail in two coordinates of the values."""
    c = np.asarray(contrib, dtype=np.float64)[:, list(dims)]  # [n, 2]
    ends = np.cumsum(c, axis=0)
    starts = ends - c
    labels = token_axis(tokens)
    data = [dict(type="scatter", x=[starts[j, 0], ends[j, 0]], y=[starts[j, 1], ends[j, 1]],
                 mode="lines+markers", name=_("α'·v of {token}").format(token=labels[j]),
                 line=dict(color=category_colour(j), width=3, dash=category_dash(j)),
                 marker=dict(symbol="arrow", angleref="previous", size=12),
                 hovertemplate="(%{x:.4f}, %{y:.4f})")  # the name shows in the <extra>
            for j in range(len(c))]
    data.append(dict(type="scatter", x=[0, ends[-1, 0]], y=[0, ends[-1, 1]],
                     mode="lines+markers",
                     name=_("b<sup>{k}</sup> (the sum)").format(k=query + 1),
                     line=dict(color=NEUTRAL, width=3, dash="dash"),
                     marker=dict(symbol="arrow", angleref="previous", size=14)))
    a, b = dims
    pts = np.vstack([starts, ends, np.zeros((1, 2))])  # every arrow end and the origin

    def span(k: int) -> list[float]:  # the data's extent, padded, never empty
        lo, hi = float(pts[:, k].min()), float(pts[:, k].max())
        pad = 0.12 * (hi - lo) or 0.05 * max(abs(hi), 1e-3)
        return [lo - pad, hi + pad]

    return go.Figure(data=data, layout=dict(
        title=_("Weighted values adding up to b<sup>{k}</sup> (coordinates {a}, {b}; each "
                "axis to its own scale)").format(k=query + 1, a=a + 1, b=b + 1),
        font=FONT, height=420,
        xaxis=dict(title=dict(text=_("coordinate {t}").format(t=a + 1)), range=span(0)),
        yaxis=dict(title=dict(text=_("coordinate {t}").format(t=b + 1)), range=span(1)),
        margin=MARGIN))


def contributions_figure(contrib: np.ndarray, tokens: list[str], query: int) -> go.Figure:
    """Every coordinate of b^i as a stack of the weighted values alpha'_{i,j} v^j_t."""
    c = np.asarray(contrib, dtype=np.float64)  # [n, p]
    labels = token_axis(tokens)
    x = list(range(1, c.shape[1] + 1))
    data = [dict(type="bar", x=x, y=c[j], name=_("α'·v of {token}").format(token=labels[j]),
                 marker=dict(color=category_colour(j), pattern=dict(shape=PATTERNS[j % 6])),
                 hovertemplate="t = %{x}<br>%{y:.5f}")  # the name shows beside
            for j in range(c.shape[0])]
    data.append(dict(type="scatter", x=x, y=c.sum(0), mode="markers",
                     name=f"b<sup>{query + 1}</sup>",
                     marker=dict(symbol="diamond", size=11, color=NEUTRAL,
                                 line=dict(width=1.5, color=OKABE_ITO[3]))))
    return go.Figure(data=data, layout=dict(
        barmode="relative",
        title=_("b<sup>{k}</sup>, coordinate by coordinate").format(k=query + 1),
        font=FONT, height=360, xaxis=dict(title=dict(text=_("coordinate t")), dtick=1),
        margin=MARGIN, legend=dict(orientation="h", y=-0.3)))


def heads_figure(weights: np.ndarray, tokens: list[str], title: str, decimals: int = 2,
                 numbers: bool | None = None) -> go.Figure:
    """Each head's weights [h, n, n] side by side (rows = queries), numbers when small."""
    h = weights.shape[0]
    cols = min(h, 4)
    rows = -(-h // cols)
    labels = token_axis(tokens)
    names = [_("head {k}").format(k=k) for k in range(h)]
    g = Grid(rows=rows, cols=cols, subplot_titles=names,
             horizontal_spacing=0.05, vertical_spacing=0.12)
    x, y = _axes(labels, labels)
    for k in range(h):
        r, c = k // cols + 1, k % cols + 1
        g.add(_heatmap(weights[k], labels, labels, "weights", decimals, numbers,
                       name=names[k]), r, c)
        g.xaxis(r, c).update(x)
        # one set of query labels per row of panels, so panels never overlap them
        g.yaxis(r, c).update(y, **({} if c == 1 else dict(showticklabels=False)))
    return g.figure(title=title, font=FONT, height=int(300 * rows + 90),
                    margin=dict(l=10, r=10, t=80, b=10))


def entropy_by_heads_figure(sweep: dict) -> go.Figure:
    """Mean entropy of the weights and mean largest weight for each number of heads."""
    heads = [str(h) for h in sweep["heads"]]
    return go.Figure(
        data=[dict(type="bar", x=heads, y=sweep["max_weight"], name=_("mean largest weight"),
                   marker=dict(color=category_colour(0))),
              dict(type="bar", x=heads, y=sweep["entropy_norm"], name=_("mean entropy / ln n"),
                   marker=dict(color=category_colour(1), pattern=dict(shape=PATTERNS[1])))],
        layout=dict(title=_("Same parameters, different numbers of heads (this seed only)"),
                    font=FONT, height=300,
                    xaxis=dict(title=dict(text=_("heads h (d_h = m / h)")), type="category"),
                    yaxis=dict(range=[0, 1.02]), barmode="group", margin=MARGIN,
                    legend=dict(orientation="h", y=-0.35)))


# ------------------------------------------------ the walkthrough's matrix products, ready-made
def projection_figure(walk, name: str, decimals: int = 2) -> go.Figure:
    """W^name · I (+ b^name) = name.upper() for name in q, k, v (the lecture's column layout).

    I = (a^1 ... a^n) holds the inputs as columns. BERT's projections have a bias b, added
    to every column: it is drawn as its own panel when it is not zero (the toy has none).
    """
    w = {"q": walk.w_q, "k": walk.w_k, "v": walk.w_v}[name]  # [d, m]
    b = {"q": walk.b_q, "k": walk.b_k, "v": walk.b_v}[name]  # [d]
    out = {"q": walk.queries, "k": walk.keys, "v": walk.values}[name]  # [n, d]
    rows, a_rows, labels = dim_labels(name, w.shape[0]), dim_labels("a", walk.m), \
        token_axis(walk.tokens)
    big = name.upper()
    if getattr(walk, "rotary", False) and name in "qk":  # a rotary decoder: before RoPE
        out = walk.queries_unrotated if name == "q" else walk.keys_unrotated
        big = _("{name} before RoPE").format(name=big)
    panels = [
        (w, rows, a_rows, f"W<sup>{name}</sup> ({w.shape[0]} × {w.shape[1]})", "values"),
        (walk.inputs.T, a_rows, labels, f"I ({walk.m} × {walk.n})", "values")]
    ops, title = ["·"], f"{big} = W<sup>{name}</sup> I"
    if np.any(np.asarray(b) != 0):
        panels.append((np.asarray(b)[:, None], rows, [f"b<sup>{name}</sup>"],
                       f"b<sup>{name}</sup> ({len(b)} × 1)", "values"))
        ops.append("+")
        title = _("{out} = W<sup>{name}</sup> I + b<sup>{name}</sup> (the bias is added to every "
                  "column)").format(out=big, name=name)
    gap = "<br>" if getattr(walk, "rotary", False) else " "  # a long name: its size below it
    panels.append((out.T, rows, labels, f"{big}{gap}({out.shape[1]} × {walk.n})", "values"))
    return matrices_figure(panels, [*ops, "="], title, decimals=decimals)


def rotation_figure(walk, name: str, decimals: int = 3) -> go.Figure:
    """RoPE on q or k (`name`): the projected vectors as columns, then the same vectors turned
    by their positions (walkthrough.decoder_walkthrough), side by side."""
    before = walk.queries_unrotated if name == "q" else walk.keys_unrotated  # [n, d]
    after = walk.queries if name == "q" else walk.keys
    rows, labels, big = dim_labels(name, before.shape[1]), token_axis(walk.tokens), name.upper()
    n, d = before.shape
    return matrices_figure(
        [(before.T, rows, labels, _("{name} before RoPE").format(name=big) + f" ({d} × {n})",
          "values"),
         (after.T, rows, labels, _("{name} after RoPE").format(name=big) + f" ({d} × {n})",
          "values")],
        ["→"], _("RoPE turns {name}: each token's column by its position times θ (the first "
                 "token's stays)").format(name=big), decimals=decimals)


def scores_figure(walk, rows: str = "queries", decimals: int = 2,
                  score_decimals: int = 4) -> go.Figure:
    """All scores at once: A = K^T Q (rows = keys, the lecture) or its transpose A^T = Q^T K
    (rows = queries, how attnviz draws every score matrix)."""
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
    mask = getattr(walk, "mask", None)
    if mask is not None:  # a decoder's masked scores: blank (their weights are 0)
        s = np.where(mask if rows == "queries" else mask.T, s, np.nan)
    name = "A<sup>T</sup>" if rows == "queries" else "A"
    fig = matrices_figure([
        (left[0], labels, left[1], f"{left[2]} ({n} × {d})", "values"),
        (right[0].T, right[1], labels, f"{right[2]} ({d} × {n})", "values"),
        (s, labels, labels, f"{name} ({n} × {n})", "scores")],
        ["·", "="], (_("All scores at once: {name} = {left} {right} (rows = queries)")
                     if rows == "queries" else
                     _("All scores at once: {name} = {left} {right} (rows = keys)")).format(
            name=name, left=left[2], right=right[2]), decimals=decimals)
    if fig.data[2].texttemplate:  # scores carry twice the decimals of q and k
        fig.data[2].texttemplate = f"%{{z:.{score_decimals}f}}"
    return fig


def outputs_figure(walk, decimals: int = 3) -> go.Figure:
    """O = V A': column i of O is b^i = sum_j alpha'_{i,j} v^j (the lecture's column layout;
    A' has rows = keys, the transpose of the weight matrices attnviz draws elsewhere)."""
    labels, v_rows = token_axis(walk.tokens), dim_labels("v", walk.p)
    n, p = walk.n, walk.p
    return matrices_figure([(walk.values.T, v_rows, labels, f"V ({p} × {n})", "values"),
                            (walk.weights.T, labels, labels,
                             _("A' ({n} × {n}, rows = keys)").format(n=n), "weights"),
                            (walk.outputs.T, v_rows, labels, f"O ({p} × {n})", "values")],
                           ["·", "="], "O = V A'", decimals=decimals)


def output_projection_figure(mh, decimals: int = 2) -> go.Figure:
    """B = W^O O (+ b^O in BERT): the heads' outputs stacked (concat) and mixed by W^O, the
    attention block's output (in BERT a residual, LayerNorm and the feed-forward follow)."""
    m, n = mh.w_o.shape[0], len(mh.tokens)
    labels, o_rows, b_rows = token_axis(mh.tokens), dim_labels("o", m), dim_labels("b", m)
    bias = " + b<sup>O</sup>" if np.any(np.asarray(mh.b_o) != 0) else ""
    return matrices_figure([(mh.w_o, b_rows, o_rows, f"W<sup>O</sup> ({m} × {m})", "values"),
                            (mh.concat.T, o_rows, labels,
                             _("concat O ({m} × {n})").format(m=m, n=n), "values"),
                            (mh.projected.T, b_rows, labels, f"B ({m} × {n})", "values")],
                           ["·", "="], _("B = W<sup>O</sup> O{bias}: the attention block's "
                                         "output, not yet the layer's").format(bias=bias),
                           decimals=decimals)
