"""Figures of the positions page: they draw exactly the arrays given, with distinct token labels."""

import itertools

import numpy as np
import plotly.graph_objects as go
import pytest

from attnviz.analysis import positions as P
from attnviz.plotting import positions as fig
from tests.colours import luminance

TOKENS = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
LABELS = ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]


def test_permutation_figure_joins_each_token_to_its_new_place():
    perm = np.array([0, 3, 1, 2, 4, 5])
    f = fig.permutation_figure(TOKENS, perm)
    stays, moved = [t for t in f.data if t.mode == "lines"]
    assert list(stays.x) == [0, 0, None, 4, 4, None, 5, 5, None]
    assert list(moved.x) == [3, 1, None, 1, 2, None, 2, 3, None]  # original -> shuffled place
    assert list(moved.y) == [1, 0, None] * 3
    shuffled = f.data[-1]
    # a repeated word keeps its own label wherever it moves (saw #2, saw #4); others bare
    shown = ["[CLS]", "i", "saw #2", "a", "saw #4", "[SEP]"]
    assert list(f.data[-2].text) == shown
    assert list(shuffled.text) == [shown[k] for k in perm]


def test_equivariance_figure_shows_zero_as_zero():
    diffs = {"none": np.zeros(7), "learned": np.linspace(0.5, 3, 7)}
    f = fig.equivariance_figure(diffs)
    bars = [t for t in f.data if t.type == "bar"]
    assert [t.name for t in bars] == [fig.MODE_NAMES["none"], fig.MODE_NAMES["learned"]]
    # each bar's value is a text above an invisible marker on its top, grouped like the bars
    # (clear of the bar; a bar's own "outside" text touches it)
    (text0, text1) = [t for t in f.data if t.type == "scatter"]
    assert list(text0.text) == ["0"] * 7 and text0.textposition == "top center"
    assert text1.offsetgroup == bars[1].offsetgroup and f.layout.scattermode == "group"
    assert text1.marker.size >= 10 and text1.marker.opacity == 0
    np.testing.assert_array_equal(text1.y, diffs["learned"])
    assert np.isnan(np.asarray(f.data[0].y, dtype=float)).all()  # no bar on a log axis ...
    assert [a.text for a in f.layout.annotations] == ["0"] * 7  # ... a "0" on the floor
    np.testing.assert_array_equal(f.data[1].y, diffs["learned"])
    assert f.data[0].x[0] == "embeddings" and f.data[0].x[-1] == "layer 6"


def test_equivariance_figure_log_scale_shows_rounding_and_order_one():
    """Tab 1's 'no positions' bars (~1e-6) are visible next to the learned ones (~1): log y."""
    diffs = {"none": np.array([0.0, 5.5e-7, 1.2e-6]), "learned": np.array([0.58, 0.96, 1.3])}
    f = fig.equivariance_figure(diffs)
    assert f.layout.yaxis.type == "log"
    # whole decades: the one below 5.5e-7's (1e-7), down one more; the one above 5 x 1.3
    assert list(f.layout.yaxis.range) == [-8.0, 1.0]
    assert [a.x for a in f.layout.annotations] == ["embeddings"]
    assert f.layout.annotations[0].y == -8.0  # the "0" on the floor
    # float rounding moves the smallest bar (another thread count): the axis stays put
    moved = fig.equivariance_figure({**diffs, "none": np.array([0.0, 6.1e-7, 1.2e-6])})
    assert list(moved.layout.yaxis.range) == [-8.0, 1.0]


def test_cosine_curve_one_line_per_mode():
    curves = {"learned": np.array([0.9, 0.8, 0.7]), "none": np.ones(3)}
    f = fig.cosine_curve(curves, "saw #2 and saw #4")
    assert len(f.data) == 2
    np.testing.assert_array_equal(f.data[0].y, curves["learned"])
    np.testing.assert_array_equal(f.data[1].y, curves["none"])
    assert "saw #2 and saw #4" in f.layout.title.text


def test_attention_rows_keep_repeated_tokens_apart():
    rng = np.random.default_rng(0)
    rows = {"learned": rng.dirichlet(np.ones(6), 2), "none": rng.dirichlet(np.ones(6), 2)}
    f = fig.attention_rows(rows, TOKENS, 2, 4)
    assert len(f.data) == 4
    for t in f.data:
        assert list(t.x) == LABELS  # 6 bars: the two saws do not merge
    np.testing.assert_allclose(f.data[3].y, rows["none"][1], atol=1e-7)
    assert f.layout.xaxis.categoryarray == tuple(LABELS)


def test_weights_comparison_draws_both_and_the_difference():
    rng = np.random.default_rng(1)
    a, b = rng.dirichlet(np.ones(6), 6), rng.dirichlet(np.ones(6), 6)
    f = fig.weights_comparison(a, b, TOKENS)
    assert len(f.data) == 3
    np.testing.assert_allclose(f.data[0].z, a, atol=1e-7)
    np.testing.assert_allclose(f.data[1].z, b, atol=1e-7)
    np.testing.assert_allclose(f.data[2].z, a - b, atol=1e-7)
    assert list(f.data[2].x) == LABELS
    lim = float(np.abs(a - b).max())
    assert f.layout.coloraxis2.cmin == -f.layout.coloraxis2.cmax
    assert abs(f.layout.coloraxis2.cmax - lim) < 1e-6


def test_encoding_figures():
    pe = P.sinusoidal_table(16, 8)
    f = fig.encoding_heatmap(pe, "sin")
    np.testing.assert_allclose(f.data[0].z, pe)
    dots = P.dot_products(pe)
    g = fig.position_matrix(dots, "dots", "dot")
    np.testing.assert_allclose(g.data[0].z, dots, atol=1e-5)
    coords, ratio = P.pca(pe)
    h = fig.pca_scatter(coords, ratio)
    np.testing.assert_array_equal(h.data[1].marker.color, np.arange(16))
    assert "PC1" in h.layout.xaxis.title.text


def test_mode_divergence_grid_one_panel_per_mode():
    rng = np.random.default_rng(2)
    dist = {"learned": np.zeros((6, 12)), "none": rng.random((6, 12)) * 0.3}
    f = fig.mode_divergence_grid(dist)
    assert len(f.data) == 2
    np.testing.assert_array_equal(f.data[0].z, 0)
    np.testing.assert_allclose(f.data[1].z, dist["none"], atol=1e-7)
    assert f.layout.coloraxis.cmin == 0
    assert abs(f.layout.coloraxis.cmax - dist["none"].max()) < 1e-6


def test_final_change_and_toy_figures():
    f = fig.final_change_figure({"learned": np.ones(6), "none": np.full(6, 0.5)}, TOKENS)
    assert list(f.data[0].x) == LABELS
    toy = P.toy_self_attention(["I", "saw", "a", "saw"])
    g = fig.toy_outputs(toy, ["I", "saw", "a", "saw"])
    np.testing.assert_allclose(g.data[0].z, toy["none"]["outputs"])
    assert list(g.data[0].y) == ["I #1", "saw #2", "a #3", "saw #4"]
    # the words label the first panel only (the second's ran into the first); the colour bar
    # has a title and lies below the panels
    assert g.layout.yaxis.showticklabels is True and g.layout.yaxis2.showticklabels is False
    bar = g.layout.coloraxis.colorbar
    assert bar.title.text == "value" and bar.orientation == "h" and bar.y < 0
    # the panels' titles write the lecture's b^i, a^i, e^i with superscripts, not carets
    sin = fig.toy_outputs({"sinusoidal": toy["none"]}, ["I", "saw", "a", "saw"])
    titles = [a.text for a in (*g.layout.annotations, *sin.layout.annotations)]
    assert "outputs b<sup>i</sup>, no positions" in titles and not any("^" in t for t in titles)
    assert "a<sup>i</sup> + sinusoid e<sup>i</sup>" in titles[-1]


def test_weights_comparison_colour_bars_lie_under_their_own_panels():
    w = np.full((6, 6), 1 / 6)
    f = fig.weights_comparison(w, w, TOKENS)
    weights, diff = f.layout.coloraxis.colorbar, f.layout.coloraxis2.colorbar
    assert weights.orientation == diff.orientation == "h" and weights.y < 0 and diff.y < 0
    assert weights.x == f.layout.xaxis.domain[0] and diff.x == f.layout.xaxis3.domain[0]


def test_token_text_is_escaped():
    toks = ["[CLS]", "<b>", "x", "<b>", "[SEP]"]
    figs = [fig.permutation_figure(toks, np.array([0, 3, 2, 1, 4])),
            fig.attention_rows({"none": np.full((2, 5), 0.2)}, toks, 1, 3),
            fig.weights_comparison(np.eye(5), np.eye(5), toks),
            fig.final_change_figure({"none": np.ones(5)}, toks)]
    for f in figs:
        assert isinstance(f, go.Figure)
        js = f.to_json()
        assert "<b>" not in js and "&lt;b&gt;" in js


def test_rotation_figure_draws_the_turned_vectors():
    turned = {"q": P.rotated_pair([1.0, 0.0], [0, 1, 2]), "k": P.rotated_pair([0.0, 1.0],
                                                                               [0, 1, 2])}
    f = fig.rotation_figure(turned, [0, 1, 2], P.TOY_THETA)
    lines, tips = f.data[0], f.data[1]
    assert list(lines.x[:3]) == [0.0, 1.0, None]  # from the origin to each tip
    np.testing.assert_allclose(tips.x, turned["q"][:, 0])
    assert list(tips.text) == ["q @0", "q @1", "q @2"]
    assert "45.0°" in f.layout.title.text and f.layout.yaxis.scaleanchor == "x"


def test_rotary_and_spectrum_figures_carry_the_arrays():
    s = np.arange(16.0).reshape(4, 4)
    np.testing.assert_array_equal(fig.rotary_scores_figure(s).data[0].z, s)
    d = fig.distance_curve(np.arange(-3, 4), np.linspace(0, 1, 7))
    assert list(d.data[0].x) == list(range(-3, 4))
    w = np.array([6.28, 60.0, 600.0])
    sp = fig.spectrum_figure(w, context=12)
    np.testing.assert_array_equal(sp.data[0].y, w)
    assert sp.layout.yaxis.type == "log" and sp.layout.shapes[0].y0 == 12


def test_mode_divergence_grid_reads_on_a_dark_page():
    """'How much each head's weights move': on a white page 0 (the reference against itself,
    a panel of zeros) is the scale's pale end; on the dark theme's page (the figure as
    live_chart.for_theme draws it there, plotting.common.for_dark_background) 0 is near-black,
    so the reference's panel is no light slab, and the largest divergence the brightest cell.
    The numbers and the scale's range are the same."""
    from attnviz.plotting.common import for_dark_background

    rng = np.random.default_rng(2)
    dist = {"learned": np.zeros((6, 12)), "none": rng.random((6, 12)) * 0.3}
    f = fig.mode_divergence_grid(dist)
    dark = for_dark_background(f)
    assert dark.data == f.data
    light_axis, dark_axis = f.layout.coloraxis, dark.layout.coloraxis
    assert (dark_axis.cmin, dark_axis.cmax) == (light_axis.cmin, light_axis.cmax)
    assert luminance(light_axis.colorscale[0][1]) > 0.9  # the white page's, as it is
    zero, top = dark_axis.colorscale[0][1], dark_axis.colorscale[-1][1]
    dark_page = 0.0056  # Streamlit's dark background #0E1117
    assert luminance(zero) < 0.01, zero
    assert (luminance(top) + 0.05) / (dark_page + 0.05) > 7, top


# The fonts the browser check draws with: Arial's metrics (Liberation Sans) and a CJK font.
LATIN_FONTS = ("/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
               "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf")
CJK_FONTS = ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc",
             "/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc")
PAGE = 820  # px: the figure's width on the positions page in a 1280 px window (measured)
PHONE_GAP = 12  # px kept between two neighbouring subplot titles (phone_layout.js titleGap)


def _measure(size: float, bold: bool = False):
    """A function giving a text's width in px as a real font draws it (tags dropped,
    entities decoded), Latin in Liberation Sans, CJK in Noto Sans CJK."""
    import html
    import os
    import re

    fonts = (LATIN_FONTS[bold], CJK_FONTS[bold])
    if not all(os.path.exists(f) for f in fonts):
        pytest.skip("Liberation Sans or Noto Sans CJK not installed")
    from PIL import ImageFont

    latin, cjk = (ImageFont.truetype(f, size) for f in fonts)

    def width(text: str) -> float:
        shown = html.unescape(re.sub(r"<[^>]*>", "", text))
        return sum((cjk if ord(c) >= 0x2E80 else latin).getlength(c) for c in shown)
    return width


def _divergences():
    return {m: np.full((6, 12), 0.1 * k, np.float32)
            for k, m in enumerate(("learned", "none", "sinusoidal", "shuffled"))}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_divergence_title_fits_the_page_on_lines_of_its_own(lang):
    """At 1280 px the figure is PAGE px wide and Plotly does not wrap a title: the English
    one ran past the edge, cut at '...divergence of'. Each line of the title, bold at
    Plotly's 18 px (the page draws it at 16), fits the figure's width less its margins; the
    top margin holds the title's lines and the subplot titles' (the plot keeps its height)."""
    from attnviz.i18n import use

    with use(lang):
        f = fig.mode_divergence_grid(_divergences())
        title = f.layout.title.text
        lines = title.split("<br>")
        width = _measure(18, bold=True)
        room = PAGE - f.layout.margin.l - 10  # the page's title pad, the right edge
        assert all(width(line) <= room for line in lines), [width(x) for x in lines]
        subs = max(a.text.count("<br>") + 1 for a in f.layout.annotations)
        t = f.layout.title
        assert len(lines) == 1 or (t.yref, t.y, t.yanchor) == ("container", 1, "top")
        above = t.pad.t + fig.TITLE_LINE * (len(lines) - 1)  # the title's last baseline
        assert f.layout.margin.t >= above + 6 + 21 * subs  # then the subplot titles' lines
        assert f.layout.height - f.layout.margin.t == 340 - fig.TOP  # the plot keeps its height
    # nothing of the title lost: the lines join back into the translated sentence
    with use(lang):
        whole = fig._("How much each head's weights move, compared with {ref} (mean "
                      "Jensen-Shannon divergence of rows)").format(ref=fig.mode_name("learned"))
    joined = "".join(lines) if lang == "zh" else " ".join(lines)
    assert joined == whole


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_divergence_panels_titles_never_meet(lang):
    """In Chinese at 1280 px '正弦位置编码（已缩放）' ran into '学到的位置编码（打乱）'. Two
    neighbouring panels' titles (each line as Noto Sans CJK / Liberation Sans draw it at 16
    px) leave PHONE_GAP px between them on a PAGE px figure: its plot area is the figure
    less the y labels' room and the colour bar's (reserved in the right margin)."""
    from attnviz.i18n import use
    from attnviz.plotting.common import colorbar_room, label_room

    width = _measure(16)
    with use(lang):
        f = fig.mode_divergence_grid(_divergences())
        bar = colorbar_room(fig._("bits"), "0.8", thickness=10)
        left = max(f.layout.margin.l, label_room(["5"], titled=True))
        plot = PAGE - left - max(f.layout.margin.r, bar)
        notes = sorted(f.layout.annotations, key=lambda a: a.x)
        assert len(notes) == 4
        for a, b in itertools.pairwise(notes):
            wa = max(width(x) for x in a.text.split("<br>"))
            wb = max(width(x) for x in b.text.split("<br>"))
            assert (b.x - a.x) * plot >= (wa + wb) / 2 + PHONE_GAP, (a.text, b.text)
        if lang == "zh":  # broken before the bracket, nothing lost
            shown = {a.text for a in notes}
            assert "正弦位置编码<br>（已缩放）" in shown and "学到的位置编码<br>（打乱）" in shown


def test_lines_break_where_a_reader_expects():
    assert fig.fit_lines("sinusoids (scaled)", 1000) == ["sinusoids (scaled)"]
    assert fig.fit_lines("learned positions (BERT)", 170) == ["learned positions", "(BERT)"]
    assert fig.fit_lines("正弦位置编码（已缩放）", 150) == ["正弦位置编码", "（已缩放）"]
    # never inside a tag, after an opening bracket or before a closing one
    lines = fig.fit_lines("outputs b<sup>i</sup>, a<sup>i</sup> + sinusoid e<sup>i</sup>", 80)
    assert all(line.count("<sup>") == line.count("</sup>") for line in lines)
    for line in fig.fit_lines("第 0 层，第 0 个头：它们的注意力权重行（每行和为 1）", 60):
        assert line[0] not in fig.CLOSING and line[-1] not in fig.OPENING
