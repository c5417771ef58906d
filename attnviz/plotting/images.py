"""Figures for images as vector sets: a clickable picture, per-pixel maps, attention heads.

The lecture notes (images as vector sets; "CNN is a simplified self-attention") and Cordonnier,
Loukas & Jaggi 2020 (arXiv:1911.03584). Convention for every map: x = column, y = row (row 0 at the
top), one cell per pixel; the picked pixel is outlined in red. Arrays in, Figures out; no
Streamlit.

Every figure is built from plain dicts and validated once by go.Figure (see common.Grid):
add_shape/update_xaxes(row=, col=) on a built subplot figure re-search the grid on each call.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from attnviz.i18n import _

from .common import (
    DIFFERENCE_SCALE,
    FONT,
    IMAGE_BACKGROUND,
    INFLUENCE_SCALE,
    NEUTRAL,
    OKABE_ITO,
    ON_IMAGE,
    WEIGHTS_SCALE,
    Grid,
)

PICK = dict(color=OKABE_ITO[3], width=2)  # outline of the picked pixel
FIELD = dict(color=ON_IMAGE, width=2, dash="dash")  # outline of an analytic field
BORDER = dict(color=NEUTRAL, width=1, dash="dot")  # the image border in the heads' maps
INFLUENCE_FLOOR = -16.0  # log10 of the smallest relative influence drawn
MARGIN = dict(l=10, r=10, t=50, b=10)


def _rgb(image: np.ndarray) -> np.ndarray:
    """float [H, W, 3] in [0, 1] -> uint8 for go.Image."""
    return (np.clip(np.asarray(image, dtype=np.float64), 0.0, 1.0) * 255).round().astype(np.uint8)


def _outline(r0: float, r1: float, c0: float, c1: float, line: dict,
             ref: str | None = None) -> dict:
    """A layout shape outlining pixels rows r0..r1, cols c0..c1 (of the subplot whose axis
    suffix is `ref`, if given: Grid.ref)."""
    shape = dict(type="rect", x0=c0 - 0.5, x1=c1 + 0.5, y0=r0 - 0.5, y1=r1 + 0.5, line=line)
    if ref is not None:
        shape.update(xref=f"x{ref}", yref=f"y{ref}")
    return shape


def _pixel_hover() -> str:
    """A pixel's place in a hover: its row %{y} and column %{x}."""
    return _("row %{y}, col %{x}")


def _pixel_axes(height: int, width: int) -> dict:
    """Layout axes of a one-plot pixel map: square cells, row 0 at the top."""
    common = dict(constrain="domain", showgrid=False, zeroline=False)
    return dict(xaxis=dict(range=[-0.5, width - 0.5], **common),
                yaxis=dict(range=[height - 0.5, -0.5], scaleanchor="x", **common))


def image_figure(image: np.ndarray, pick: tuple[int, int] | None = None, title: str = "",
                 clickable: bool = True) -> go.Figure:
    """The picture, one cell per pixel; click a pixel to pick it (an invisible marker per pixel
    carries its (row, col) for point selection)."""
    height, width = image.shape[:2]
    rgb = _rgb(image)
    data = [dict(type="image", z=rgb, hovertemplate=_pixel_hover() + "<extra></extra>",
                 **(dict(hoverinfo="skip") if clickable else {}))]
    if clickable:  # the markers take the hover and the click (the Image trace cannot select)
        rows, cols = np.divmod(np.arange(height * width), width)
        data.append(dict(
            type="scatter", x=cols, y=rows, mode="markers",
            customdata=rgb.reshape(-1, 3),
            marker=dict(size=max(4, 360 // max(height, width)), opacity=0.0, symbol="square"),
            selected=dict(marker=dict(opacity=0.0)), unselected=dict(marker=dict(opacity=0.0)),
            hovertemplate=_pixel_hover() + "<br>RGB %{customdata[0]}, %{customdata[1]}, "
                          "%{customdata[2]}<extra>" + _("click to pick") + "</extra>",
            showlegend=False,
        ))
    shapes = [] if pick is None else [_outline(pick[0], pick[0], pick[1], pick[1], PICK)]
    # clickmode/dragmode left unset: Streamlit sets "event+select" when selection is on
    return go.Figure(data=data, layout=dict(
        shapes=shapes, **_pixel_axes(height, width), title=title, height=380, font=FONT,
        margin=MARGIN))


def map_figure(values: np.ndarray, pick: tuple[int, int], title: str, kind: str = "weights",
               field: tuple[int, int, int, int] | None = None) -> go.Figure:
    """One per-pixel map of the picked pixel: 'weights' (linear, from 0) or 'influence'
    (log10 of I / max I; pixels with I = 0 exactly are left blank). `field` = (r0, r1, c0, c1)
    draws an analytic field's outline."""
    values = np.asarray(values, dtype=np.float64)
    height, width = values.shape
    if kind == "weights":
        z, colour = values, dict(colorscale=WEIGHTS_SCALE, zmin=0.0, zmax=float(values.max()))
        hover, bar = _("weight = %{z:.3g}"), _("weights")  # a window's or a softmax's
    elif kind == "influence":
        top = float(values.max()) or 1.0
        with np.errstate(divide="ignore"):
            z = np.where(values > 0, np.log10(values / top), np.nan)
        colour = dict(colorscale=INFLUENCE_SCALE, zmin=INFLUENCE_FLOOR, zmax=0.0)
        hover, bar = _("log10 influence / max") + " = %{z:.2f}", "log10 I/max"
    else:
        raise ValueError("kind must be 'weights' or 'influence'")
    shapes = [] if field is None else [_outline(*field, FIELD)]
    shapes.append(_outline(pick[0], pick[0], pick[1], pick[1], PICK))
    return go.Figure(
        data=[dict(type="heatmap", z=z,
                   hovertemplate=f"{_pixel_hover()}<br>{hover}<extra></extra>",
                   colorbar=dict(title=dict(text=bar), thickness=12, **TOP_CLEAR), **colour)],
        layout=dict(shapes=shapes, **_pixel_axes(height, width), title=title, height=380,
                    font=FONT, margin=MARGIN, plot_bgcolor=IMAGE_BACKGROUND),
    )


# A colour bar whose top tick is its end (0 of log10 I/max, the |diff| floor): labels hang below
# their ticks, so the top one clears the bar's title in either language.
TOP_CLEAR = dict(ticklabelposition="outside bottom")


def head_maps_figure(maps: np.ndarray, shifts: np.ndarray, pick: tuple[int, int], pad: int,
                     image_size: tuple[int, int], radius: int | None = None,
                     title: str = "") -> go.Figure:
    """Each head's weights for the picked query pixel, one small map per head (k x k grid).

    maps: [k^2, H + 2 pad, W + 2 pad] over the keys (image plus padding ring). Each map is
    cropped to rows/cols within `radius` of the pixel (default k//2 + 1), in image
    coordinates; the dashed line is the image border, cells beyond the key grid are blank.
    """
    maps = np.asarray(maps)
    n_heads = len(maps)
    k = int(round(np.sqrt(n_heads)))
    radius = k // 2 + 1 if radius is None else radius
    row, col = pick
    height, width = image_size
    span = np.arange(-radius, radius + 1)
    rr, cc = row + span + pad, col + span + pad  # indices into the key grid
    ok_r = (rr >= 0) & (rr < maps.shape[1])
    ok_c = (cc >= 0) & (cc < maps.shape[2])
    crops = np.full((n_heads, len(span), len(span)), np.nan)
    crops[:, ok_r[:, None] & ok_c[None, :]] = (
        maps[:, rr[ok_r]][:, :, cc[ok_c]].reshape(n_heads, -1))
    titles = [f"Δ = ({int(dr):+d}, {int(dc):+d})" for dr, dc in shifts]
    g = Grid(k, k, subplot_titles=titles, horizontal_spacing=0.03,
             vertical_spacing=0.06)
    for note in g.layout.get("annotations", []):
        note.setdefault("font", {})["size"] = 11
    shapes = []
    hidden = dict(showticklabels=False, showgrid=False, zeroline=False)
    for h in range(n_heads):
        r, c = h // k + 1, h % k + 1
        g.add(dict(
            type="heatmap", z=crops[h], x=col + span, y=row + span, coloraxis="coloraxis",
            hovertemplate="<br>".join([
                _("head {head}").format(head=h) + f" (Δ {titles[h][4:]})",
                _("key pixel: row %{y}, col %{x}"),
                _("weight") + " = %{z:.3g}<extra></extra>"])), r, c)
        shapes += [_outline(row, row, col, col, PICK, ref=g.ref(r, c)),
                   _outline(0, height - 1, 0, width - 1, BORDER, ref=g.ref(r, c))]
        g.xaxis(r, c).update(range=[col - radius - 0.5, col + radius + 0.5], **hidden)
        g.yaxis(r, c).update(range=[row + radius + 0.5, row - radius - 0.5], **hidden,
                             scaleanchor=f"x{g.ref(r, c)}")  # square pixels
    return g.figure(
        shapes=shapes, title=title, height=150 * k + 80, font=FONT,
        margin=dict(l=10, r=10, t=70, b=10),
        coloraxis=dict(colorscale=WEIGHTS_SCALE, cmin=0.0, cmax=1.0,
                       colorbar=dict(title=dict(text=_("weights")), thickness=12)),
        plot_bgcolor=IMAGE_BACKGROUND,
    )


def images_row(images: list[np.ndarray], titles: list[str], difference: np.ndarray | None = None,
               difference_title: str | None = None, normalise: bool = True) -> go.Figure:
    """Images side by side ([H, W, 3] each), optionally with a heatmap of a difference [H, W].

    normalise=True maps all images with one common (min, max) to [0, 1], so a filter whose
    outputs leave [0, 1] (edges, a random kernel) can be seen and compared fairly.
    """
    n = len(images) + (difference is not None)
    difference_title = _("|difference|") if difference_title is None else difference_title
    g = Grid(1, n, subplot_titles=[*titles, difference_title][:n],
             horizontal_spacing=0.04)
    lo = min(float(np.min(im)) for im in images) if normalise else 0.0
    hi = max(float(np.max(im)) for im in images) if normalise else 1.0
    span = hi - lo or 1.0
    for i, im in enumerate(images):
        g.add(dict(type="image", z=_rgb((np.asarray(im) - lo) / span),
                   hovertemplate=_pixel_hover() + "<extra></extra>"), 1, i + 1)
    shapes = []
    if difference is not None:
        g.add(dict(
            type="heatmap", z=np.asarray(difference, dtype=np.float64), colorscale=DIFFERENCE_SCALE,
            zmin=0.0, zmax=max(float(np.max(difference)), 1e-6),  # all-zero: the low end
            hovertemplate=_pixel_hover() + "<br>" + _("|difference|")
            + " = %{z:.2e}<extra></extra>",
            colorbar=dict(title=dict(text=_("|diff|")), thickness=12, exponentformat="e",
                          **TOP_CLEAR)), 1, n)
        h, w = np.asarray(difference).shape
        g.yaxis(1, n)["range"] = [h - 0.5, -0.5]
        g.xaxis(1, n)["range"] = [-0.5, w - 0.5]
        shapes.append(_outline(0, h - 1, 0, w - 1, dict(color=NEUTRAL, width=1), ref=g.ref(1, n)))
    for c in range(1, n + 1):
        for axis in (g.xaxis(1, c), g.yaxis(1, c)):
            axis.update(showticklabels=False, ticks="", showgrid=False, zeroline=False)
    return g.figure(shapes=shapes, height=340, font=FONT, margin=MARGIN)
