"""Figures for truncated attention windows and receptive fields (seed 003; Cordonnier et al.
2020, arXiv:1911.03584): masks beside the weights they produce, receptive fields across depth
with the analytic t ± l·w growth drawn over them, the "how much context" curve, and the
measured cost of full vs windowed attention. Plotly only; no streamlit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import FONT, WEIGHTS_SCALE, axis_labels, escape, tick_labels

MASK_SCALE = [[0.0, "#f2f2f2"], [0.5, "#f2f2f2"], [0.5, "#2b6cb0"], [1.0, "#2b6cb0"]]
FIELD_TITLES = {
    "full": "full attention",
    "window": "window ±{w}",
    "causal": "causal (decoder)",
    "conv": "1-D CNN, kernel {k}",
}
METHOD_STYLE = {
    "full": dict(name="full attention (L×L)", color="#c53030", dash="solid"),
    "masked": dict(name="full matrix + window mask", color="#dd6b20", dash="dot"),
    "windowed": dict(name="windowed (blocks, L·w)", color="#2b6cb0", dash="solid"),
}


def masks_and_weights(
    tokens: Sequence[str],
    masks: Mapping[str, np.ndarray],
    weights: Mapping[str, np.ndarray],
    title: str = "",
) -> go.Figure:
    """Top row: each mask (blue = may attend). Bottom row: the weights a head gives under it.

    masks[name]: [n, n] bool, weights[name]: [n, n] (rows = queries, columns = keys).
    """
    names = list(masks)
    fig = make_subplots(
        rows=2, cols=len(names), vertical_spacing=0.08, horizontal_spacing=0.05,
        subplot_titles=[f"mask: {k}" for k in names] + [f"weights: {k}" for k in names],
    )
    labels = axis_labels(list(tokens))
    tv, tt = tick_labels(list(tokens))
    for c, name in enumerate(names, start=1):
        m = np.asarray(masks[name], dtype=np.float32)
        fig.add_trace(go.Heatmap(
            z=m, x=labels, y=labels, colorscale=MASK_SCALE, zmin=0, zmax=1, showscale=False,
            hovertemplate=f"{name}<br>query %{{y}}<br>key %{{x}}<br>may attend = %{{z}}"
                          "<extra></extra>",
        ), row=1, col=c)
        fig.add_trace(go.Heatmap(
            z=np.asarray(weights[name], dtype=np.float32), x=labels, y=labels,
            coloraxis="coloraxis",
            hovertemplate=f"{name}<br>query %{{y}}<br>key %{{x}}<br>weight = %{{z:.4f}}"
                          "<extra></extra>",
        ), row=2, col=c)
        for r in (1, 2):
            fig.update_yaxes(type="category", categoryorder="array", categoryarray=labels,
                             tickvals=tv, ticktext=tt, autorange="reversed",
                             showticklabels=(c == 1), row=r, col=c)
            fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels,
                             tickvals=tv, ticktext=tt, tickangle=-45, showticklabels=(r == 2),
                             row=r, col=c)  # the masks share the weights' key labels below
    n = max(len(tokens), 6)
    cell = int(min(420, max(220, 22 * n + 80)))
    fig.update_layout(
        title=title, height=2 * cell + 120, font=FONT, margin=dict(l=10, r=10, t=70, b=10),
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0, cmax=1,
                       colorbar=dict(title=dict(text="weight"), thickness=12, len=0.45, y=0.22)),
    )
    return fig


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
    titles = [FIELD_TITLES.get(k, k).format(w=window, k=2 * window + 1) for k in names]
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=titles, horizontal_spacing=0.03,
                        shared_yaxes=True)
    tick = tick_labels(list(tokens), max_ticks=max(6, 40 // max(1, len(fields))))
    labels = axis_labels(list(tokens))
    tickvals = [labels.index(v) for v in tick[0]]
    for c, name in enumerate(names, start=1):
        f = np.asarray(fields[name], dtype=np.float64)
        depth = f.shape[0] - 1
        custom = np.broadcast_to(np.array(labels, dtype=object), f.shape)
        fig.add_trace(go.Heatmap(
            z=relative_log_field(f), x=np.arange(n), y=np.arange(depth + 1),
            customdata=np.dstack([custom, f]), coloraxis="coloraxis",
            hovertemplate=(f"{name}<br>depth %{{y}}<br>input %{{customdata[0]}}<br>"
                           "|gradient| = %{customdata[1]:.3e}<br>log10 relative = %{z:.2f}"
                           "<extra></extra>"),
        ), row=1, col=c)
        layers = np.arange(depth + 1)
        show = c == next((i for i, k in enumerate(names, 1) if k in ("window", "conv")), 0)
        if name in ("window", "conv"):
            for sign in (-1, 1):
                fig.add_trace(go.Scatter(
                    x=token + sign * (layers * window + 0.5), y=layers, mode="lines",
                    line=dict(color="#e53e3e", width=2, dash="dash"), name="analytic t ± l·w",
                    legendgroup="lw", showlegend=show and sign == 1, hoverinfo="skip",
                ), row=1, col=c)
        elif name == "causal":
            fig.add_trace(go.Scatter(
                x=[token + 0.5, token + 0.5], y=[0.5, depth + 0.5], mode="lines",
                line=dict(color="#e53e3e", width=2, dash="dash"), name="causal edge j = t",
                showlegend=True, hoverinfo="skip",
            ), row=1, col=c)
        fig.add_trace(go.Scatter(
            x=[token], y=[0], mode="markers", marker=dict(symbol="x", size=10, color="white",
                                                          line=dict(width=1, color="black")),
            name=f"output token t = {escape(tokens[token])} #{token}", legendgroup="t",
            showlegend=c == 1, hoverinfo="skip",
        ), row=1, col=c)
        fig.update_xaxes(range=[-0.5, n - 0.5], tickvals=tickvals, ticktext=tick[1],
                         tickangle=-45, row=1, col=c)
        fig.update_yaxes(range=[-0.5, depth + 0.5], dtick=1, row=1, col=c)
    fig.update_yaxes(title="depth l (layers)", row=1, col=1)
    fig.update_layout(
        title=title, height=430, font=FONT, margin=dict(l=10, r=10, t=80, b=10),
        coloraxis=dict(colorscale="Magma", cmin=-6, cmax=0,
                       colorbar=dict(title=dict(text="log10 |grad| / max"), thickness=12)),
        legend=dict(orientation="h", y=-0.3, x=0),
    )
    return fig


def context_curve(
    windows: np.ndarray,
    mean_cosine: np.ndarray,
    min_cosine: np.ndarray | None = None,
    pair_cosine: np.ndarray | None = None,
    full_pair_cosine: float | None = None,
    pair_label: str = "",
    title: str = "",
) -> go.Figure:
    """Cosine of final vectors with window w vs full attention (mean over tokens) against w."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=windows, y=mean_cosine, mode="lines+markers",
                             name="mean over tokens: cos(h_w, h_full)",
                             hovertemplate="w = %{x}<br>mean cos = %{y:.4f}<extra></extra>"))
    if min_cosine is not None:
        fig.add_trace(go.Scatter(x=windows, y=min_cosine, mode="lines", line=dict(dash="dot"),
                                 name="worst token: min cos(h_w, h_full)",
                                 hovertemplate="w = %{x}<br>min cos = %{y:.4f}<extra></extra>"))
    if pair_cosine is not None:
        fig.add_trace(go.Scatter(x=windows, y=pair_cosine, mode="lines+markers",
                                 name=f"cos between {pair_label} (window w)",
                                 hovertemplate="w = %{x}<br>pair cos = %{y:.4f}<extra></extra>"))
        if full_pair_cosine is not None:
            fig.add_hline(y=full_pair_cosine, line=dict(dash="dash", color="gray"),
                          annotation_text=f"{pair_label}, full attention: {full_pair_cosine:.3f}",
                          annotation_position="bottom right")
    fig.update_xaxes(title="window w (each token sees ±w neighbours)", dtick=max(1, len(windows)
                                                                                // 12))
    fig.update_yaxes(title="cosine similarity")
    fig.update_layout(title=title, height=420, font=FONT, margin=dict(l=10, r=10, t=60, b=10),
                      legend=dict(orientation="h", y=-0.25, x=0))
    return fig


def cost_chart(table: Mapping[str, np.ndarray], device: str, memory_method: str,
               title: str = "") -> go.Figure:
    """Measured time (ms, table["seconds"]) and peak memory (MiB) against length L, log-log."""
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1,
                        subplot_titles=["time per call (best of repeats)",
                                        f"peak memory ({memory_method})"])
    methods = [m for m in METHOD_STYLE if m in set(np.asarray(table["method"]).tolist())]
    for m in methods:
        sel = np.asarray(table["method"]) == m
        st = METHOD_STYLE[m]
        L = np.asarray(table["length"])[sel]
        for col, y, unit in ((1, np.asarray(table["seconds"])[sel] * 1e3, "ms"),
                             (2, np.asarray(table["peak_bytes"])[sel] / 2**20, "MiB")):
            fig.add_trace(go.Scatter(
                x=L, y=y, mode="lines+markers", name=st["name"], legendgroup=m,
                showlegend=col == 1, line=dict(color=st["color"], dash=st["dash"]),
                hovertemplate=f"{st['name']}<br>L = %{{x}}<br>%{{y:.3g}} {unit}<extra></extra>",
            ), row=1, col=col)
    lengths = sorted(set(np.asarray(table["length"]).tolist()))
    fig.update_xaxes(type="log", title="sequence length L (frames / tokens)", tickvals=lengths)
    fig.update_yaxes(type="log", title="milliseconds", row=1, col=1)
    fig.update_yaxes(type="log", title="MiB", row=1, col=2)
    fig.update_layout(title=title or f"Measured on {device}", height=440, font=FONT,
                      margin=dict(l=10, r=10, t=80, b=10),
                      legend=dict(orientation="h", y=-0.25, x=0))
    return fig
