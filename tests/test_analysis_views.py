"""Special-token hiding, segment filters and the neuron-view numbers, checked independently."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis.views import (
    filter_segments,
    hide_special,
    inside_score,
    segment_mask,
    segment_shares,
    shown_weights,
)


def test_hide_special_keeps_raw_or_renormalises():
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    w = np.array([[0.1, 0.2, 0.3, 0.4],
                  [0.5, 0.25, 0.25, 0.0],
                  [0.0, 0.1, 0.3, 0.6],
                  [0.25, 0.25, 0.25, 0.25]])
    raw, keep = hide_special(w, tokens)
    assert keep.tolist() == [1, 2]
    np.testing.assert_array_equal(raw, [[0.25, 0.25], [0.1, 0.3]])
    ren, _ = hide_special(w, tokens, renormalise=True)
    np.testing.assert_allclose(ren, [[0.5, 0.5], [0.25, 0.75]], atol=1e-15)


def test_hide_special_rows_with_nothing_left_stay_zero():
    w = np.array([[[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.5, 0.5, 0.0]]])
    ren, keep = hide_special(w, ["[CLS]", "x", "[SEP]"], renormalise=True)
    assert keep.tolist() == [1] and ren.tolist() == [[[0.0]]]


def test_hide_special_on_the_trace(model):
    t = model.trace("I saw a saw")
    ren, keep = hide_special(t.weights, t.tokens, renormalise=True)
    assert ren.shape == (t.n_layers, t.n_heads, 4, 4) and keep.tolist() == [1, 2, 3, 4]
    np.testing.assert_allclose(ren.sum(-1), 1.0, atol=1e-6)
    w = t.weights[2, 5][1:5, 1:5]
    np.testing.assert_allclose(ren[2, 5], w / w.sum(1, keepdims=True), atol=1e-7)


def test_segment_filters_on_a_pair(model):
    t = model.trace("I saw a saw", "It cut wood")
    seg = t.segments
    a, b = np.flatnonzero(seg == 0), np.flatnonzero(seg == 1)
    assert t.tokens[a[-1]] == "[SEP]" and t.tokens[-1] == "[SEP]" and len(b) >= 3
    within_a = segment_mask(seg, "within A")
    for i in range(t.n_tokens):
        for j in range(t.n_tokens):
            assert within_a[i, j] == (i in a and j in a)
            assert segment_mask(seg, "across")[i, j] == ((i in a) != (j in a))
            assert segment_mask(seg, "within B")[i, j] == (i in b and j in b)
    f = filter_segments(t.weights[1, 3], seg, "across")
    assert f[a[0], b[0]] == t.weights[1, 3][a[0], b[0]] and f[a[0], a[1]] == 0
    shares = segment_shares(t.weights, seg)
    total = shares["within A"] + shares["within B"] + shares["across"]
    np.testing.assert_allclose(total, 1.0, atol=1e-6)
    np.testing.assert_allclose(shares["within A"][0, 0],
                               t.weights[0, 0][np.ix_(a, a)].sum() / t.n_tokens, atol=1e-6)
    assert segment_mask(seg, "all").all()
    with pytest.raises(ValueError):
        segment_mask(seg, "sideways")


def test_inside_score_matches_the_trace_and_sdpa(model):
    t = model.trace("I saw a saw and it cut wood")
    layer, head, i = 3, 4, 2
    q, k, v = t.queries[layer, head], t.keys[layer, head], t.values[layer, head]
    s = inside_score(q, k, v, i, t.scale)
    np.testing.assert_allclose(s["products"], q[i].astype(float) * k, rtol=1e-6)
    np.testing.assert_allclose(s["scores"], t.scores[layer, head, i], atol=1e-5)
    np.testing.assert_allclose(s["scaled"], t.scores[layer, head, i] / np.sqrt(t.head_dim),
                               atol=1e-5)
    np.testing.assert_allclose(s["weights"], t.weights[layer, head, i], atol=1e-6)
    np.testing.assert_allclose(s["output"], t.outputs[layer, head, i], atol=1e-5)
    ref = F.scaled_dot_product_attention(
        *(torch.from_numpy(np.asarray(x, dtype=np.float64))[None] for x in (q, k, v)))[0]
    np.testing.assert_allclose(s["output"], ref[i].numpy(), atol=1e-6)
    np.testing.assert_allclose(s["weighted"].sum(0), s["output"], atol=1e-12)


def test_inside_score_respects_a_mask(model):
    t = model.trace("one two three four five", window=1)
    layer, head, i = 2, 0, 3
    s = inside_score(t.queries[layer, head], t.keys[layer, head], t.values[layer, head], i,
                     t.scale, t.mask)
    assert np.all(s["weights"][~t.mask[i]] == 0.0)
    np.testing.assert_allclose(s["weights"], t.weights[layer, head, i], atol=1e-6)
    np.testing.assert_allclose(s["output"], t.outputs[layer, head, i], atol=1e-5)


def test_shown_weights_combinations(model):
    t = model.trace("I saw a saw", "It cut")
    w, toks, pos = shown_weights(t.weights, t.tokens, t.segments)
    assert w is t.weights and toks == t.tokens and pos.tolist() == list(range(t.n_tokens))
    w, toks, pos = shown_weights(t.weights[0, 0], t.tokens, t.segments, hide=True)
    assert "[CLS]" not in toks and "[SEP]" not in toks and len(toks) == t.n_tokens - 3
    np.testing.assert_array_equal(w, t.weights[0, 0][np.ix_(pos, pos)])
    w, toks, pos = shown_weights(t.weights[0, 0], t.tokens, t.segments, hide=True,
                                 renormalise=True, segment_filter="within A")
    a = [i for i in pos if t.segments[i] == 0]
    ref = t.weights[0, 0][np.ix_(a, a)]
    np.testing.assert_allclose(w[: len(a), : len(a)], ref / ref.sum(1, keepdims=True), atol=1e-6)
    assert np.all(w[len(a):] == 0)  # B's queries keep nothing within A
    w, _, _ = shown_weights(t.weights[0, 0], t.tokens, t.segments, renormalise=True,
                            segment_filter="across")
    rows = w.sum(1)
    np.testing.assert_allclose(rows, 1.0, atol=1e-6)


def test_directed_pair_filters(model):
    t = model.trace("I saw a saw", "It cut wood")
    seg = t.segments
    a, b = set(np.flatnonzero(seg == 0)), set(np.flatnonzero(seg == 1))
    ab, ba = segment_mask(seg, "A->B"), segment_mask(seg, "B->A")
    for i in range(t.n_tokens):
        for j in range(t.n_tokens):
            assert ab[i, j] == (i in a and j in b)  # a query of A reading a key of B
            assert ba[i, j] == (i in b and j in a)
    np.testing.assert_array_equal(ab | ba, segment_mask(seg, "across"))
    assert not (ab & ba).any()
    shares = segment_shares(t.weights, seg)
    np.testing.assert_allclose(shares["A->B"] + shares["B->A"], shares["across"], atol=1e-12)
    w = t.weights[2, 1].astype(np.float64)
    qa, kb = sorted(a), sorted(b)
    assert shares["A->B"][2, 1] == pytest.approx(w[np.ix_(qa, kb)].sum() / t.n_tokens)


def test_word_level_view(model):
    t = model.trace("Transformers use embeddings", "It works")
    w, toks, pos = shown_weights(t.weights[1, 2], t.tokens, t.segments, words=True,
                                pieces=t.word_pieces)
    assert toks[:4] == ["[CLS]", "transformers", "use", "embeddings"]
    assert [t.tokens[p] for p in pos] == [t.tokens[p] for p in pos]  # first pieces
    assert t.tokens[pos[3]].startswith("em") and len(toks) < t.n_tokens
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)
    w2, toks2, pos2 = shown_weights(t.weights[1, 2], t.tokens, t.segments, hide=True,
                                    segment_filter="B->A", words=True,
                                    pieces=t.word_pieces)
    assert "[SEP]" not in toks2 and set(pos2) <= set(pos)
    bq = [k for k, p in enumerate(pos2) if t.segments[p] == 1]
    assert w2[bq].sum() > 0 and w2[[k for k in range(len(pos2)) if k not in bq]].sum() == 0
