"""The four taggers of the lesson: the issue's claims, measured with the fixed seed.

(a) one tag per word form, so no better than each form's best single tag on ambiguous words;
(b), (d) tag the ambiguous words right; (c) sees no order, so both "saw"s get one tag and it is
right on at most half of the double-role words. The layers are checked against independent
references (F.scaled_dot_product_attention, F.conv1d written out as a sum over offsets).
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis import taggers as T
from attnviz.analysis.corpus import Corpus, Sentence, make_corpus, words


@pytest.fixture(scope="module")
def trained():
    seen = []
    tr = T.train_all(T.Settings(), progress=lambda f, m: seen.append((f, m)))
    # The progress callback climbs from >0 to exactly 1 and names each tagger.
    fracs = [f for f, _ in seen]
    assert fracs == sorted(fracs) and fracs[-1] == pytest.approx(1.0) and fracs[0] > 0
    assert {m.split(":")[0] for _, m in seen} == set(T.NAMES.values())
    print("training seconds:", {k: round(v, 2) for k, v in tr.seconds.items()},
          "total", round(tr.total_seconds, 2))
    return tr


def test_d_attention_with_positions_tags_held_out_ambiguous_words(trained):
    s = T.evaluate(trained.models["attention_pos"], trained.corpus)
    assert s.n_ambiguous > 300
    assert s.ambiguous >= 0.95
    assert T.tag_sentence(trained.models["attention_pos"], trained.corpus, "I saw a saw") == (
        ["i", "saw", "a", "saw"], ["PRON", "VERB", "DET", "NOUN"])


def test_b_window_tags_held_out_ambiguous_words(trained):
    s = T.evaluate(trained.models["window"], trained.corpus)
    assert s.ambiguous >= 0.95
    dr = T.evaluate(trained.models["window"], trained.corpus, trained.corpus.test_double_role)
    assert dr.double_role >= 0.95


def test_c_attention_without_positions_cannot_split_the_saws(trained):
    m, c = trained.models["attention"], trained.corpus
    ws, tags = T.tag_sentence(m, c, "I saw a saw")
    assert tags[1] == tags[3]
    dr_sentences = c.test_double_role
    s = T.evaluate(m, c, dr_sentences)
    assert s.n_double_role >= 100
    assert s.double_role <= 0.5
    # The two saws' weight rows are identical in every head (what the page shows).
    w = T.tagger_weights(m, c, ws)  # [layers, heads, n, n]
    np.testing.assert_allclose(w[:, :, 1], w[:, :, 3], atol=1e-6)
    wd = T.tagger_weights(trained.models["attention_pos"], c, ws)
    assert np.abs(wd[:, :, 1] - wd[:, :, 3]).max() > 1e-2
    # It is not merely broken: it learns the unambiguous words.
    assert T.evaluate(m, c).overall > 0.9


def test_c_is_permutation_equivariant(trained):
    """Without positions: logits(P x) = P logits(x) (seed 003, 'no position information')."""
    m, c = trained.models["attention"], trained.corpus
    ids = torch.tensor([c.ids(words("the old duck can watch my book near the saw"))])
    perm = torch.tensor([9, 3, 0, 7, 1, 8, 2, 5, 4, 6])
    with torch.no_grad():
        a, b = m(ids)[0], m(ids[:, perm])[0]
    torch.testing.assert_close(b, a[perm], atol=1e-5, rtol=0)
    mp = trained.models["attention_pos"]
    with torch.no_grad():
        assert (mp(ids[:, perm])[0] - mp(ids)[0][perm]).abs().max() > 1e-2


def test_a_gives_each_word_form_one_tag(trained):
    m, c = trained.models["mlp"], trained.corpus
    by_form: dict[str, set[str]] = {}
    for s, pred in zip(c.test, T.predict(m, c, c.test), strict=True):
        for w, t in zip(s.words, pred, strict=True):
            by_form.setdefault(w, set()).add(t)
    assert all(len(t) == 1 for t in by_form.values())
    assert len(set(T.tag_sentence(m, c, "I saw a saw")[1][1::2])) == 1
    base = T.majority_baseline(c)
    assert T.evaluate(m, c).ambiguous <= base["best_possible"] + 1e-12
    assert T.evaluate(m, c, c.test_double_role).double_role <= 0.5


def test_training_is_deterministic():
    c = make_corpus(400, seed=5)
    s = T.Settings(seed=5, n_sentences=400, epochs=1)
    for name in T.NAMES:
        m1, l1 = T.train_one(name, c, s)
        m2, l2 = T.train_one(name, c, s)
        assert l1 == l2
        for (k, p1), p2 in zip(m1.state_dict().items(), m2.state_dict().values(),
                               strict=True):
            assert torch.equal(p1, p2), (name, k)


def test_attention_layer_matches_sdpa(trained):
    """The taggers' weights and outputs equal torch's scaled_dot_product_attention."""
    m, c = trained.models["attention_pos"], trained.corpus
    ws = words("they can can the can")
    ids = torch.tensor([c.ids(ws)])
    block = m.blocks[0]
    with torch.no_grad():
        x = m.embed(ids) + m.position_embeddings(torch.arange(len(ws)))
        qkv = block.qkv(block.ln1(x)).view(1, len(ws), 3, block.heads, -1)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [1, heads, n, head_dim]
        ref = F.scaled_dot_product_attention(q, k, v)
        ref_w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), -1)
        _, out_w = m(ids, return_weights=True)
        from attnviz.engine.attention import attention

        out, w, _ = attention(q, k, v, mask=(ids != 0)[:, None, None, :])
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=0)
    torch.testing.assert_close(out_w[0, 0], ref_w[0], atol=1e-6, rtol=0)
    np.testing.assert_allclose(T.tagger_weights(m, c, ws)[0], ref_w[0].numpy(), atol=1e-6)
    np.testing.assert_allclose(T.tagger_weights(m, c, ws).sum(-1), 1.0, atol=1e-6)


def test_padding_changes_nothing(trained):
    """A sentence padded inside a batch gets the same logits as alone (masked keys)."""
    m, c = trained.models["attention_pos"], trained.corpus
    short = Sentence(("i", "saw", "a", "saw"), ("PRON", "VERB", "DET", "NOUN"))
    long = Sentence(tuple(words("the old duck can watch my book")), ("DET",) * 7)
    ids, _ = T.batch(c, [short, long])
    assert ids[0, 4:].eq(0).all()
    with torch.no_grad():
        alone = m(torch.tensor([c.ids(short.words)]))[0]
        padded = m(ids)[0, :4]
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=0)


def test_window_is_a_sum_over_neighbours(trained):
    """(b): h_i = b + sum_{o=-r..r} C_o e(x_{i+o}), zero outside the sentence."""
    m, c = trained.models["window"], trained.corpus
    ids = torch.tensor([c.ids(words("we can fly the red book"))])
    with torch.no_grad():
        e = m.embed(ids)[0]  # [n, dim]
        w, b = m.conv.weight, m.conv.bias  # [out, in, width]
        r = w.shape[-1] // 2
        n = e.shape[0]
        ref = torch.stack([
            b + sum(w[:, :, o + r] @ e[i + o] for o in range(-r, r + 1) if 0 <= i + o < n)
            for i in range(n)])
        got = m.conv(e.T[None])[0].T
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)
    # Changing a word 2 places away does not move word 0's tag scores (window 3).
    far = ids.clone()
    far[0, 2] = c.ids(["book"])[0]
    with torch.no_grad():
        torch.testing.assert_close(m(far)[0, 0], m(ids)[0, 0], atol=0, rtol=0)
        assert (m(far)[0, 1] - m(ids)[0, 1]).abs().max() > 0


def test_metrics_by_hand():
    """evaluate() and majority_baseline() against counts written out by hand."""
    c = Corpus(
        train=[Sentence(("i", "saw", "a", "saw"), ("PRON", "VERB", "DET", "NOUN")),
               Sentence(("a", "saw"), ("DET", "NOUN"))],
        test=[Sentence(("i", "saw", "a", "saw"), ("PRON", "VERB", "DET", "NOUN")),
              Sentence(("i", "fly"), ("PRON", "VERB"))],
        vocab=["<pad>", "<unk>", "a", "fly", "i", "saw"], ambiguous=("saw", "fly"))

    class Always(torch.nn.Module):  # tags every word NOUN except 'i' -> PRON
        def forward(self, ids):
            out = torch.zeros(*ids.shape, len(c.tags))
            out[..., c.tags.index("NOUN")] = 1
            out[..., c.tags.index("PRON")] = (ids == c.vocab.index("i")).float() * 2
            return out

    s = T.evaluate(Always(), c)
    # words: i ok, saw wrong, a wrong, saw ok, i ok, fly wrong -> 3/6
    assert (s.overall, s.n_words) == (0.5, 6)
    assert (s.ambiguous, s.n_ambiguous) == (1 / 3, 3)
    assert (s.double_role, s.n_double_role) == (0.5, 2)
    base = T.majority_baseline(c)
    assert base["majority"] == {"saw": "NOUN"}  # 2 NOUN vs 1 VERB in training
    assert base["train_majority"] == pytest.approx(1 / 3)  # saw NOUN ok; saw VERB, fly missed
    assert base["best_possible"] == pytest.approx(2 / 3)  # saw: 1 of 2, fly: 1 of 1


def test_tag_sentence_handles_unknown_and_empty(trained):
    m, c = trained.models["attention_pos"], trained.corpus
    ws, tags = T.tag_sentence(m, c, "I saw a zebra")
    assert ws == ["i", "saw", "a", "zebra"] and len(tags) == 4
    assert T.tag_sentence(m, c, "  \n\t ") == ([], [])
    ws, tags = T.tag_sentence(m, c, "I saw a saw.")
    assert ws[-1] == "." and tags == ["PRON", "VERB", "DET", "NOUN", "PUNCT"]
    assert len(T.tag_sentence(m, c, "?!")[1]) == 2  # symbols are unknown words, still tagged
    ws, tags = T.tag_sentence(m, c, "saw " * 100)
    assert len(ws) == len(tags) == T.MAX_WORDS
    p = T.tag_probabilities(m, c, ["i", "saw"])
    assert p.shape == (2, len(c.tags))
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-6)
    with pytest.raises(ValueError):
        T.build("rnn", c, T.Settings())
