"""Word-level attention (Clark et al. 2019): pieces merged into words, against a written-out
loop (keys summed over a word's pieces, queries averaged)."""

import numpy as np

from attnviz.analysis.words import word_attention, word_groups, words_view


def loop_reference(w: np.ndarray, groups) -> np.ndarray:
    out = np.zeros((len(groups), len(groups)))
    for u, gu in enumerate(groups):
        for v, gv in enumerate(groups):
            out[u, v] = np.mean([sum(w[i, j] for j in gv) for i in gu])
    return out


def test_groups_of_word_pieces(model):
    t = model.trace("Transformers use embeddings", "It works")
    assert not any(tok.startswith("##") for tok in t.tokens)  # markers live in the pieces
    groups = word_groups(t.word_pieces)
    words = ["".join(t.word_pieces[i].removeprefix("##") for i in g) for g in groups]
    assert words == ["[CLS]", "transformers", "use", "embeddings", "[SEP]", "it", "works",
                     "[SEP]"]
    assert any(len(g) > 1 for g in groups)  # the sentence really has split words
    w, labels, first = words_view(t.weights, t.tokens, t.word_pieces)
    assert labels == words and first.tolist() == [g[0] for g in groups]
    for layer, head in [(0, 0), (5, 7)]:
        np.testing.assert_allclose(w[layer, head], loop_reference(
            t.weights[layer, head].astype(np.float64), groups), atol=1e-12)
    np.testing.assert_allclose(w.sum(-1), 1.0, atol=1e-6)


def test_markers_and_specials():
    assert word_groups(["<s>", "ĠI", "Ġsa", "w", "</s>"]) == [[0], [1], [2, 3], [4]]
    assert word_groups(["[CLS]", "##a", "b", "[SEP]", "##c"]) == [[0], [1], [2], [3], [4]]
    w = np.eye(3)
    np.testing.assert_array_equal(word_attention(w, [[0], [1], [2]]), w)
