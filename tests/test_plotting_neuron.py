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
