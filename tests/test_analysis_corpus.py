"""The lesson's tagged corpus: deterministic, both roles for every ambiguous word, a clean split,
and lists whose deciding word lies far away (checked against a parse written out here)."""

from collections import Counter, defaultdict

import pytest

from attnviz.analysis.corpus import (
    ADJECTIVES,
    AMBIGUOUS,
    AUXILIARIES,
    DETERMINERS,
    EXAMPLES,
    FAR_PAIR,
    LIST_SIZES,
    LIST_WORDS,
    PLAIN_NOUNS,
    PLAIN_VERBS,
    PRONOUNS,
    TAGS,
    Sentence,
    balanced,
    deciding_distances,
    double_role_positions,
    generate,
    make_corpus,
    max_words,
    tag_counts,
    words,
)


@pytest.fixture(scope="module")
def corpus():
    return make_corpus()


def example(text: str) -> Sentence:
    return Sentence(tuple(words(text)), EXAMPLES[text])


def lists_of(ws) -> list[list[int]]:
    """Every list 'w1 , w2 , ... and wk' by its separators alone: the positions of its words.
    Written independently of the library's rule, which walks the tags."""
    out = []
    for a, w in enumerate(ws):
        if w == "and":
            start = a - 1
            while start - 2 >= 0 and ws[start - 1] == ",":
                start -= 2
            out.append(list(range(start, a + 2, 2)))
    return out


def distances_by_parse(s: Sentence) -> list[int | None]:
    """1 for an ambiguous word outside a list; inside a list, its distance to the word just
    before the list."""
    out: list[int | None] = [1 if w in AMBIGUOUS else None for w in s.words]
    for items in lists_of(s.words):
        for i in items:
            out[i] = i - (items[0] - 1)
    return out


def test_corpus_is_deterministic():
    a, b = make_corpus(seed=0), make_corpus(seed=0)
    assert a.train == b.train and a.test == b.test and a.vocab == b.vocab
    assert make_corpus(seed=1).train != a.train


def test_both_tags_occur_for_every_ambiguous_word(corpus):
    for split in (corpus.train, corpus.test):
        for w in AMBIGUOUS:
            counts = tag_counts(split, w)
            assert counts.get("NOUN", 0) > 0 and counts.get("VERB", 0) > 0, (w, counts)
    assert set(tag_counts(corpus.train, "can")) == {"AUX", "VERB", "NOUN"}


def test_plain_words_have_one_tag_and_tags_match_words(corpus):
    for s in corpus.train + corpus.test:
        assert len(s.words) == len(s.tags) and set(s.tags) <= set(TAGS)
        for w, t in zip(s.words, s.tags, strict=True):
            if w in PLAIN_NOUNS:
                assert t == "NOUN"
            if w in PLAIN_VERBS:
                assert t == "VERB"
            assert (w in (".", ",")) == (t == "PUNCT")
            assert (w == "and") == (t == "CCONJ")


def test_split_is_disjoint_and_showcase_sentences_are_held_back():
    c = make_corpus(n_sentences=1000, seed=3)
    train = {s.text for s in c.train}
    test = {s.text for s in c.test}
    assert len(train) == len(c.train) and len(test) == len(c.test)  # no duplicates
    assert not train & test
    assert len(c.train) + len(c.test) == 1000 and len(c.test) == 200
    for text in EXAMPLES:
        assert " ".join(words(text)) not in train | test
        assert " ".join(words(text + ".")) not in train | test
    assert c.vocab[:2] == ["<pad>", "<unk>"]
    assert c.ids(["saw", "zebra"]) == [c.vocab.index("saw"), 1]


def test_double_role_sentences_are_balanced_and_present(corpus):
    assert len(corpus.test_double_role) >= 50
    assert all(balanced(s) for s in corpus.train + corpus.test)
    s = Sentence(("i", "saw", "a", "saw"), ("PRON", "VERB", "DET", "NOUN"))
    assert double_role_positions(s) == [1, 3] and s.double_role and balanced(s)
    unbalanced = Sentence(("the", "fly", "will", "fly", "near", "my", "fly"),
                          ("DET", "NOUN", "AUX", "VERB", "ADP", "DET", "NOUN"))
    assert not balanced(unbalanced) and double_role_positions(unbalanced) == [1, 3, 6]
    assert not Sentence(("the", "saw"), ("DET", "NOUN")).double_role


def test_examples_are_tagged_one_tag_per_word_and_in_the_grammar():
    from attnviz.analysis.corpus import (
        ADPOSITIONS,
        NOUN_LIST_TEMPLATES,
        TEMPLATES,
        VERB_LIST_TEMPLATES,
    )

    def lists(tag):  # "w1 , w2 , ... and wk" for k = 2..6
        return [(tag,) + (("PUNCT", tag) * (k - 2)) + ("CCONJ", tag) for k in LIST_SIZES]

    shapes = set()  # every tag sequence the grammar can write, without the final "."
    for template in TEMPLATES + NOUN_LIST_TEMPLATES + VERB_LIST_TEMPLATES:
        seqs = [()]
        for slot in template:
            opts = {"NP": [("DET", "NOUN"), ("DET", "ADJ", "NOUN")], "V": [("VERB",)],
                    "NLIST": [("DET",) + a + lst for a in ((), ("ADJ",))
                              for lst in lists("NOUN")],
                    "VLIST": lists("VERB")}.get(slot, [(slot,)])
            seqs = [s + o for s in seqs for o in opts]
        shapes |= set(seqs)
        if template[-1].endswith("LIST"):
            shapes |= {s + ("ADP", "DET", "NOUN") for s in seqs}
    for text, tags in EXAMPLES.items():
        assert len(words(text)) == len(tags), text
        assert tags in shapes, text
    assert "near" in ADPOSITIONS
    assert EXAMPLES["I saw a saw"] == ("PRON", "VERB", "DET", "NOUN")
    assert set(FAR_PAIR) <= set(EXAMPLES)


def test_lists_follow_the_stated_rule(corpus):
    """Every list: 2 to 6 distinct list words with one tag; nouns after a determiner or
    adjective, verbs after a pronoun or auxiliary; after the list only '.', a preposition
    phrase or the end, for both kinds."""
    kinds, after = Counter(), defaultdict(set)
    for s in corpus.train + corpus.test:
        for items in lists_of(s.words):
            ws = [s.words[i] for i in items]
            tags = {s.tags[i] for i in items}
            assert len(items) in LIST_SIZES and len(set(ws)) == len(ws)
            assert set(ws) <= set(LIST_WORDS) and len(tags) == 1, s.text
            before = s.words[items[0] - 1]
            kind = tags.pop()
            if kind == "NOUN":
                assert before in DETERMINERS + ADJECTIVES, s.text
            else:
                assert kind == "VERB" and before in PRONOUNS + AUXILIARIES, s.text
            kinds[kind] += 1
            nxt = items[-1] + 1
            after[kind].add(s.tags[nxt] if nxt < len(s.words) else "end")
    assert set(kinds) == {"NOUN", "VERB"}
    share = kinds["NOUN"] / sum(kinds.values())
    assert 0.45 <= share <= 0.55, kinds  # noun and verb lists equally likely
    assert after["NOUN"] == after["VERB"] == {"PUNCT", "ADP", "end"}
    lengths = [len(s.words) for s in corpus.train + corpus.test]
    assert max(lengths) <= max_words() == 20


def test_deciding_distances_match_the_parse(corpus):
    for s in corpus.train + corpus.test:
        assert deciding_distances(s) == distances_by_parse(s), s.text
    far = example(FAR_PAIR[0])
    assert deciding_distances(far) == [None, 1, None, 1, None, 3, None, 5, None, 7]
    assert deciding_distances(example(FAR_PAIR[1])) == [None, 1, 1, None, 3, None, 5, None, 7]
    assert deciding_distances(example("I saw a saw")) == [None, 1, None, 1]
    seen = Counter(d for s in corpus.train for d in deciding_distances(s) if d)
    assert sorted(seen) == [1, 3, 5, 7, 9, 11]  # "1 to 11 words back" (the step's text)


def test_no_three_word_window_tells_far_words_apart(corpus):
    """The corpus property behind step 4: the most frequent training tag of each 3-word
    context scores no better than the majority tag per word on held-out far words."""
    def context(ws, i):
        return tuple(ws[j] if 0 <= j < len(ws) else None for j in (i - 1, i, i + 1))

    table: dict[tuple, Counter] = defaultdict(Counter)
    words_seen: dict[str, Counter] = defaultdict(Counter)
    for s in corpus.train:
        for i, (w, t) in enumerate(zip(s.words, s.tags, strict=True)):
            table[context(s.words, i)][t] += 1
            words_seen[w][t] += 1
    hits = majority = n = 0
    for s in corpus.test:
        for i, d in enumerate(deciding_distances(s)):
            if d is not None and d > 1:
                gold = s.tags[i]
                found = table.get(context(s.words, i))
                hits += bool(found) and found.most_common(1)[0][0] == gold
                majority += words_seen[s.words[i]].most_common(1)[0][0] == gold
                n += 1
    assert n > 300
    assert hits / n <= majority / n + 0.03, (hits / n, majority / n)
    assert 0.4 <= majority / n <= 0.6


def test_words_splits_like_the_corpus():
    assert words("I saw a saw!") == ["i", "saw", "a", "saw", "!"]
    assert words("  They  CAN, can the can.\n") == ["they", "can", ",", "can", "the", "can", "."]
    assert words("") == [] and words(" \n\t") == [] and words("?!") == ["?", "!"]
    assert words("<b>saw</b>") == ["<", "b", ">", "saw", "<", "/", "b", ">"]
    assert words("don't_stop") == ["don't", "_", "stop"]


def test_generate_refuses_impossible_requests():
    with pytest.raises(ValueError):
        generate(5)
    with pytest.raises(ValueError):
        make_corpus(held_out=1.0)


def test_what_the_lesson_says_of_the_corpus_is_counted(corpus):
    """The lesson calls the corpus synthetic and quotes its size: the word forms are those
    the sentences use, the list and double-role shares are counted here from the sentences'
    own words (the separators of a list, a word's tags), and the samples are what they say."""
    from attnviz.analysis.corpus import has_list, samples, vocabulary

    every = corpus.train + corpus.test
    assert vocabulary() == {w for s in every for w in s.words}
    assert len(vocabulary()) == 58
    listed = [s for s in corpus.train if any(len(items) >= 2 for items in lists_of(s.words))]
    assert [s for s in corpus.train if has_list(s)] == listed
    assert len(listed) / len(corpus.train) == pytest.approx(0.355625, abs=1e-12)
    two = [s for s in corpus.train
           if any(len({t for x, t in zip(s.words, s.tags, strict=True) if x == w}) > 1
                  for w in set(s.words))]
    assert len(two) / len(corpus.train) == pytest.approx(0.21875, abs=1e-12)
    assert max(len(s.words) for s in every) == max_words() == 20
    assert max(d for s in corpus.train for d in distances_by_parse(s) if d) == 11
    plain, double, nouns, verbs = samples(corpus.train)
    assert not lists_of(plain.words) and not plain.double_role and double.double_role
    for s, tag in ((nouns, "NOUN"), (verbs, "VERB")):
        assert lists_of(s.words) and all(s.tags[i] == tag for i in lists_of(s.words)[0])
