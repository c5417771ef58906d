"""The context sweep ("how much context does BERT use?") against HF BertModel with a window
mask."""

import numpy as np
import pytest
import torch

from attnviz.analysis import windows as win
from attnviz.engine import window_mask


def test_sweep_windows():
    assert win.sweep_windows(6) == [1, 2, 3, 4, 5]
    ws = win.sweep_windows(512)
    assert ws[:24] == list(range(1, 25)) and ws[-1] == 511 and len(ws) <= 40
    assert ws == sorted(set(ws))


def test_context_sweep_matches_hf_bert_with_window_mask(model, hf_model):
    text = "I saw a saw"
    ids, seg, _ = model.tokenize(text)
    n = len(ids)
    s = win.context_sweep(model, ids, seg)
    assert list(s.windows) == list(range(1, n)) and s.pair == (2, 4)
    with torch.no_grad():
        def hf_final(mask):
            bias = torch.zeros(1, 1, n, n).masked_fill(~mask, float("-inf"))
            return hf_model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([seg]),
                            attention_mask=bias).last_hidden_state[0].double().numpy()
        full = hf_final(torch.ones(n, n, dtype=torch.bool))
        for k, w in enumerate(s.windows):
            h = hf_final(window_mask(n, int(w)))
            cos = (h * full).sum(1) / np.linalg.norm(h, axis=1) / np.linalg.norm(full, axis=1)
            np.testing.assert_allclose(s.cosine[k], cos, atol=1e-5)
            a, b = h[2], h[4]
            pair = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
            assert s.pair_cosine[k] == pytest.approx(pair, abs=1e-5)
    assert s.full_pair_cosine == pytest.approx(0.658, abs=1e-3)  # FIELD_NOTES
    np.testing.assert_allclose(s.cosine[-1], 1.0, atol=1e-5)  # w = n - 1 is full attention
    np.testing.assert_allclose(s.mean_cosine, s.cosine.mean(1))
    assert s.mean_cosine[0] < 0.9  # one neighbour each side moves the vectors a lot


def test_engine_trace_with_window_matches_sweep(model):
    text = "the cat sat on the mat"
    ids, seg, _ = model.tokenize(text)
    s = win.context_sweep(model, ids, seg, windows=[2])
    t_w, t_f = model.trace(text, window=2), model.trace(text)
    a, b = t_w.hidden_states[-1].astype(np.float64), t_f.hidden_states[-1].astype(np.float64)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    np.testing.assert_allclose(s.cosine[0], cos, atol=1e-5)
    assert s.pair == (1, 5)  # 'the' twice


def _hf_final(hf_model, ids, seg, mask):
    """HF BertModel's last hidden state with an explicit additive mask (-inf = may not attend)."""
    n = len(ids)
    bias = torch.zeros(1, 1, n, n).masked_fill(~mask, float("-inf"))
    with torch.no_grad():
        return hf_model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([seg]),
                        attention_mask=bias).last_hidden_state[0].double().numpy()


def _cos_rows(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_keeping_cls_sep_visible_matches_hf_and_explains_most_of_the_drop(model, hf_model):
    """'I saw a saw', w = 1: the mean cosine with full attention is 0.60 with the plain window
    and 0.88 when every token may still attend to [CLS] and [SEP] (mask written out here)."""
    ids, seg, _ = model.tokenize("I saw a saw")
    n = len(ids)
    plain = win.context_sweep(model, ids, seg)
    kept = win.context_sweep(model, ids, seg, keep_special=True)
    assert kept.keep_special and not plain.keep_special
    full = _hf_final(hf_model, ids, seg, torch.ones(n, n, dtype=torch.bool))
    special = torch.tensor([i in (101, 102) for i in ids])  # [CLS], [SEP] ids of this vocab
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    for k, w in enumerate(kept.windows):
        mask = ((i - j).abs() <= int(w)) | special[None, :]
        cos = _cos_rows(_hf_final(hf_model, ids, seg, mask), full)
        np.testing.assert_allclose(kept.cosine[k], cos, atol=1e-5)
    assert plain.mean_cosine[0] == pytest.approx(0.598, abs=1e-3)
    assert kept.mean_cosine[0] == pytest.approx(0.882, abs=1e-3)
    np.testing.assert_allclose(kept.cosine[-1], 1.0, atol=1e-5)  # w = n - 1: nothing masked


def test_sweep_mask():
    visible = np.array([True, False, False, False, True])
    m = win.sweep_mask(5, 1, visible).numpy()
    i, j = np.indices((5, 5))
    np.testing.assert_array_equal(m, (np.abs(i - j) <= 1) | visible[None, :])
    np.testing.assert_array_equal(win.sweep_mask(5, 1).numpy(), np.abs(i - j) <= 1)


def test_special_share_matches_hf_attentions(model, hf_model):
    """BERT's heads put most of their weight on [CLS]/[SEP]: 71% on 'I saw a saw' (2 of 6
    tokens, 33% if spread evenly), from HF's own attention probabilities."""
    t = model.trace("I saw a saw")
    ids = torch.tensor([t.token_ids.tolist()])
    with torch.no_grad():
        att = hf_model(input_ids=ids, output_attentions=True).attentions  # L x [1, H, n, n]
    ref = np.array([a[0][..., [0, 5]].sum(-1).double().mean().item() for a in att])
    share = win.special_share(t.weights, t.tokens)
    np.testing.assert_allclose(share, ref, atol=1e-6)
    assert share.mean() == pytest.approx(0.714, abs=1e-3)


def test_windows_are_encoded_in_batches_with_each_windows_own_result(model, monkeypatch):
    """A short sentence's sweep is one batch; batches of any size give each window's own
    encoder pass (one window at a time, written out here) to float32 rounding, and progress
    reaches 1 in order."""
    text = "The teacher wrote a long sentence on the board today."
    ids, seg, _ = model.tokenize(text)
    n = len(ids)
    assert win.windows_per_batch(model, n) >= n  # the whole sweep in one pass
    assert win.windows_per_batch(model, 512) < 40  # a long one in several
    x, _ = model.embed(ids, seg)
    with torch.inference_mode():
        full = model.encode(x, None, record=False).hidden_states[-1].double().numpy()
        one = [model.encode(x, win.sweep_mask(n, w), record=False).hidden_states[-1]
               .double().numpy() for w in range(n)]
    want = np.stack([_cos_rows(h, full) for h in one])
    for size in (None, 1, 3):
        if size is not None:
            monkeypatch.setattr(win, "windows_per_batch", lambda model, n, size=size: size)
        seen = []
        s = win.context_sweep(model, ids, seg, range(n),
                              progress=lambda f, m, seen=seen: seen.append(f))
        np.testing.assert_allclose(s.cosine, want, atol=1e-6)
        assert seen == sorted(seen) and seen[-1] == 1.0
        assert len(seen) == (1 if size is None else -(-n // size))
