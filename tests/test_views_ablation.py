"""The ablation page as the HTML export writes it (views.ablation.page through export.site):
its figures hold analysis.ablation's numbers (themselves checked against HF's eager modules
with hooks in test_analysis_ablation.py), made without Streamlit."""

import json
import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from attnviz.analysis import ablation
from attnviz.engine.request import TraceRequest
from attnviz.export import html
from attnviz.export.html import Figure, Heading
from tests.plotly_json import decode


def test_exported_ablation_page_holds_the_analysis_numbers(model):
    from attnviz.export import site

    p = site.Pack(model, "I saw a saw")
    blocks = site.ablation_view(p)
    assert "Switch it off and see" in [s.title for s in site.views(model.n_layers)]
    figs = [json.loads(b.spec) if isinstance(b, Figure) else json.loads(pio.to_json(b))
            for b in blocks if isinstance(b, Figure | go.Figure)]
    assert len(figs) == 12
    assert [b.text for b in blocks if isinstance(b, Heading)][-2:] == [
        "One head removed", "Activation patching"]
    req = TraceRequest("I saw a saw")
    imp = ablation.head_importance(model, req, "repeat", "zero")
    heat = [tr for f in figs for tr in f["data"] if tr["type"] == "heatmap"]
    np.testing.assert_allclose(decode(heat[0]["z"]), imp.effect, atol=1e-7)
    diff = [f for f in figs if f["layout"].get("title", {}).get("text", "").startswith(
        "Later layers")]
    (diff,) = diff
    nb = ablation.one_head(model, req, 0, 0)
    for tr, (_layer, m) in zip(diff["data"], nb.later(), strict=True):
        np.testing.assert_allclose(decode(tr["z"]), m, atol=1e-7)
    page = html.page_html(html.View("v", blocks))
    assert len(re.findall(r'class="attnviz-figure"', page)) == 12


def test_one_cross_attention_head_removed_draws_decoder_rows_and_encoder_columns(tmp_path):
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint
    from attnviz.views import ablation as view

    folder = save_random_checkpoint("bart", tmp_path / "bart", positions=32, seed=4, layers=3)
    bart = attnviz.load_model(folder, device="cpu")
    req = TraceRequest("I saw a saw", target="A saw I saw there")
    blocks = view.one_head_parts(bart, req, 0, 1, "zero", None, "cross")
    (fig,) = [b for b in blocks if isinstance(b, go.Figure)
              and b.layout.title.text.startswith("Later layers")]
    nb = ablation.one_head(bart, req, 0, 1, part="cross")
    t = bart.trace(req)
    assert len(t.decoder_tokens) != len(t.tokens)
    for tr, (_layer, m) in zip(fig.data, nb.later(), strict=True):
        assert np.asarray(tr.z).shape == (len(t.decoder_tokens), len(t.tokens))
        np.testing.assert_allclose(np.asarray(tr.z), m, atol=1e-7)
