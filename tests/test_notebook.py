"""attnviz.head_view / model_view: what they draw is the attention they were given (from a
Trace or from transformers' outputs.attentions), and the HTML they write is self-contained."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import attnviz
from attnviz.engine.random_models import save_random_checkpoint
from attnviz.notebook import attention_arrays

TEXT = "I saw a saw"


@pytest.fixture(scope="module")
def bart(tmp_path_factory):
    return attnviz.load_model(save_random_checkpoint(
        "bart", tmp_path_factory.mktemp("nb") / "bart", layers=2, heads=2), device="cpu")


def visible_lines(fig, visible=None, opacity=False) -> dict:
    """(query y, key y) pairs of the visible line traces, per head (`visible`: a layer menu
    button's visibility list instead of the figure's own); with `opacity`, a dict
    {(query y, key y): the line's opacity} per head."""
    out: dict = {}
    for i, tr in enumerate(fig.data):
        shown = tr.visible is not False if visible is None else visible[i]
        if tr.mode == "lines" and shown and tr.x[0] is not None:
            ys = np.asarray(tr.y, dtype=float)
            pairs = list(zip(ys[0::3], ys[1::3], strict=True))
            if opacity:
                out.setdefault(tr.name, {}).update({p: tr.opacity for p in pairs})
            else:
                out.setdefault(tr.name, set()).update(pairs)
    return out


def expected_lines(weights, levels=20) -> set[tuple[float, float]]:
    """Every pair whose weight is at least half a level (it rounds to a visible opacity)."""
    return {(float(i), float(j)) for i, j in zip(*np.nonzero(weights * levels >= 0.5),
                                                  strict=True)}


@pytest.mark.parametrize("layer", [0, 5])
def test_head_view_draws_each_line_with_its_weight_as_opacity(model, layer):
    t = model.trace(TEXT)
    fig = attnviz.head_view(t, layer=layer).figure
    lines = visible_lines(fig, opacity=True)
    for h in range(t.n_heads):
        w = t.weights[layer, h].astype(np.float64)
        assert set(lines[f"head {h}"]) == expected_lines(w)
        for (i, j), alpha in lines[f"head {h}"].items():  # bertviz: opacity = weight
            assert abs(alpha - w[int(i), int(j)]) <= 0.025 + 1e-9
    # every pair left out holds under 0.025, and the view says what is rounded and left out
    assert "nearest 0.05" in fig.layout.annotations[0].text
    assert "under 0.025 are not drawn" in fig.layout.annotations[0].text
    coarse = attnviz.head_view(t, layer=layer, levels=4, min_weight=0.3).figure
    assert "nearest 0.25" in coarse.layout.annotations[0].text
    assert "under 0.3 are not drawn" in coarse.layout.annotations[0].text
    w = t.weights[layer, 0].astype(np.float64)
    want = {(float(i), float(j)) for i, j in zip(*np.nonzero((w >= 0.3) & (w * 4 >= 0.5)),
                                                  strict=True)}
    assert set(visible_lines(coarse)["head 0"]) == want
    labels = [tr.text for tr in fig.data if tr.mode == "markers+text"]
    assert labels[0] == ("[CLS]", "i", "saw #2", "a", "saw #4", "[SEP]") == labels[1]
    # the menu's "layer 2" shows layer 2's lines and nothing else
    button = fig.layout.updatemenus[0].buttons[2]
    lines = visible_lines(fig, button.args[0]["visible"])
    assert all(lines[f"head {h}"] == expected_lines(t.weights[2, h]) for h in range(t.n_heads))


def test_hf_attentions_and_a_trace_give_the_same_views(model, hf_model):
    t = model.trace(TEXT)
    with torch.no_grad():
        out = hf_model(torch.tensor([t.token_ids.tolist()]), output_attentions=True)
    w, q, k = attention_arrays(out.attentions, t.tokens)
    np.testing.assert_allclose(w, t.weights, atol=1e-5)
    a = attnviz.model_view(out.attentions, t.tokens).figure.data[0].z
    b = attnviz.model_view(t).figure.data[0].z
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), atol=1e-5)


def test_model_view_tiles_are_the_weights(model):
    t = model.trace(TEXT)
    z = np.asarray(attnviz.model_view(t).figure.data[0].z, dtype=float)
    n = t.n_tokens
    for layer, head in ((0, 0), (3, 7), (5, 11)):
        tile = z[layer * (n + 1):layer * (n + 1) + n, head * (n + 1):head * (n + 1) + n]
        np.testing.assert_allclose(tile, t.weights[layer, head], atol=1e-6)
    assert np.isnan(z[n]).all()  # a blank row between layers


def test_cross_attention_views_have_decoder_rows_and_encoder_columns(bart):
    t = bart.trace(TEXT, target="the saw")
    w, q, k = attention_arrays(t, which="cross")
    assert w.shape[-2:] == (len(t.decoder_tokens), t.n_tokens) and q == t.decoder_tokens
    z = np.asarray(attnviz.model_view(t, which="cross").figure.data[0].z, dtype=float)
    m, n = w.shape[-2:]
    np.testing.assert_allclose(z[:m, :n], t.cross_weights[0, 0], atol=1e-6)
    lines = visible_lines(attnviz.head_view(t, which="cross").figure)
    m, n = t.cross_weights.shape[-2:]
    y_q, y_k = np.linspace(0, max(m, n) - 1, m), np.linspace(0, max(m, n) - 1, n)
    want = {(y_q[i], y_k[j]) for i, j in zip(*np.nonzero(t.cross_weights[0, 0] * 20 >= 0.5),
                                              strict=True)}
    assert lines["head 0"] == want
    with pytest.raises(ValueError, match="encoder-decoder"):
        attnviz.head_view(attnviz.load_model(device="cpu").trace(TEXT), which="cross")


def test_bad_inputs_say_what_is_wrong():
    with pytest.raises(ValueError, match="output_attentions"):
        attnviz.head_view(())
    with pytest.raises(ValueError, match="query and .* key tokens"):
        attnviz.head_view(np.ones((1, 1, 3, 3)) / 3, ["a", "b"])


EXTERNAL = re.compile(r"<(script|link|img|iframe)\b[^>]*(src|href)\s*=\s*[\"']?(https?:)?//",
                      re.I)


def test_the_html_is_self_contained(model, tmp_path):
    t = model.trace(TEXT)
    for view in (attnviz.head_view(t), attnviz.model_view(t)):
        path = view.save(tmp_path / "view.html")
        html = path.read_text(encoding="utf-8")
        assert not EXTERNAL.search(html), EXTERNAL.search(html).group(0)
        assert "<script>" in html and "Plotly.newPlot" in html
        assert len(html) > 1_000_000  # plotly.js is inside
        assert view._repr_html_().startswith("<div") and not EXTERNAL.search(
            view._repr_html_())
