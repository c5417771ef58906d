"""Two sentences side by side: token alignment and the difference, against loops."""


from attnviz.analysis.compare import align_tokens, aligned_difference


def test_alignment_keeps_the_two_saws_apart():
    a = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    b = ["[CLS]", "i", "saw", "a", "dog", "[SEP]"]
    assert align_tokens(a, b) == [(0, 0), (1, 1), (2, 2), (3, 3), (5, 5)]
    c = ["[CLS]", "yesterday", "i", "saw", "a", "saw", "[SEP]"]
    assert align_tokens(a, c) == [(0, 0), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]


def test_difference_against_a_loop(model):
    ta, tb = model.trace("I saw a saw"), model.trace("Yesterday I saw a dog")
    pairs = align_tokens(ta.tokens, tb.tokens)
    wa, wb, d = aligned_difference(ta.weights, tb.weights, pairs)
    assert d.shape == (ta.n_layers, ta.n_heads, len(pairs), len(pairs))
    for layer, head in [(0, 1), (5, 11)]:
        for p, (ia, ib) in enumerate(pairs):
            for q, (ja, jb) in enumerate(pairs):
                assert d[layer, head, p, q] == (float(ta.weights[layer, head, ia, ja])
                                                - float(tb.weights[layer, head, ib, jb]))
                assert wa[layer, head, p, q] == ta.weights[layer, head, ia, ja]
    assert [ta.tokens[i] for i, _ in pairs] == [tb.tokens[j] for _, j in pairs]
