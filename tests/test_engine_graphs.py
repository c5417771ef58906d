"""The encoder's passes as TorchScript graphs (engine.graphs): a trace computed by the graph
equals the eager pass that writes into the pool, for the bundled model and every text family
(with and without a mask, at lengths other than the one traced), and a graph that would give
other numbers, or a torch without TorchScript, leaves the eager pass in place. (Every family's
traces are also compared with Hugging Face in test_engine_families, through the graph.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnviz
from attnviz.engine import graphs
from attnviz.engine.random_models import save_random_checkpoint

ARRAYS = ("queries", "keys", "values", "scores", "weights", "outputs", "hidden_states",
          "embeddings", "mask")


def eager_trace(model, *args, **kwargs):
    """The same trace with the graphs switched off (the pool-writing eager pass)."""
    saved = dict(model._graphs)
    model._graphs.update({("record", False, d): None for d in (None, 2)})
    try:
        return model.trace(*args, **kwargs)
    finally:
        model._graphs.clear()
        model._graphs.update(saved)


def assert_same_trace(a, b, atol=0.0):
    for name in ARRAYS:
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=0, atol=atol,
                                   err_msg=name)
    if a.layer_inputs is not None or b.layer_inputs is not None:
        np.testing.assert_allclose(a.layer_inputs, b.layer_inputs, rtol=0, atol=atol)
    assert a.tokens == b.tokens


@pytest.mark.parametrize("window", [None, 1])
def test_the_bundled_models_graph_gives_the_eager_trace_exactly(model, window):
    text = "The teacher saw a saw, and I saw a saw too."
    t = model.trace(text, window=window)
    graph = model.graph_for("record", False, None if window is None else 2)
    assert isinstance(graph, torch.jit.ScriptFunction)
    assert_same_trace(t, eager_trace(model, text, window=window))


def test_long_inputs_keep_the_eager_pass(model, monkeypatch):
    """Past GRAPH_MAX_TOKENS the pass writes into the pool itself (no copies of big arrays)."""
    monkeypatch.setattr(type(model), "GRAPH_MAX_TOKENS", 4)
    calls = []
    monkeypatch.setattr(model, "graph_for", lambda *key: calls.append(key))
    t = model.trace("I saw a saw and a saw saw me")
    assert calls == [] and t.n_tokens > 4


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("graph_families")
    return {f: save_random_checkpoint(f, root / f, positions=64, seed=i)
            for i, f in enumerate(("bert", "roberta", "distilbert", "gpt2", "bart"))}


@pytest.mark.parametrize("family", ["bert", "roberta", "distilbert", "gpt2", "bart"])
def test_every_text_family_gets_the_same_trace(folders, family):
    m = attnviz.load_model(folders[family], device="cpu")
    for text, window in (("a b c", None), ("a b c d e f g h i j k", None),
                         ("a b c d e f g", 2)):
        assert_same_trace(m.trace(text, window=window), eager_trace(m, text, window=window),
                          atol=1e-6)


def test_a_graph_that_froze_a_shape_is_refused():
    """A length read into a Python number is frozen by the trace: other lengths differ."""
    def scaled(x):
        return x * float(x.shape[0])

    assert graphs.traced(scaled, lambda n: (torch.ones(n),)) is None
    assert graphs.traced(lambda x: x * 2.0, lambda n: (torch.ones(n),)) is not None


def test_without_torchscript_the_eager_pass_stays(tmp_path, monkeypatch):
    def no_jit(*args, **kwargs):
        raise RuntimeError("no TorchScript here")

    monkeypatch.setattr(torch.jit, "trace", no_jit)
    m = attnviz.load_model(save_random_checkpoint("bert", tmp_path / "b", positions=64),
                           device="cpu")
    t = m.trace("a b c d")
    assert m.graph_for("record") is None and m.graph_for("last", True, 4) is None
    assert_same_trace(t, eager_trace(m, "a b c d"))
    x = torch.randn(2, 5, m.hidden)
    np.testing.assert_array_equal(m.last_hidden(x).numpy(), m._last_hidden(x).numpy())


def test_last_hidden_by_graph_equals_eager_for_every_mask_shape(model):
    """The context sweep's batch (a mask per window, [b, 1, n, n]), one shared mask, a
    sequence alone: the graph's last hidden states equal the eager encoder's."""
    gen = torch.Generator().manual_seed(0)
    n = 11
    x = torch.randn(n, model.hidden, generator=gen)
    idx = torch.arange(n)
    masks = torch.stack([(idx[:, None] - idx[None, :]).abs() <= w for w in (0, 3, 7)])
    batch = x.expand(3, n, model.hidden)
    cases = [(x, None), (x, masks[1]), (batch, None), (batch, masks[1]),
             (batch, masks[:, None])]
    with torch.no_grad():
        for xs, mask in cases:
            np.testing.assert_allclose(model.last_hidden(xs, mask).numpy(),
                                       model._last_hidden(xs, mask).numpy(), rtol=0, atol=1e-6)
    assert isinstance(model.graph_for("last", True, 4), torch.jit.ScriptFunction)


def test_graphs_in_other_threads_run_unoptimised_and_give_the_same_numbers(model):
    """TorchScript keeps its optimise switch per thread, and a server runs each session in its
    own thread: there, after the calls that would trigger the optimising executor, a trace
    and a batch's last hidden states still equal the eager pass exactly."""
    import threading

    text = "Rows are queries and columns are keys"
    want = eager_trace(model, text)
    x = torch.randn(3, 9, model.hidden, generator=torch.Generator().manual_seed(2))
    want_last = model._last_hidden(x)
    seen, errors = [], []

    def session():
        try:
            seen.append(torch._C._get_graph_executor_optimize())
            for _ in range(4):
                assert_same_trace(model.trace(text), want)
                np.testing.assert_array_equal(model.last_hidden(x).numpy(), want_last.numpy())
        except AssertionError as e:
            errors.append(e)

    thread = threading.Thread(target=session)
    thread.start()
    thread.join()
    assert seen == [True] and not errors, errors  # the thread's own switch was on
