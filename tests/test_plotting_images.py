"""Figures of the Images page carry exactly the analysis numbers, in row/column pixel order."""

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz.analysis import conv_attention as ca
from attnviz.plotting import images as plots
from tests.colours import luminance


def _img(h=6, w=8):
    return np.random.default_rng(0).random((h, w, 3))


def test_image_figure_pixels_and_click_markers():
    img = _img()
    fig = plots.image_figure(img, pick=(2, 5), title="t")
    image, markers = fig.data
    assert isinstance(image, go.Image) and isinstance(markers, go.Scatter)
    np.testing.assert_array_equal(image.z, np.round(img * 255).astype(np.uint8))
    # marker i sits on pixel (row, col) = divmod(i, width): x = column, y = row
    i = 2 * 8 + 5
    assert (markers.y[i], markers.x[i]) == (2, 5)
    np.testing.assert_array_equal(markers.customdata[i], image.z[2, 5])
    rect = fig.layout.shapes[0]
    assert (rect.x0, rect.x1, rect.y0, rect.y1) == (4.5, 5.5, 1.5, 2.5)
    assert len(plots.image_figure(img, clickable=False).data) == 1


def test_weights_map_is_the_array():
    vals = np.random.default_rng(1).random((6, 8))
    fig = plots.map_figure(vals, (1, 1), "w")
    np.testing.assert_array_equal(fig.data[0].z, vals)
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == pytest.approx(vals.max())


def test_influence_map_is_log_relative_and_blank_at_zero():
    vals = np.zeros((5, 5))
    vals[1:4, 1:4] = 2.0
    vals[2, 2] = 20.0
    fig = plots.map_figure(vals, (2, 2), "i", kind="influence", field=(1, 3, 1, 3))
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[0, 0]) and z[2, 2] == 0.0 and z[1, 1] == pytest.approx(-1.0)
    field = fig.layout.shapes[0]
    assert (field.x0, field.x1, field.y0, field.y1) == (0.5, 3.5, 0.5, 3.5)
    assert fig.data[0].colorbar.ticklabelposition == "outside bottom"  # 0 is the top tick
    with pytest.raises(ValueError):
        plots.map_figure(vals, (0, 0), "x", kind="nope")


def test_head_maps_show_each_heads_key_at_its_shift():
    k, row, col, size = 3, 0, 4, 6
    maps = ca.pixel_head_maps(size, size, k, row, col)
    fig = plots.head_maps_figure(maps, ca.kernel_shifts(k).numpy(), (row, col), k // 2,
                                 (size, size))
    assert len(fig.data) == 9
    for h, (dr, dc) in enumerate(ca.kernel_shifts(k).tolist()):
        trace = fig.data[h]
        z = np.asarray(trace.z, dtype=float)
        r, c = np.unravel_index(np.nanargmax(z), z.shape)
        assert (trace.y[r], trace.x[c]) == (row + dr, col + dc)  # image coordinates
        assert z[r, c] == pytest.approx(1.0)
        assert fig.layout.annotations[h].text == f"Δ = ({dr:+d}, {dc:+d})"
    # row 0: the crop's top row (-2) lies beyond the padding ring (-1): blank, not 0
    assert np.isnan(np.asarray(fig.data[0].z, dtype=float)[0]).all()


def test_images_row_normalises_together_and_shows_the_difference():
    a = np.full((4, 4, 3), -1.0)
    b = np.full((4, 4, 3), 3.0)
    diff = np.zeros((4, 4))
    fig = plots.images_row([a, b], ["a", "b"], diff)
    assert len(fig.data) == 3
    assert fig.data[0].z.max() == 0 and fig.data[1].z.min() == 255
    assert fig.data[2].zmax == 1e-6 and fig.data[2].zmin == 0  # all-zero difference stays white
    # its top tick is the bar's end: the labels hang below the ticks, clear of the bar's title
    assert fig.data[2].colorbar.ticklabelposition == "outside bottom"


def test_difference_map_reads_on_a_dark_page():
    """The |difference| map (conv2d against attention): on a white page 0 (no difference) is
    white, the largest difference black; on the dark theme's page (the figure as
    live_chart.for_theme draws it there, plotting.common.for_dark_background) 0 is near-black,
    no light slab where nothing differs, and the largest difference the brightest cell, as far
    from the page as black is from white. The pictures beside it are the same."""
    from attnviz.plotting.common import for_dark_background

    diff = np.zeros((6, 8))
    diff[3:, 4:] = np.linspace(0.0, 2e-5, 12).reshape(3, 4)  # most pixels: no difference
    fig = plots.images_row([_img(), _img()], ["a", "b"], diff)
    dark_fig = for_dark_background(fig)
    light, dark = fig.data[2], dark_fig.data[2]
    assert (dark.zmin, dark.zmax) == (light.zmin, light.zmax) == (0.0, 2e-5)
    np.testing.assert_array_equal(dark.z, diff)
    assert dark_fig.data[:2] == fig.data[:2]
    # the white page: as it is drawn there, 0 white, the top black
    assert luminance(light.colorscale[0][1]) == 1.0 and luminance(light.colorscale[-1][1]) == 0
    zero, top = dark.colorscale[0][1], dark.colorscale[-1][1]
    dark_page = 0.0056  # Streamlit's dark background #0E1117
    assert luminance(zero) < 0.01, zero  # 0 reads as "nothing" on the dark page
    assert (luminance(top) + 0.05) / (dark_page + 0.05) > 7, top
