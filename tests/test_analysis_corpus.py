"""The lesson's tagged corpus: deterministic, both roles for every ambiguous word, a clean split."""

from attnviz.analysis.corpus import (
    AMBIGUOUS,
    EXAMPLES,
    PLAIN_NOUNS,
    PLAIN_VERBS,
    TAGS,
    Sentence,
    balanced,
    double_role_positions,
    generate,
    make_corpus,
    tag_counts,
    words,
)


def test_corpus_is_deterministic():
    a, b = make_corpus(seed=0), make_corpus(seed=0)
    assert a.train == b.train and a.test == b.test and a.vocab == b.vocab
    assert make_corpus(seed=1).train != a.train


def test_both_tags_occur_for_every_ambiguous_word():
    c = make_corpus()
    for split in (c.train, c.test):
        for w in AMBIGUOUS:
            counts = tag_counts(split, w)
            assert counts.get("NOUN", 0) > 0 and counts.get("VERB", 0) > 0, (w, counts)
    assert set(tag_counts(c.train, "can")) == {"AUX", "VERB", "NOUN"}


def test_plain_words_have_one_tag_and_tags_match_words():
    c = make_corpus()
    for s in c.train + c.test:
        assert len(s.words) == len(s.tags) and set(s.tags) <= set(TAGS)
        for w, t in zip(s.words, s.tags, strict=True):
            if w in PLAIN_NOUNS:
                assert t == "NOUN"
            if w in PLAIN_VERBS:
                assert t == "VERB"
            assert (w == ".") == (t == "PUNCT")


def test_split_is_disjoint_and_showcase_sentences_are_held_back():
    c = make_corpus(n_sentences=1000, seed=3)
    train = {s.text for s in c.train}
    test = {s.text for s in c.test}
    assert len(train) == len(c.train) and len(test) == len(c.test)  # no duplicates
    assert not train & test
    assert len(c.train) + len(c.test) == 1000 and len(c.test) == 200
    for example in EXAMPLES:
        assert " ".join(words(example)) not in train | test
        assert " ".join(words(example + ".")) not in train | test
    assert c.vocab[:2] == ["<pad>", "<unk>"]
    assert c.ids(["saw", "zebra"]) == [c.vocab.index("saw"), 1]


def test_double_role_sentences_are_balanced_and_present():
    c = make_corpus()
    dr = c.test_double_role
    assert len(dr) >= 50
    assert all(balanced(s) for s in c.train + c.test)
    s = Sentence(("i", "saw", "a", "saw"), ("PRON", "VERB", "DET", "NOUN"))
    assert double_role_positions(s) == [1, 3] and s.double_role and balanced(s)
    unbalanced = Sentence(("the", "fly", "will", "fly", "near", "my", "fly"),
                          ("DET", "NOUN", "AUX", "VERB", "ADP", "DET", "NOUN"))
    assert not balanced(unbalanced) and double_role_positions(unbalanced) == [1, 3, 6]
    assert not Sentence(("the", "saw"), ("DET", "NOUN")).double_role


def test_examples_are_tagged_one_tag_per_word():
    for text, tags in EXAMPLES.items():
        assert len(words(text)) == len(tags), text
    assert EXAMPLES["I saw a saw"] == ("PRON", "VERB", "DET", "NOUN")


def test_words_splits_like_the_corpus():
    assert words("I saw a saw!") == ["i", "saw", "a", "saw", "!"]
    assert words("  They  CAN, can the can.\n") == ["they", "can", ",", "can", "the", "can", "."]
    assert words("") == [] and words(" \n\t") == [] and words("?!") == ["?", "!"]
    assert words("<b>saw</b>") == ["<", "b", ">", "saw", "<", "/", "b", ">"]
    assert words("don't_stop") == ["don't", "_", "stop"]


def test_generate_refuses_impossible_requests():
    import pytest

    with pytest.raises(ValueError):
        generate(5)
    with pytest.raises(ValueError):
        make_corpus(held_out=1.0)
