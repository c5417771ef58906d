"""The figures of the heads, all-heads, images, families and inside-one-score pages in Chinese:
every word a student reads in them (titles, subplot titles, axis and colour bar titles, legend
names, annotations, hover text) comes from the catalogue; the same figures in English keep
their English text. Tokens are Chinese characters here, so any Latin word left is the
figure's own."""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz import i18n
from attnviz.analysis.views import inside_score
from attnviz.plotting import families, heatmaps, images, neuron, overview, token_lines

TOKENS = ["[CLS]", "我", "看", "见", "锯", "[SEP]"]
# Latin words a Chinese figure keeps on purpose: names and notation, not English sentences.
KEPT = {"CLS", "SEP", "softmax", "RGB", "log", "max", "conv", "torch", "token", "sup", "sub",
        "extra", "br", "Q·K", "q·k", "customdata", "text", "BERT", "GPT"}  # BERT, GPT: models
PLACEHOLDER = re.compile(r"%\{[^}]*\}|<[^>]*>")


def texts(fig: go.Figure) -> list[str]:
    """Every piece of text a reader sees in a figure (not tick labels: those are tokens or
    numbers)."""
    d = fig.to_plotly_json()
    out: list[str] = []
    lay = d["layout"]
    out.append((lay.get("title") or {}).get("text") or "")
    out += [a.get("text") or "" for a in lay.get("annotations", [])]
    for name, axis in lay.items():
        if re.match(r"[xy]axis\d*$", name):
            out.append((axis.get("title") or {}).get("text") or "")
    bars = [lay.get("coloraxis", {}).get("colorbar", {})]
    for tr in d["data"]:
        bars.append(tr.get("colorbar") or {})
        out += [tr.get("hovertemplate") or "", tr.get("name") or "" if tr.get("showlegend",
                                                                                True) else ""]
        if isinstance(tr.get("customdata"), list):  # hover words carried as data
            out += [c for row in tr["customdata"] for c in (row if isinstance(row, list)
                                                            else [row]) if isinstance(c, str)]
        if tr.get("type") == "heatmap" and isinstance(tr.get("text"), list):
            out += [c for row in tr["text"] for c in row]
    out += [(b.get("title") or {}).get("text") or "" for b in bars]
    return [t for t in out if t]


def latin_words(fig: go.Figure) -> set[str]:
    words = set()
    for t in texts(fig):
        words |= set(re.findall(r"[A-Za-z][A-Za-z·]+", PLACEHOLDER.sub(" ", t)))
    return words - KEPT


def figures() -> dict[str, go.Figure]:
    rng = np.random.default_rng(0)
    n = len(TOKENS)
    w = rng.random((2, 3, n, n)).astype(np.float32)
    w /= w.sum(-1, keepdims=True)
    s = rng.normal(size=(3, n, n)).astype(np.float32)
    means = {"layers": w.mean(1), "heads": w.mean(0), "all": w.mean((0, 1))}
    q, k, v = (rng.normal(size=(n, 4)).astype(np.float32) for _ in range(3))
    nb = inside_score(q, k, v, 3, 0.5, np.ones((n, n), dtype=bool))
    image = rng.random((8, 8, 3))
    long = rng.random((3, 100, 100)).astype(np.float32)
    return {
        "heatmap_w": heatmaps.attention_heatmap(w[0, 0], TOKENS, "weights"),
        "heatmap_s": heatmaps.attention_heatmap(s[0], TOKENS, "scores"),
        "grid": heatmaps.heads_grid(s, TOKENS, "scores"),
        "grid_pooled": heatmaps.heads_grid(long, [str(i) for i in range(100)], max_cells=40),
        "lines": token_lines.token_lines(w[0, :2], [0, 1], TOKENS),
        "mosaic": overview.mark_head(overview.overview_mosaic(w, means, TOKENS), 1, 2),
        "mosaic_pooled": overview.overview_mosaic(
            np.repeat(w, 20, -1).repeat(20, -2) / 20, {
                "layers": means["layers"].repeat(20, -1).repeat(20, -2),
                "heads": means["heads"].repeat(20, -1).repeat(20, -2),
                "all": means["all"].repeat(20, -1).repeat(20, -2)}, TOKENS * 20, max_cells=32),
        "later": families.later_weight_chart({"BERT": np.ones(3) * 0.2, "GPT-2": np.zeros(3)}),
        "vit": families.image_attention((image * 255).astype(np.uint8), rng.random((2, 2))),
        "image": images.image_figure(image, (1, 2)),
        "map_w": images.map_figure(rng.random((8, 8)), (1, 2), ""),
        "map_i": images.map_figure(rng.random((8, 8)), (1, 2), "", "influence"),
        "heads": images.head_maps_figure(rng.random((9, 10, 10)),
                                         np.array([(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)]),
                                         (3, 3), 1, (8, 8)),
        "row": images.images_row([image, image], ["", ""], rng.random((8, 8))),
        "score_steps": neuron.score_steps(nb, TOKENS, 3),
        "value_steps": neuron.value_steps(nb, TOKENS, 3),
    }


def test_chinese_figures_carry_no_english_words():
    i18n.MISSING.clear()
    with i18n.use("zh"):
        figs = figures()
    assert {m for m in i18n.MISSING if m[0] == "zh"} == set()
    left = {name: latin_words(fig) for name, fig in figs.items()}
    assert {name: words for name, words in left.items() if words} == {}
    for name, fig in figs.items():  # and Chinese text is actually there
        assert any(re.search(r"[\u4e00-\u9fff]", t) for t in texts(fig)
                   if not set(t) & set("".join(TOKENS[1:-1]))), name


def test_english_figures_keep_their_words():
    figs = figures()
    assert all(latin_words(fig) for fig in figs.values())  # the check sees English words
    assert figs["heatmap_w"].layout.title.text == "softmax weights"
    assert figs["heatmap_s"].layout.xaxis.title.text == "keys"
    assert "query %{y}" in figs["heatmap_w"].data[0].hovertemplate
    assert [a.text for a in figs["grid"].layout.annotations][:3] == ["head 0", "head 1", "head 2"]
    assert "blocks of 3 tokens" in figs["grid_pooled"].layout.title.text
    assert {tr.name for tr in figs["lines"].data if tr.showlegend is not False} >= {"head 0"}
    assert figs["mosaic"].data[0].colorbar.title.text == "weights"
    assert "blocks of" in figs["mosaic_pooled"].layout.title.text
    assert figs["later"].layout.yaxis.title.text == "mean weight on later tokens"
    assert figs["value_steps"].layout.xaxis6.title.text.startswith("output o")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_clicked_tile_opens_its_head_in_either_language(lang):
    """The mosaic's cell names are translated; the click still finds the layer and head."""
    n = len(TOKENS)
    w = np.full((2, 3, n, n), 1 / n, dtype=np.float32)
    means = {"layers": w.mean(1), "heads": w.mean(0), "all": w.mean((0, 1))}
    with i18n.use(lang):
        fig = overview.overview_mosaic(w, means, TOKENS)
    x, y, step = fig.data[0].x, fig.data[0].y, n + 1
    assert overview.pick_head({"x": x[2 * step + 1], "y": y[1 * step + 4]}) == (1, 2)
    assert overview.pick_head({"x": x[3 * step], "y": y[2 * step]}) == (None, None)  # means
