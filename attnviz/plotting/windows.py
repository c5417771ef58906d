"""Figures for truncated attention windows and receptive fields (the lecture notes; Cordonnier
et al. 2020, arXiv:1911.03584): masks beside the weights they produce, receptive fields
across depth with the analytic t ± l·w growth drawn over them, the "how much context" curve,
and the measured cost of full vs windowed attention. Plotly only; no streamlit.

Figures are built from plain dicts and validated once by go.Figure (see common.Grid): the
update_xaxes(row=, col=)/add_trace(row=, col=) calls they replace re-searched the subplot grid
on every call and made these figures 5-20x slower.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from attnviz.i18n import N_, _

from .common import (
    FONT,
    INFLUENCE_SCALE,
    MASK_SCALE_THEMED,
    NEUTRAL,
    OKABE_ITO,
    ON_IMAGE,
    WEIGHTS_SCALE,
    Grid,
    axis_labels,
    escape,
    tick_labels,
)

FIELD_TITLES = {  # marked for the catalogue; field_title looks them up
    "full": N_("full attention"),
    "window": N_("window ±{w}"),
    "causal": N_("causal (decoder)"),
    "conv": N_("1-D CNN, kernel {k}"),
}
METHOD_STYLE = {  # names marked for the catalogue; looked up with _() where drawn
    "full": dict(name=N_("full attention (L×L)"), color=OKABE_ITO[3], dash="solid",
                 symbol="square"),
    "masked": dict(name=N_("full matrix + window mask"), color=OKABE_ITO[1], dash="dot",
                   symbol="diamond"),
    "windowed": dict(name=N_("windowed (blocks, L·w)"), color=OKABE_ITO[0], dash="dash",
                     symbol="circle"),
}


def field_title(kind: str, window: int) -> str:
    """The name of a receptive-field kind in the session's language ('window ±2')."""
    if kind not in FIELD_TITLES:
        return escape(kind)
    return _(FIELD_TITLES[kind]).format(w=window, k=2 * window + 1)


def masks_and_weights(
    tokens: Sequence[str],
    masks: Mapping[str, np.ndarray],
    weights: Mapping[str, np.ndarray],
    title: str = "",
) -> go.Figure:
    """Top row: each mask (blue = may attend). Bottom row: the weights a head gives under it.
    On a phone each mask is laid out with its weights, pair by pair (layout.meta.phone_layout).

    masks[name]: [n, n] bool, weights[name]: [n, n] (rows = queries, columns = keys).
    """
    names = list(masks)
    g = Grid(
        rows=2, cols=len(names), vertical_spacing=0.08, horizontal_spacing=0.05,
        subplot_titles=[_("mask: {name}").format(name=k) for k in names]
        + [_("weights: {name}").format(name=k) for k in names],
    )
    labels = axis_labels(list(tokens))
    # a panel is a third of the width: its slanted key labels fewer than its query labels
    tv, tt = tick_labels(list(tokens), max_ticks=24)
    xv, xt = tick_labels(list(tokens), max_ticks=max(4, 24 // len(names)))
    category = dict(type="category", categoryorder="array", categoryarray=labels,
                    showgrid=False)  # no grid lines through the masks' translucent off cells
    for c, name in enumerate(names, start=1):
        m = np.asarray(masks[name], dtype=np.float32)
        g.add(dict(
            type="heatmap", z=m, x=labels, y=labels, colorscale=MASK_SCALE_THEMED, zmin=0,
            zmax=1,
            showscale=False,
            hovertemplate=f"{name}<br>" + _("query %{y}<br>key %{x}<br>may attend = %{z}")
            + "<extra></extra>",
        ), 1, c)
        g.add(dict(
            type="heatmap", z=np.asarray(weights[name], dtype=np.float32), x=labels, y=labels,
            coloraxis="coloraxis",
            hovertemplate=f"{name}<br>" + _("query %{y}<br>key %{x}<br>weight = %{z:.4f}")
            + "<extra></extra>",
        ), 2, c)
        for r in (1, 2):
            g.yaxis(r, c).update(category, tickvals=tv, ticktext=tt, autorange="reversed",
                                 showticklabels=(c == 1))
            # the masks share the weights' key labels below
            g.xaxis(r, c).update(category, tickvals=xv, ticktext=xt, tickangle=-45,
                                 showticklabels=(r == 2))
    n = max(len(tokens), 6)
    cell = int(min(420, max(220, 22 * n + 80)))
    return g.figure(
        title=title, height=2 * cell + 120, font=FONT, margin=dict(l=10, r=10, t=70, b=10),
        # on a phone (ui.phone_layout) each mask stays with the weights it leaves
        meta=dict(phone_layout="pairs"),
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0, cmax=1,
                       colorbar=dict(title=dict(text=_("weight")), thickness=12, len=0.45,
                                     y=0.22)),
    )


def relative_log_field(field: np.ndarray, floor: float = -6.0) -> np.ndarray:
    """log10(g_l[j] / max_j g_l[j]) per depth row, clipped at `floor`; NaN where g is exactly 0."""
    f = np.asarray(field, dtype=np.float64)
    top = f.max(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.log10(f / np.where(top > 0, top, 1.0))
    rel = np.maximum(rel, floor)
    rel[f == 0] = np.nan
    return rel


def receptive_fields(
    fields: Mapping[str, np.ndarray],
    tokens: Sequence[str],
    token: int,
    window: int,
    title: str = "",
) -> go.Figure:
    """Depth x position heatmaps, one per kind, of log10 relative gradient; blank = exactly 0.

    The analytic edges are drawn over them: t ± l·w for the window and the CNN, j = t for the
    causal mask (full attention reaches every position from layer 1).
    """
    names = list(fields)
    n = len(tokens)
    titles = [field_title(k, window) for k in names]
    g = Grid(rows=1, cols=len(names), subplot_titles=titles, horizontal_spacing=0.03,
              shared_yaxes=True)
    tick = tick_labels(list(tokens), max_ticks=max(6, 40 // max(1, len(fields))))
    labels = axis_labels(list(tokens))
    tickvals = [labels.index(v) for v in tick[0]]
    edge = dict(color=OKABE_ITO[3], width=2, dash="dash")
    for c, name in enumerate(names, start=1):
        f = np.asarray(fields[name], dtype=np.float64)
        depth = f.shape[0] - 1
        custom = np.broadcast_to(np.array(labels, dtype=object), f.shape)
        g.add(dict(
            type="heatmap", z=relative_log_field(f), x=np.arange(n), y=np.arange(depth + 1),
            customdata=np.dstack([custom, f]), coloraxis="coloraxis",
            hovertemplate=(f"{titles[c - 1]}<br>" + _(
                "depth %{y}<br>input %{customdata[0]}<br>|gradient| = %{customdata[1]:.3e}<br>"
                "log10 relative = %{z:.2f}") + "<extra></extra>"),
        ), 1, c)
        layers = np.arange(depth + 1)
        show = c == next((i for i, k in enumerate(names, 1) if k in ("window", "conv")), 0)
        if name in ("window", "conv"):
            for sign in (-1, 1):
                g.add(dict(
                    type="scatter", x=token + sign * (layers * window + 0.5), y=layers,
                    mode="lines", line=edge, name=_("analytic t ± l·w"), legendgroup="lw",
                    showlegend=show and sign == 1, hoverinfo="skip",
                ), 1, c)
        elif name == "causal":
            g.add(dict(
                type="scatter", x=[token + 0.5, token + 0.5], y=[0.5, depth + 0.5],
                mode="lines", line=edge, name=_("causal edge j = t"), showlegend=True,
                hoverinfo="skip",
            ), 1, c)
        g.add(dict(
            type="scatter", x=[token], y=[0], mode="markers",
            marker=dict(symbol="x", size=10, color=ON_IMAGE, line=dict(width=1, color=NEUTRAL)),
            name=_("output token t = {token} #{t}").format(  # its number as on every label
                token=escape(tokens[token]), t=axis_labels(tokens)[token].rsplit(" #", 1)[1]),
            legendgroup="t",
            showlegend=c == 1, hoverinfo="skip",
        ), 1, c)
        g.xaxis(1, c).update(range=[-0.5, n - 0.5], tickvals=tickvals, ticktext=tick[1],
                             tickangle=-45)
        g.yaxis(1, c).update(range=[-0.5, depth + 0.5], dtick=1)
    g.yaxis(1, 1)["title"] = dict(text=_("depth l (layers)"))
    return g.figure(
        title=title, height=430, font=FONT, margin=dict(l=10, r=10, t=80, b=10),
        coloraxis=dict(colorscale=INFLUENCE_SCALE, cmin=-6, cmax=0,
                       colorbar=dict(title=dict(text=_("log10 |grad| / max")), thickness=12)),
        legend=dict(orientation="h", y=-0.3, x=0),
    )


CURVE_COLORS = {"mean": OKABE_ITO[0], "worst": NEUTRAL, "pair": OKABE_ITO[1]}


def context_curve(
    windows: np.ndarray,
    curves: Mapping[str, Mapping[str, np.ndarray | None]],
    main: str,
    full_pair_cosine: float | None = None,
    pair_label: str = "",
    current: int | None = None,
    title: str = "",
) -> go.Figure:
    """Cosine of final vectors with window w vs full attention, against w, for several masks.

    curves[name] = {"mean": [W] mean over tokens, "worst": [W] min over tokens (optional),
    "pair": [W] cosine between the two chosen tokens (optional)}. The `main` mask is drawn in
    solid lines, the others dashed and fainter; `current` marks the page's w.
    """
    data = []
    for name, c in curves.items():
        is_main = name == main
        style = dict(dash="solid" if is_main else "dash", width=2.5 if is_main else 1.5)
        mode = "lines+markers" if is_main else "lines"
        label = escape(name)
        for part, text in (("mean", _("mean over tokens")), ("worst", _("worst token")),
                           ("pair", _("{pair} with each other").format(pair=pair_label))):
            y = c.get(part)
            if y is None or (part == "worst" and not is_main):
                continue
            data.append(dict(
                type="scatter", x=windows, y=np.asarray(y, dtype=np.float64), mode=mode,
                name=_("{curve}, {mask}").format(curve=text, mask=label),
                opacity=1.0 if is_main else 0.75,
                line=dict(color=CURVE_COLORS[part],
                          **({**style, "dash": "dot"} if part == "worst" else style)),
                hovertemplate=_("{curve}, {mask}").format(curve=text, mask=label)
                + "<br>w = %{x}<br>" + _("cosine = %{y:.4f}") + "<extra></extra>"))
    shapes, notes = [], []
    if full_pair_cosine is not None:
        # what fig.add_hline(annotation_position="bottom right") draws, as layout dicts
        y = full_pair_cosine
        shapes.append(dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=y, y1=y,
                           line=dict(dash="dash", color=NEUTRAL, width=1)))
        notes.append(dict(text=_("{pair}, full attention: {cos:.3f}").format(
                              pair=pair_label, cos=y), showarrow=False,
                          xref="x domain", x=1, xanchor="right", yref="y", y=y,
                          yanchor="top"))
    if current is not None:
        shapes.append(dict(type="line", xref="x", x0=current, x1=current, yref="y domain",
                           y0=0, y1=1, line=dict(dash="dot", color=NEUTRAL, width=1)))
        notes.append(dict(text=f"w = {current}", showarrow=False, xref="x", x=current,
                          xanchor="left", yref="y domain", y=1, yanchor="top"))
    return go.Figure(data=data, layout=dict(
        shapes=shapes, annotations=notes,
        xaxis=dict(title=dict(text=_("window w (each token sees ±w neighbours)")),
                   dtick=max(1, len(windows) // 12)),
        yaxis=dict(title=dict(text=_("cosine similarity"))),
        title=title, height=460, font=FONT, margin=dict(l=10, r=10, t=60, b=10),
        legend=dict(orientation="h", y=-0.22, x=0),
    ))


def cost_chart(table: Mapping[str, np.ndarray], device: str, memory_method: str,
               title: str = "") -> go.Figure:
    """Measured time (ms, table["seconds"]) and peak memory (MiB) against length L, log-log."""
    g = Grid(rows=1, cols=2, horizontal_spacing=0.1,
              subplot_titles=[_("time per call (best of repeats)"),
                              _("peak memory ({method})").format(method=_(memory_method))])
    method = np.asarray(table["method"])
    length = np.asarray(table["length"])
    methods = [m for m in METHOD_STYLE if m in set(method.tolist())]
    for m in methods:
        sel = method == m
        st = METHOD_STYLE[m]
        name = _(st["name"])
        L = length[sel]
        for col, y, unit in ((1, np.asarray(table["seconds"])[sel] * 1e3, "ms"),
                             (2, np.asarray(table["peak_bytes"])[sel] / 2**20, "MiB")):
            g.add(dict(
                type="scatter", x=L, y=y, mode="lines+markers", name=name,
                legendgroup=m, showlegend=col == 1, line=dict(color=st["color"], dash=st["dash"]),
                marker=dict(symbol=st["symbol"]),
                hovertemplate=f"{name}<br>L = %{{x}}<br>%{{y:.3g}} {unit}<extra></extra>",
            ), 1, col)
    lengths = sorted(set(length.tolist()))
    for col, unit in ((1, _("milliseconds")), (2, "MiB")):
        g.xaxis(1, col).update(type="log",
                               title=dict(text=_("sequence length L (frames / tokens)")),
                               tickvals=lengths)
        g.yaxis(1, col).update(type="log", title=dict(text=unit))
    return g.figure(title=title or _("Measured on {device}").format(device=device), height=440,
                    font=FONT,
                    margin=dict(l=10, r=10, t=80, b=10),
                    legend=dict(orientation="h", y=-0.25, x=0))


# ------------------------------------------------------------------ today's decoders
def decoder_masks(masks: Mapping[str, np.ndarray], title: str = "") -> go.Figure:
    """Masks side by side (positions 0..n-1 as numbers: no sentence here), blue = may attend;
    rows = queries, columns = keys."""
    names = list(masks)
    g = Grid(rows=1, cols=len(names), horizontal_spacing=0.06,
             subplot_titles=[escape(k) for k in names])
    for c, name in enumerate(names, start=1):
        m = np.asarray(masks[name], dtype=np.float32)
        g.add(dict(type="heatmap", z=m, colorscale=MASK_SCALE_THEMED, zmin=0, zmax=1,
                   showscale=False, xgap=1, ygap=1,
                   hovertemplate=escape(name) + "<br>" + _(
                       "query %{y}<br>key %{x}<br>may attend = %{z}") + "<extra></extra>"),
              1, c)
        g.yaxis(1, c).update(autorange="reversed", scaleanchor=f"x{g.ref(1, c)}",
                             showgrid=False, title=dict(text=_("query")) if c == 1 else None)
        g.xaxis(1, c).update(showgrid=False, title=dict(text=_("key")))
    return g.figure(title=title, height=400, font=FONT, margin=dict(l=10, r=10, t=80, b=10))


def reach_figure(reach: Mapping[str, np.ndarray], first: Mapping[str, np.ndarray],
                 query: int, title: str = "") -> go.Figure:
    """One panel per family (its title, Plotly text, the key): which inputs (columns) can
    change token `query` after each layer
    (rows: 0 = the input itself), reach[name] [layers + 1, n] bool from composing the masks;
    first[name] [layers + 1], the formula's first reachable input, drawn over it as a line."""
    names = list(reach)  # the caller's own titles (Plotly text: <br> breaks a line)
    g = Grid(rows=1, cols=len(names), horizontal_spacing=0.04, shared_yaxes=True,
             subplot_titles=names)
    edge = dict(color=OKABE_ITO[3])
    for c, name in enumerate(names, start=1):
        r = np.asarray(reach[name], dtype=np.float32)
        depth = r.shape[0] - 1
        g.add(dict(type="heatmap", z=r, colorscale=MASK_SCALE_THEMED, zmin=0, zmax=1,
                   showscale=False, xgap=1, ygap=1,
                   hovertemplate=name + "<br>" + _(
                       "after layer %{y}<br>input %{x}<br>can reach = %{z}")
                   + "<extra></extra>"), 1, c)
        f = np.asarray(first[name], dtype=np.float64)
        g.add(dict(type="scatter", x=f - 0.5, y=np.arange(depth + 1), mode="markers",
                   marker=dict(symbol="line-ns", size=16, line=dict(width=3, color=edge["color"])),
                   name=_("formula: first input reached"),
                   legendgroup="formula", showlegend=c == 1,
                   hovertemplate=_("after layer %{y}: from input %{customdata}")
                   + "<extra></extra>", customdata=f.astype(int)), 1, c)
        g.xaxis(1, c).update(range=[-0.5, r.shape[1] - 0.5], showgrid=False,
                             title=dict(text=_("input")))
        g.yaxis(1, c).update(range=[-0.5, depth + 0.5], dtick=1, showgrid=False)
    g.yaxis(1, 1)["title"] = dict(text=_("after layer l"))
    return g.figure(
        title=title or _("What can change token {t}, layer after layer").format(t=query),
        height=410, font=FONT, margin=dict(l=10, r=10, t=115, b=10),  # two-line panel titles
        legend=dict(orientation="h", y=-0.3, x=0))


def sink_figure(share: np.ndarray, even: float, title: str = "") -> go.Figure:
    """Each head's mean weight on the first token (layers x heads); the colour scale is
    centred on `even`, the share an even spread would give."""
    s = np.asarray(share, dtype=np.float64)
    return go.Figure(data=[dict(
        type="heatmap", z=s, zmin=0, zmax=1, colorscale=WEIGHTS_SCALE,
        colorbar=dict(title=dict(text=_("weight")), thickness=12),
        hovertemplate=_("layer %{y}, head %{x}<br>mean weight on the first token = %{z:.3f}")
        + "<extra></extra>")], layout=dict(
        title=title or _("Mean weight on the first token, per head (even spread: {even:.3f})")
        .format(even=even),
        height=max(320, 16 * s.shape[0] + 140), font=FONT, margin=dict(l=10, r=10, t=60, b=10),
        xaxis=dict(title=dict(text=_("head")), dtick=1),
        yaxis=dict(title=dict(text=_("layer")), autorange="reversed")))


def next_word_figure(words: Sequence[str], probs: Mapping[str, Sequence[float]],
                     title: str = "") -> go.Figure:
    """Grouped horizontal bars: for each word (as given, escaped here; most likely first) its
    probability as the next word under each condition (a colour, a pattern and a legend entry
    each)."""
    labels = [f"{escape(w)} ·{k + 1}" for k, w in enumerate(words)]
    data = [dict(type="bar", orientation="h", y=labels, x=list(map(float, p)), name=escape(name),
                 marker=dict(color=OKABE_ITO[c % len(OKABE_ITO)],
                             pattern=dict(shape=("", "/", ".", "x")[c % 4])),
                 hovertemplate="%{y}: %{x:.4f}<extra>" + escape(name) + "</extra>")
            for c, (name, p) in enumerate(probs.items())]
    return go.Figure(data=data, layout=dict(
        title=title, barmode="group", height=120 + 22 * len(words) * max(1, len(probs)),
        font=FONT, margin=dict(l=10, r=10, t=60, b=10),
        yaxis=dict(autorange="reversed", type="category"),
        xaxis=dict(title=dict(text=_("probability of the next word")), range=[0, 1]),
        legend=dict(orientation="h", y=-0.15, x=0)))
