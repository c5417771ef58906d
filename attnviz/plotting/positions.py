"""Figures for "what positional encoding does" (seed 003: no position information in
self-attention; e^i + a^i -> q^i, k^i, v^i; Vaswani et al. 2017 sinusoids; BERT's learned table).

Every function takes arrays from `attnviz.analysis.positions` or the engine's Trace and returns
a Plotly Figure; nothing here computes a number the page shows. Token axes use one unique
label per position ('saw #2', 'saw #4') so repeated words never merge (FIELD_NOTES).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import FONT, SCORES_SCALE, WEIGHTS_SCALE, axis_labels, escape, tick_labels

MODE_NAMES = {
    "learned": "learned positions (BERT)",
    "none": "no positions",
    "sinusoidal": "hand-crafted sinusoids",
    "shuffled": "learned, shuffled",
}
MODE_COLORS = {"learned": "#1f77b4", "none": "#d62728", "sinusoidal": "#2ca02c",
               "shuffled": "#9467bd"}
DISTANCE_SCALE = "Magma_r"  # 0 (no change) is white-ish, large JS is dark


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(title=title, height=height, font=FONT, margin=dict(l=10, r=10, t=60, b=10))
    return fig


def _sym(m: np.ndarray) -> float:
    return float(np.nanmax(np.abs(m))) or 1.0


# ------------------------------------------------------------------ 1. shuffled words
def permutation_figure(tokens: list[str], perm: np.ndarray, title: str | None = None) -> go.Figure:
    """Original order on top, shuffled order below; a line joins each token's two places."""
    perm = np.asarray(perm)
    n = len(tokens)
    fig = go.Figure()
    for moved, color in ((False, "#bbbbbb"), (True, "#1f77b4")):  # one trace each, None-separated
        xs: list = []
        ys: list = []
        for new, old in enumerate(perm):
            if (old != new) == moved:
                xs += [int(old), new, None]
                ys += [1, 0, None]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                                 name="moved" if moved else "stays",
                                 line=dict(color=color, width=1.5)))
    toks = [escape(t) for t in tokens]
    mode = "markers+text" if n <= 40 else "markers"  # labels would overlap on long inputs
    fig.add_trace(go.Scatter(
        x=np.arange(n), y=np.ones(n), mode=mode, text=toks, textposition="top center",
        marker=dict(size=9, color="#444"), showlegend=False,
        hovertemplate="original position %{x}: %{text}<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=np.arange(n), y=np.zeros(n), mode=mode, text=[toks[o] for o in perm],
        textposition="bottom center", marker=dict(size=9, color="#444"), showlegend=False,
        customdata=perm, hovertemplate="shuffled position %{x}: %{text} (was #%{customdata})"
        "<extra></extra>"))
    fig.update_yaxes(tickvals=[0, 1], ticktext=["shuffled", "original"], range=[-0.6, 1.6],
                     zeroline=False, showgrid=False)
    fig.update_xaxes(title="position", showgrid=False, zeroline=False)
    return _layout(fig, title or "The shuffle: token perm[i] moves to position i", 260)


def equivariance_figure(diffs: dict[str, np.ndarray], title: str | None = None) -> go.Figure:
    """Bars of max |Y' - P Y| per layer (0 = embeddings), one group per position mode."""
    fig = go.Figure()
    for mode, d in diffs.items():
        d = np.asarray(d, dtype=np.float64)
        fig.add_trace(go.Bar(
            x=[f"layer {i}" if i else "embeddings" for i in range(len(d))], y=d,
            name=MODE_NAMES.get(mode, mode), marker_color=MODE_COLORS.get(mode),
            text=[f"{v:.2g}" if v else "0" for v in d], textposition="outside",
            hovertemplate="%{x}: max |difference| = %{y:.3g}<extra></extra>"))
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.2))
    fig.update_yaxes(title="max |difference|")
    return _layout(fig, title or "Outputs of the shuffled sentence vs the original outputs, "
                   "shuffled the same way", 380)


# ------------------------------------------------------------------------ 2. two saws
def cosine_curve(curves: dict[str, np.ndarray], pair_label: str,
                 title: str | None = None) -> go.Figure:
    """cos(x_i, x_j) per layer, one line per position mode."""
    fig = go.Figure()
    for mode, c in curves.items():
        c = np.asarray(c, dtype=np.float64)
        fig.add_trace(go.Scatter(
            x=np.arange(len(c)), y=c, mode="lines+markers", name=MODE_NAMES.get(mode, mode),
            line=dict(color=MODE_COLORS.get(mode), width=3 if mode == "none" else 2,
                      dash="dash" if mode == "none" else None),
            hovertemplate="layer %{x}: cosine = %{y:.6f}<extra></extra>"))
    n = len(next(iter(curves.values())))
    fig.update_xaxes(title="layer (0 = embeddings, before any attention)",
                     tickvals=list(range(n)), ticktext=["emb"] + [str(i) for i in range(1, n)])
    fig.update_yaxes(title="cosine similarity", range=[min(-0.05, _lo(curves)), 1.05])
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    return _layout(fig, title or f"Cosine similarity of {pair_label}, layer by layer", 400)


def _lo(curves: dict[str, np.ndarray]) -> float:
    return float(min(np.min(c) for c in curves.values())) - 0.05


def attention_rows(rows: dict[str, np.ndarray], tokens: list[str], i: int, j: int,
                   title: str | None = None) -> go.Figure:
    """For each mode, the weight rows of queries i and j ([2, n]) as grouped bars over keys."""
    modes = list(rows)
    fig = make_subplots(rows=1, cols=len(modes), shared_yaxes=True,
                        subplot_titles=[MODE_NAMES.get(m, m) for m in modes])
    labels = axis_labels(tokens)
    xv, xt = tick_labels(tokens)
    for c, mode in enumerate(modes, start=1):
        for r, (q, color) in enumerate(((i, "#ff7f0e"), (j, "#17becf"))):
            fig.add_trace(go.Bar(
                x=labels, y=np.asarray(rows[mode][r], dtype=np.float32),
                name=f"query {labels[q]}", marker_color=color, showlegend=c == 1,
                legendgroup=str(r),
                hovertemplate=f"query {labels[q]}<br>key %{{x}}<br>weight = %{{y:.4f}}"
                "<extra></extra>"), row=1, col=c)
        fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels,
                         tickvals=xv, ticktext=xt, tickangle=-45, row=1, col=c)
    fig.update_yaxes(title="weight", range=[0, 1], row=1, col=1)
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.3, x=0.5,
                                                   xanchor="center"))
    return _layout(fig, title or "Their attention rows (each sums to 1)", 420)


def weights_comparison(w_with: np.ndarray, w_without: np.ndarray, tokens: list[str],
                       title: str | None = None) -> go.Figure:
    """Three heatmaps of one head: weights with positions, without, and their difference."""
    fig = make_subplots(rows=1, cols=3, horizontal_spacing=0.07, subplot_titles=[
        "with learned positions", "without positions", "difference (with - without)"])
    labels = axis_labels(tokens)
    diff = np.asarray(w_with, np.float32) - np.asarray(w_without, np.float32)
    for c, (m, axis, name) in enumerate(((w_with, "coloraxis", "weight"),
                                         (w_without, "coloraxis", "weight"),
                                         (diff, "coloraxis2", "difference")), start=1):
        fig.add_trace(go.Heatmap(
            z=np.asarray(m, dtype=np.float32), x=labels, y=labels, coloraxis=axis,
            hovertemplate=f"query %{{y}}<br>key %{{x}}<br>{name} = %{{z:.4f}}<extra></extra>"),
            row=1, col=c)
        _token_axes(fig, tokens, row=1, col=c, yticks=c == 1)
    lim = _sym(diff)
    fig.update_layout(  # both colour bars on the right, stacked: none covers a panel
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0, cmax=1, colorbar=dict(
            title=dict(text="weight"), thickness=10, x=1.01, y=0.78, len=0.45)),
        coloraxis2=dict(colorscale=SCORES_SCALE, cmid=0, cmin=-lim, cmax=lim, colorbar=dict(
            title=dict(text="diff"), thickness=10, x=1.01, y=0.22, len=0.45)),
    )
    n = max(len(tokens), 6)
    return _layout(fig, title or "One head's weights", int(min(700, max(330, 24 * n + 160))))


def _token_axes(fig: go.Figure, tokens: list[str], row: int, col: int,
                yticks: bool = True) -> None:
    labels = axis_labels(tokens)
    v, t = tick_labels(tokens, max_ticks=30)
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=labels, tickvals=v,
                     ticktext=t, autorange="reversed", showticklabels=yticks, row=row, col=col)
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels, tickvals=v,
                     ticktext=t, tickangle=-45, row=row, col=col)


# ----------------------------------------------------------------- 3. the encodings
def encoding_heatmap(pe: np.ndarray, title: str, clip: float | None = None) -> go.Figure:
    """A [positions, dimensions] table of position vectors e^p.

    With `clip` (a percentile, e.g. 99) the colour scale stops at that percentile of |e|, so a
    few outliers do not wash out the rest; the hover still shows the exact value.
    """
    pe = np.asarray(pe, dtype=np.float32)
    lim = _sym(pe)
    if clip is not None:
        lim = float(np.percentile(np.abs(pe), clip)) or lim
    fig = go.Figure(go.Heatmap(
        z=pe, colorscale=SCORES_SCALE, zmid=0, zmin=-lim, zmax=lim,
        colorbar=dict(title=dict(text="value"), thickness=10),
        hovertemplate="position %{y}<br>dimension %{x}<br>value = %{z:.4f}<extra></extra>"))
    fig.update_yaxes(title="position p", autorange="reversed")
    fig.update_xaxes(title="dimension")
    return _layout(fig, title, 380)


def position_matrix(m: np.ndarray, title: str, name: str = "cosine") -> go.Figure:
    """A [positions, positions] matrix (dot products or cosines of position vectors)."""
    m = np.asarray(m, dtype=np.float32)
    lim = _sym(m)
    fig = go.Figure(go.Heatmap(
        z=m, colorscale=SCORES_SCALE, zmid=0, zmin=-lim, zmax=lim,
        colorbar=dict(title=dict(text=name), thickness=10),
        hovertemplate=f"position %{{y}} vs %{{x}}<br>{name} = %{{z:.4f}}<extra></extra>"))
    fig.update_yaxes(title="position p", autorange="reversed", scaleanchor="x")
    fig.update_xaxes(title="position q")
    return _layout(fig, title, 420)


def pca_scatter(coords: np.ndarray, ratio: np.ndarray, title: str | None = None,
                first: int = 0) -> go.Figure:
    """Positions first, first + 1, ... projected on two principal components, coloured by index."""
    coords = np.asarray(coords, dtype=np.float64)
    idx = np.arange(first, first + len(coords))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=coords[:, 0], y=coords[:, 1], mode="lines", hoverinfo="skip",
                             line=dict(color="#cccccc", width=1), showlegend=False))
    fig.add_trace(go.Scatter(
        x=coords[:, 0], y=coords[:, 1], mode="markers", customdata=idx, showlegend=False,
        marker=dict(color=idx, colorscale="Viridis", size=6,
                    colorbar=dict(title=dict(text="position"), thickness=10)),
        hovertemplate="position %{customdata}<br>PC1 %{x:.3f}, PC2 %{y:.3f}<extra></extra>"))
    fig.update_xaxes(title=f"PC1 ({100 * ratio[0]:.1f}% of variance)")
    fig.update_yaxes(title=f"PC2 ({100 * ratio[1]:.1f}% of variance)")
    return _layout(fig, title or "Learned positions, 2-D projection (PCA)", 420)


# ------------------------------------------------------- 4. how much each mode changes
def mode_distance_grid(distances: dict[str, np.ndarray], reference: str = "learned",
                       title: str | None = None) -> go.Figure:
    """One layers x heads heatmap per mode: mean JS divergence of weight rows vs the reference."""
    modes = list(distances)
    fig = make_subplots(rows=1, cols=len(modes), horizontal_spacing=0.04,
                        subplot_titles=[MODE_NAMES.get(m, m) for m in modes])
    vmax = max(float(np.max(d)) for d in distances.values()) or 1.0
    for c, mode in enumerate(modes, start=1):
        d = np.asarray(distances[mode], dtype=np.float32)  # [L, H]
        fig.add_trace(go.Heatmap(
            z=d, coloraxis="coloraxis",
            hovertemplate=f"{escape(mode)}<br>layer %{{y}}, head %{{x}}<br>"
            "mean JS = %{z:.4f} bits<extra></extra>"), row=1, col=c)
        fig.update_yaxes(autorange="reversed", title="layer" if c == 1 else None,
                         dtick=1, row=1, col=c)
        fig.update_xaxes(title="head", dtick=2, row=1, col=c)
    fig.update_layout(coloraxis=dict(colorscale=DISTANCE_SCALE, cmin=0, cmax=vmax,
                                     colorbar=dict(title=dict(text="bits"), thickness=10)))
    ref = MODE_NAMES.get(reference, reference)
    return _layout(fig, title or f"How much each head's weights move, compared with {ref} "
                   "(mean Jensen-Shannon divergence of rows)", 340)


def final_change_figure(cosines: dict[str, np.ndarray], tokens: list[str],
                        reference: str = "learned", title: str | None = None) -> go.Figure:
    """Per token: cosine of its final vector under each mode with the reference mode's."""
    labels = axis_labels(tokens)
    xv, xt = tick_labels(tokens)
    fig = go.Figure()
    for mode, c in cosines.items():
        fig.add_trace(go.Bar(
            x=labels, y=np.asarray(c, dtype=np.float64), name=MODE_NAMES.get(mode, mode),
            marker_color=MODE_COLORS.get(mode),
            hovertemplate=f"{escape(mode)}<br>%{{x}}: cosine = %{{y:.4f}}<extra></extra>"))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=labels, tickvals=xv,
                     ticktext=xt, tickangle=-45)
    fig.update_yaxes(title="cosine with the reference", range=[min(0.0, _lo(cosines)), 1.05])
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=1.08))
    ref = MODE_NAMES.get(reference, reference)
    return _layout(fig, title or f"Final vectors: how close each mode stays to {ref}", 380)


# ------------------------------------------------------------------ toy vectors
def toy_outputs(toy: dict[str, dict], words: list[str], title: str | None = None) -> go.Figure:
    """The toy layer's outputs b^i ([n, d]) without and with positions, side by side."""
    modes = list(toy)
    fig = make_subplots(rows=1, cols=len(modes), horizontal_spacing=0.08,
                        subplot_titles=[f"outputs b^i, {MODE_NAMES.get(m, m)}" for m in modes])
    lim = max(_sym(v["outputs"]) for v in toy.values())
    labels = axis_labels(words)
    for c, mode in enumerate(modes, start=1):
        y = np.asarray(toy[mode]["outputs"], dtype=np.float64)
        fig.add_trace(go.Heatmap(
            z=y, y=labels, x=[f"dim {k}" for k in range(y.shape[1])], coloraxis="coloraxis",
            text=np.round(y, 3), texttemplate="%{text}",
            hovertemplate="%{y}, %{x}: %{z:.6f}<extra></extra>"), row=1, col=c)
        v, t = tick_labels(words)
        fig.update_yaxes(type="category", categoryorder="array", categoryarray=labels,
                         tickvals=v, ticktext=t, autorange="reversed", row=1, col=c)
    fig.update_layout(coloraxis=dict(colorscale=SCORES_SCALE, cmid=0, cmin=-lim, cmax=lim,
                                     colorbar=dict(thickness=10)))
    return _layout(fig, title or "Toy self-attention on 4-dimensional vectors", 300)
