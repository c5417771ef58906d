"""The lesson's small computations: repeated ambiguous words, receptive fields, BERT twins."""

import numpy as np
import torch

from attnviz.analysis import lesson as L
from attnviz.analysis.common import rounding_tolerance
from attnviz.analysis.corpus import EXAMPLES, words


def test_steps_are_the_issues_steps():
    keys = [s.key for s in L.STEPS]
    assert keys == ["task", "per_word", "window", "attention", "no_positions", "positions",
                    "bert", "next"]
    assert all(s.predict for s in L.STEPS[:-1])  # predict, then reveal, before each result
    assert len({s.title for s in L.STEPS}) == len(L.STEPS)


def test_repeated_ambiguous_words():
    assert L.repeated_ambiguous("I saw a saw") == {"saw": [1, 3]}
    assert L.repeated_ambiguous("They can can the can.") == {"can": [1, 2, 4]}
    assert L.repeated_ambiguous("the dog saw the dog") == {}  # repeats, but not ambiguous
    assert L.repeated_ambiguous("") == {}
    for text in EXAMPLES:
        assert L.repeated_ambiguous(text), text


def test_gold_tags():
    assert L.gold_tags("I SAW a saw") == ("PRON", "VERB", "DET", "NOUN")
    assert L.gold_tags("I saw a saw.") == ("PRON", "VERB", "DET", "NOUN", "PUNCT")
    assert L.gold_tags("I saw the saw") is None
    assert L.gold_tags("") is None


def test_receptive_fields_by_formula():
    f = L.receptive_fields(6, width=3)
    i, j = np.meshgrid(range(6), range(6), indexing="ij")
    np.testing.assert_array_equal(f["per word"], i == j)
    np.testing.assert_array_equal(f["window"], abs(i - j) <= 1)
    assert f["self-attention"].all()
    np.testing.assert_array_equal(L.receptive_fields(6, 5)["window"], abs(i - j) <= 2)


def test_cosine_per_layer_against_torch():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(7, 5, 16)).astype(np.float32)
    ref = torch.nn.functional.cosine_similarity(
        torch.from_numpy(h[:, 1]).double(), torch.from_numpy(h[:, 3]).double(), dim=-1)
    np.testing.assert_allclose(L.cosine_per_layer(h, 1, 3), ref.numpy(), atol=1e-12)
    h[:, 4] = h[:, 1]
    np.testing.assert_allclose(L.cosine_per_layer(h, 1, 4), 1.0, atol=1e-12)
    assert L.max_abs_difference(h, 1, 4) == 0.0


def test_bert_twins_with_and_without_positions(model, hf_model, torch_threads):
    """The numbers the BERT step quotes, checked against Hugging Face BertModel (eager)."""
    t = model.trace("I saw a saw")
    none = model.trace("I saw a saw", positions="none")
    twins = L.token_positions(t.tokens, "saw")
    assert twins == [2, 4] and L.token_positions(t.tokens, "SAW") == [2, 4]
    with torch.no_grad():
        ids = torch.tensor([t.token_ids.tolist()])
        out = hf_model(ids, output_hidden_states=True)
    hf = torch.stack(out.hidden_states)[:, 0].numpy()  # [L+1, n, hidden]
    ref = torch.nn.functional.cosine_similarity(
        torch.from_numpy(hf[:, 2]).double(), torch.from_numpy(hf[:, 4]).double(), dim=-1).numpy()
    np.testing.assert_allclose(L.cosine_per_layer(t.hidden_states, 2, 4), ref, atol=1e-5)
    # Without positions the two saws are the same vector in every layer, up to float rounding
    # (the order of additions differs with the thread count).
    np.testing.assert_allclose(L.cosine_per_layer(none.hidden_states, 2, 4), 1.0, atol=1e-6)
    diff = L.max_abs_difference(none.hidden_states, 2, 4)
    assert diff <= rounding_tolerance(none.hidden_states), diff
    assert L.cosine_per_layer(t.hidden_states, 2, 4)[-1] < 0.9


def test_top_key():
    assert L.top_key(np.array([0.1, 0.6, 0.3]), ["a", "b", "c"]) == (1, "b", 0.6)
    assert words("x") == ["x"]
