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
