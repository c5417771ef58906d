"""Figures for images as vector sets: a clickable picture, per-pixel maps, attention heads.

Seed 003 (images as vector sets; "CNN is a simplified self-attention") and Cordonnier, Loukas &
Jaggi 2020 (arXiv:1911.03584). Convention for every map: x = column, y = row (row 0 at the
top), one cell per pixel; the picked pixel is outlined in red. Arrays in, Figures out; no
Streamlit.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import FONT, WEIGHTS_SCALE

PICK = dict(color="#e4002b", width=2)  # outline of the picked pixel
FIELD = dict(color="white", width=2, dash="dash")  # outline of an analytic field
INFLUENCE_FLOOR = -16.0  # log10 of the smallest relative influence drawn


def _rgb(image: np.ndarray) -> np.ndarray:
    """float [H, W, 3] in [0, 1] -> uint8 for go.Image."""
    return (np.clip(np.asarray(image, dtype=np.float64), 0.0, 1.0) * 255).round().astype(np.uint8)


def _outline(fig: go.Figure, r0: float, r1: float, c0: float, c1: float, line: dict,
             row: int | None = None, col: int | None = None) -> None:
    kw = {} if row is None else dict(row=row, col=col)
    fig.add_shape(type="rect", x0=c0 - 0.5, x1=c1 + 0.5, y0=r0 - 0.5, y1=r1 + 0.5, line=line,
                  **kw)


def _pixel_axes(fig: go.Figure, height: int, width: int, row=None, col=None) -> None:
    kw = {} if row is None else dict(row=row, col=col)
    fig.update_xaxes(range=[-0.5, width - 0.5], constrain="domain", showgrid=False,
                     zeroline=False, **kw)
    fig.update_yaxes(range=[height - 0.5, -0.5], scaleanchor="x" if row is None else None,
                     constrain="domain", showgrid=False, zeroline=False, **kw)


def image_figure(image: np.ndarray, pick: tuple[int, int] | None = None, title: str = "",
                 clickable: bool = True) -> go.Figure:
    """The picture, one cell per pixel; click a pixel to pick it (an invisible marker per pixel
    carries its (row, col) for point selection)."""
    height, width, _ = image.shape
    rgb = _rgb(image)
    fig = go.Figure(go.Image(z=rgb, hoverinfo="skip" if clickable else None,
                             hovertemplate="row %{y}, col %{x}<extra></extra>"))
    if clickable:  # the markers take the hover and the click (the Image trace cannot select)
        rows, cols = np.divmod(np.arange(height * width), width)
        fig.add_trace(go.Scatter(
            x=cols, y=rows, mode="markers",
            customdata=rgb.reshape(-1, 3),
            marker=dict(size=max(4, 360 // max(height, width)), opacity=0.0, symbol="square"),
            selected=dict(marker=dict(opacity=0.0)), unselected=dict(marker=dict(opacity=0.0)),
            hovertemplate="row %{y}, col %{x}<br>RGB %{customdata[0]}, %{customdata[1]}, "
                          "%{customdata[2]}<extra>click to pick</extra>", showlegend=False,
        ))
    if pick is not None:
        _outline(fig, pick[0], pick[0], pick[1], pick[1], PICK)
    _pixel_axes(fig, height, width)
    # clickmode/dragmode left unset: Streamlit sets "event+select" when selection is on
    fig.update_layout(title=title, height=380, font=FONT, margin=dict(l=10, r=10, t=50, b=10))
    return fig


def map_figure(values: np.ndarray, pick: tuple[int, int], title: str, kind: str = "weights",
               field: tuple[int, int, int, int] | None = None) -> go.Figure:
    """One per-pixel map of the picked pixel: 'weights' (linear, from 0) or 'influence'
    (log10 of I / max I; pixels with I = 0 exactly are left blank). `field` = (r0, r1, c0, c1)
    draws an analytic field's outline."""
    values = np.asarray(values, dtype=np.float64)
    height, width = values.shape
    if kind == "weights":
        z, colour = values, dict(colorscale=WEIGHTS_SCALE, zmin=0.0, zmax=float(values.max()))
        hover, bar = "weight = %{z:.3g}", "weight"
    elif kind == "influence":
        top = float(values.max()) or 1.0
        with np.errstate(divide="ignore"):
            z = np.where(values > 0, np.log10(values / top), np.nan)
        colour = dict(colorscale="Magma", zmin=INFLUENCE_FLOOR, zmax=0.0)
        hover, bar = "log10 influence / max = %{z:.2f}", "log10 I/max"
    else:
        raise ValueError("kind must be 'weights' or 'influence'")
    fig = go.Figure(go.Heatmap(
        z=z, hovertemplate=f"row %{{y}}, col %{{x}}<br>{hover}<extra></extra>",
        colorbar=dict(title=dict(text=bar), thickness=12), **colour))
    if field is not None:
        _outline(fig, *field, FIELD)
    _outline(fig, pick[0], pick[0], pick[1], pick[1], PICK)
    _pixel_axes(fig, height, width)
    fig.update_layout(title=title, height=380, font=FONT, margin=dict(l=10, r=10, t=50, b=10),
                      plot_bgcolor="#d9d9d9")
    return fig


def head_maps_figure(maps: np.ndarray, shifts: np.ndarray, pick: tuple[int, int], pad: int,
                     image_size: tuple[int, int], radius: int | None = None,
                     title: str = "") -> go.Figure:
    """Each head's weights for the picked query pixel, one small map per head (k x k grid).

    maps: [k^2, H + 2 pad, W + 2 pad] over the keys (image plus padding ring). Each map is
    cropped to rows/cols within `radius` of the pixel (default k//2 + 1), in image
    coordinates; the dashed line is the image border, cells beyond the key grid are blank.
    """
    n_heads = len(maps)
    k = int(round(np.sqrt(n_heads)))
    radius = k // 2 + 1 if radius is None else radius
    row, col = pick
    height, width = image_size
    span = np.arange(-radius, radius + 1)
    rr, cc = row + span + pad, col + span + pad  # indices into the key grid
    ok_r = (rr >= 0) & (rr < maps.shape[1])
    ok_c = (cc >= 0) & (cc < maps.shape[2])
    titles = [f"Δ = ({int(dr):+d}, {int(dc):+d})" for dr, dc in shifts]
    fig = make_subplots(rows=k, cols=k, subplot_titles=titles, horizontal_spacing=0.03,
                        vertical_spacing=0.06)
    for h in range(n_heads):
        crop = np.full((len(span), len(span)), np.nan)
        crop[np.ix_(ok_r, ok_c)] = maps[h][np.ix_(rr[ok_r], cc[ok_c])]
        r, c = h // k + 1, h % k + 1
        fig.add_trace(go.Heatmap(
            z=crop, x=col + span, y=row + span, coloraxis="coloraxis",
            hovertemplate=(f"head {h} (Δ {titles[h][4:]})<br>key row %{{y}}, col %{{x}}<br>"
                           "weight = %{z:.3g}<extra></extra>")), row=r, col=c)
        _outline(fig, row, row, col, col, PICK, row=r, col=c)
        _outline(fig, 0, height - 1, 0, width - 1, dict(color="#888", width=1, dash="dot"),
                 row=r, col=c)
        fig.update_xaxes(range=[col - radius - 0.5, col + radius + 0.5], showticklabels=False,
                         showgrid=False, zeroline=False, row=r, col=c)
        fig.update_yaxes(range=[row + radius + 0.5, row - radius - 0.5], showticklabels=False,
                         showgrid=False, zeroline=False, row=r, col=c,
                         scaleanchor="x" if h == 0 else f"x{h + 1}")  # square pixels
    fig.update_annotations(font_size=11)
    fig.update_layout(
        title=title, height=150 * k + 80, font=FONT, margin=dict(l=10, r=10, t=70, b=10),
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0.0, cmax=1.0,
                       colorbar=dict(title=dict(text="weight"), thickness=12)),
        plot_bgcolor="#d9d9d9",
    )
    return fig


def images_row(images: list[np.ndarray], titles: list[str], difference: np.ndarray | None = None,
               difference_title: str = "|difference|", normalise: bool = True) -> go.Figure:
    """Images side by side ([H, W, 3] each), optionally with a heatmap of a difference [H, W].

    normalise=True maps all images with one common (min, max) to [0, 1], so a filter whose
    outputs leave [0, 1] (edges, a random kernel) can be seen and compared fairly.
    """
    n = len(images) + (difference is not None)
    fig = make_subplots(rows=1, cols=n, subplot_titles=[*titles, difference_title][:n],
                        horizontal_spacing=0.04)
    lo = min(float(np.min(im)) for im in images) if normalise else 0.0
    hi = max(float(np.max(im)) for im in images) if normalise else 1.0
    span = hi - lo or 1.0
    for i, im in enumerate(images):
        fig.add_trace(go.Image(z=_rgb((np.asarray(im) - lo) / span),
                               hovertemplate="row %{y}, col %{x}<extra></extra>"), row=1, col=i + 1)
    if difference is not None:
        fig.add_trace(go.Heatmap(
            z=np.asarray(difference, dtype=np.float64), colorscale="Greys", zmin=0.0,
            zmax=max(float(np.max(difference)), 1e-6),  # all-zero stays white, not mid-grey
            hovertemplate="row %{y}, col %{x}<br>|difference| = %{z:.2e}<extra></extra>",
            colorbar=dict(title=dict(text="|diff|"), thickness=12, exponentformat="e")),
            row=1, col=n)
        h, w = np.asarray(difference).shape
        fig.update_yaxes(range=[h - 0.5, -0.5], row=1, col=n)
        fig.update_xaxes(range=[-0.5, w - 0.5], row=1, col=n)
        _outline(fig, 0, h - 1, 0, w - 1, dict(color="#888", width=1), row=1, col=n)
    fig.update_xaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    fig.update_yaxes(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    fig.update_layout(height=340, font=FONT, margin=dict(l=10, r=10, t=50, b=10))
    return fig
