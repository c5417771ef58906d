"""The all-heads page's words about its token lines, checked against the trace's weights."""

import numpy as np

from attnviz.plotting.token_lines import WINDOW, token_lines
from attnviz.views import explore as view


def test_focus_note_says_the_keys_drawn_and_their_share_of_the_weight(model):
    t = model.trace("the quick brown fox jumps over the lazy dog " * 20)
    heads, query = [4, 1], 40
    labels = view.labels(t.tokens, list(range(t.n_tokens)))
    fig = token_lines(t.weights[5, heads], heads, t.tokens, query=query, focus_from=100)
    rows = t.weights[5, heads, query].astype(np.float64)
    keys = set(range(query - WINDOW, query + WINDOW + 1))
    for row in rows:
        keys |= {int(j) for j in np.argsort(-row)[:10]}
    keys = sorted(keys)
    shares = [row[keys].sum() for row in rows]  # a row of the model's own weights sums to 1
    assert abs(rows.sum(axis=1) - 1).max() < 1e-5
    (note,) = view.focus_note(fig, heads, labels, query)
    assert note.text == (
        f"{len(keys)} of {t.n_tokens} keys drawn for query {labels[query]}: the 10 strongest "
        f"in each head and {WINDOW} on each side of it. They hold this share of the query's "
        f"weight: head 4 {shares[0]:.1%}, head 1 {shares[1]:.1%}.")
    # below focus_from, or with every token's lines, nothing to say
    assert view.focus_note(token_lines(t.weights[5, heads], heads, t.tokens, query=query),
                           heads, labels, query) == []
    assert view.focus_note(fig, heads, labels, None) == []
