"""Occlusion of a sentence similarity against a plain loop over Hugging Face's eager BertModel
(each variant tokenised and encoded alone), within 1e-5."""

import numpy as np
import pytest
import torch

from attnviz.analysis.occlusion import MODES, occlude, variant_ids

A, B = "I saw a saw ☃.", "She cut the wood with a saw."  # ☃ is [UNK] for this vocabulary


def hf_embedding(hf, ids):
    with torch.no_grad():
        return hf(torch.tensor([ids])).last_hidden_state[0].mean(0)


def hf_drops(hf, tok, text, other_text, mode):
    ids = tok(text)["input_ids"]
    other = hf_embedding(hf, tok(other_text)["input_ids"])
    cos = lambda e: float(torch.nn.functional.cosine_similarity(e, other, dim=0))  # noqa: E731
    score = cos(hf_embedding(hf, ids))
    drops = np.full(len(ids), np.nan)
    for i in range(1, len(ids) - 1):  # every token between [CLS] and [SEP]
        variant = ids[:i] + ids[i + 1:] if mode == "remove" else (
            ids[:i] + [tok.mask_token_id] + ids[i + 1:])
        drops[i] = score - cos(hf_embedding(hf, variant))
    return score, drops


@pytest.mark.parametrize("mode", MODES)
def test_occlusion_matches_a_plain_hugging_face_loop(model, hf_model, mode):
    res = occlude(model, A, B)
    score, want = hf_drops(hf_model, model.tokenizer, A, B, mode)
    assert res.tokens[5] == "[UNK]"
    assert res.score == pytest.approx(score, abs=1e-5)
    got = getattr(res, mode)
    assert np.isnan(got[0]) and np.isnan(got[-1])  # [CLS] and [SEP] are never occluded
    np.testing.assert_allclose(got[1:-1], want[1:-1], atol=1e-5)
    assert abs(got[5]) > 1e-4  # the [UNK] word is occluded like any other


def test_the_other_side_as_an_embedding_and_in_small_batches(model, monkeypatch):
    from attnviz.analysis import attribution, occlusion

    res = occlude(model, A, B)
    ids, seg, _ = model.tokenize(B)
    with torch.no_grad():
        eb = attribution.sentence_embedding(model, model.embed(ids, seg)[0])
    monkeypatch.setattr(occlusion, "MEMORY_PER_BATCH", 1)  # one variant per pass
    seen = []
    again = occlude(model, A, eb, lambda f, msg: seen.append(f))
    words = len(res.tokens) - 2
    assert len(seen) == 2 * words and seen[-1] == 1.0 and seen == sorted(seen)
    for mode in MODES:
        np.testing.assert_allclose(getattr(again, mode), getattr(res, mode), atol=1e-6)


def test_variants_and_bad_modes():
    places, variants = variant_ids([101, 7, 8, 102], {101, 102}, "mask", 103)
    assert places == [1, 2] and variants == [[101, 103, 8, 102], [101, 7, 103, 102]]
    assert variant_ids([101, 7, 102], {101, 102}, "remove", None)[1] == [[101, 102]]
    with pytest.raises(ValueError, match="mode"):
        variant_ids([101, 7, 102], {101, 102}, "blur", 103)
    with pytest.raises(ValueError, match="mask token"):
        variant_ids([101, 7, 102], {101, 102}, "mask", None)
