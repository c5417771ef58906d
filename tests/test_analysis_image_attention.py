"""Pixels as vectors: the attention layer's weights, and receptive fields measured by gradients."""

import numpy as np
import pytest
import torch

from attnviz.analysis import image_attention as ia


def _img(h=9, w=11, seed=0):
    return np.random.default_rng(seed).random((h, w, 3))  # float64


def _gaussian_weights(img, sc, sp):
    """The bilateral weights written out independently (NumPy, no engine)."""
    h, w, _ = img.shape
    c = img.reshape(-1, 3)
    rr, cc = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    p = np.stack([rr.ravel(), cc.ravel()], 1).astype(float)
    logit = -((c[:, None] - c[None]) ** 2).sum(-1) / (2 * sc**2)
    if sp is not None:
        logit = logit - ((p[:, None] - p[None]) ** 2).sum(-1) / (2 * sp**2)
    e = np.exp(logit - logit.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.mark.parametrize("sc,sp", [(0.2, 3.0), (0.5, None), (0.1, 1.5)])
def test_weights_are_the_bilateral_gaussian(sc, sp):
    img = _img()
    out, weights = ia.bilateral_attention(torch.from_numpy(img), sc, sp)
    ref = _gaussian_weights(img, sc, sp)
    np.testing.assert_allclose(weights.numpy(), ref, atol=1e-6, rtol=0)
    np.testing.assert_allclose(weights.sum(-1).numpy(), 1.0, atol=1e-12)
    np.testing.assert_allclose(out.numpy().reshape(-1, 3), ref @ img.reshape(-1, 3), atol=1e-6)


def test_float32_agrees_with_float64():
    img = _img(16, 16, 3)
    _, w32 = ia.bilateral_attention(torch.from_numpy(img.astype(np.float32)), 0.2, 8.0)
    np.testing.assert_allclose(w32.numpy(), _gaussian_weights(img, 0.2, 8.0), atol=1e-5)


def test_without_positions_same_colour_means_same_weight_anywhere():
    img = _img(6, 6, 1)
    img[0, 0] = img[5, 5] = img[2, 3]  # three pixels of one colour, far apart
    _, w = ia.bilateral_attention(torch.from_numpy(img), 0.3, None)
    row = w[2 * 6 + 3].numpy()
    assert row[0] == pytest.approx(row[35], abs=1e-15) == pytest.approx(row[2 * 6 + 3], abs=1e-15)
    assert row[0] == row.max()


def test_image_as_vectors_and_the_asset():
    img = ia.load_image(24)
    assert img.shape == (24, 24, 3) and img.dtype == np.float32
    assert 0.0 <= img.min() and img.max() <= 1.0 and img.std() > 0.1
    full = ia.load_image(64)  # the shipped file, unresized
    assert full.shape == (64, 64, 3)
    colours, pos = ia.pixel_vectors(img)
    assert colours.shape == (576, 3) and pos.shape == (576, 2)
    np.testing.assert_array_equal(colours[24 * 5 + 7].numpy(), img[5, 7])
    np.testing.assert_allclose(pos[24 * 5 + 7].numpy(), [5 - 11.5, 7 - 11.5])


def test_mean_filter_written_out():
    img = _img(7, 8, 2)
    k = 3
    ref = np.zeros_like(img)
    padded = np.pad(img, ((1, 1), (1, 1), (0, 0)))
    for i in range(7):
        for j in range(8):
            ref[i, j] = padded[i:i + 3, j:j + 3].mean(axis=(0, 1))
    out = ia.conv_stack(torch.from_numpy(img), 1, k).numpy()
    np.testing.assert_allclose(out, ref, atol=1e-12)
    twice = ia.conv_stack(torch.from_numpy(img), 2, k).numpy()
    once_more = ia.conv_stack(torch.from_numpy(ref), 1, k).numpy()
    np.testing.assert_allclose(twice, once_more, atol=1e-12)


@pytest.mark.parametrize("k,depth,pixel", [(3, 1, (4, 5)), (3, 3, (4, 5)), (5, 2, (0, 0)),
                                           (5, 1, (8, 10)), (3, 4, (2, 9))])
def test_measured_conv_field_is_the_analytic_square(k, depth, pixel):
    img = _img()
    s = ia.study_pixel(img, *pixel, k=k, depth=depth)
    np.testing.assert_array_equal(s.conv_influence > 0, s.conv_field)
    side = depth * (k - 1) + 1
    if pixel == (4, 5) and side <= 9:
        assert s.conv_field.sum() == side * side
    # attention: every pixel from layer 1
    assert (s.attention_influence > 0).all()
    assert s.field_sizes["attention"] == 99


def test_conv_influence_value_and_attention_map():
    img = _img()
    s = ia.study_pixel(img, 4, 5, k=3, depth=1, sigma_colour=0.3, sigma_position=2.0)
    # each output channel reads only its own channel with weight 1/9: I = 3 x 1/9 in the window
    np.testing.assert_allclose(s.conv_influence[s.conv_field], 3 / 9, atol=1e-12)
    np.testing.assert_allclose(s.conv_map.sum(), 1.0)
    ref = _gaussian_weights(img, 0.3, 2.0)[4 * 11 + 5].reshape(9, 11)
    np.testing.assert_allclose(s.attention_map, ref, atol=1e-6)


def test_attention_influence_matches_finite_differences():
    img = _img(5, 6, 4)
    sc, sp, depth, p = 0.4, 2.0, 2, (2, 3)
    s = ia.study_pixel(img, *p, k=3, depth=depth, sigma_colour=sc, sigma_position=sp)
    eps = 1e-6
    for j in [(0, 0), (2, 3), (4, 5), (1, 4)]:
        total = 0.0
        for c_in in range(3):
            plus, minus = img.copy(), img.copy()
            plus[j][c_in] += eps
            minus[j][c_in] -= eps
            yp = ia.attention_stack(torch.from_numpy(plus), depth, sc, sp)[p].numpy()
            ym = ia.attention_stack(torch.from_numpy(minus), depth, sc, sp)[p].numpy()
            total += np.abs((yp - ym) / (2 * eps)).sum()
        assert s.attention_influence[j] == pytest.approx(total, rel=1e-6, abs=1e-9)


def test_bad_pixel_is_refused():
    with pytest.raises(ValueError):
        ia.study_pixel(_img(), 9, 0)
    with pytest.raises(ValueError):
        ia.study_pixel(_img(), 0, 0, k=4)
