"""Inside one score: each panel holds the trace's own vectors and numbers for that query."""

import numpy as np

from attnviz.analysis.views import inside_score
from attnviz.plotting.neuron import score_steps, value_steps


def test_panels_carry_the_traced_numbers(model):
    t = model.trace("I saw a saw")
    layer, head, i = 4, 2, 4  # the second 'saw'
    q, k, v = t.queries[layer, head], t.keys[layer, head], t.values[layer, head]
    nb = inside_score(q, k, v, i, t.scale, t.mask)
    fig = score_steps(nb, t.tokens, i)
    by_name = {tr.name: tr for tr in fig.data}
    np.testing.assert_allclose(np.asarray(by_name["query q"].z)[0], q[i], atol=1e-7)
    np.testing.assert_allclose(np.asarray(by_name["key k"].z), k, atol=1e-7)
    np.testing.assert_allclose(np.asarray(by_name["q ∘ k"].z), q[i] * k, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(np.asarray(by_name["q·k"].z)[:, 0], t.scores[layer, head, i],
                               atol=1e-5)
    np.testing.assert_allclose(np.asarray(by_name["weight"].z)[:, 0], t.weights[layer, head, i],
                               atol=1e-6)
    assert by_name["weight"].texttemplate  # few keys: the numbers are printed
    # Repeated tokens stay distinct rows.
    assert list(by_name["key k"].y) == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4",
                                        "[SEP] #5"]
    fig = value_steps(nb, t.tokens, i)
    by_name = {tr.name: tr for tr in fig.data}
    np.testing.assert_allclose(np.asarray(by_name["value v"].z), v, atol=1e-7)
    np.testing.assert_allclose(np.asarray(by_name["output o"].z)[0], t.outputs[layer, head, i],
                               atol=1e-5)
    np.testing.assert_allclose(np.asarray(by_name["w v"].z),
                               t.weights[layer, head, i][:, None] * v, atol=1e-6)


def test_long_input_hides_printed_numbers(model):
    t = model.trace("word " * 60)
    nb = inside_score(t.queries[0, 0], t.keys[0, 0], t.values[0, 0], 1, t.scale)
    fig = score_steps(nb, t.tokens, 1)
    assert {tr.name: tr for tr in fig.data}["weight"].texttemplate is None


def test_prepared_grids_serve_every_sentence_length():
    """A class server lays out both figures' grids once (neuron.prepare_grids, its warm-up):
    afterwards a sentence of any length, in any language, makes no new layout: from the last
    prepared number of keys on the grids are alike."""
    from attnviz.i18n import use
    from attnviz.plotting import common, neuron

    last = neuron.prepare_grids()
    assert neuron._row_heights(last) == neuron._row_heights(last + 1) == neuron._row_heights(500)
    assert neuron._row_heights(last - 1) != neuron._row_heights(last)
    rng = np.random.default_rng(0)
    misses = common._grid_layout_of.cache_info().misses
    for n in (1, 2, 7, last - 1, last, last + 1, 90):
        tokens = [f"w{i}" for i in range(n)]
        d = 8
        nb = dict(q=rng.random(d), keys=rng.random((n, d)), products=rng.random((n, d)),
                  scores=rng.random(n), scaled=rng.random(n), weights=rng.random(n),
                  values=rng.random((n, d)), weighted=rng.random((n, d)), output=rng.random(d))
        for lang in ("en", "zh"):
            with use(lang):
                score_steps(nb, tokens, n - 1, title="t")
                value_steps(nb, tokens, n - 1, title="t")
    assert common._grid_layout_of.cache_info().misses == misses


def test_on_a_phone_the_steps_of_one_score_flow_down_the_frame():
    """Inside one score on a 390 px phone (ui.phone_layout under Node): q over the keys, then
    q ∘ k, then q·k, ÷ √d and the weights side by side: each inside the frame, none on another,
    every line of steps with the keys' names on its left, the grid's empty cells hidden, the
    numbers the figure's own."""
    import json

    import plotly.io as pio

    from tests.test_plotting_screens import PHONE_FRAME, _panels, _phone_shaped

    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((6, 64)).astype(np.float32) for _ in range(3))
    nb = inside_score(q, k, v, 4, 0.125)
    tokens = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    figs = [score_steps(nb, tokens, 4, title="t"), value_steps(nb, tokens, 4, title="t")]
    for fig, res in zip(figs, _phone_shaped(figs, PHONE_FRAME), strict=True):
        shaped, layout = res["figure"], res["figure"]["layout"]
        assert not res["same"] and not res["wide"]
        assert shaped["data"] == json.loads(pio.to_json(fig, validate=False))["data"]
        boxes = _panels(layout, shaped["data"])
        for i, (xa, ya) in enumerate(boxes.values()):
            assert 0 <= xa[0] < xa[1] <= 1 and 0 <= ya[0] < ya[1] <= 1
            for xb, yb in list(boxes.values())[i + 1:]:
                assert xa[1] <= xb[0] or xb[1] <= xa[0] or ya[1] <= yb[0] or yb[1] <= ya[0]
        lefts = {}  # each line's (top edge ->) first panel
        for ref, (xd, yd) in boxes.items():
            if round(yd[1], 4) not in lefts or xd[0] < boxes[lefts[round(yd[1], 4)]][0][0]:
                lefts[round(yd[1], 4)] = ref
        assert len(lefts) >= 3
        for ref in lefts.values():  # the keys' names on the left of every line
            assert layout["yaxis" + ref[1:]].get("showticklabels") is not False
        drawn = {tr.get("xaxis", "x") for tr in shaped["data"]}
        for name, ax in layout.items():
            if name.startswith("xaxis") and "x" + name[5:] not in drawn:
                assert ax.get("visible") is False  # no empty panel's axes
    # the keys and q ∘ k each get the frame's width (they were a third of 760 px)
    widths = {r: xd[1] - xd[0] for r, (xd, _) in _panels(
        *(lambda f: (f["layout"], f["data"]))(_phone_shaped(figs[:1], PHONE_FRAME)[0]["figure"])
    ).items()}
    assert min(widths[r] for r in ("x6", "x7")) * PHONE_FRAME > 250
