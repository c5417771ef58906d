"""Flow on the pages (ui.flow): a sentence long enough for the worker processes shows the same
flow as the in-process computation, the workers it used stay for the server (module state of
this process, which AppTest runs the page in), and the page starts them before the flow tab."""


import numpy as np

from attnviz.analysis import flow_workers
from attnviz.analysis.flow import max_flows_stats, normalise_rows
from attnviz.analysis.rollout import residual_attention
from tests.apptest import open_page
from tests.plotly_json import decode, figures

TEXT = ("The quick brown fox jumps over the lazy dog while the old cat watches from the wooden "
        "fence, and the farmer, tired after a long day, walks slowly home.")


def test_a_long_sentence_on_the_flow_tab(model):
    flow_workers.close_workers()
    t = model.trace(TEXT)
    assert 30 <= t.n_tokens <= 40  # n² pairs: past flow.PARALLEL_PAIRS, so workers are used
    a = residual_attention(t.weights)
    want, stats = max_flows_stats(a, t.n_layers - 1, workers=1)
    assert stats.solved >= 512
    at = open_page("pages/head_stats.py", timeout=180, text=TEXT)
    assert not at.exception
    wanted = flow_workers.default_workers()
    running = flow_workers.running_workers()
    assert running == (wanted if wanted > 1 else 0)  # started by the statistics tab already
    at.session_state["hs_tab"] = "Rollout and flow"
    at.run()
    assert not at.exception
    (fig,) = figures(at)
    heat = [tr for tr in fig["data"] if tr["type"] == "heatmap"]
    np.testing.assert_allclose(decode(heat[2]["z"]), normalise_rows(want), atol=1e-6)
    assert flow_workers.running_workers() == running  # the same processes, none added
    assert flow_workers.jobs_in_flight() == 0  # all idle, waiting for the next flow
    flow_workers.close_workers()


def test_a_short_sentence_goes_to_the_running_workers(model):
    """With workers running (a class server starts them), a short sentence's max-flows are
    solved there too, off the server's GIL, with exactly the in-process result; with none
    running, flow's own rule applies (in-process below PARALLEL_PAIRS pairs)."""
    from attnviz.ui.flow import workers_for

    flow_workers.close_workers()
    assert workers_for(6) is None
    t = model.trace("I saw a saw")
    a = residual_attention(t.weights)
    want, stats = max_flows_stats(a, t.n_layers - 1, workers=1)
    assert stats.solved > 0 and stats.solved_in_workers == 0
    if flow_workers.default_workers() < 2:
        return  # one core: no workers to send to
    flow_workers.prestart(2)
    assert workers_for(t.n_tokens) == 2 and workers_for(1) is None
    got, stats = max_flows_stats(a, t.n_layers - 1, workers=workers_for(t.n_tokens))
    assert stats.solved_in_workers == stats.solved > 0
    np.testing.assert_array_equal(got, want)
    flow_workers.close_workers()
