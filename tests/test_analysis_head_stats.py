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


def clark_reference(attns: np.ndarray, tokens: list[str]) -> dict[str, np.ndarray]:
    """The statistics as Clark et al.'s notebook computes them for one document, written out
    with their selector matrices: every share is (attns * selector).sum(-1).sum(-1) / n."""
    n = attns.shape[-1]
    seps = np.array([t == "[SEP]" for t in tokens], float)
    clss = np.array([t == "[CLS]" for t in tokens], float)
    puncts = np.array([t in (".", ",") for t in tokens], float)
    selectors = {
        "self": np.eye(n, n), "next": np.eye(n, n, 1), "prev": np.eye(n, n, -1),
        "sep": np.tile(seps[None], [n, 1]), "cls": np.tile(clss[None], [n, 1]),
        "punct": np.tile(puncts[None], [n, 1]),
    }
    out = {k: (attns * s[None, None]).sum(-1).sum(-1) / n for k, s in selectors.items()}
    smoothed = 0.9999 * attns + 0.0001 / n
    out["entropy"] = -(smoothed * np.log(smoothed)).sum(-1).mean(-1)
    return out


@pytest.mark.parametrize("text", ["I saw a saw.", "Hello, world. «Quoted» words; and more!"])
def test_clark_conventions_number_for_number(model, text):
    t = model.trace(text)
    ours = head_stats(t.weights, t.tokens, conventions="clark")
    ref = clark_reference(t.weights.astype(np.float64), t.tokens)
    for name in STATS:
        np.testing.assert_allclose(ours[name], ref[name], atol=1e-12, err_msg=name)


def test_the_two_conventions_differ_where_documented(model):
    t = model.trace("Hello, world. «Quoted» words; and more!")
    n = t.n_tokens
    ours = head_stats(t.weights, t.tokens)
    clark = head_stats(t.weights, t.tokens, conventions="clark")
    # previous / next: the same sums, divided by n - 1 here and by n in Clark's code
    np.testing.assert_allclose(ours["prev"] * (n - 1) / n, clark["prev"], atol=1e-12)
    np.testing.assert_allclose(ours["next"] * (n - 1) / n, clark["next"], atol=1e-12)
    # punctuation: Unicode marks ('«', '»', ';', '!') count here, only '.' and ',' there
    extra = [j for j, tok in enumerate(t.tokens) if is_punctuation(tok) and tok not in ".,"]
    assert extra
    w = t.weights.astype(np.float64)
    np.testing.assert_allclose(ours["punct"] - clark["punct"],
                               w[..., extra].sum(-1).mean(-1), atol=1e-12)
    for name in ("cls", "sep", "self"):
        np.testing.assert_array_equal(ours[name], clark[name])
    assert not np.allclose(ours["entropy"], clark["entropy"], atol=1e-6)  # smoothing


def test_clark_punctuation_and_bad_convention():
    assert is_punctuation(".", "clark") and is_punctuation(",", "clark")
    assert not is_punctuation("!", "clark") and not is_punctuation("«", "clark")
    with pytest.raises(ValueError, match="conventions"):
        head_stats(np.ones((1, 1, 2, 2)) / 2, ["a", "b"], conventions="bert")


# ------------------------------------------------------------- a trace without its weights
@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    """A random Mistral (GQA: 4 query heads on 2 key/value heads; a sliding window of 6)."""
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    folder = save_random_checkpoint("mistral", tmp_path_factory.mktemp("hs") / "mistral",
                                    positions=64, seed=5, heads=4, kv_heads=2, layers=3,
                                    sliding_window=6)
    return attnviz.load_model(folder, device="cpu")


@pytest.mark.parametrize("conventions", ["attnviz", "clark"])
def test_a_trace_without_weights_has_the_held_traces_statistics(decoder, monkeypatch,
                                                                conventions):
    """Past KEEP_WEIGHTS_BYTES a decoder's trace holds no weights; its statistics (from the
    forward pass's summary, or streamed a layer at a time) are those of the full weights of
    the same input, computed by head_stats."""
    from attnviz.analysis.head_stats import first_token_share, streamed_head_stats, trace_head_stats
    from attnviz.engine.families import llama

    text = "I saw a saw, and the saw saw me. Then I sat down; why not?"
    held = decoder.trace(text)
    monkeypatch.setattr(llama, "KEEP_WEIGHTS_BYTES", 0)
    monkeypatch.setattr(llama, "QUERY_BLOCK", 5)
    long = decoder.trace(text)
    assert long.weights is None and held.weights is not None
    assert any(is_punctuation(tok, conventions) for tok in long.tokens)
    ref = head_stats(held.weights, list(held.tokens), conventions)
    assert ref["punct"].max() > 0.01 and ref["prev"].max() > 0.01
    for got in (trace_head_stats(long, conventions), streamed_head_stats(long, conventions)):
        assert set(got) == set(STATS)
        for name in STATS:
            assert got[name].shape == (held.n_layers, held.n_heads)
            np.testing.assert_allclose(got[name], ref[name], atol=1e-5, rtol=0, err_msg=name)
    np.testing.assert_allclose(first_token_share(long), held.weights[:, :, 1:, 0].mean(-1),
                               atol=1e-6, rtol=0)
    np.testing.assert_array_equal(trace_head_stats(held, conventions)["entropy"],
                                  ref["entropy"])
    # a trace with neither weights nor a summary is streamed
    long.weight_summary = None
    bare = trace_head_stats(long, conventions)
    for name in STATS:
        np.testing.assert_allclose(bare[name], ref[name], atol=1e-5, rtol=0, err_msg=name)
