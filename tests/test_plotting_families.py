"""plotting.families: the figures carry exactly the numbers they are given, in place."""

import numpy as np

from attnviz.plotting import families as fam_plots


def test_image_attention_puts_each_patch_over_its_pixels():
    image = np.zeros((224, 224, 3), np.uint8)
    grid = np.arange(196, dtype=np.float32).reshape(14, 14) / 196
    fig = fam_plots.image_attention(image, grid, "t")
    img, heat = fig.data
    assert img.type == "image" and np.asarray(img.z).shape == (224, 224, 3)
    np.testing.assert_array_equal(np.asarray(heat.z), grid)
    # patch (r, c) is centred on pixels 16r + 7.5, 16c + 7.5 (pixel i spans i-0.5 .. i+0.5)
    assert heat.x0 + 3 * heat.dx == 16 * 3 + 7.5 and heat.dy == 16
    assert heat.text[2][5] == "patch 2,5" and heat.zmin == 0 and heat.zmax == grid.max()


def test_later_weight_chart_lines_are_the_curves():
    curves = {"BERT <b>": np.array([0.3, 0.2]), "GPT-2": np.zeros(3)}
    fig = fam_plots.later_weight_chart(curves)
    assert [d.name for d in fig.data] == ["BERT &lt;b&gt;", "GPT-2"]  # names escaped
    np.testing.assert_array_equal(fig.data[0].y, [0.3, 0.2])
    np.testing.assert_array_equal(fig.data[1].y, [0, 0, 0])
