"""Step by step's step 3 on a Mistral layer with a sliding window shorter than the input: the
caption counts the later keys and, apart from them, the keys outside the window, each count
written out from the window's definition; those scores' weights are exactly 0 in the page's
walkthrough and in transformers' eager Mistral."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.analysis import walkthrough as wt
from attnviz.i18n import use
from attnviz.views import step_by_step as view

TEXT = "I saw a saw and then I saw it again"
W = 3  # the window: query i sees keys i - 2 .. i


@pytest.fixture(scope="module")
def mistral(tmp_path_factory):
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    folder = save_random_checkpoint("mistral", tmp_path_factory.mktemp("m") / "mistral",
                                    positions=32, seed=2, heads=4, kv_heads=2, sliding_window=W)
    return folder, attnviz.load_model(folder, device="cpu")


def test_step_3_says_which_keys_lie_outside_the_window(mistral):
    folder, model = mistral
    t = model.trace(TEXT)
    n = t.n_tokens
    assert n > W
    walk = wt.real_walkthrough(model, t, 1, 3)
    assert walk.window == W
    later = n * (n - 1) // 2  # keys j > i
    outside = sum(max(0, i - W + 1) for i in range(n))  # keys j <= i - W
    (note,) = view.mask_note(walk)
    assert note.text == (
        f"The causal mask and this layer's sliding window of {W} tokens: query $i$ may look at "
        f"keys $i - {W - 1} \\le j \\le i$ only. The {later} scores of later keys and the "
        f"{outside} scores of keys outside the window (more than {W - 1} tokens back) are "
        "computed but masked: blank in the matrix, their weights exactly 0 (step 5).")
    assert view.scores(walk, "queries", "real")[0] == note  # the caption step 3 shows
    with use("zh"):
        (zh,) = view.mask_note(walk)
    assert f"{later} 个分数" in zh.text and f"{outside} 个分数" in zh.text and "窗口之外" in zh.text
    # Where the caption says so, the weights are exactly 0, here and in transformers' eager
    # Mistral (the same checkpoint, the same token ids).
    i_idx, j_idx = np.indices((n, n))
    out_of_window = (j_idx <= i_idx - W)
    assert (walk.weights[out_of_window] == 0).all() and (walk.weights[j_idx > i_idx] == 0).all()
    import torch
    from transformers import MistralModel

    hf = MistralModel.from_pretrained(folder, attn_implementation="eager",
                                     local_files_only=True).eval()
    with torch.no_grad():
        ref = hf(torch.tensor([t.token_ids]), output_attentions=True).attentions[1][0, 3]
    ref = ref.numpy()
    assert (ref[out_of_window] == 0).all() and (ref[j_idx > i_idx] == 0).all()
    np.testing.assert_allclose(walk.weights, ref, atol=1e-5, rtol=0)


def test_a_window_as_long_as_the_input_is_said_to_mask_nothing_more(mistral):
    _folder, model = mistral
    t = model.trace("I saw")
    walk = wt.real_walkthrough(model, t, 0, 0)
    n = t.n_tokens
    assert walk.window == W and n <= W
    (note,) = view.mask_note(walk)
    assert note.text.startswith(f"The causal mask: query $i$ may look at keys $j \\le i$ only. "
                                f"The {n * (n - 1) // 2} scores of later keys")
    assert note.text.endswith(f"This layer's sliding window of {W} tokens is as long as the "
                              "input or longer: it masks nothing more here.")


def test_a_layer_without_a_window_keeps_the_causal_caption(tmp_path):
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    model = attnviz.load_model(save_random_checkpoint("llama", tmp_path / "llama", positions=32,
                                                      heads=4, kv_heads=2), device="cpu")
    t = model.trace(TEXT)
    walk = wt.real_walkthrough(model, t, 0, 1)
    n = t.n_tokens
    assert walk.window is None
    (note,) = view.mask_note(walk)
    assert note.text == (f"The causal mask: query $i$ may look at keys $j \\le i$ only. The "
                         f"{n * (n - 1) // 2} scores of later keys are computed but masked: "
                         "blank in the matrix, their weights exactly 0 (step 5).")
