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


# ------------------------------------------------------------------ today's decoders
def test_sliding_mask_is_transformers_sliding_window():
    """transformers' own rule (masking_utils): causal and kv_idx > q_idx - sliding_window."""
    from transformers.masking_utils import causal_mask_function, sliding_window_overlay

    for n, size in ((9, 1), (12, 3), (12, 4), (7, 20)):
        overlay = sliding_window_overlay(size)
        ref = np.array([[bool(causal_mask_function(0, 0, i, j)) and bool(overlay(0, 0, i, j))
                         for j in range(n)] for i in range(n)])
        np.testing.assert_array_equal(win.sliding_mask(n, size).numpy(), ref)
    with pytest.raises(ValueError):
        win.sliding_mask(5, 0)
    kept = win.streaming_mask(8, 3, sinks=1).numpy()
    assert kept[:, 0].all() and (kept[:, 1:] == win.sliding_mask(8, 3).numpy()[:, 1:]).all()
    four = win.streaming_mask(8, 2, sinks=4).numpy()
    i, j = np.indices((8, 8))
    np.testing.assert_array_equal(four, (j <= i) & ((i - j < 2) | (j < 4)))
    np.testing.assert_array_equal(win.streaming_mask(8, 3, sinks=0).numpy(),
                                  win.sliding_mask(8, 3).numpy())


def test_layer_patterns_are_transformers_configs():
    from transformers import Gemma2Config, Gemma3TextConfig, MistralConfig

    types = {"sliding_attention": win.SLIDING, "full_attention": win.FULL}
    for layers in (6, 12, 26):
        assert win.layer_types("gemma2", layers) == [
            types[t] for t in Gemma2Config(num_hidden_layers=layers).layer_types]
        assert win.layer_types("gemma3", layers) == [
            types[t] for t in Gemma3TextConfig(num_hidden_layers=layers).layer_types]
    c = MistralConfig()
    assert (c.num_hidden_layers, c.sliding_window) == (32, 4096)
    assert win.span(c.num_hidden_layers, c.sliding_window) == 131_040  # Mistral: "~131K"


@pytest.mark.parametrize("pattern", ["mistral", "gemma2", "gemma3"])
@pytest.mark.parametrize("size", [2, 3, 5])
def test_reach_formula_against_composed_masks(pattern, size):
    """The formula against reachability computed here: a path through the layers' masks,
    one layer at a time (breadth first), never a matrix product."""
    n, layers = 30, 7
    types = win.layer_types(pattern, layers)
    masks = [m.numpy() for m in win.layer_masks(n, size, types)]
    reach = win.composed_reach(win.layer_masks(n, size, types))
    assert reach.shape == (layers + 1, n, n)
    for query in (0, 5, 17, n - 1):
        seen = {query}
        firsts = [query]
        for li in range(layers - 1, -1, -1):  # from the last layer down to the input
            seen = {j for i in seen for j in np.flatnonzero(masks[li][i])}
        # the formula's first reachable input after each depth, checked one depth at a time
        for depth in range(1, layers + 1):
            now = {query}
            for li in range(depth - 1, -1, -1):
                now = {j for i in now for j in np.flatnonzero(masks[li][i])}
            firsts.append(min(now))
            assert now == set(np.flatnonzero(reach[depth, query])), (depth, query)
            assert now == set(range(min(now), query + 1))  # no gaps
        assert seen == set(np.flatnonzero(reach[-1, query]))
        np.testing.assert_array_equal(win.reach_formula(query, size, types), firsts)


def test_first_token_share_and_even_share():
    rng = np.random.default_rng(0)
    n = 6
    w = rng.random((2, 3, n, n)) * np.tril(np.ones((n, n)))
    w /= w.sum(-1, keepdims=True)
    share = win.first_token_share(w)
    assert share.shape == (2, 3)
    assert share[1, 2] == pytest.approx(np.mean([w[1, 2, i, 0] for i in range(1, n)]))
    assert win.even_share(n) == pytest.approx(np.mean([1 / (i + 1) for i in range(1, n)]))
    even = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    assert win.first_token_share(even[None, None])[0, 0] == pytest.approx(win.even_share(n))


def test_kl_and_top_words():
    p = np.array([0.5, 0.25, 0.25, 0.0])
    q = np.array([0.25, 0.25, 0.25, 0.25])
    assert win.kl_divergence(p, q) == pytest.approx(
        0.5 * np.log(2) + 0.25 * np.log(1) + 0.25 * np.log(1))
    assert win.kl_divergence(p, p) == 0.0
    assert win.top_words(np.array([0.1, 0.6, 0.3]), 2) == [(1, 0.6), (2, 0.3)]


def test_a_context_sweep_refuses_a_decoder(tmp_path):
    """A sweep of ±w windows is an encoder's: on a decoder each window would be cut to its
    causal half under the encoder's name."""
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    folder = save_random_checkpoint("llama", tmp_path / "llama", heads=4, kv_heads=2,
                                    positions=32, seed=0)
    decoder = attnviz.load_model(folder, device="cpu")
    assert decoder.capabilities["bidirectional"] is False
    with pytest.raises(ValueError, match="bidirectional encoder"):
        win.context_sweep(decoder, list(range(5, 12)))
