"""The ablation page as the HTML export writes it (views.ablation.page through export.site):
its figures hold analysis.ablation's numbers (themselves checked against HF's eager modules
with hooks in test_analysis_ablation.py), made without Streamlit."""

import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from attnviz.analysis import ablation
from attnviz.engine.request import TraceRequest
from attnviz.export import html
from attnviz.export.html import Figure, Heading
from attnviz.views.blocks import Markdown
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


def text_of(blocks) -> str:
    from attnviz.views.blocks import Markdown, Metric

    return "\n".join(b.text if isinstance(b, Markdown) else f"{b.label}: {b.value}"
                     for b in blocks if isinstance(b, Markdown | Metric))


def test_the_lessons_heads_off_measures_the_two_places_given_and_names_them(model):
    """"The saw cut the saw": the lesson follows *saw* (places 2 and 5), not the sentence's
    first repeated token (*the*, 1 and 4). Every number of the heads-off view is about the two
    places given, and the two tokens are named beside it."""
    from attnviz.views import ablation as view
    from attnviz.views.blocks import Table

    req = TraceRequest("the saw cut the saw")
    assert model.trace(req).tokens[1:6] == ["the", "saw", "cut", "the", "saw"]
    blocks = view.lesson_parts(model, req, positions=False, tokens=(2, 5))
    imp = ablation.head_importance(model, req, "repeat", "zero", tokens=(2, 5))
    first = ablation.head_importance(model, req, "repeat", "zero")
    assert first.pair == (1, 4) and np.abs(first.effect - imp.effect).max() > 1e-3
    (heat,) = [b for b in blocks if isinstance(b, go.Figure) and b.data[0].type == "heatmap"
               and (b.layout.title.text or "").startswith("Change of")]
    np.testing.assert_allclose(np.asarray(heat.data[0].z), imp.effect, atol=1e-7)
    assert heat.layout.title.text == "Change of cos(saw #2, saw #5) when one head is removed"
    (table,) = [b for b in blocks if isinstance(b, Table)]
    top = imp.ranking()[0]
    assert table.columns["cos(saw #2, saw #5) without it"][0] == f"{imp.values[top]:.4f}"
    assert table.columns["change of cos(saw #2, saw #5)"][0] == f"{imp.effect[top]:+.4f}"
    said = text_of(blocks)
    assert f"the two tokens `saw #2` and `saw #5`, whose cosine after the last layer is " \
           f"{imp.base:.4f}" in said
    assert "the #1" not in said and "the #4" not in said
    shown = view.lesson_parts(model, req, tokens=(2, 5))
    pair, on, _off = ablation.saw_cosines(model, req, (2, 5))
    assert pair == (2, 5) and f"Cosine of saw #2 and saw #5 after the last layer, positions " \
                              f"on: {on[-1]:.4f}" in text_of(shown)


def test_patching_names_each_runs_own_tokens_and_the_fractions_range(model):
    """The corrupted run's tokens at the measured places are its own ("dog", not "saw #4"), and
    the restored fraction's range, below 0 and above 1 here, is said with what it means."""
    from attnviz.views import ablation as view

    clean, bad = TraceRequest("I saw a saw"), TraceRequest("I saw a dog")
    p = ablation.patching(model, clean, bad)
    said = text_of(view.patching_parts(model, clean, bad))
    assert f"of `saw #2` and `saw #4` in the clean run, {p.clean:.4f}; of `saw` and `dog` in " \
           f"the corrupted run, {p.corrupted:.4f}" in said
    both = np.concatenate([p.heads.ravel(), p.residual.ravel()])
    assert both.min() < 0 and both.max() > 1
    assert f"here it runs from {both.min():.3f} to {both.max():.3f}. Below 0" in said
    assert f"drawn for up to {ablation.RESIDUAL_MAX_TOKENS} tokens" in said
    doc = (Path(__file__).resolve().parents[1] / "docs" / "ablation.md").read_text()
    assert f"it runs from {both.min():.3f} to {both.max():.3f})" in doc


def test_notation_pruning_and_statistics_say_what_is_computed(model):
    """Y_h = A'_h V_h (the lecture's alpha'), the pruning curve credited "in the manner of"
    Michel et al. with what this curve shows, recounted from the curve; a statistic that is 0
    for every head names no head."""
    from attnviz.views import ablation as view
    from attnviz.views.blocks import Table

    intro = text_of(view.intro())
    assert "$Y_h = A'_h V_h$" in intro and "W_h V_h" not in intro and "\\alpha'_{i,j}" in intro
    saw = TraceRequest("I saw a saw")
    blocks = view.importance_parts(model, saw, "repeat", "zero")
    said = text_of(blocks)
    assert "in the manner of Michel et al. (2019)" in said
    imp = ablation.head_importance(model, saw, "repeat", "zero")
    heads, curve = ablation.pruning_curve(model, saw, imp)
    s = ablation.pruning_summary(heads, curve)
    heads_said = ", ".join(f"layer {x}, head {y}" for x, y in s.last)
    assert f"With the first {s.flat} heads removed, the cosine of the two repeated tokens " \
           f"stays between {s.low:.3f} and {s.high:.3f}; the last {len(s.last)} removed " \
           f"({heads_said}) take it from {s.start:.3f} to {s.end:.3f}." in said
    (table,) = [b for b in blocks if isinstance(b, Table) and "statistic" in b.columns]
    row = table.columns["statistic"].index("weight on punctuation")
    assert table.columns["head with the most of it"][row] == \
        "none: no punctuation in this sentence (0 for every head)"
    assert table.columns["its rank by |change|"][row] == "—"


def test_the_docs_document_the_functions_the_notation_and_the_limit():
    import attnviz
    from attnviz.engine import request

    doc = (Path(__file__).resolve().parents[1] / "docs" / "ablation.md").read_text()
    for name in ("ablation.patching(", "ablation.layer_removal(", "ablation.pruning_curve(",
                 "reference="):
        assert name in doc, name
    assert "W_h V_h" not in doc and "A'_h V_h" in doc
    assert f"{ablation.RESIDUAL_MAX_TOKENS} tokens" in doc
    for f in (ablation.patching, ablation.layer_removal, ablation.pruning_curve):
        assert len(f.__doc__) > 200, f.__name__
    assert attnviz.Ablation is request.Ablation and attnviz.Patch is request.Patch


def test_chinese_names_say_where_the_weight_falls():
    from attnviz import i18n

    zh = i18n.messages("zh")
    assert zh["weight on itself"] == "落在自身上的权重"
    assert zh["weight on the previous token"] == "落在前一个 token 上的权重"
    assert zh["weight on the next token"] == "落在后一个 token 上的权重"


def test_the_three_top_heads_colour_bar_titles_fit_their_bars_at_100_tokens(model):
    """The lesson's view at ~100 tokens (scales clipped: a note in the text, said once): each
    of the three top heads' colour bars (horizontal, under its map) has a title that fits
    within its bar on a 1280 px page, so the three titles never run into each other; in
    English and in Chinese."""
    import pytest

    from attnviz.i18n import use
    from attnviz.plotting.common import text_width
    from attnviz.plotting.stats import PAGE_WIDTH
    from attnviz.views import ablation as view
    from tests.test_plotting_ablation import PARAGRAPH

    plot = PAGE_WIDTH - 20  # the figure's margins
    for lang in ("en", "zh"):
        with use(lang):
            blocks = view.lesson_parts(model, TraceRequest(PARAGRAPH), positions=False)
        (fig,) = [b for b in blocks if isinstance(b, go.Figure)
                  and len([a for a in b.layout if a.startswith("coloraxis")]) == 3]
        bars = [fig.layout[a].colorbar for a in sorted(a for a in fig.layout
                                                        if a.startswith("coloraxis"))]
        spans = []
        for bar in bars:
            assert bar.orientation == "h" and bar.title.side == "top"
            half = bar.len * plot / 2
            width = text_width(bar.title.text)
            assert width <= 2 * half, (lang, bar.title.text, width, 2 * half)
            spans.append((bar.x * plot - width / 2, bar.x * plot + width / 2))
        for (_a, right), (left, _b) in zip(spans, spans[1:], strict=False):
            assert right < left, (lang, spans)
        said = " ".join(b.text for b in blocks if isinstance(b, Markdown))
        assert ("percentile" if lang == "en" else "百分位") in said  # said once, in the text
        assert pytest.approx(bars[0].len) == bars[1].len
