"""The "I saw a saw" lesson (the lecture's example): its steps, and the sentences that state its
measured claims.

The lecture (Hung-yi Lee's self-attention lecture, in Chinese) tags "I saw a saw" one word at a
time: a fully connected layer gives both "saw"s the same tag; a window sees neighbours, but to
consider the whole sentence it must grow huge, with many parameters that overfit;
self-attention sees everything with a parameter count that does not grow with the sentence;
and without positions (the lecture notes: "no position information in self-attention") the
two "saw"s are still the same vector.

This module holds the lesson's text (STEPS: text, a question asked first, and the claim shown
only after the reveal), the small computations behind it (which word repeats in two roles,
which words each kind of tagger can see, what a window sees around a word, the cosine of two
copies of a word in every layer,

    cos(h_i, h_j) = h_i . h_j / (|h_i| |h_j|)

from the engine's hidden states) and the sentences that put measured numbers into words.
Sentences take any typed word already made Markdown-safe (the page passes
ui.text.literal(word)). No Streamlit here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from attnviz.analysis.common import cosine_per_layer, repeated_tokens
from attnviz.analysis.corpus import (
    AMBIGUOUS,
    AUXILIARIES,
    DETERMINERS,
    EXAMPLES,
    FAR_PAIR,
    Corpus,
    Sentence,
    deciding_distances,
    tag_counts,
    words,
)
from attnviz.i18n import N_, _

__all__ = ["STEPS", "ZH_SENTENCES", "is_chinese", "lesson_words", "repeated_word",
           "unknown_words", "FormRow", "Step", "cosine_per_layer", "cost_claim", "far_claim",
           "form_table", "gold_tags", "max_abs_difference", "mlp_claim",
           "model_description", "positions_claim", "receptive_fields", "repeated_ambiguous",
           "roles_claim", "step_index", "token_positions", "top_key", "window_view"]

PAD_WORD = "·"  # what a window shows past either end of the sentence
# The examples the lesson offers as its sentence: each repeats an ambiguous word (the far
# pair is step 4's own example).
SENTENCES: tuple[str, ...] = tuple(t for t in EXAMPLES if t not in FAR_PAIR)
# Chinese examples: one character in two roles, as "saw" in the lecture. 上/下 are verbs
# (go up/down) and then localisers (on/below the mountain); every character of the first two
# is in the bundled model's vocabulary. The third is the lecture's own "I saw a saw" (锯 a
# noun, then a verb), whose 锯 that vocabulary lacks: both copies are read as [UNK].
ZH_SENTENCES: tuple[str, ...] = ("我上山，山上有花。", "我下山，山下有河。", "我用锯锯木头。")
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_SPLIT = re.compile(f"[{_CJK}]|[^{_CJK}]+")


@dataclass(frozen=True)
class Step:
    """One screen of the lesson: a title, the explanation, the question asked first and the
    claim revealed after it. `{word}` in a text stands for the sentence's repeated word; other
    `{name}` fields are numbers the page fills in (see STEP_FIELDS)."""

    key: str
    title: str
    text: str
    predict: str | None = None  # asked before the result is revealed
    reveal: str = ""  # the claim, shown only after the reveal


STEPS: tuple[Step, ...] = (
    Step("task", N_("The task: one tag per word"),
         N_("Part-of-speech tagging: one **tag** per word, as many outputs as inputs (PRON, VERB, "
            "DET, NOUN, AUX, ...). The **gold** tags are the right answers, written by hand: "
            "every tagger is scored against them."),
         N_("Tag each word of the sentence yourself, then reveal the gold tags."),
            ""),
    Step("per_word", N_("(a) A classifier that sees one word"),
         N_("Feed each word alone to one fully connected network: $y^i = f(x^i)$. Each tagger "
            "here learns from {n_train} tagged sentences and is scored on {n_test} **held-out** "
            "ones: sentences it never saw while learning."),
         N_("What will it say for the two *{word}*s?"),
         N_("Both *{word}*s are the same input $x$, so they **must** get the same output: "
            "one of the two is wrong.")),
    Step("window", N_("(b) A window of neighbours"),
         N_("Give the network word $i$ with its neighbours: $y^i = f(x^{i-1}, x^i, x^{i+1})$, "
            "a window of 3 words (a 1-D convolution: the same weights slide along the sentence)."),
         N_("Can a window of 3 words tell the two *{word}*s apart?"),
         N_("Yes: the two *{word}*s have different neighbours, so they are different inputs.")),
    Step("far", N_("Where a window of 3 is not enough"),
         N_("Lists: (1) *I watch the duck, fish, book and fly* (nouns), (2) *I can duck, fish, "
            "book and fly* (verbs). Only the word before the list (*the*, *can*) settles the "
            "role of its words: their **deciding word**, 1 to 11 words back in the training "
            "lists."),
         N_("What will windows of 3, 5 and 9 words say for *fly* in (1) and (2)?"),
         N_("A window of $k$ words sees $(k-1)/2$ on each side. Around *fly* the windows of 3, 5 "
            "and 9 see the same words in (1) and (2), so *fly* gets one tag in both: one is "
            "wrong. Its deciding word is {fly_distance} words back: only a window of "
            "{fly_width} or more reaches it.")),
    Step("cost", N_("The cost of a wide window"),
         N_("To see every word of the longest training sentence ({longest} words) a window must "
            "be {full} words wide, and each place in it has its own $d \\times d$ weights "
            "($d$ = {dim})."),
         N_("Will the window of {full} tag far words right? What happens when it has little "
            "data to learn from?"),
            ""),
    Step("attention", N_("Self-attention: each word looks at all"),
         N_("Each word makes a query $q^i$, a key $k^i$, a value $v^i$: scores $\\alpha_{i,j} = "
            "q^i \\cdot k^j$, weights $\\alpha'_{i,j} = \\mathrm{softmax}_j(\\alpha_{i,j}/"
            "\\sqrt{d_k})$, outputs $b^i = \\sum_j \\alpha'_{i,j} v^j$. Shown: one head of "
            "{model_name}, rows = queries $i$, columns = keys $j$."),
         N_("Which word will the second *{word}* look at most?"),
            ""),
    Step("no_positions", N_("(c) Self-attention without positions"),
         N_("Tagger (c): two layers of self-attention (4 heads each) over the word vectors "
            "alone, then a layer that picks the tag."),
         N_("Can the two *{word}*s end up with different tags?"),
         N_("No. Without positions self-attention has no notion of order: shuffle the words and "
            "every output is shuffled the same way. The two *{word}*s have the same $q, k, v$ "
            "and see the same set of words, so their outputs are equal in every layer (up to "
            "float rounding): the same tag.")),
    Step("positions", N_("(d) Self-attention with positions"),
         N_("Tagger (d): the same, plus a learned position vector $e^i$ added to each word "
            "vector, $x^i + e^i \\to q^i, k^i, v^i$"),
         N_("Will it get both *{word}*s right? And list words far from their deciding word?"),
         N_("Yes: the two *{word}*s sit at different positions, so they are different inputs, "
            "and attention can learn where to look, near or far.")),
    Step("bert", N_("A real pretrained model"),
         N_("The same question for {model}: the cosine of the two copies of the repeated word "
            "after each layer, with the model's learned positions and with them removed."),
         N_("After the last layer, how similar are the two copies (cosine; 1 = same direction)?"),
            ""),
    Step("next", N_("What to try next"),
         N_("Try another sentence with a repeated ambiguous word, then follow the ideas further "
            "on the other pages: the full computation step by step, positional encodings, "
            "windows, and the heads of every layer."),
         None, ""),
)
# The numbers each step's text asks for (besides {word}), filled by the page.
STEP_FIELDS: dict[str, tuple[str, ...]] = {
    "per_word": ("n_train", "n_test"), "far": ("fly_distance", "fly_width"),
    "cost": ("longest", "full", "dim"), "attention": ("model_name",), "bert": ("model",)}


def step_index(key: str) -> int:
    """The position (0-based) of the step with this key."""
    return [s.key for s in STEPS].index(key)


def fill(text: str, word: str | None, **numbers) -> str:
    """A step text with {word} and the step's {fields} filled in (format-style; the
    formulas' braces are LaTeX and stay as they are)."""
    out = text.replace("{word}", word or _("repeated word"))
    for name, value in numbers.items():
        out = out.replace("{" + name + "}", str(value))
    return out


def lesson_words(text: str) -> list[str]:
    """The corpus' words, with each Chinese character a word of its own (as BERT's tokenizer
    reads them): "我上山，" -> 我, 上, 山, ，."""
    return [piece for w in words(text) for piece in _CJK_SPLIT.findall(w)]


def is_chinese(ws: Sequence[str]) -> bool:
    """True when any word is a Chinese character."""
    return any(re.fullmatch(f"[{_CJK}]", w) for w in ws)


def repeated_word(ws: Sequence[str]) -> str | None:
    """The word the lesson follows: the first ambiguous English word that occurs twice, else
    the first Chinese character that occurs twice, else None."""
    english = repeated_ambiguous(" ".join(ws))
    if english:
        return next(iter(english))
    chinese = [w for w in ws if re.fullmatch(f"[{_CJK}]", w)]
    return next((w for w in chinese if chinese.count(w) > 1), None)


def unknown_words(ws: Sequence[str], pieces: Callable[[str], Sequence[str]],
                  unk: str | None) -> list[str]:
    """The distinct words the model's vocabulary has no entry for: those whose tokenizer
    pieces (`pieces(word)`) include the unknown token `unk` ([UNK]), in order."""
    if not unk:
        return []
    return list(dict.fromkeys(w for w in ws if unk in pieces(w)))


def repeated_ambiguous(text: str, ambiguous=AMBIGUOUS) -> dict[str, list[int]]:
    """{word: word positions} for each ambiguous word that occurs at least twice in `text`."""
    return {w: pos for w, pos in repeated_tokens(words(text)).items() if w in ambiguous}


def gold_tags(text: str) -> tuple[str, ...] | None:
    """The gold tags when `text` is one of the lesson's examples (any case, punctuation)."""
    ws = words(text)
    end = ("PUNCT",) if ws[-1:] == ["."] else ()
    key = " ".join(ws[:-1] if end else ws)
    for example, tags in EXAMPLES.items():
        if " ".join(words(example)) == key:
            return tags + end
    return None


def roles_claim(ws: Sequence[str], gold: Sequence[str] | None, word_md: str | None) -> str:
    """The reveal of the first step: the roles the repeated word plays (from the gold tags)."""
    if gold is None:
        return _("A typed sentence has no gold tags: the table shows what tagger (d) says. "
                 "Pick an example sentence to see the gold tags.")
    if word_md is None:
        return _("No word of this sentence plays two roles.")
    word = next(w for w in repeated_ambiguous(" ".join(ws)))
    tags = [gold[i] for i, w in enumerate(ws) if w == word]
    if len(set(tags)) < 2:
        return _("Every *{word}* here plays the same role: **{tag}**.").format(
            word=word_md, tag=tags[0])
    ordinal = (_("the first"), _("the second"), _("the third"), _("the fourth"))
    roles = _(", ").join(_("{ordinal} a **{tag}**").format(
        ordinal=ordinal[k] if k < 4 else _("the {n}th").format(n=k + 1), tag=t)
        for k, t in enumerate(tags))
    count = {2: _("two"), 3: _("three")}.get(len(set(tags)), str(len(set(tags))))
    return _("Of the *{word}*s, {roles}: the same word, {count} roles.").format(
        word=word_md, roles=roles, count=count)


def token_positions(tokens: list[str], word: str) -> list[int]:
    """Positions of `word` among BERT's tokens (case-insensitive, whole tokens only)."""
    return [i for i, t in enumerate(tokens) if t.lower() == word.lower()]


def receptive_fields(n: int, width: int) -> dict[str, np.ndarray]:
    """Which words each word's tag can depend on: bool [word, seen word] per tagger kind.

    per word: only itself (identity); a window of `width` words: |i - j| <= width // 2;
    attention: all.
    """
    idx = np.arange(n)
    dist = np.abs(idx[:, None] - idx[None, :])  # [n, n]
    return {"per word": dist == 0, "window": dist <= width // 2,
            "self-attention": np.ones((n, n), dtype=bool)}


def window_view(ws: Sequence[str], i: int, width: int) -> tuple[str, ...]:
    """The words a window of `width` (odd) centred on word i sees: ws[i-r .. i+r], r =
    width // 2, with PAD_WORD past either end (a convolution's zero padding)."""
    r = width // 2
    return tuple(ws[j] if 0 <= j < len(ws) else PAD_WORD for j in range(i - r, i + r + 1))


def max_abs_difference(hidden_states: np.ndarray, i: int, j: int) -> float:
    """max |h_i - h_j| over every layer and dimension (0.0: identical; float32 rounding is
    about 1e-6 at BERT's scale)."""
    return float(np.abs(hidden_states[:, i] - hidden_states[:, j]).max())


def top_key(weights_row: np.ndarray, tokens: list[str]) -> tuple[int, str, float]:
    """(position, token, weight) of the key a query's weight row puts most weight on."""
    j = int(np.argmax(weights_row))
    return j, tokens[j], float(weights_row[j])


def model_description(name: str, n_layers: int, n_heads: int, shown: str | None = None) -> str:
    """The loaded model in words: all-MiniLM-L6-v2 is named for what it is. `shown`: the name
    as the page writes it (escaped for Markdown), default `name`."""
    recognised = "all-minilm-l6-v2" in name.lower()
    name = name if shown is None else shown
    if recognised:
        return _("{name}, a distilled sentence-embedding model with BERT's architecture "
                 "({layers} layers, {heads} heads)").format(name=name, layers=n_layers,
                                                           heads=n_heads)
    return _("{name} ({layers} layers, {heads} heads)").format(name=name, layers=n_layers,
                                                               heads=n_heads)


# --------------------------------------------------------------- measured claims
def pct(x: float) -> str:
    """A share as the page prints it: 0.5274 -> '52.7%'."""
    return _("n/a") if x != x else f"{100 * x:.1f}%"


@dataclass(frozen=True)
class FormRow:
    """One ambiguous word form: its tag counts in training and held out, the majority tag of
    training, and the one tag the per-word tagger gives every copy of it."""

    word: str
    train: dict[str, int]
    held_out: dict[str, int]
    majority: str
    predicted: str

    @property
    def held_out_right(self) -> int:
        """Held-out copies the per-word tagger gets right (those whose gold is its tag)."""
        return self.held_out.get(self.predicted, 0)


def form_table(corpus: Corpus, predicted: Mapping[str, str],
               majority: Mapping[str, str]) -> list[FormRow]:
    """One FormRow per ambiguous word, from the corpus' counts and the per-word tagger's tag
    for each form (`predicted`, e.g. taggers.tag_sentence on the word alone)."""
    return [FormRow(w, tag_counts(corpus.train, w), tag_counts(corpus.test, w), majority[w],
                    predicted[w]) for w in corpus.ambiguous if w in majority]


def mlp_claim(rows: Sequence[FormRow], ambiguous: float, baseline: float,
              best_possible: float) -> str:
    """Why the per-word tagger lands at or below the majority-tag baseline, with its numbers:
    one tag per form, so at best each form's majority tag; the roles are close to evenly
    split in training, so the tag it settles on for a form is close to a coin flip."""
    minority = [r for r in rows if r.predicted != r.majority]
    shares = [max(r.train.values()) / sum(r.train.values()) for r in rows]
    text = _("Held out it tags **{ambiguous}** of ambiguous words right. One tag per word can "
             "at best give each word its most frequent training tag: the **majority-tag "
             "baseline**, {baseline} ({best} with the best tag for these very sentences). In "
             "training each word's commoner role has only {low} to {high} of its copies, so the "
             "tag it settles on is close to a coin flip").format(
        ambiguous=pct(ambiguous), baseline=pct(baseline), best=pct(best_possible),
        low=pct(min(shares)), high=pct(max(shares)))
    if not minority:
        return text + _(": here it chose every word's majority tag, so it sits on the "
                        "baseline.")
    names = _(", ").join(f"*{r.word}*" for r in minority)
    where = (_(": for {k} of {n} words ({names}) it chose the rarer tag, which puts it below "
               "the baseline.") if ambiguous < baseline else
             _(": for {k} of {n} words ({names}) it chose the rarer tag, which puts it at the "
               "baseline."))
    return text + where.format(k=len(minority), n=len(rows), names=names)


def double_role_claim(tagger: float) -> str:
    """The score on double-role words, with the word explained where it first appears."""
    return _("On **double-role** words (one word in two roles in one sentence, like the two "
             "saws) it scores **{score}**: one tag per word is right on at most half of "
             "them.").format(score=pct(tagger))


def window_claim(double_role: float, mlp_double_role: float, ambiguous: float) -> str:
    """The window of 3 against the per-word tagger, and the teaser for the next step."""
    return _("Held out it tags **{double_role}** of double-role words right (per-word MLP: "
             "{mlp}), but only **{ambiguous}** of all ambiguous words: the next step shows "
             "which ones it misses.").format(double_role=pct(double_role),
                                             mlp=pct(mlp_double_role), ambiguous=pct(ambiguous))


def far_claim(far: Mapping[int, float], baseline_far: float, n_far: int) -> str:
    """Held-out accuracy of each window on the far words (deciding word 2+ words away)."""
    parts = _(", ").join(f"{k}: **{pct(a)}**" for k, a in far.items())
    return _("Held out, on {n} ambiguous words whose deciding word is 2 or more words back, "
             "windows of {parts}. Majority tag per word: {baseline}.").format(
        n=n_far, parts=parts, baseline=pct(baseline_far))


def cost_claim(full: int, params: Mapping[str, int], far_wide: float,
               sizes: Sequence[int], gap_wide: Sequence[float], gap_attention: Sequence[float],
               tolerance: float = 0.02) -> str:
    """The widest window's accuracy and parameters, and its train/held-out gap against
    self-attention's as the training set shrinks, with a verdict that follows the numbers:
    'more' only where its gap exceeds attention's by more than `tolerance`."""
    def gaps(g: Sequence[float]) -> str:
        return ", ".join(f"{100 * x:.1f}" for x in g)

    ratio = params["wide"] / params["attention"]
    text = _("Yes, **{far}** of far words held out, with **{wide:,}** parameters: {ratio:.1f} "
             "times self-attention's {attention:,}. Training minus held-out accuracy, in "
             "points, for {sizes} training sentences: window of {full} **{gap_wide}**, "
             "self-attention + positions **{gap_attention}**. ").format(
        far=pct(far_wide), wide=params["wide"], ratio=ratio, attention=params["attention"],
        sizes=", ".join(map(str, sizes)), full=full, gap_wide=gaps(gap_wide),
        gap_attention=gaps(gap_attention))
    more = [n for n, w, a in zip(sizes, gap_wide, gap_attention, strict=True)
            if w > a + tolerance]
    if len(more) == len(sizes):
        return text + _("The wide window overfits more at every size, as the lecture says.")
    if more:
        rest = [n for n in sizes if n not in more]
        return text + _("With {more} sentences the wide window overfits more, as the lecture "
                        "says; with {rest} it does not (the gaps are within {points:.0f} "
                        "points, or self-attention's is larger).").format(
            more=_(" and ").join(map(str, more)), rest=_(" and ").join(map(str, rest)),
            points=100 * tolerance)
    return text + _("Here the wide window does **not** overfit more than self-attention: this "
                    "measurement does not show the lecture's claim.")


def order_free_rule(sentences: Sequence[Sentence]) -> float:
    """Accuracy on far list words (deciding word 2+ back) of a rule that ignores word order:
    NOUN if the sentence holds a determiner and no auxiliary, else VERB. It shows how much the
    set of words alone tells, which is all a tagger without positions has."""
    hits = n = 0
    for s in sentences:
        bag = set(s.words)
        guess = "NOUN" if bag & set(DETERMINERS) and not bag & set(AUXILIARIES) else "VERB"
        for i, d in enumerate(deciding_distances(s)):
            if d is not None and d > 1:
                hits, n = hits + (s.tags[i] == guess), n + 1
    return hits / n if n else float("nan")


def no_positions_claim(double_role: float, far: float, order_free: float) -> str:
    """Tagger (c)'s held-out numbers: capped on double-role words, not on list words, where
    the set of words tells a lot (`order_free`: order_free_rule's accuracy)."""
    return _("Held out: **{double_role}** of double-role words (at most 50% with one tag for "
             "both copies). On list words far from their deciding word it scores {far}: the "
             "set of words alone often tells a noun list from a verb list (the order-free rule "
             "'noun if the sentence holds a determiner and no auxiliary' is right on "
             "{order_free} of them).").format(double_role=pct(double_role), far=pct(far),
                                              order_free=pct(order_free))


def positions_claim(near: float, far: float, double_role: float, params: int, wide: int,
                    full: int, max_words: int) -> str:
    """Tagger (d)'s held-out numbers and its parameters against the widest window's."""
    return _("Held out: **{near}** of ambiguous words whose deciding word is a neighbour, "
             "**{far}** of those farther away, **{double_role}** of double-role words. "
             "**{params:,}** parameters for any sentence up to {max_words} words; the window "
             "of {full} has {wide:,} and covers {covers} words.").format(
        near=pct(near), far=pct(far), double_role=pct(double_role), params=params,
        max_words=max_words, full=full, wide=wide, covers=(full + 1) // 2)


def bert_claim(with_positions: float, without: float, word_md: str) -> str:
    """The two copies' cosine after the last layer, with and without positions."""
    return _("With positions the two *{word}* vectors end at cosine **{with_positions:.3f}**; "
             "without positions the cosine is **{without:.6f}** in every layer: the same "
             "vector, up to float rounding.").format(word=word_md, with_positions=with_positions,
                                                     without=without)


def covering_width(distance: int) -> int:
    """The narrowest window (odd width) that reaches a word `distance` away: 2 d + 1."""
    return 2 * int(distance) + 1

