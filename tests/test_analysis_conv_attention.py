"""Convolution as k^2-head self-attention (Cordonnier et al. 2020) against torch's conv2d."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis import conv_attention as ca


def _random(c_in, c_out, k, h, w, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(c_in, h, w, generator=g, dtype=dtype)
    kernel = torch.randn(c_out, c_in, k, k, generator=g, dtype=dtype) / k
    bias = torch.randn(c_out, generator=g, dtype=dtype)
    return x, kernel, bias


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("alpha", [ca.ALPHA, None])
@pytest.mark.parametrize("seed", [0, 1])
def test_attention_layer_equals_conv2d_zero_padding(k, alpha, seed):
    # non-square image, more output than input channels: row/col or channel mix-ups would show
    x, kernel, bias = _random(3, 4, k, 13, 17, seed)
    r = ca.conv_as_attention(x, kernel, bias, alpha=alpha, chunk=50)
    reference = F.conv2d(x[None], kernel, bias, padding=k // 2)[0]
    assert r.outputs.shape == reference.shape == (4, 13, 17)
    torch.testing.assert_close(r.outputs, reference, atol=1e-5, rtol=0)
    assert r.max_abs_diff == pytest.approx(float((r.outputs - reference).abs().max()))
    assert r.max_abs_diff < 1e-5


@pytest.mark.parametrize("k", [3, 5])
def test_float64_is_exact_to_1e_12(k):
    x, kernel, bias = _random(2, 3, k, 8, 6, 7, dtype=torch.float64)
    r = ca.conv_as_attention(x, kernel, bias)
    reference = F.conv2d(x[None], kernel, bias, padding=k // 2)[0]
    torch.testing.assert_close(r.outputs, reference, atol=1e-12, rtol=0)


@pytest.mark.parametrize("k", [3, 5])
def test_without_padding_ring_it_is_replicate_padding(k):
    x, kernel, bias = _random(3, 2, k, 9, 10, 3)
    r = ca.conv_as_attention(x, kernel, bias, zero_padding=False)
    replicate = F.conv2d(F.pad(x[None], (k // 2,) * 4, mode="replicate"), kernel, bias)[0]
    zero = F.conv2d(x[None], kernel, bias, padding=k // 2)[0]
    torch.testing.assert_close(r.outputs, replicate, atol=1e-5, rtol=0)
    # ... and not zero padding: the borders differ, the interior agrees
    p = k // 2
    assert float((r.outputs - zero).abs().max()) > 1e-2
    torch.testing.assert_close(r.outputs[:, p:-p, p:-p], zero[:, p:-p, p:-p], atol=1e-5, rtol=0)


def test_hard_heads_need_the_padding_ring():
    x, kernel, bias = _random(1, 1, 3, 5, 5, 0)
    with pytest.raises(ValueError, match="padding"):
        ca.conv_as_attention(x, kernel, bias, alpha=None, zero_padding=False)


def test_small_alpha_blurs_the_heads_and_misses_the_convolution():
    x, kernel, bias = _random(3, 3, 3, 10, 10, 5)
    diffs = [ca.conv_as_attention(x, kernel, bias, alpha=a).max_abs_diff for a in (0.5, 4, 64)]
    assert diffs[0] > 0.1 and diffs[1] > 1e-4 and diffs[2] < 1e-5
    assert diffs[0] > diffs[1] > diffs[2]


def test_each_head_copies_the_image_shifted_by_its_delta():
    k, pad = 5, 2
    x, kernel, bias = _random(2, 1, k, 7, 8, 9)
    r = ca.conv_as_attention(x, kernel, bias)
    padded = F.pad(x, (pad,) * 4)  # [C, H + 4, W + 4], zeros outside
    for h, (dr, dc) in enumerate(r.shifts.tolist()):
        expected = padded[:, pad + dr:pad + dr + 7, pad + dc:pad + dc + 8]  # x[q + Delta]
        torch.testing.assert_close(r.head_outputs[h], expected, atol=1e-6, rtol=0)


def test_shifts_are_the_kernel_taps_in_row_major_order():
    assert ca.kernel_shifts(3).tolist() == [[-1, -1], [-1, 0], [-1, 1], [0, -1], [0, 0], [0, 1],
                                            [1, -1], [1, 0], [1, 1]]
    assert len(ca.kernel_shifts(5)) == 25
    with pytest.raises(ValueError):
        ca.kernel_shifts(4)


def test_scores_are_the_papers_quadratic_encoding():
    alpha, shift = 3.0, torch.tensor([1, -2])
    q = ca.grid_positions(4, 5)
    kpos = ca.grid_positions(4, 5, pad=2)
    v = ca.head_vectors(shift[None], alpha)[0]
    assert v.tolist() == [-3.0, 6.0, -12.0]  # -alpha (1, -2 Delta)
    s = ca.relative_scores(q, kpos, v, torch.float64).numpy()
    for i in (0, 7, 19):
        for j in (0, 11, 40, 63):
            d = (kpos[j] - q[i]).numpy().astype(float)  # delta = p_key - p_query
            r = np.array([d @ d, d[0], d[1]])  # r_delta
            assert s[i, j] == pytest.approx(float(v.numpy() @ r), abs=1e-12)
            # = -alpha (|delta - Delta|^2 - |Delta|^2), largest at delta = Delta
            e = d - shift.numpy()
            assert s[i, j] == pytest.approx(-alpha * (e @ e - 5.0), abs=1e-12)


def test_weights_are_one_hot_to_float_precision():
    q = ca.grid_positions(6, 6)
    kpos = ca.grid_positions(6, 6, pad=1)
    for shift in ca.kernel_shifts(3):
        w = ca.head_weights(q, kpos, shift).numpy()  # float32, alpha = 64
        target = (q + shift).numpy()
        idx = [np.flatnonzero((kpos.numpy() == t).all(1))[0] for t in target]
        assert (w[np.arange(len(q)), idx] == 1.0).all()
        w[np.arange(len(q)), idx] = 0.0
        assert w.max() < 1e-27  # e^-64 = 1.6e-28 for the runner-up


def test_pixel_head_maps_light_one_key_each_including_the_padding_ring():
    k, pad = 3, 1
    maps = ca.pixel_head_maps(5, 6, k, row=0, col=5)  # top-right corner
    assert maps.shape == (9, 5 + 2 * pad, 6 + 2 * pad)
    np.testing.assert_allclose(maps.sum(axis=(1, 2)), 1.0, atol=1e-12)
    for h, (dr, dc) in enumerate(ca.kernel_shifts(k).tolist()):
        r, c = np.unravel_index(maps[h].argmax(), maps[h].shape)
        assert (r - pad, c - pad) == (0 + dr, 5 + dc)
        assert maps[h].max() == pytest.approx(1.0, abs=1e-15)
    # the up-right shift points outside the image: its weight sits on the (zero) padding ring
    inside = maps[2, pad:-pad, pad:-pad]
    assert inside.sum() < 1e-20
    with pytest.raises(ValueError):
        ca.pixel_head_maps(5, 6, k, row=5, col=0)


def test_named_kernels():
    blur, b0 = ca.make_kernel("blur", 5)
    assert blur.shape == (3, 3, 5, 5) and (b0 == 0).all()
    np.testing.assert_allclose(blur.sum(axis=(1, 2, 3)), 1.0, atol=1e-6)
    assert blur[0, 1].max() == 0  # acts on each channel alone
    edges, _ = ca.make_kernel("edges", 3)
    np.testing.assert_allclose(edges[0, 0], -edges[0, 0][:, ::-1], atol=0)  # odd in columns
    sharpen, _ = ca.make_kernel("sharpen", 3)
    np.testing.assert_allclose(sharpen[1, 1].sum(), 1.0, atol=1e-6)
    rand_a, _ = ca.make_kernel("random", 3, seed=1)
    rand_b, _ = ca.make_kernel("random", 3, seed=1)
    np.testing.assert_array_equal(rand_a, rand_b)
    with pytest.raises(ValueError):
        ca.make_kernel("nope", 3)


def test_runs_on_the_shipped_image():
    from attnviz.analysis.image_attention import load_image

    img = torch.from_numpy(load_image(16)).permute(2, 0, 1).contiguous()  # [3, 16, 16]
    kernel, bias = ca.make_kernel("edges", 5)
    r = ca.conv_as_attention(img, kernel, bias)
    reference = F.conv2d(img[None], torch.from_numpy(kernel), torch.from_numpy(bias), padding=2)
    torch.testing.assert_close(r.outputs, reference[0], atol=1e-5, rtol=0)


def _best_one_head_gap(kernel: np.ndarray) -> float:
    """min over a >= 0 (one weight per offset) and one matrix M of ||a (x) M - K|| / ||K||,
    found by L-BFGS from several starts with a = p^2 (independent of one_head_kernel's SVD)."""
    K = torch.as_tensor(kernel, dtype=torch.float64)  # [C_out, C_in, k, k]
    best = float("inf")
    for start in range(4):
        g = torch.Generator().manual_seed(start)
        p = torch.randn(K.shape[2], K.shape[3], generator=g, dtype=torch.float64,
                        requires_grad=True)
        M = torch.randn(K.shape[0], K.shape[1], generator=g, dtype=torch.float64,
                        requires_grad=True)
        opt = torch.optim.LBFGS([p, M], max_iter=500, tolerance_grad=1e-14,
                                tolerance_change=1e-16, line_search_fn="strong_wolfe")

        def loss(opt=opt, p=p, M=M):
            opt.zero_grad()
            value = ((torch.einsum("uv,oc->ocuv", p * p, M) - K) ** 2).sum()
            value.backward()
            return value

        opt.step(loss)
        best = min(best, float(loss().detach().sqrt() / K.norm()))
    return best


@pytest.mark.parametrize("k", [3, 5])
def test_one_head_can_be_a_blur_but_not_edges_sharpen_or_a_random_kernel(k):
    """The page's claim: one head (one matrix, non-negative weights per offset) is not a
    convolution in general. A blur is one head; edges, sharpen and a random kernel are not."""
    for name in ca.KERNELS:
        kernel = ca.make_kernel(name, k)[0]
        expected = name == "blur"
        assert ca.one_head_kernel(kernel) is expected
        gap = _best_one_head_gap(kernel)
        assert (gap < 1e-6) if expected else (gap > 0.05), (name, gap)


def test_one_blur_head_is_the_blur_convolution():
    """The blur as ONE head: a k x k window mask (padding ring as zero keys), equal scores,
    values = the pixels, M = I; compared with conv2d."""
    k, h, w = 3, 7, 9
    x = torch.rand(3, h, w, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    keys = F.pad(x, (1, 1, 1, 1)).reshape(3, -1).T  # [(h + 2)(w + 2), 3]
    qr, qc = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
    kr, kc = torch.meshgrid(torch.arange(-1, h + 1), torch.arange(-1, w + 1), indexing="ij")
    mask = ((qr.reshape(-1, 1) - kr.reshape(1, -1)).abs() <= 1) & (
        (qc.reshape(-1, 1) - kc.reshape(1, -1)).abs() <= 1)
    weights = torch.softmax(torch.zeros(mask.shape, dtype=torch.float64).masked_fill(
        ~mask, float("-inf")), dim=-1)
    out = (weights @ keys).T.reshape(3, h, w)
    kernel = torch.eye(3, dtype=torch.float64)[:, :, None, None] * torch.full(
        (k, k), 1 / k**2, dtype=torch.float64)
    np.testing.assert_allclose(ca.make_kernel("blur", k)[0], kernel.numpy(), rtol=1e-7)
    ref = F.conv2d(x[None], kernel, padding=1)[0]
    assert (out - ref).abs().max() < 1e-12
