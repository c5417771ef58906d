"""The views of Compare two sentences, All heads and Inside one score without Streamlit: each
`page(...)` is the page as it opens, in order, and writes to one HTML file (the lesson pack and
"Download this view" write the same blocks). Numbers are checked against the trace and a
formula written out here."""

import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz.export import html as export
from attnviz.views import compare, explore, inside_score
from attnviz.views.blocks import Code, Heading, Markdown, Numbers, Table

TEXT = "I saw a saw"


@pytest.fixture(scope="module")
def t(model):
    return model.trace(TEXT)


def kinds(blocks) -> list[str]:
    return ["Figure" if isinstance(b, go.Figure) else type(b).__name__ for b in blocks]


def written_figures(blocks) -> list[dict]:
    doc = export.page_html(export.View("v", blocks))
    return [json.loads(s)["figure"] for s in re.findall(
        r'<script type="application/json" class="attnviz-figure">(.*?)</script>', doc, re.S)]


def test_compare_page(model, t):
    tb = model.trace("Yesterday I saw a dog")
    blocks = compare.page(t, tb, TEXT, "Yesterday I saw a dog", layer=4, head=9)
    assert kinds(blocks) == ["Heading", "Markdown", "Code", "Markdown", "Markdown", "Figure",
                             "Markdown", "Numbers"]
    assert blocks[0] == Heading("Compare two sentences", 1)
    # the sentences as typed, as plain text (a code block: in Markdown a URL becomes a link)
    assert blocks[2] == Code("A: I saw a saw\nB: Yesterday I saw a dog")
    assert compare.typed_pair("see https://x.org/a_b", "two\nlines") == Code(
        "A: see https://x.org/a_b\nB: two lines")
    assert "5 aligned tokens of 6 in A and 7 in B." in blocks[3].text
    made = blocks[-1].make()
    # the aligned pairs: tokens equal in both lists, in order; A - B of their weights
    for (i, j), row in zip(made["aligned"], made["difference"], strict=True):
        assert t.tokens[i] == tb.tokens[j]
        keys = made["aligned"]
        np.testing.assert_allclose(row, t.weights[4, 9, i, keys[:, 0]]
                                   - tb.weights[4, 9, j, keys[:, 1]], atol=1e-7)
    assert len(written_figures(blocks)) == 1


def test_explore_page(t):
    blocks = explore.page(t, layer=2, head=5)
    assert kinds(blocks) == ["Heading", "Markdown", "Figure", "Figure", "Figure", "Numbers"]
    made = blocks[-1].make()
    np.testing.assert_allclose(made["weights"], t.weights[2, 5], atol=0)
    np.testing.assert_allclose(made["layer_mean"], t.weights[2].mean(axis=0), atol=1e-7)
    assert made["weights"].sum(axis=1) == pytest.approx(1, abs=1e-5)
    assert len(written_figures(blocks)) == 3
    # a hidden [CLS]/[SEP] says whether the rows are renormalised
    hidden = explore.page(t, hide=True, renorm=True)
    assert any(isinstance(b, Markdown) and "**are renormalised**" in b.text for b in hidden)


def test_inside_score_page(t):
    layer, head, query = 3, 7, 2
    blocks = inside_score.page(t, layer, head, query, word_level=True)
    assert kinds(blocks) == ["Heading", "Markdown", "Markdown", "Heading", "Figure", "Heading",
                             "Figure", "Heading", "Table", "Markdown", "Markdown", "Table",
                             "Numbers"]
    q, k, v = t.queries[layer, head, query], t.keys[layer, head], t.values[layer, head]
    scores = k.astype(np.float64) @ q.astype(np.float64)  # s_j = q . k^j
    w = np.exp(scores / np.sqrt(t.head_dim) - (scores / np.sqrt(t.head_dim)).max())
    w /= w.sum()
    table = blocks[8]
    assert isinstance(table, Table)
    np.testing.assert_allclose(table.columns["q·k"], scores, atol=1e-5)
    np.testing.assert_allclose(table.columns["weight"], w, atol=1e-5)
    made = blocks[-1]
    assert isinstance(made, Numbers)
    np.testing.assert_allclose(made.make()["output"], w @ v, atol=1e-5)
    assert len(written_figures(blocks)) == 2
