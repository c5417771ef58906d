"""A long input's attention by blocks of query rows (engine.attention.attention_rows): the
outputs of `attention()` / `capped_attention()` on the whole input, and a summary of every
head's weights (ROW_SUMMARY) equal to the same quantities read off the full weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.analysis.common import entropy
from attnviz.engine.attention import (
    ROW_SUMMARY,
    attention,
    attention_rows,
    build_mask,
    capped_attention,
    row_blocks,
    window_mask,
)

TOL = 1e-5


def summary_of(weights: np.ndarray) -> dict[str, np.ndarray]:
    """ROW_SUMMARY read off full weights [..., n, n] (float64)."""
    w = np.asarray(weights, dtype=np.float64)
    n = w.shape[-1]
    prev = np.zeros(w.shape[:-1])
    nxt = np.zeros(w.shape[:-1])
    prev[..., 1:] = np.diagonal(w, -1, -2, -1)
    nxt[..., :-1] = np.diagonal(w, 1, -2, -1)
    assert n > 1
    return {"first": w[..., :, 0], "self": np.diagonal(w, 0, -2, -1), "previous": prev,
            "next": nxt, "entropy": entropy(w), "received": w.sum(-2)}


MASKS = ("causal", "causal, window 2", "sliding window 5", "full", "with holes")


def masks(n: int) -> dict[str, torch.Tensor]:
    c = build_mask(n, causal=True)
    holes = c.clone()
    holes[:, 3] = False  # not an interval: rows see keys 0..2 and 4..i
    holes[3, 3] = True
    return {"causal": c, "causal, window 2": build_mask(n, 2, causal=True),
            "sliding window 5": c & window_mask(n, 4), "full": torch.ones(n, n, dtype=torch.bool),
            "with holes": holes}


@pytest.mark.parametrize("name", MASKS)
@pytest.mark.parametrize("block", [1, 4, 7, 64])
@pytest.mark.parametrize("cap", [None, 5.0])
def test_attention_by_rows_is_attention_and_its_summary_the_weights(name, block, cap):
    torch.manual_seed(block)
    n, d = 23, 8
    q = torch.randn(2, 3, n, d) * 3  # 2 key/value heads, 3 query heads each
    k = torch.randn(2, 1, n, d) * 3
    v = torch.randn(2, 1, n, d)
    mask = masks(n)[name]
    scale = d ** -0.5
    if cap is None:
        y, w, _ = attention(q, k, v, mask, scale)
    else:
        y, w, _ = capped_attention(q, k, v, mask, scale, cap)
    ours, summary = attention_rows(q, k, v, mask, scale, block, cap)
    np.testing.assert_allclose(ours.numpy(), y.numpy(), atol=TOL, rtol=0)
    ref = summary_of(w.numpy())
    assert set(summary) == set(ROW_SUMMARY)
    for key, value in ref.items():
        assert summary[key].shape == (2, 3, n), key
        np.testing.assert_allclose(summary[key].numpy(), value, atol=TOL, rtol=0,
                                   err_msg=f"{key}, {name}")
    assert summary["received"].dtype == torch.float64


def test_row_blocks_meet_only_the_keys_a_causal_block_can_see():
    blocks = row_blocks(build_mask(10, causal=True), 4)
    # rows 0-3 see keys 0..3, all of them key 0; rows 4-7 keys 0..7, all of them 0..4
    assert blocks == [(0, 4, 0, 4, 0, 1), (4, 8, 0, 8, 0, 5), (8, 10, 0, 10, 0, 9)]
    sliding = row_blocks(build_mask(10, causal=True) & window_mask(10, 2), 4)
    assert sliding[1] == (4, 8, 2, 8, 5, 5)  # keys 2..7; no key that every row sees
    holes = masks(10)["with holes"]
    assert all(a == b for *_, a, b in row_blocks(holes, 4))  # not intervals: all masked


@pytest.fixture(scope="module")
def gemma2(tmp_path_factory):
    """A random Gemma 2: GQA, sliding windows shorter than the input, soft-capping."""
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    folder = save_random_checkpoint(
        "gemma2", tmp_path_factory.mktemp("long") / "gemma2", positions=32, seed=3, heads=4,
        kv_heads=2, layers=3, sliding_window=4, attn_logit_softcapping=3.0,
        query_pre_attn_scalar=12, hidden_activation="gelu_pytorch_tanh")
    return attnviz.load_model(folder, device="cpu")


def test_a_long_trace_summary_is_its_weights(gemma2, monkeypatch):
    """A decoder's trace past KEEP_WEIGHTS_BYTES holds a summary of every head's weights taken
    in the forward pass, equal to the held trace's weights (GQA, sliding windows, soft-cap)."""
    from attnviz.engine.families import llama

    model = gemma2
    ids = [model.tokenizer.bos_token_id] + [
        int(i) for i in np.random.default_rng(1).integers(10, len(model.tokenizer) - 10, 19)]
    held = model.trace_ids(ids)
    assert held.weight_summary is None
    monkeypatch.setattr(llama, "KEEP_WEIGHTS_BYTES", 0)
    monkeypatch.setattr(llama, "QUERY_BLOCK", 6)
    long = model.trace_ids(ids)
    assert long.weights is None and long.weight_summary is not None
    np.testing.assert_allclose(long.hidden_states, held.hidden_states, atol=TOL, rtol=0)
    ref = summary_of(held.weights)
    for key, value in ref.items():
        got = long.weight_summary[key]
        assert got.shape == (held.n_layers, held.n_heads, 20)
        np.testing.assert_allclose(got, value, atol=TOL, rtol=0, err_msg=key)


def test_attention_by_rows_without_shared_keys():
    """Keys of the queries' own shape (one per query head), and 2-D inputs, as attention()."""
    torch.manual_seed(0)
    n, d = 17, 4
    mask = build_mask(n, causal=True)
    for shape in ((3, n, d), (n, d)):
        q, k, v = (torch.randn(*shape) for _ in range(3))
        y, w, _ = attention(q, k, v, mask, 0.5)
        ours, summary = attention_rows(q, k, v, mask, 0.5, 4)
        np.testing.assert_allclose(ours.numpy(), y.numpy(), atol=TOL, rtol=0)
        np.testing.assert_allclose(summary["entropy"].numpy(), entropy(w.numpy()), atol=TOL)
        assert ours.shape == y.shape and summary["self"].shape == shape[:-1]
