"""A tiny tagged corpus for the "I saw a saw" lesson (the lecture's part-of-speech tagging example).

The lecture tells the story with one sentence: "I saw a saw" is tagged I/PRON saw/VERB a/DET
saw/NOUN, so a model that looks at each word alone must get one "saw" wrong. To train taggers
on that story we need many such sentences, so this module writes them with a small,
deterministic context-free grammar in which the ambiguous words (saw, watch, duck, fly, can,
book, fish, park) fill both noun slots and verb slots.

Short-range sentences: the word next to an ambiguous word settles its role.

    S  -> PRON V NP | PRON AUX V NP | PRON AUX V | NP AUX V | NP AUX V NP
        | PRON V NP ADP NP | NP AUX V NP ADP NP
    NP -> DET N | DET ADJ N

Long-range sentences: a list of 2 to 6 ambiguous words (never "can", which is also an AUX),
"w1 , w2 , ... and wk", all nouns or all verbs:

    S  -> PRON V DET (ADJ) NLIST (ADP NP)      "i watch the duck , fish , book and fly"
        | PRON (AUX) VLIST (ADP NP)            "i can duck , fish , book and fly"
        | NP AUX VLIST (ADP NP)

Inside a list every word is ambiguous and both kinds of list end the same way, so only the word
just before the list (a determiner or adjective: nouns; a pronoun or auxiliary: verbs)
settles the role of its words. That word lies 1, 3, 5, ... 11 words before the list's 1st,
2nd, 3rd, ... 6th word: `deciding_distances` gives that distance for every ambiguous word (1
for a word outside a list, whose neighbour settles it). Noun and verb lists are equally likely
and draw their words alike, so on list words far from the deciding word a tagger that cannot
see it can do no better than a coin flip per word form.

Half of the sentences end with "." (PUNCT). Tags (a subset of Universal Dependencies UPOS):
PRON, AUX, VERB, DET, ADJ, NOUN, ADP, CCONJ ("and"), PUNCT ("," and ".").
"can" is also an AUX, so "they can can the can" is PRON AUX VERB DET NOUN.

A *double-role* sentence uses one ambiguous word in a verb slot and in a noun slot
("i saw a saw", "the duck can duck"): a tagger that cannot see order must get one of them
wrong. Only *balanced* sentences are kept (each double-role word plays each of its roles
equally often), so such a tagger is right on at most half of those words. Every sentence
is lower case; `words(text)` splits any typed text the same way.
The corpus is a pure function of (n_sentences, seed): the same arguments give the same
sentences, in the same order, on every machine (Python's `random.Random(seed)`).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

TAGS: tuple[str, ...] = ("PRON", "AUX", "VERB", "DET", "ADJ", "NOUN", "ADP", "CCONJ", "PUNCT")

PRONOUNS = ("i", "you", "we", "they")
DETERMINERS = ("a", "the", "my", "your", "our", "this", "that")
ADJECTIVES = ("big", "small", "old", "red", "new")
ADPOSITIONS = ("with", "near", "on", "under")
AUXILIARIES = ("can", "will", "must", "may")
PLAIN_NOUNS = ("man", "dog", "cat", "girl", "boy", "tree", "box", "table", "car", "house",
               "ball", "hat", "bird", "child")
PLAIN_VERBS = ("see", "like", "find", "have", "want", "take", "use", "buy", "hold", "love")
# Each of these fills noun slots AND verb slots: the words the lesson is about.
AMBIGUOUS = ("saw", "watch", "duck", "fly", "can", "book", "fish", "park")
LIST_WORDS = tuple(w for w in AMBIGUOUS if w != "can")  # "can" in a list could be an AUX
LIST_SIZES = (2, 3, 4, 5, 6)  # words per list

PAD, UNK = "<pad>", "<unk>"  # ids 0 and 1 of every vocabulary

# Short-range templates: a list of slots. "NP" expands to DET (ADJ) N.
TEMPLATES: tuple[tuple[str, ...], ...] = (
    ("PRON", "V", "NP"),
    ("PRON", "AUX", "V", "NP"),
    ("PRON", "AUX", "V"),
    ("NP", "AUX", "V"),
    ("NP", "AUX", "V", "NP"),
    ("PRON", "V", "NP", "ADP", "NP"),
    ("NP", "AUX", "V", "NP", "ADP", "NP"),
)
# Long-range templates: "NLIST" is DET (ADJ) and a list of nouns, "VLIST" a list of verbs.
NOUN_LIST_TEMPLATES: tuple[tuple[str, ...], ...] = (("PRON", "V", "NLIST"),)
VERB_LIST_TEMPLATES: tuple[tuple[str, ...], ...] = (
    ("PRON", "VLIST"),
    ("PRON", "AUX", "VLIST"),
    ("NP", "AUX", "VLIST"),
)

# The lesson's showcase sentences with their gold tags: sentences the grammar can write, never
# used for training.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "I saw a saw": ("PRON", "VERB", "DET", "NOUN"),
    "They can can the can": ("PRON", "AUX", "VERB", "DET", "NOUN"),
    "I watch my watch": ("PRON", "VERB", "DET", "NOUN"),
    "The duck can duck": ("DET", "NOUN", "AUX", "VERB"),
    "We book the old book": ("PRON", "VERB", "DET", "ADJ", "NOUN"),
    "We park the car near the park": ("PRON", "VERB", "DET", "NOUN", "ADP", "DET", "NOUN"),
    "I watch the duck, fish, book and fly": ("PRON", "VERB", "DET", "NOUN", "PUNCT", "NOUN",
                                             "PUNCT", "NOUN", "CCONJ", "NOUN"),
    "I can duck, fish, book and fly": ("PRON", "AUX", "VERB", "PUNCT", "VERB", "PUNCT", "VERB",
                                       "CCONJ", "VERB"),
}
# The two long-range examples: the same list, nouns in one and verbs in the other.
FAR_PAIR: tuple[str, str] = ("I watch the duck, fish, book and fly",
                             "I can duck, fish, book and fly")


@dataclass(frozen=True)
class Sentence:
    """One tagged sentence: words[i] has gold tag tags[i]."""

    words: tuple[str, ...]
    tags: tuple[str, ...]

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def double_role(self) -> bool:
        """True when one word form carries two different tags in this sentence."""
        return bool(double_role_positions(self))


@dataclass
class Corpus:
    """Train / held-out split, the vocabulary (0 = <pad>, 1 = <unk>) and the tag set."""

    train: list[Sentence]
    test: list[Sentence]
    vocab: list[str]
    tags: tuple[str, ...] = TAGS
    ambiguous: tuple[str, ...] = AMBIGUOUS
    seed: int = 0
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {w: i for i, w in enumerate(self.vocab)}

    def ids(self, words) -> list[int]:
        """Word ids; a word never seen in training maps to the <unk> id 1."""
        return [self.index.get(w, 1) for w in words]

    def tag_ids(self, tags) -> list[int]:
        return [self.tags.index(t) for t in tags]

    @property
    def test_double_role(self) -> list[Sentence]:
        return [s for s in self.test if s.double_role]


def words(text: str) -> list[str]:
    """Split typed text the way the corpus is written: lower-case words, and each
    punctuation mark or symbol as a word of its own ("saw." -> "saw", ".")."""
    return re.findall(r"[^\W_]+(?:'[^\W_]+)?|[^\w\s]|_", (text or "").lower())


def balanced(sentence: Sentence) -> bool:
    """True when every word with several roles plays each role equally often.

    "i saw a saw" (VERB once, NOUN once) is balanced; "the fly will fly near my fly" (NOUN
    twice, VERB once) is not. The grammar keeps only balanced sentences, so a tagger that
    gives every copy of a word one tag is right on at most half of the double-role words.
    """
    roles: dict[str, dict[str, int]] = {}
    for w, t in zip(sentence.words, sentence.tags, strict=True):
        roles.setdefault(w, {}).setdefault(t, 0)
        roles[w][t] += 1
    return all(len(set(c.values())) == 1 for c in roles.values() if len(c) > 1)


def double_role_positions(sentence: Sentence) -> list[int]:
    """Positions of every word whose form carries more than one gold tag in this sentence."""
    roles: dict[str, set[str]] = {}
    for w, t in zip(sentence.words, sentence.tags, strict=True):
        roles.setdefault(w, set()).add(t)
    return [i for i, w in enumerate(sentence.words) if len(roles[w]) > 1]


def deciding_distances(sentence: Sentence, ambiguous=AMBIGUOUS) -> list[int | None]:
    """For each word: how many words back the word that settles its role lies (None for a
    word that is not ambiguous).

    The corpus rule: a word inside a list (a run of ambiguous words with one tag joined by ","
    and "and") is settled by the word just before the list; any other ambiguous word by its
    neighbour (distance 1). Walking left from word i over list words (same tag) and list
    separators, the first other word j is the deciding one: distance i - j.
    """
    ws, ts = sentence.words, sentence.tags
    out: list[int | None] = []
    for i, w in enumerate(ws):
        if w not in ambiguous:
            out.append(None)
            continue
        j = i - 1
        while j >= 0 and (ws[j] in (",", "and") or (ws[j] in ambiguous and ts[j] == ts[i])):
            j -= 1
        out.append(i - j if j >= 0 else None)
    return out


def _pick(rng: random.Random, plain: tuple[str, ...], p_ambiguous: float) -> str:
    """An ambiguous word with probability p_ambiguous, else a plain one (the same draws as
    always: one random() then one choice())."""
    return rng.choice(AMBIGUOUS if rng.random() < p_ambiguous else plain)


def _noun_phrase(rng: random.Random, noun: str, ws: list[str], ts: list[str]) -> None:
    ws.append(rng.choice(DETERMINERS))
    ts.append("DET")
    if rng.random() < 0.3:
        ws.append(rng.choice(ADJECTIVES))
        ts.append("ADJ")
    ws.append(noun)
    ts.append("NOUN")


def _word_list(rng: random.Random, tag: str, ws: list[str], ts: list[str]) -> None:
    """'w1 , w2 , ... and wk': k distinct list words, all tagged `tag`."""
    items = rng.sample(LIST_WORDS, rng.choice(LIST_SIZES))
    for k, w in enumerate(items):
        if k:
            last = k == len(items) - 1
            ws.append("and" if last else ",")
            ts.append("CCONJ" if last else "PUNCT")
        ws.append(w)
        ts.append(tag)


def _expand(template: tuple[str, ...], rng: random.Random, p_ambiguous: float,
            forced: str | None) -> Sentence:
    """Fill a template's slots; `forced` puts that ambiguous word in one V and one N slot."""
    n_slots = [i for i, s in enumerate(template) if s == "NP"]
    v_slots = [i for i, s in enumerate(template) if s == "V"]
    force_n = rng.choice(n_slots) if forced and n_slots else None
    force_v = rng.choice(v_slots) if forced and v_slots else None
    ws: list[str] = []
    ts: list[str] = []
    for i, slot in enumerate(template):
        if slot == "NP":
            _noun_phrase(rng, forced if i == force_n else _pick(rng, PLAIN_NOUNS, p_ambiguous),
                         ws, ts)
        elif slot == "V":
            ws.append(forced if i == force_v else _pick(rng, PLAIN_VERBS, p_ambiguous))
            ts.append("VERB")
        elif slot == "NLIST":
            ws.append(rng.choice(DETERMINERS))
            ts.append("DET")
            if rng.random() < 0.3:
                ws.append(rng.choice(ADJECTIVES))
                ts.append("ADJ")
            _word_list(rng, "NOUN", ws, ts)
        elif slot == "VLIST":
            _word_list(rng, "VERB", ws, ts)
        else:
            pool = {"PRON": PRONOUNS, "AUX": AUXILIARIES, "ADP": ADPOSITIONS}[slot]
            ws.append(rng.choice(pool))
            ts.append(slot)
    if template[-1] in ("NLIST", "VLIST") and rng.random() < 0.3:  # "... near the park"
        ws.append(rng.choice(ADPOSITIONS))
        ts.append("ADP")
        _noun_phrase(rng, _pick(rng, PLAIN_NOUNS, p_ambiguous), ws, ts)
    if rng.random() < 0.5:
        ws.append(".")
        ts.append("PUNCT")
    return Sentence(tuple(ws), tuple(ts))


def vocabulary() -> frozenset[str]:
    """Every word form the grammar can write (punctuation and "and" included)."""
    return frozenset((*PRONOUNS, *DETERMINERS, *ADJECTIVES, *ADPOSITIONS, *AUXILIARIES,
                      *PLAIN_NOUNS, *PLAIN_VERBS, *AMBIGUOUS, "and", ",", "."))


def has_list(sentence: Sentence) -> bool:
    """True when the sentence holds a list: an ambiguous word settled 2 or more words back (in
    this grammar only the second and later words of a list of ambiguous words are)."""
    return any(d is not None and d > 1 for d in deciding_distances(sentence))


def samples(sentences: list[Sentence]) -> list[Sentence]:
    """A few sentences that show what the grammar writes: the shortest plain one (no list,
    one role per word), double-role one, noun list and verb list (the first of each length)."""
    def listed(s: Sentence, tag: str) -> bool:
        return any(d is not None and d > 1 and t == tag
                   for d, t in zip(deciding_distances(s), s.tags, strict=True))

    kinds = (lambda s: not has_list(s) and not s.double_role, lambda s: s.double_role,
             lambda s: listed(s, "NOUN"), lambda s: listed(s, "VERB"))
    return [min((s for s in sentences if kind(s)), key=lambda s: len(s.words))
            for kind in kinds]


def max_words() -> int:
    """The longest sentence the grammar can write (every optional word present)."""
    np_len, list_len, tail = 3, 2 * max(LIST_SIZES) - 1, 1 + 3  # DET ADJ N; list; ADP NP
    size = {"NP": np_len, "V": 1, "PRON": 1, "AUX": 1, "ADP": 1, "NLIST": 2 + list_len,
            "VLIST": list_len}
    short = max(sum(size[s] for s in t) for t in TEMPLATES)
    long = max(sum(size[s] for s in t) + tail
               for t in NOUN_LIST_TEMPLATES + VERB_LIST_TEMPLATES)
    return max(short, long) + 1  # + "."


def generate(n_sentences: int = 2000, seed: int = 0, p_ambiguous: float = 0.4,
             double_role_share: float = 0.2, list_share: float = 0.35) -> list[Sentence]:
    """`n_sentences` distinct tagged sentences (deterministic): a `list_share` of them with a
    list (half noun lists, half verb lists), a share of the rest double-role."""
    if n_sentences < 10:
        raise ValueError("n_sentences must be at least 10")
    rng = random.Random(seed)
    reserved = {" ".join(words(t)) for t in EXAMPLES}
    both = [t for t in TEMPLATES if "NP" in t and "V" in t]
    seen: set[str] = set()
    out: list[Sentence] = []
    tries = 0
    while len(out) < n_sentences:
        tries += 1
        if tries > 50 * n_sentences:
            raise ValueError(f"the grammar cannot make {n_sentences} distinct sentences")
        if rng.random() < list_share:
            pool = NOUN_LIST_TEMPLATES if rng.random() < 0.5 else VERB_LIST_TEMPLATES
            s = _expand(rng.choice(pool), rng, p_ambiguous, forced=None)
        elif rng.random() < double_role_share:
            s = _expand(rng.choice(both), rng, p_ambiguous, forced=rng.choice(AMBIGUOUS))
        else:
            s = _expand(rng.choice(TEMPLATES), rng, p_ambiguous, forced=None)
        bare = " ".join(w for w in s.words if w != ".")
        if s.text in seen or bare in reserved or not balanced(s):
            continue
        seen.add(s.text)
        out.append(s)
    return out


def make_corpus(n_sentences: int = 2000, seed: int = 0, held_out: float = 0.2) -> Corpus:
    """Generate, then split: the last `held_out` share (after a seeded shuffle) is held out.

    The vocabulary is every training word, sorted, after <pad> (id 0) and <unk> (id 1).
    """
    if not 0.0 < held_out < 1.0:
        raise ValueError("held_out must lie strictly between 0 and 1")
    sentences = generate(n_sentences, seed)
    random.Random(seed + 1).shuffle(sentences)
    n_test = max(1, int(round(held_out * len(sentences))))
    train, test = sentences[:-n_test], sentences[-n_test:]
    vocab = [PAD, UNK] + sorted({w for s in train for w in s.words})
    return Corpus(train=train, test=test, vocab=vocab, seed=seed)


def tag_counts(sentences: list[Sentence], word: str) -> dict[str, int]:
    """How often `word` carries each tag in `sentences`."""
    counts: dict[str, int] = {}
    for s in sentences:
        for w, t in zip(s.words, s.tags, strict=True):
            if w == word:
                counts[t] = counts.get(t, 0) + 1
    return counts
