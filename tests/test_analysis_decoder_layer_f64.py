"""Step 7's layer output on the bundled SmolLM2 (analysis.walkthrough.decoder_multihead and
decoder_after_attention) against a float64 reference: transformers' own LlamaDecoderLayer in
float64, given the same input as every float32 peer (the engine's hidden state before the
layer).

Why not 1e-5 of transformers' float32 layer, absolutely: SmolLM2's hidden states reach some
23,900 from layer 11 on, where one float32 step is 0.002. Two float32 computations of one
layer that differ only in how a matrix product sums its 64 or 576 terms (the engine gives the
key of a shared key/value head to its query heads by broadcasting, transformers by copying it:
on a 4-token input the two products take different kernels) end a few steps apart, up to
3e-5; transformers' float32 layer is itself up to 5e-3 from the float64 one. The honest
measure is each one's distance to float64 over the layer's largest value (as `make bench`
reports it): both are ~1e-8 to 2e-6, and the walkthrough's is no larger than transformers'.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from attnviz.analysis import walkthrough as wt

pytestmark = pytest.mark.slow

SENTENCES = ("I saw a saw",
             "The old carpenter kept his tools in a wooden chest by the door. I saw a saw.")


@pytest.fixture(scope="module")
def smol():
    from transformers import AutoModelForCausalLM

    import attnviz
    from attnviz.engine.bundled import SMOLLM2, smollm2_dir

    model = attnviz.load_model(SMOLLM2, device="cpu")
    hf = AutoModelForCausalLM.from_pretrained(smollm2_dir(), attn_implementation="eager",
                                              local_files_only=True,
                                              dtype=torch.float32).eval()
    return model, hf, copy.deepcopy(hf).double()


def layer_runs(model, hf, hf64, text: str):
    """Per layer: (the walkthrough's layer output, transformers' float32 layer, its float64
    layer), all three on the engine's hidden state before the layer."""
    t = model.trace(text)
    ids = torch.tensor(np.asarray(t.token_ids)[None])
    kwargs = {}

    def grab(_module, _args, kw):
        kwargs.update(kw)

    hook = hf.model.layers[0].register_forward_pre_hook(grab, with_kwargs=True)
    with torch.no_grad():
        hf(ids)  # the mask and the rotary angles transformers gives its layers
    hook.remove()
    cos, sin = kwargs["position_embeddings"]
    mask = kwargs.get("attention_mask")
    common = {"position_ids": kwargs.get("position_ids")}
    runs = []
    for li in range(model.n_layers):
        x = torch.as_tensor(np.asarray(t.hidden_states[li]))[None]
        mh = wt.decoder_multihead(model, t, li)
        walk = wt.decoder_after_attention(model, li, t.hidden_states[li],
                                          mh.projected)["layer_output"]
        with torch.no_grad():
            out = hf.model.layers[li](x, attention_mask=mask, position_embeddings=(cos, sin),
                                      **common)
            out64 = hf64.model.layers[li](
                x.double(), attention_mask=None if mask is None else mask.double(),
                position_embeddings=(cos.double(), sin.double()), **common)
            out, out64 = (o[0] if isinstance(o, tuple) else o for o in (out, out64))
            if li == model.n_layers - 1:  # the final norm, as hidden_states[-1] holds it
                out, out64 = hf.model.norm(out), hf64.model.norm(out64)
        runs.append((walk, out[0].numpy(), out64[0].numpy()))
    return t, runs


@pytest.mark.parametrize("text", SENTENCES)
def test_step_7s_layer_output_is_as_close_to_float64_as_transformers(smol, text):
    model, hf, hf64 = smol
    t, runs = layer_runs(model, hf, hf64, text)
    hf_err = []
    for li, (walk, out, out64) in enumerate(runs):
        scale = max(1.0, float(np.abs(out64).max()))
        assert float(np.abs(walk - t.hidden_states[li + 1]).max()) <= 1e-6 * scale  # engine's
        ours = float(np.abs(walk - out64).max())
        theirs = float(np.abs(out - out64).max())
        hf_err.append(theirs)
        assert ours / scale <= 1e-5, (li, ours, scale)
        assert ours <= 2 * theirs + 1e-6 * scale, (li, ours, theirs)  # no less exact than HF
        assert float(np.abs(walk - out).max()) / scale <= 1e-5, li
    # the reason an absolute 1e-5 against transformers' float32 layer is no measure here:
    # transformers' own float32 layer is further than that from float64
    assert max(hf_err) > 1e-4
