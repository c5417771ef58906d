"""views.layer_heads without Streamlit: the blocks in page order, each figure's numbers the
trace's, the layer's numbers as offered for download."""

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz.export import html as export
from attnviz.plotting.summary import grid_panels
from attnviz.views import layer_heads as view
from tests.test_views_common import decode

TEXT = "I saw a saw"


@pytest.fixture(scope="module")
def t(model):
    return model.trace(TEXT)


def test_page_blocks_in_order(t):
    blocks = view.page(t, layer=2)
    kinds = [type(b).__name__ for b in blocks]
    assert kinds == ["Heading", "Markdown", "Markdown", "Markdown", "Figure", "Numbers"]
    title, intro, sizes, numbering, grid, numbers = blocks
    assert "saw #2 and saw #4" in numbering.text and "#0" in numbering.text
    assert title.level == 1 and title.text == "Heads of one layer"
    assert "tab *Scores, all heads*" in intro.text
    assert sizes.style == "caption" and sizes.text.startswith(
        f"6 tokens · {t.n_heads} heads · d_k = {t.head_dim} · 1/sqrt(d_k) = "
        f"{1 / np.sqrt(t.head_dim):.4f}")
    assert isinstance(grid, go.Figure) and numbers.file_name == "attnviz_layer2.npz"


@pytest.mark.parametrize("which,field", [(0, "weights"), (1, "scores")])
def test_grids_hold_every_head_of_the_layer(t, which, field):
    *notes, fig = view.tab(t, 3, which)
    assert len(notes) == which  # the scores grid says why it has one colour scale
    panels = grid_panels(json.loads(fig.to_json()))
    assert len(panels) == t.n_heads
    labels = ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]
    for h, (title, z, keys, queries) in enumerate(panels):
        assert title == f"head {h}" and keys == queries == labels
        np.testing.assert_allclose(z, getattr(t, field)[3, h], rtol=0, atol=1e-6)
    if field == "weights":  # rows sum to 1, the softmax written out from the scores
        s = t.scores[3].astype(np.float64) * t.scale
        ref = np.exp(s - s.max(-1, keepdims=True))
        ref /= ref.sum(-1, keepdims=True)
        np.testing.assert_allclose([p[1] for p in panels], ref, atol=1e-5)


def test_one_head_tab(t):
    scores, weights = view.tab(t, 4, 2, head=9)
    np.testing.assert_allclose(decode(json.loads(scores.to_json())["data"][0]["z"]),
                               t.scores[4, 9], atol=1e-6)
    np.testing.assert_allclose(decode(json.loads(weights.to_json())["data"][0]["z"]),
                               t.weights[4, 9], atol=1e-7)
    assert "Layer 4, head 9: weights" in weights.layout.title.text


def test_numbers_are_made_from_the_trace_when_asked(t):
    asked = []
    block = view.download(lambda: asked.append(1) or t, 5)
    assert asked == []  # nothing held or made until the file is
    got = block.make()
    assert asked == [1] and list(got["tokens"]) == t.tokens
    for name in ("scores", "weights", "queries", "keys", "values"):
        np.testing.assert_array_equal(got[name], getattr(t, name)[5])


def test_the_page_writes_to_html(t):
    doc = export.page_html(export.View("Heads of layer 0", view.page(t, 0)))
    assert doc.count('class="attnviz-figure"') == 1 and "<h2>Heads of one layer</h2>" in doc
    assert "attnviz_layer0.npz" in doc


def test_a_long_sentence_stacks_one_heads_two_maps_and_scales_its_weights(model, t):
    """Past SQUARE_FROM tokens the two maps of tab One head, exact take the page's width one
    below the other, and the weights' colours top at the head's largest weight (~1/n rows
    would be one dark colour on a scale to 1); the numbers stay the trace's."""
    long = model.trace("the cat sat on the mat and the dog saw a saw " * 5)
    assert view.side_by_side(t) and not view.side_by_side(long)
    fig = view.head_weights(long, 1, 2)
    assert fig.data[0].zmax == pytest.approx(float(long.weights[1, 2].max()))
    assert view.head_weights(t, 1, 2).data[0].zmax == 1.0
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), long.weights[1, 2])
