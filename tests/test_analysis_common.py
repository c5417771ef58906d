"""The shared formulas (analysis.common) against independent references: torch's cosine and
softmax, scipy-free entropy written out, and the repeated-token helpers on the lecture's
sentences."""

import math

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.analysis import common
from attnviz.engine import token_labels


def test_cosine_against_torch():
    g = np.random.default_rng(0)
    a, b = g.standard_normal((5, 7)), g.standard_normal((5, 7))
    ref = F.cosine_similarity(torch.from_numpy(a), torch.from_numpy(b), dim=-1).numpy()
    np.testing.assert_allclose(common.cosine(a, b), ref, atol=1e-12)
    np.testing.assert_allclose(common.cosine(a[0], 3 * a[0]), 1.0, atol=1e-12)
    h = g.standard_normal((4, 6, 3))  # [layers + 1, n, hidden]
    np.testing.assert_allclose(common.cosine_per_layer(h, 1, 4),
                               [float(x[1] @ x[4] / np.linalg.norm(x[1]) / np.linalg.norm(x[4]))
                                for x in h], atol=1e-12)
    m = common.cosine_matrix(a)
    np.testing.assert_allclose(m[2, 3], common.cosine(a[2], a[3]), atol=1e-12)
    np.testing.assert_allclose(np.diag(m), 1.0, atol=1e-12)


def test_entropy_written_out():
    p = np.array([[0.5, 0.25, 0.25, 0.0], [1.0, 0.0, 0.0, 0.0]])
    expect = [-(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25)), 0.0]
    np.testing.assert_allclose(common.entropy(p), expect, atol=1e-15)
    assert common.entropy(np.full(8, 1 / 8)) == math.log(8)


def test_softmax_rows_against_torch():
    z = np.random.default_rng(1).standard_normal((3, 9)) * 50  # large: no overflow
    ref = torch.softmax(torch.from_numpy(z), dim=-1).numpy()
    np.testing.assert_allclose(common.softmax_rows(z), ref, atol=1e-15)


def test_special_and_repeated_tokens():
    toks = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    assert common.special_mask(toks).tolist() == [True, False, False, False, False, True]
    assert common.repeated_tokens(toks) == {"saw": [2, 4]}
    assert common.first_repeated_pair(toks) == (2, 4)
    assert common.first_repeated_pair(["[CLS]", "a", "b", "[SEP]"]) is None
    assert common.first_repeated_pair(["[CLS]", "b", "a", "b", "a", "[SEP]"]) == (1, 3)
    assert common.repeated_tokens(["[SEP]", "x", "[SEP]"]) == {}  # markers are not words
    assert common.repeated_tokens(["[SEP]", "x", "[SEP]"], skip_special=False) == {
        "[SEP]": [0, 2]}


def test_token_labels_keep_repeated_tokens_apart():
    assert token_labels(["i", "saw", "a", "saw"]) == ["i #1", "saw #2", "a #3", "saw #4"]
    assert token_labels(["saw", "saw"], np.array([2, 4])) == ["saw #2", "saw #4"]
