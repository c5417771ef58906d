"""Step 7 (multi-head) in real mode on a Llama-shaped decoder: every head of a layer, the
concatenation, B = W^O O and the rest of the layer, against transformers' eager model on
random small configs with grouped key/value heads (Mistral's sliding window, Qwen2's biases on
q, k and v), all within 1e-5 absolutely (measured: 0.0 on each). SmolLM2, whose hidden states
reach 23,900, is measured against float64 in tests/test_analysis_decoder_layer_f64.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.analysis import walkthrough as wt

TEXT = "I saw a saw and then I saw it again"
CONFIGS = {"llama_gqa": ("llama", dict(hidden=48, heads=6, kv_heads=2, layers=2)),
           "mistral_window": ("mistral", dict(heads=4, kv_heads=2, layers=2, sliding_window=3)),
           "qwen2_bias": ("qwen2", dict(hidden=48, heads=6, kv_heads=3, layers=2))}


@pytest.fixture(scope="module", params=list(CONFIGS))
def case(request, tmp_path_factory):
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    family, options = CONFIGS[request.param]
    folder = save_random_checkpoint(family, tmp_path_factory.mktemp("m") / family,
                                    positions=32, seed=7, **options)
    model = attnviz.load_model(folder, device="cpu")
    return folder, model, model.trace(TEXT)


def hf_run(folder, t):
    """transformers' eager model on the same ids: (attentions, hidden states, each layer's
    self-attention output B, taken by a forward hook)."""
    from transformers import AutoModel

    hf = AutoModel.from_pretrained(folder, attn_implementation="eager",
                                   local_files_only=True).eval()
    blocks = {}
    hooks = [layer.self_attn.register_forward_hook(
        lambda _m, _i, out, li=li: blocks.__setitem__(li, out[0][0].detach().numpy()))
        for li, layer in enumerate(hf.layers)]
    with torch.no_grad():
        out = hf(torch.tensor(np.asarray(t.token_ids)[None]), output_attentions=True,
                 output_hidden_states=True)
    for h in hooks:
        h.remove()
    return [a[0].numpy() for a in out.attentions], [h[0].numpy() for h in out.hidden_states], \
        blocks


def test_every_head_of_a_layer_and_b_are_transformers_eager(case):
    folder, model, t = case
    attentions, hidden, blocks = hf_run(folder, t)
    per = model.n_heads // model.n_kv_heads
    for layer in range(model.n_layers):
        mh = wt.decoder_multihead(model, t, layer)
        assert mh.weights.shape == (model.n_heads, t.n_tokens, t.n_tokens)
        np.testing.assert_allclose(mh.weights, attentions[layer], atol=1e-5, rtol=0)
        for h in range(model.n_heads):  # head h reads key/value head h // per: shared keys
            np.testing.assert_array_equal(mh.keys[h], mh.keys[(h // per) * per])
            np.testing.assert_array_equal(mh.values[h], t.head_values(layer, h))
        assert mh.w_k.shape[0] == model.n_kv_heads * model.head_dim < mh.w_q.shape[0]
        if "qwen2" in str(folder):  # its q, k and v biases are not zero: the test sees them
            assert min(np.abs(b).max() for b in (mh.b_q, mh.b_k, mh.b_v)) > 0
        np.testing.assert_allclose(mh.projected, blocks[layer], atol=1e-5, rtol=0)
        after = wt.decoder_after_attention(model, layer, t.hidden_states[layer], mh.projected)
        np.testing.assert_allclose(after["layer_output"], hidden[layer + 1], atol=1e-5, rtol=0)
        np.testing.assert_allclose(after["layer_output"], t.hidden_states[layer + 1],
                                   atol=1e-5, rtol=0)


def test_the_shapes_table_counts_the_shared_heads():
    rows = wt.decoder_multihead_shapes(m=576, n=7, h=9, g=3, d=64)
    assert rows[2]["shape"] == "2 x (192 x 7)" and rows[1]["shape"] == "576 x 7"
    assert rows[-1]["shape"].startswith(f"{2 * 576 * 576 + 2 * 576 * 192} ")
    assert f"{2 * 576 * 6 * 64} fewer" in rows[-1]["shape"]
