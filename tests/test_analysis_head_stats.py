"""Head statistics (Clark et al. 2019) against hand-computed examples and written-out loops."""

import math

import numpy as np
import pytest

from attnviz.analysis.head_stats import (
    STATS,
    head_stats,
    is_punctuation,
    offset_share,
    row_entropy,
    share_on,
    stats_rows,
)

TOKENS = ["[CLS]", "i", "saw", ".", "[SEP]"]


def test_hand_computed_three_tokens():
    # Rows: query 0 looks only at itself, query 1 splits evenly over 0 and 2, query 2 uniform.
    w = np.array([[1.0, 0.0, 0.0],
                  [0.5, 0.0, 0.5],
                  [1 / 3, 1 / 3, 1 / 3]])
    tokens = ["[CLS]", ",", "[SEP]"]
    s = head_stats(w[None, None], tokens)
    assert s["entropy"][0, 0] == pytest.approx((0 + math.log(2) + math.log(3)) / 3, abs=1e-12)
    assert s["cls"][0, 0] == pytest.approx((1 + 0.5 + 1 / 3) / 3, abs=1e-12)
    assert s["sep"][0, 0] == pytest.approx((0 + 0.5 + 1 / 3) / 3, abs=1e-12)
    assert s["punct"][0, 0] == pytest.approx((0 + 0 + 1 / 3) / 3, abs=1e-12)
    assert s["self"][0, 0] == pytest.approx((1 + 0 + 1 / 3) / 3, abs=1e-12)
    assert s["prev"][0, 0] == pytest.approx((0.5 + 1 / 3) / 2, abs=1e-12)  # W10, W21
    assert s["next"][0, 0] == pytest.approx((0.0 + 0.5) / 2, abs=1e-12)  # W01, W12


def test_entropy_bounds_one_hot_and_uniform():
    n = 7
    assert row_entropy(np.eye(n)) == pytest.approx(0.0, abs=1e-12)
    assert row_entropy(np.full((n, n), 1 / n)) == pytest.approx(math.log(n), abs=1e-12)


def test_against_loops_on_the_model(model):
    t = model.trace("Hello, world. I saw a saw!")
    s = head_stats(t.weights, t.tokens)
    assert set(s) == set(STATS)
    for name in STATS:
        assert s[name].shape == (t.n_layers, t.n_heads)
    n = t.n_tokens
    punct = [j for j, tok in enumerate(t.tokens) if tok in {",", ".", "!"}]
    assert punct  # the sentence has punctuation
    for layer, head in [(0, 0), (3, 7), (5, 11)]:
        w = t.weights[layer, head].astype(np.float64)
        ent = np.mean([-sum(x * math.log(x) for x in row if x > 0) for row in w])
        np.testing.assert_allclose(s["entropy"][layer, head], ent, atol=1e-9)
        np.testing.assert_allclose(s["cls"][layer, head], w[:, 0].mean(), atol=1e-12)
        np.testing.assert_allclose(s["sep"][layer, head], w[:, n - 1].mean(), atol=1e-12)
        np.testing.assert_allclose(s["punct"][layer, head], w[:, punct].sum(1).mean(), atol=1e-12)
        np.testing.assert_allclose(s["self"][layer, head], np.trace(w) / n, atol=1e-12)
        prev = np.mean([w[i, i - 1] for i in range(1, n)])
        nxt = np.mean([w[i, i + 1] for i in range(n - 1)])
        np.testing.assert_allclose(s["prev"][layer, head], prev, atol=1e-12)
        np.testing.assert_allclose(s["next"][layer, head], nxt, atol=1e-12)


def test_shares_of_all_keys_sum_to_one(model):
    t = model.trace("the cat sat")
    everything = share_on(t.weights, np.ones(t.n_tokens, dtype=bool))
    np.testing.assert_allclose(everything, 1.0, atol=1e-6)


def test_punctuation():
    assert is_punctuation(".") and is_punctuation(",") and is_punctuation("?!")
    assert is_punctuation("«") and is_punctuation("##.")
    assert not is_punctuation("[CLS]") and not is_punctuation("saw")
    assert not is_punctuation("+") and not is_punctuation("##ing")  # a symbol, a word piece
    assert is_punctuation("##")  # the token '##' itself is two '#' signs


def test_single_token_has_no_previous():
    assert offset_share(np.ones((1, 1)), -1) == 0.0


def test_rows_table():
    s = {"entropy": np.arange(6.0).reshape(2, 3), "self": np.ones((2, 3))}
    rows = stats_rows(s)
    assert len(rows) == 6
    assert rows[4] == {"layer": 1, "head": 1, "entropy": 4.0, "self": 1.0}
