"""Token lines: every drawn line is a (query, key) pair above the cut, at its weight's opacity."""

import numpy as np
import pytest

from attnviz.plotting.token_lines import (
    GAP,
    LABEL_GAP,
    LABELS_UP_TO,
    WINDOW,
    line_opacity,
    token_lines,
)

SIDES = ("queries", "keys")  # the two columns of tokens (one line each past LABELS_UP_TO)


def lines_of(fig):
    """{(head name, query, key): opacity} for every segment drawn."""
    out = {}
    for tr in fig.data:
        if (tr.mode == "lines" and tr.x is not None and len(tr.x) > 1
                and tr.name not in SIDES):
            ys = np.asarray(tr.y, dtype=float).reshape(-1, 3)
            for q, k, _ in ys:
                out[(tr.name, int(q), int(k))] = tr.opacity
    return out


def test_lines_follow_the_weights(model):
    t = model.trace("I saw a saw")
    heads = [3, 9]
    fig = token_lines(t.weights[0, heads], heads, t.tokens, min_weight=0.02, levels=8)
    drawn = lines_of(fig)
    for h in heads:
        w = t.weights[0, h]
        expected = {(i, j) for i in range(t.n_tokens) for j in range(t.n_tokens) if w[i, j] >= 0.02}
        got = {(q, k) for (name, q, k) in drawn if name == f"head {h}"}
        assert got == expected
        for i, j in list(expected)[:10]:
            expected_opacity = 0.15 + 0.85 * float(np.ceil(w[i, j] * 8)) / 8
            assert drawn[(f"head {h}", i, j)] == pytest.approx(expected_opacity, abs=1e-12)
    hover = fig.data[-3]  # the midpoint markers carry the exact weights
    for head, q, k, value in hover.customdata[:20]:
        hq, hk = int(q.rsplit("#", 1)[1]), int(k.rsplit("#", 1)[1])
        assert value == float(t.weights[0, int(head.split()[1]), hq, hk])
    # Repeated tokens stay distinct: both saws are separate points with their own labels.
    keys = fig.data[-1]
    assert list(keys.customdata) == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]


def test_one_query_shows_only_its_row(model):
    t = model.trace("the cat sat on the mat")
    fig = token_lines(t.weights[2, [0]], [0], t.tokens, query=3)
    drawn = lines_of(fig)
    assert drawn and all(q == 3 for (_, q, _) in drawn)
    row = t.weights[2, 0, 3]
    expected = set(np.flatnonzero(row >= 0.02)) | set(np.argsort(row)[-10:])  # top 10 always
    assert {k for (_, _, k) in drawn} == expected


def test_colours_differ_per_head(model):
    t = model.trace("a b c")
    fig = token_lines(t.weights[1, [0, 1, 2]], [0, 1, 2], t.tokens)
    legend = [tr for tr in fig.data if tr.showlegend is not False and tr.x == (None,)]
    assert len({tr.line.color for tr in legend}) == 3


def test_opacity_grows_with_the_weight():
    assert line_opacity(1, 8) == 0.15 + 0.85 / 8 and line_opacity(8, 8) == 1.0


def test_one_query_of_a_long_input_keeps_its_strongest_lines(model):
    t = model.trace("the quick brown fox jumps over the lazy dog " * 20)
    w = t.weights[0, 0]
    fig = token_lines(w[None], [0], t.tokens, query=5, min_weight=0.5, top=10)
    keys = {k for (_, _, k) in lines_of(fig)}
    assert keys == set(np.argsort(w[5])[-10:])


@pytest.mark.parametrize("n_words", [20, 200])
def test_tokens_are_marked_and_named_on_both_sides(model, n_words):
    """Up to LABELS_UP_TO tokens a labelled dot per token; past it one line through the
    tokens' places (one SVG path, not n elements). Either way every token is hovered by its
    own label on both sides, and the chosen query is one diamond on top."""
    t = model.trace(" ".join(["saw"] * n_words))
    n, query = t.n_tokens, 3
    fig = token_lines(t.weights[0, [1]], [1], t.tokens, query=query)
    sides = {tr.name: tr for tr in fig.data if tr.name in SIDES}
    labels = [f"{tok} #{i}" for i, tok in enumerate(t.tokens)]
    for side, x in zip(SIDES, (0.0, 1.0), strict=True):
        tr = sides[side]
        assert list(tr.customdata) == labels and list(tr.y) == list(range(n))
        assert set(tr.x) == {x} and "%{customdata}" in tr.hovertemplate
        if n <= LABELS_UP_TO:
            assert tr.mode == "markers+text" and len(tr.text) == n
        else:  # and every k-th token named, LABEL_GAP px apart or more, never overlapping
            assert tr.mode == "lines" and tr.text is None and tr.marker.size is None
            (named,) = [tr for tr in fig.data if tr.name == f"{side} labels"]
            px_per_token = (fig.layout.height - 60 - fig.layout.margin.b) / n
            assert named.mode == "text" and 10 <= len(named.text) <= n // 2
            assert min(np.diff(named.y)) * px_per_token >= LABEL_GAP * 0.85
            # an en space between a label and its line: after it on the left, before on the right
            label = f"#{named.y[1]} saw"
            assert named.text[1] == (f"{label}{GAP}" if x == 0.0 else f"{GAP}{label}")
            assert set(named.x) == {x}
    chosen = fig.data[-1]
    assert chosen.marker.symbol == "diamond" and list(chosen.y) == [query]
    assert list(chosen.customdata) == [labels[query]] and chosen.x == (0.0,)


def test_one_query_of_a_very_long_input_draws_its_keys_that_matter(model):
    """Past focus_from tokens one query's lines go to its `top` strongest keys in each head and
    the WINDOW keys on each side of it, each on a row of its own with its label; the numbers
    said (keys drawn, their share of each head's row) are the trace's weights."""
    t = model.trace("the quick brown fox jumps over the lazy dog " * 20)
    n, heads, query = t.n_tokens, [0, 3], 150
    fig = token_lines(t.weights[2, heads], heads, t.tokens, query=query, focus_from=100)
    rows = t.weights[2, heads, query].astype(np.float64)  # [2, n]
    want = set(range(query - WINDOW, query + WINDOW + 1))
    for row in rows:
        want |= {int(j) for j in np.argsort(-row)[:10]}
    keys = fig.layout.meta["keys"]
    assert keys == sorted(want) and fig.layout.meta["n_keys"] == n and len(keys) < n // 4
    np.testing.assert_allclose(fig.layout.meta["shares"],
                               [row[sorted(want)].sum() / row.sum() for row in rows], atol=1e-5)
    labels = [f"{tok} #{i}" for i, tok in enumerate(t.tokens)]
    (hover,) = [tr for tr in fig.data if tr.name == "lines"]
    got = {(h, k): v for h, _, k, v in hover.customdata}
    assert len(got) == 2 * len(keys)
    for h, row in zip(heads, rows, strict=True):
        for j in keys:
            assert abs(got[(f"head {h}", labels[j])] - row[j]) <= 1e-5
    (side,) = [tr for tr in fig.data if tr.name == "keys"]
    assert list(side.customdata) == [labels[j] for j in keys]
    assert all(np.diff(side.y) >= 1) and len(set(side.y)) == len(keys)
    (skipped,) = [tr for tr in fig.data if tr.name == "skipped"]
    assert set(skipped.y).isdisjoint(side.y) and len(skipped.y) >= 2  # before and after
    chosen = fig.data[-1]
    assert chosen.marker.symbol == "diamond" and chosen.y[0] == side.y[keys.index(query)]
    assert fig.layout.annotations[1].text == f"keys: {len(keys)} of {n}"
    # every line from the query's row to a drawn key's row, at its weight's opacity
    for (name, q, k), op in lines_of(fig).items():
        h = int(name.split()[1])
        w = rows[heads.index(h), keys[list(side.y).index(k)]]
        assert q == chosen.y[0] and op == line_opacity(int(max(1, np.ceil(w * 8))), 8)


def test_thinned_labels_are_spaced_at_the_figure_drawn_height():
    """1,681 tokens in a 1,500 px figure: the named tokens are LABEL_GAP px apart or more at
    the px a token really gets (under 1), not one on top of the other."""
    n = 1681
    w = np.full((1, n, n), 1.0 / n)
    fig = token_lines(w, [0], [f"t{i}" for i in range(n)])
    px_per_token = (fig.layout.height - 60 - fig.layout.margin.b) / n
    assert px_per_token < 1
    for side in SIDES:
        (named,) = [tr for tr in fig.data if tr.name == f"{side} labels"]
        assert min(np.diff(named.y)) * px_per_token >= LABEL_GAP * 0.85


def test_a_decoder_query_draws_no_masked_key():
    """A causal row (weight 0 after the query): its later keys are never drawn, not even as
    part of the window or of the 10 'strongest' of a row with fewer than 10 weights above 0."""
    n, query = 700, 3
    w = np.tril(np.random.default_rng(0).random((n, n)))
    w /= w.sum(axis=1, keepdims=True)
    fig = token_lines(w[None], [0], [f"t{i}" for i in range(n)], query=query)
    assert fig.layout.meta["keys"] == [0, 1, 2, 3] and fig.layout.meta["n_keys"] == n
    np.testing.assert_allclose(fig.layout.meta["shares"], [1.0], atol=1e-5)


def test_the_chosen_querys_label_stands_clear_of_its_diamond(model):
    """Plotly sets a point's text off by that point's own marker: the query's label sits by a
    clear dot as large as the diamond drawn over it, so the diamond never covers its last
    character ('saw #2'); every other label by its 5 px dot."""
    t = model.trace("I saw a saw")
    fig = token_lines(t.weights[0, [0]], [0], t.tokens, query=2)
    queries = next(tr for tr in fig.data if tr.name == "queries")
    diamond = next(tr for tr in fig.data if tr.marker.symbol == "diamond")
    assert list(queries.text) == ["[CLS]", "i", "saw #2", "a", "saw #4", "[SEP]"]
    sizes, colours = list(queries.marker.size), list(queries.marker.color)
    assert sizes[2] == diamond.marker.size == 10 and sizes[:2] + sizes[3:] == [5] * 5
    assert colours[2].replace(" ", "").endswith(",0)") and len(set(colours[:2] + colours[3:])) == 1
    assert list(diamond.y) == [2]
    keys = next(tr for tr in fig.data if tr.name == "keys")
    assert keys.marker.size == 5  # the keys' side has no diamond


ARIAL = "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf"  # Arial's metrics
CJK_FONT = "/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc"


def test_every_label_is_whole_in_its_sides_margin():
    """The labels lie in the figure's side margins, each side as wide as its widest label as a
    font measures it (Arial's metrics; a CJK font for Chinese tokens) plus the dot: whole at
    any width, a phone's 390 px included (a fixed share of the x axis cut 'carpenter #31' there),
    in every form of the figure: every token named, named every k-th, one query's focused keys."""
    import os

    from PIL import ImageFont

    from attnviz.plotting.common import FONT

    if not (os.path.exists(ARIAL) and os.path.exists(CJK_FONT)):
        pytest.skip("Liberation Sans or Noto Sans CJK not installed")
    latin, cjk = (ImageFont.truetype(f, FONT["size"]) for f in (ARIAL, CJK_FONT))

    def width(text: str) -> float:
        return sum((cjk if ord(c) > 0x1100 and c != GAP else latin).getlength(c) for c in text)

    words = ["The", "carpenter", "kept", "木工师傅的锯子", "saw", "in", "carpenter"]
    for n, query in ((7, None), (7, 3), (LABELS_UP_TO + 20, 5), (700, 650)):
        tokens = [words[i % len(words)] for i in range(n)]
        w = np.full((1, n, n), 1.0 / n)
        fig = token_lines(w, [0], tokens, query=query)
        texts = {0.0: [], 1.0: []}
        for tr in fig.data:
            if tr.text is not None and tr.name != "skipped" and tr.x is not None:
                texts[float(tr.x[0])] += list(tr.text)
                assert tr.cliponaxis is False, tr.name  # drawn outside the plot area
        for x, margin in ((0.0, fig.layout.margin.l), (1.0, fig.layout.margin.r)):
            assert texts[x], (n, x)
            assert margin >= max(map(width, texts[x])) + 5 + 10, (n, query, x, margin)
