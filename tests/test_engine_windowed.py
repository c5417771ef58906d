"""Windowed attention (blocked, n·w) against full attention with a window mask and SDPA."""

import pytest
import torch
import torch.nn.functional as F

from attnviz.engine import band_to_dense, build_mask, window_mask, windowed_attention
from attnviz.engine.attention import attention

CASES = [  # n, window, causal, block
    (1, 0, False, None), (6, 1, False, None), (17, 2, True, None), (40, 3, False, 5),
    (33, 0, True, 4), (50, 60, False, None), (129, 16, False, None), (64, 7, True, 64),
]


def qkv(n, d=8, heads=3, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(heads, n, d, generator=g, dtype=dtype) for _ in range(3)]


@pytest.mark.parametrize("n,w,causal,block", CASES)
def test_windowed_equals_masked_full_attention_and_sdpa(n, w, causal, block):
    q, k, v = qkv(n)
    r = windowed_attention(q, k, v, w, causal=causal, block=block)
    mask = build_mask(n, w, causal)
    out, weights, scores = attention(q, k, v, mask=mask)
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # independent reference
    torch.testing.assert_close(r.outputs, sdpa, atol=1e-6, rtol=0)
    torch.testing.assert_close(r.outputs, out, atol=1e-6, rtol=0)
    torch.testing.assert_close(band_to_dense(r.weights, w), weights, atol=1e-6, rtol=0)
    # Raw scores in the band are q·k, written out, for every key that exists.
    dense_s = band_to_dense(r.scores, w, fill=float("nan"))
    inside = window_mask(n, w).expand_as(dense_s)
    ref = torch.einsum("hid,hjd->hij", q, k)
    torch.testing.assert_close(dense_s[inside], ref[inside], atol=1e-6, rtol=0)
    assert torch.isnan(dense_s[~inside]).all()


@pytest.mark.parametrize("n,w,causal,block", CASES)
def test_float32_matches_within_1e5(n, w, causal, block):
    q, k, v = qkv(n, d=64, dtype=torch.float32, seed=1)
    r = windowed_attention(q, k, v, w, causal=causal, block=block)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=build_mask(n, w, causal))
    torch.testing.assert_close(r.outputs, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("n,w,causal", [(23, 2, False), (23, 3, True), (5, 9, False)])
def test_weights_zero_outside_window_and_rows_sum_to_one(n, w, causal):
    q, k, v = qkv(n, dtype=torch.float32)
    dense = band_to_dense(windowed_attention(q, k, v, w, causal=causal).weights, w)
    allowed = build_mask(n, w, causal).expand_as(dense)
    assert (dense[~allowed] == 0).all()  # exactly 0, not merely small
    assert (dense[allowed] > 0).all()
    torch.testing.assert_close(dense.sum(-1), torch.ones(3, n), atol=1e-6, rtol=0)


def test_band_layout_is_key_i_minus_w_plus_o():
    q, k, v = qkv(9, heads=1)
    r = windowed_attention(q, k, v, 2)
    # query 4, offset 0 -> key 2; offset 4 -> key 6. query 0, offset 0 -> key -2: no key.
    assert r.scores[0, 4, 0] == pytest.approx(float(q[0, 4] @ k[0, 2]))
    assert r.scores[0, 4, 4] == pytest.approx(float(q[0, 4] @ k[0, 6]))
    assert torch.isnan(r.scores[0, 0, 0]) and r.weights[0, 0, 0] == 0
