"""The bundled SmolLM2 (30 layers, 9 query heads on 3 key/value heads, logits large enough to
make a sink) traced without its weights kept: its hidden states, the summary of every head's
weights and the head statistics equal those of the trace that holds them, on the same input."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.analysis.head_stats import STATS, first_token_share, head_stats, trace_head_stats

pytestmark = pytest.mark.slow

N = 200  # tokens: both traces fit (the held one's weights are 2 x 30 x 9 x 200^2 floats)


@pytest.fixture(scope="module")
def traces():
    import attnviz
    from attnviz.engine.families import llama

    model = attnviz.load_model("smollm2", device="cpu")
    text = ("The old carpenter kept his tools in a wooden chest by the door. Every morning he "
            "took out his saw, his hammer and a box of nails. ") * 12
    ids = model.tokenize(text)[0][:N]
    held = model.trace_ids(ids)
    with pytest.MonkeyPatch.context() as mp:  # nothing held past 0 bytes: every weight streamed
        mp.setattr(llama, "KEEP_WEIGHTS_BYTES", 0)
        long = model.trace_ids(ids)
    return held, long


def test_smollm2_without_its_weights_is_the_held_trace(traces):
    held, long = traces
    assert held.weights is not None and long.weights is None and long.n_tokens == N
    scale = np.maximum(1.0, np.abs(held.hidden_states).max(axis=(1, 2), keepdims=True))
    assert np.abs((long.hidden_states - held.hidden_states) / scale).max() < 1e-5
    for layer in (0, 14, 29):
        np.testing.assert_allclose(long.layer_weights(layer), held.weights[layer], atol=1e-5,
                                   rtol=0)


@pytest.mark.parametrize("conventions", ["attnviz", "clark"])
def test_smollm2_head_statistics_without_its_weights(traces, conventions):
    held, long = traces
    ref = head_stats(held.weights, list(held.tokens), conventions)
    got = trace_head_stats(long, conventions)
    for name in STATS:
        np.testing.assert_allclose(got[name], ref[name], atol=1e-5, rtol=0, err_msg=name)
    share = first_token_share(long)
    np.testing.assert_allclose(share, held.weights[:, :, 1:, 0].mean(-1), atol=1e-6, rtol=0)
    assert share.max() > 0.5  # the sink: some heads park most of their weight on token 0
