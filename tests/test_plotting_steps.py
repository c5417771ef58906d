"""The step-by-step figures carry exactly the walkthrough's numbers, with safe, distinct labels."""

import json
import re

import numpy as np
import plotly.io as pio
import pytest

from attnviz.analysis import walkthrough as wt
from attnviz.plotting import steps as sp

TOKENS = ["I", "saw", "a", "saw"]


@pytest.fixture(scope="module")
def walk():
    return wt.toy_walkthrough("I saw a saw", 4, 3, 3, 0)


def test_matrix_figure_prints_numbers_and_keeps_repeated_tokens(walk):
    fig = sp.matrix_figure(walk.inputs.T, sp.dim_labels("a", 4), sp.token_axis(TOKENS), "A")
    hm = fig.data[0]
    np.testing.assert_array_equal(np.asarray(hm.z), walk.inputs.T)
    assert hm.texttemplate == "%{z:.2f}"
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3]  # 4 columns, not 3 merged
    assert list(fig.layout.xaxis.ticktext) == ["I #1", "saw #2", "a #3", "saw #4"]
    # components, not words: a[1]..a[4] (the lecture's a^1..a^4 are the words' vectors)
    assert list(fig.layout.yaxis.ticktext) == ["a[1]", "a[2]", "a[3]", "a[4]"]
    assert hm.customdata[1][3][1] == "saw #4"


def test_big_matrices_are_light_and_unprinted():
    z = np.random.default_rng(0).standard_normal((384, 384))
    fig = sp.matrix_figure(z, sp.dim_labels("b", 384), sp.dim_labels("o", 384), "W_O")
    hm = fig.data[0]
    assert hm.texttemplate is None and hm.customdata is None
    np.testing.assert_allclose(np.asarray(hm.z), z, rtol=1e-6, atol=1e-6)  # float32 payload
    assert len(fig.layout.xaxis.tickvals) <= sp.MAX_TICKS


def test_tokens_are_escaped():
    fig = sp.matrix_figure(np.eye(2), ["<b>x</b>", "y"], sp.token_axis(["<b>", "a&b"]), "t")
    assert fig.layout.xaxis.ticktext == ("&lt;b&gt; #1", "a&amp;b #2")


def test_product_figure_panels_and_operators(walk):
    fig = sp.matrices_figure(
        [(walk.w_q, sp.dim_labels("q", 3), sp.dim_labels("a", 4), "W^q", "values"),
         (walk.inputs.T, sp.dim_labels("a", 4), sp.token_axis(TOKENS), "A", "values"),
         (walk.queries.T, sp.dim_labels("q", 3), sp.token_axis(TOKENS), "Q", "values")],
        ["·", "="], "Q = W^q A")
    assert len(fig.data) == 3
    np.testing.assert_array_equal(np.asarray(fig.data[2].z), walk.queries.T)
    np.testing.assert_allclose(np.asarray(fig.data[0].z) @ np.asarray(fig.data[1].z),
                               np.asarray(fig.data[2].z), atol=1e-12)
    assert [a.text for a in fig.layout.annotations if a.text.startswith("<b>")] == \
        ["<b>·</b>", "<b>=</b>"]
    xs = [a.x for a in fig.layout.annotations if a.text.startswith("<b>")]
    assert xs[0] < xs[1] and fig.layout.xaxis.domain[1] < xs[0] < fig.layout.xaxis2.domain[0]


def test_dot_product_latex_is_the_sum(walk):
    tex = sp.dot_product_latex(walk.queries[1], walk.keys[2], 1, 2, decimals=2)
    assert tex.startswith(r"\begin{aligned}\alpha_{2,3} &= q^{2}\cdot k^{3} \\")
    pairs = re.findall(r"\((-?\d+\.\d+)\)\((-?\d+\.\d+)\)", tex)
    assert len(pairs) == 3
    assert [float(a) for a, _ in pairs] == pytest.approx(walk.queries[1], abs=0.005)
    assert [float(b) for _, b in pairs] == pytest.approx(walk.keys[2], abs=0.005)
    last = tex.removesuffix(r"\end{aligned}").rsplit("=", 1)[1]
    assert float(last) == pytest.approx(walk.scores[1, 2], abs=5e-5)
    # two terms a line (a phone's column): the 3 terms on 2 lines, then the sum on its own
    lines = tex.split(r"\\")
    assert len(lines) == 4 and [len(re.findall(r"\)\(", x)) for x in lines] == [0, 2, 1, 0]


def test_dot_terms_and_weights_figures(walk):
    terms = wt.dot_terms(walk.queries[0], walk.keys[3])
    fig = sp.dot_terms_figure(terms, "a")
    np.testing.assert_array_equal(np.asarray(fig.data[0].y), terms)
    assert f"{walk.scores[0, 3]:.4f}" in fig.layout.title.text
    assert fig.layout.xaxis.dtick == 1  # 3 coordinates, each named
    assert sp.dot_terms_figure(np.ones(32), "a").layout.xaxis.dtick is None  # 32: spaced
    bars = sp.weights_bar_figure({"T = 1": walk.weights[2]}, TOKENS, "w")
    np.testing.assert_array_equal(np.asarray(bars.data[0].y), walk.weights[2])


def test_weighted_sum_arrows_end_at_the_output(walk):
    c = wt.contributions(walk.weights[1], walk.values)
    fig = sp.weighted_sum_figure(c, TOKENS, 1)
    assert len(fig.data) == len(TOKENS) + 1
    last = fig.data[-1]
    np.testing.assert_allclose([last.x[1], last.y[1]], walk.outputs[1, :2], atol=1e-12)
    np.testing.assert_allclose([fig.data[3].x[1], fig.data[3].y[1]], walk.outputs[1, :2],
                               atol=1e-12)  # the last arrow ends where the sum ends
    bars = sp.contributions_figure(c, TOKENS, 1)
    np.testing.assert_allclose(np.asarray(bars.data[-1].y), walk.outputs[1], atol=1e-12)


def test_sweep_and_heads_figures(walk):
    sweep = wt.temperature_sweep(walk.scores[0], walk.scale, [0.1, 1, 10])
    fig = sp.temperature_figure(sweep, 0.5, walk.n)
    np.testing.assert_array_equal(np.asarray(fig.data[0].y), sweep["max_weight"])
    np.testing.assert_allclose(np.asarray(fig.data[1].y), sweep["entropy"] / np.log(4))
    dk = wt.dk_sweep(dims=(2, 8), samples=20)
    fig = sp.dk_figure(dk, 8)
    np.testing.assert_array_equal(np.asarray(fig.data[0].y), dk["raw_std"])
    mh = wt.toy_multihead(wt.toy_walkthrough("I saw a saw", 4), 2)
    fig = sp.heads_figure(mh.weights, TOKENS, "heads")
    assert len(fig.data) == 2
    np.testing.assert_array_equal(np.asarray(fig.data[1].z), mh.weights[1])
    hs = wt.heads_sweep(wt.toy_walkthrough("I saw a saw", 4))
    fig = sp.entropy_by_heads_figure(hs)
    assert list(fig.data[0].x) == ["1", "2", "4"]


def test_walkthrough_products(walk):
    """Each ready-made product: the right arrays, and left @ middle = right (as printed)."""
    def z(fig, k):
        return np.asarray(fig.data[k].z)

    for name, out in (("q", walk.queries), ("k", walk.keys), ("v", walk.values)):
        fig = sp.projection_figure(walk, name)
        np.testing.assert_array_equal(z(fig, 2), out.T)
        np.testing.assert_allclose(z(fig, 0) @ z(fig, 1), z(fig, 2), atol=1e-12)
    rows_q, rows_k = sp.scores_figure(walk, "queries"), sp.scores_figure(walk, "keys")
    np.testing.assert_array_equal(z(rows_q, 2), walk.scores)
    np.testing.assert_array_equal(z(rows_k, 2), walk.scores.T)
    for fig in (rows_q, rows_k):
        np.testing.assert_allclose(z(fig, 0) @ z(fig, 1), z(fig, 2), atol=1e-12)
    assert "A = K<sup>T</sup> Q (rows = keys)" in rows_k.layout.title.text
    assert "A<sup>T</sup> = Q<sup>T</sup> K (rows = queries)" in rows_q.layout.title.text
    assert rows_q.data[0].texttemplate == "%{z:.2f}" and rows_q.data[2].texttemplate == "%{z:.4f}"
    with pytest.raises(ValueError):
        sp.scores_figure(walk, "columns")
    fig = sp.outputs_figure(walk)
    np.testing.assert_allclose(z(fig, 0) @ z(fig, 1), walk.outputs.T, atol=1e-12)
    mh = wt.toy_multihead(walk, 2)
    fig = sp.output_projection_figure(mh)
    np.testing.assert_allclose(z(fig, 0) @ z(fig, 1), z(fig, 2), atol=1e-12)
    np.testing.assert_array_equal(z(fig, 2), mh.projected.T)


def test_log_axis_labels_sit_at_their_value():
    """On a log axis Plotly places annotations at log10(x) (shapes at x): 'T = 1' at 10**0,
    'd_k = 32' at 10**1.5, not at 10 and 10**32."""
    sweep = wt.temperature_sweep(np.array([1.0, 2.0]), 1.0, np.geomspace(0.02, 100, 5))
    fig = sp.temperature_figure(sweep, 0.5, 2)
    notes = {a.text: a.x for a in fig.layout.annotations}
    assert notes["T = 1"] == 0.0 and notes["T = 0.5"] == pytest.approx(np.log10(0.5))
    assert [s.x0 for s in fig.layout.shapes] == [0.5, 1.0]
    fig = sp.dk_figure(wt.dk_sweep(dims=(2, 32, 512), samples=10), 32)
    dk = [a for a in fig.layout.annotations if a.text == "d_k = 32"]
    assert len(dk) == 2 and all(a.x == pytest.approx(1.5051, abs=1e-4) for a in dk)
    # nothing placed past the data (512): the axis ends near 512, not at 1e32
    top = max(max(np.asarray(t.x, dtype=float)) for t in fig.data if t.x is not None)
    assert top == 512 and all(a.x <= np.log10(top) for a in fig.layout.annotations)


def test_arrows_axes_fit_the_data(walk):
    """Step 6's arrows: each axis spans the data (padded), not a range forced by equal aspect."""
    c = wt.contributions(walk.weights[0], walk.values)
    fig = sp.weighted_sum_figure(c, TOKENS, 0)
    ends = np.cumsum(c[:, :2], axis=0)
    pts = np.vstack([ends - c[:, :2], ends, [[0, 0]]])
    for k, axis in enumerate((fig.layout.xaxis, fig.layout.yaxis)):
        lo, hi = axis.range
        span = pts[:, k].max() - pts[:, k].min()
        assert lo == pytest.approx(pts[:, k].min() - 0.12 * span)
        assert hi == pytest.approx(pts[:, k].max() + 0.12 * span)
    assert fig.layout.yaxis.scaleanchor is None


def test_real_mode_figures_readable(model):
    """Real step 2: the bias is its own panel (Q = W^q I + b^q); at most 12 slanted labels on
    a 384-wide axis; W_O's colours stop at the 99th percentile of |value| (not washed out).
    Real step 3: the printed 6 x 6 score panel gets room."""
    t = model.trace("I saw a saw")
    w = wt.real_walkthrough(model, t, 0, 0)
    fig = sp.projection_figure(w, "q")
    assert len(fig.data) == 4 and "+ b<sup>q</sup>" in fig.layout.title.text
    z = [np.asarray(d.z, dtype=np.float64) for d in fig.data]
    np.testing.assert_allclose(z[0] @ z[1] + z[2], z[3], atol=1e-4)  # W I + b 1^T = Q
    assert len(fig.layout.xaxis.tickvals) <= 12
    toy = sp.projection_figure(wt.toy_walkthrough("I saw a saw"), "q")
    assert len(toy.data) == 3  # no bias in the toy
    mh = wt.real_multihead(model, t, 0)
    fig = sp.output_projection_figure(mh)
    lim = np.percentile(np.abs(mh.w_o), 99)
    assert fig.data[0].zmax == pytest.approx(lim, rel=1e-6) and lim < np.abs(mh.w_o).max() / 2
    assert "not yet the layer's" in fig.layout.title.text
    fig = sp.scores_figure(w, "queries", 3, 3)
    d0, d2 = fig.layout.xaxis.domain, fig.layout.xaxis3.domain
    assert (d2[1] - d2[0]) > 0.3 and (d2[1] - d2[0]) > 0.7 * (d0[1] - d0[0])


def test_a_matrix_colour_bar_names_what_it_measures(walk):
    fig = sp.matrix_figure(walk.inputs.T, sp.dim_labels("a", 4), sp.token_axis(TOKENS), "A")
    assert fig.data[0].colorbar.title.text == "value"
    w = sp.matrix_figure(np.eye(4), sp.token_axis(TOKENS), sp.token_axis(TOKENS), "W", "weights")
    assert w.data[0].colorbar.title.text == "weight"


def test_a_matrix_colour_bar_lies_below_it(walk):
    fig = sp.matrix_figure(walk.inputs.T, sp.dim_labels("a", 4), sp.token_axis(TOKENS), "A")
    bar = fig.data[0].colorbar
    assert bar.orientation == "h" and bar.y < 0 and bar.x == 0 and bar.xanchor == "left"
    np.testing.assert_array_equal(np.asarray(fig.data[0].z), walk.inputs.T)


def _boxes(shaped: dict) -> dict[str, tuple[list, list]]:
    """x axis ref of each panel a trace is drawn on -> (x domain, y domain), as shaped."""
    from tests.test_plotting_screens import _panels

    return _panels(shaped["layout"], shaped["data"])


def test_on_a_phone_an_equation_stacks_its_matrices_with_the_operators_between(walk):
    """Q = W^q I on a 390 px phone (ui.phone_layout under Node): W^q, then '·', then I, then
    '=', then Q, down the frame and inside it, each matrix as wide as its numbers were or
    wider; nothing scrolls sideways; the numbers are the figure's own. A wide frame keeps it."""
    from tests.test_plotting_screens import PHONE_FRAME, _phone_shaped

    fig = sp.projection_figure(walk, "q")
    (res,), (wide,) = _phone_shaped([fig], PHONE_FRAME), _phone_shaped([fig], 900)
    assert wide["same"] and wide["wide"]
    shaped = res["figure"]
    assert not res["same"] and not res["wide"]  # no 760 px chart scrolled in its frame
    assert shaped["data"] == json.loads(pio.to_json(fig, validate=False))["data"]
    boxes = _boxes(shaped)
    order = sorted(boxes, key=lambda r: -boxes[r][1][1])  # top first
    assert order == ["x", "x2", "x3"]  # W^q, I, Q
    for i, (xd, yd) in enumerate(boxes[r] for r in order):
        assert 0 <= xd[0] < xd[1] <= 1 and 0 <= yd[0] < yd[1] <= 1
        assert (xd[1] - xd[0]) * PHONE_FRAME >= 180  # four printed numbers a row stay apart
        if i:
            assert yd[1] < boxes[order[i - 1]][1][0]  # under the one before
    layout = shaped["layout"]
    ops = {a["text"]: a for a in layout["annotations"] if a["text"] in ("<b>·</b>", "<b>=</b>")}
    for op, (above, below) in (("<b>·</b>", ("x", "x2")), ("<b>=</b>", ("x2", "x3"))):
        y = ops[op]["y"]
        assert boxes[below][1][1] < y < boxes[above][1][0]  # between the two matrices
    titles = {a["text"]: a for a in layout["annotations"] if "(" in a["text"]}
    assert titles["I (4 × 4)"]["y"] == boxes["x2"][1][1]  # each title over its matrix
    assert layout["height"] > 2.5 * fig.layout.height - 200


def test_on_a_phone_a_big_equation_fits_its_frame(model):
    """A real head's W^q (32 x 384, too big to print): each matrix fits the phone's frame."""
    from tests.test_plotting_screens import PHONE_FRAME, _phone_shaped

    w = wt.real_walkthrough(model, model.trace("I saw a saw"), 0, 0)
    (res,) = _phone_shaped([sp.projection_figure(w, "q")], PHONE_FRAME)
    boxes = _boxes(res["figure"])
    assert len(boxes) == 4 and not res["wide"]
    for xd, yd in boxes.values():
        assert 0 <= xd[0] < xd[1] <= 1 and 0 <= yd[0] < yd[1] <= 1
    tops = sorted((yd[1] for _, yd in boxes.values()), reverse=True)
    assert len(set(tops)) >= 3  # stacked, not four across
