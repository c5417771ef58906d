"""Colours of the figures come from one place (plotting.common): the Okabe-Ito palette for
categories, named scales, and a few fixed colours. A scan of every other plotting module's
syntax tree finds any colour it writes itself (a hex string, a CSS colour name, a Plotly
qualitative set); figures built from real numbers use only palette colours for categories."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from attnviz.plotting import common

PLOTTING = Path(common.__file__).parent
HEX = re.compile(r"^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$")
NAMES = {"red", "green", "blue", "black", "white", "grey", "gray", "crimson", "orange",
         "purple", "yellow", "cyan", "magenta", "pink", "brown", "navy", "teal"}


def colour_literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant in `path` that is a colour."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            v = node.value.strip()
            if HEX.match(v) or v.lower() in NAMES:
                hits.append((node.lineno, v))
        if isinstance(node, ast.ImportFrom) and node.module == "plotly.colors":
            hits.append((node.lineno, "plotly.colors import"))
        if isinstance(node, ast.Attribute) and node.attr == "qualitative":
            hits.append((node.lineno, "qualitative"))
    return sorted(hits)


MODULES = sorted(p for p in PLOTTING.glob("*.py") if p.name not in ("common.py", "__init__.py"))


def test_the_scan_finds_a_colour(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('from plotly.colors import qualitative\nx = dict(color="#1f77b4")\n'
                   'y = "crimson"\n')
    assert [v for _, v in colour_literals(bad)] == ["plotly.colors import", "#1f77b4", "crimson"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_module_takes_its_colours_from_common(path):
    assert colour_literals(path) == [], f"{path.name} writes its own colours"


def test_palette_is_okabe_ito():
    """Okabe & Ito (2008): the colour-blind safe set, black left out for the dark theme."""
    assert common.OKABE_ITO == ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9",
                                "#CC79A7", "#F0E442")
    assert [common.category_colour(i) for i in (0, 7, 8)] == ["#0072B2", "#0072B2", "#E69F00"]
    assert common.category_dash(0) != common.category_dash(1)


def test_token_lines_heads_differ_by_colour_and_dash(model):
    from attnviz.plotting.token_lines import token_lines

    t = model.trace("I saw a saw")
    fig = token_lines(t.weights[0, [0, 1, 2]], [0, 1, 2], t.tokens)
    legend = [tr for tr in fig.data if tr.showlegend is not False and tr.legendgroup]
    assert [tr.line.color for tr in legend] == list(common.OKABE_ITO[:3])
    assert len({tr.line.dash for tr in legend}) == 3
    lines = [tr for tr in fig.data if tr.mode == "lines" and tr.showlegend is False]
    assert {tr.line.color for tr in lines} <= set(common.OKABE_ITO)


def test_corpus_behaviours_have_a_colour_and_a_shape():
    from attnviz.plotting.corpus import COLOURS, SYMBOLS, head_map

    kinds = np.array([["[CLS]", "previous"], ["next", "mixed"]])
    fig = head_map(np.random.default_rng(0).normal(size=(4, 2)), kinds)
    assert set(COLOURS.values()) <= set(common.OKABE_ITO) | {common.NEUTRAL}
    assert len(set(SYMBOLS.values())) == len(SYMBOLS)
    assert list(fig.data[0].marker.symbol) == [SYMBOLS[k] for k in kinds.ravel()]


def test_sequential_and_diverging_scales_are_perceptually_uniform():
    assert common.WEIGHTS_SCALE == "Viridis" and common.SCORES_SCALE == "Balance"


def test_figures_with_several_series_colour_each_from_the_palette():
    """Lines and bars never fall back to a theme's colours: each series sets one of the
    palette, and a second cue (dash or pattern) differs between series."""
    from attnviz.plotting import lesson, steps

    figs = [
        lesson.loss_curves({"a": [1.0, 0.5], "b": [1.2, 0.7], "c": [0.9, 0.4]}),
        lesson.accuracy_by_distance({"a": {1: 0.9, 2: 0.5}, "b": {1: 0.7, 2: 0.8}},
                                    {1: 0.6, 2: 0.6}, {1: 10, 2: 5}),
        steps.temperature_figure({"temperature": np.array([0.1, 1.0]),
                                  "max_weight": np.array([1.0, 0.5]),
                                  "entropy": np.array([0.0, 1.0])}, 1.0, 4),
        steps.weights_bar_figure({"T = 1": np.array([0.5, 0.5]), "T = 2": np.array([0.4, 0.6])},
                                 ["a", "b"], "w"),
    ]
    palette = set(common.OKABE_ITO) | {common.NEUTRAL}
    for fig in filter(None, figs):
        series = [tr for tr in fig.data if tr.name and tr.name != "majority tag"]
        colours = [(tr.line.color if tr.type == "scatter" else tr.marker.color) for tr in series]
        assert all(c in palette for c in colours), (fig.layout.title.text, colours)
        cues = [(tr.line.dash if tr.type == "scatter" else tr.marker.pattern.shape)
                for tr in series]
        assert len(set(cues)) == len(cues), cues

