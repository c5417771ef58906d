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
           "unknown_words", "FormRow", "Step", "corpus_claim", "cosine_per_layer", "cost_claim",
           "far_claim", "form_table", "gold_tags", "length_claim", "max_abs_difference",
           "mlp_claim", "mlp_short_claim", "model_description", "parameters_claim",
           "positions_claim", "reach_claim", "receptive_fields", "repeated_ambiguous",
           "roles_claim", "rope_claim", "sink_claim", "special_share", "step_index",
           "token_positions", "top_key", "window_view", "word_token_positions"]

PAD_WORD = "·"  # what a window shows past either end of the sentence
# The examples the lesson offers as its sentence: each repeats an ambiguous word (the far
# pair is step 4's own example).
SENTENCES: tuple[str, ...] = tuple(t for t in EXAMPLES if t not in FAR_PAIR)
# Chinese examples: one character in two roles, as "saw" in the lecture. 上/下 are verbs
# (go up/down) and then localisers (on/below the mountain); every character of the first two
# is in the bundled model's vocabulary. The third is this lesson's Chinese counterpart of "I
# saw a saw" (锯 a noun, then a verb; the lecture notes do not have it), whose 锯 that
# vocabulary lacks: both copies are read as [UNK].
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
            "DET, NOUN, AUX, ...). The **gold** tags are the right answers: every tagger is "
            "scored against them."),
         N_("Tag each word of the sentence yourself, then reveal the gold tags."),
            ""),
    Step("per_word", N_("(a) A classifier that sees one word"),
         N_("Feed each word alone to one fully connected network: $y^i = f(x^i)$. Each tagger "
            "here learns from {n_train} tagged sentences and is scored on {n_test} **held-out** "
            "ones: sentences it never saw while learning. They are **synthetic**: a small "
            "grammar writes them and their tags (below)."),
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
            "{model_name}, rows = queries $i$, columns = keys $j$. The model also reads two "
            "tokens it adds itself, `[CLS]` before the sentence and `[SEP]` after it; a head "
            "that finds nothing to look for in the sentence often rests most of its weight on "
            "them (an *attention sink*)."),
         N_("In the head shown, where will the second *{word}* put its largest weight: on a "
            "word of the sentence, or on `[CLS]` or `[SEP]`?"),
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


def word_token_positions(tokens: Sequence[str], ws: Sequence[str], word: str,
                         unk: str | None = None) -> list[int]:
    """Positions of `word` among the model's tokens (token_positions). Where no token is the
    word (a vocabulary without it reads each copy as the unknown token `unk`, as the bundled
    model reads 锯), its copies' places when the tokens stand one for one for the words
    between the first and the last (a Chinese sentence: one token a character, [CLS] and [SEP]
    around them), each token the word itself or `unk`; else none."""
    found = token_positions(list(tokens), word)
    inner = list(tokens)[1:-1]
    if found or not unk or len(inner) != len(ws):
        return found
    if not all(t == unk or t.lower() == w.lower() for t, w in zip(inner, ws, strict=True)):
        return []
    return [i + 1 for i, w in enumerate(ws) if w == word]


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


def special_share(weights: np.ndarray, columns: Sequence[int]) -> float:
    """The share of attention weight on the key `columns` ([CLS], [SEP]): the sum of those
    columns over every row (and every leading axis: layers, heads) divided by the sum of all
    weights (each row sums to 1, so: divided by the number of rows)."""
    w = np.asarray(weights, dtype=np.float64)
    return float(w[..., list(columns)].sum() / w.sum())


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
    def commoner_share(self) -> float:
        """The share of its training copies that carry its most frequent tag."""
        return max(self.train.values()) / sum(self.train.values())

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
    one tag per form, so at best each form's majority tag; a two-role word's roles are close
    to evenly split in training, so the tag it settles on is close to a coin flip; a word with
    three roles (*can*: AUX, NOUN, VERB) is named with its counts, since its commoner share
    is no coin flip between two."""
    minority = [r for r in rows if r.predicted != r.majority]
    two = [r for r in rows if len(r.train) == 2]
    more = [r for r in rows if len(r.train) > 2]
    text = _("Held out it tags **{ambiguous}** of ambiguous words right. One tag per word can "
             "at best give each word its most frequent training tag: the **majority-tag "
             "baseline**, {baseline} ({best} with the best tag for these very sentences).").format(
        ambiguous=pct(ambiguous), baseline=pct(baseline), best=pct(best_possible))
    if two:
        shares = [r.commoner_share for r in two]
        text += " " + _("For the words with two roles the commoner one has only {low} to "
                        "{high} of a word's training copies, so the tag it settles on is close "
                        "to a coin flip.").format(low=pct(min(shares)), high=pct(max(shares)))
    for r in more:
        counts = _(", ").join(f"{t} {n}" for t, n in sorted(r.train.items(),
                                                              key=lambda x: -x[1]))
        text += " " + _("*{word}* has {n} roles ({counts}): its most common, {tag}, "
                        "has {share}.").format(word=r.word, n=len(r.train), counts=counts,
                                           tag=r.majority, share=pct(r.commoner_share))
    if not minority:
        return text + " " + _("Here it chose every word's majority tag, so it sits on the "
                              "baseline.")
    names = _(", ").join(f"*{r.word}*" for r in minority)
    where = (_("For {k} of {n} words ({names}) it chose the rarer tag, which puts it below "
               "the baseline.") if ambiguous < baseline else
             _("For {k} of {n} words ({names}) it chose the rarer tag, which puts it at the "
               "baseline."))
    return text + " " + where.format(k=len(minority), n=len(rows), names=names)


def mlp_short_claim(ambiguous: float, baseline: float, double_role: float) -> str:
    """mlp_claim and double_role_claim in one sentence for a projector: the per-word tagger's
    held-out score on ambiguous words against the majority-tag baseline (below it, or at it:
    one tag per word can do no better), and its score on double-role words."""
    text = (_("Held out it tags **{ambiguous}** of ambiguous words right, below the "
              "**majority-tag baseline** ({baseline}), and **{double}** of **double-role** "
              "words (like the two saws): one tag per word is right on at most half of them.")
            if ambiguous < baseline else
            _("Held out it tags **{ambiguous}** of ambiguous words right, at the **majority-tag "
              "baseline** ({baseline}), and **{double}** of **double-role** words (like the two "
              "saws): one tag per word is right on at most half of them."))
    return text.format(ambiguous=pct(ambiguous), baseline=pct(baseline), double=pct(double_role))


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


def far_claim(n_far: int) -> str:
    """The far words' accuracies are a table beside this sentence (views.lesson)."""
    return _("Held out, on the {n} ambiguous words whose deciding word is 2 or more words "
             "back:").format(n=n_far)


def cost_claim(full: int, params: Mapping[str, int], far_wide: float, sizes: Sequence[int],
               seeds: Sequence[int], gap_wide: np.ndarray, gap_attention: np.ndarray,
               tolerance: float = 0.02, short: bool = False) -> str:
    """The widest window's accuracy and parameters, then a verdict on overfitting that
    follows the numbers of every seed: `gap_wide`, `gap_attention` are [seeds, sizes] train
    minus held-out accuracy. At a size the wide window overfits more when its gap exceeds
    self-attention's by more than `tolerance` in every seed, not more when it does so in no
    seed; else the seeds disagree. `short`: for a projector, without what the table holds
    and with the verdicts briefer (the same numbers)."""
    gap_wide, gap_attention = np.asarray(gap_wide), np.asarray(gap_attention)
    values = dict(far=pct(far_wide), wide=params["wide"],
                  ratio=params["wide"] / params["attention"], attention=params["attention"],
                  seeds=_(", ").join(map(str, seeds)))
    text = (_("Yes, **{far}** of far words held out, with **{wide:,}** parameters ({ratio:.1f} "
              "times self-attention's {attention:,}).") if short else
            _("Yes, **{far}** of far words held out, with **{wide:,}** parameters: {ratio:.1f} "
              "times self-attention's {attention:,}. The table gives training minus held-out "
              "accuracy on ambiguous words, in points, for seeds {seeds}: each seed writes its "
              "own sentences and starts from its own weights.")).format(**values)
    more = gap_wide > gap_attention + tolerance  # [seeds, sizes]
    groups = {"all": [n for k, n in enumerate(sizes) if more[:, k].all()],
              "none": [n for k, n in enumerate(sizes) if not more[:, k].any()],
              "some": [n for k, n in enumerate(sizes) if 0 < more[:, k].sum() < len(seeds)]}
    join = lambda ns: _(" and ").join(map(str, ns))  # noqa: E731
    if groups["all"]:
        text += " " + _("With {sizes} training sentences the window of {full} overfits more "
                        "than self-attention in every seed, as the lecture says.").format(
            sizes=join(groups["all"]), full=full)
    if groups["some"]:
        text += " " + _("With {sizes} the seeds disagree.").format(sizes=join(groups["some"]))
    if groups["none"]:
        text += " " + (_("With {sizes} it does not overfit more in any seed.") if short else _(
            "With {sizes} it does not overfit more in any seed (the gaps are within {points:.0f} "
            "points, or self-attention's is larger).")).format(
            sizes=join(groups["none"]), points=100 * tolerance)
    return text


def parameters_claim(params: Mapping[str, int], gaps: Mapping[str, Sequence[float]],
                     sizes: Sequence[int], labels: Mapping[str, str],
                     tolerance: float = 0.02) -> str:
    """Whether the mean gap grows with the parameter count, said as measured: '' when it
    does at every size (no tagger's gap exceeds that of one with more parameters by more
    than `tolerance`), else the pair and size where it breaks most: the tagger with fewer
    parameters and the larger gap, and the one with more parameters and the smaller gap."""
    order = sorted(gaps, key=lambda n: params[n])
    worst: tuple[float, int, str, str] | None = None  # (excess, size index, fewer, more)
    for k in range(len(sizes)):
        for i, a in enumerate(order):
            for b in order[i + 1:]:
                excess = gaps[a][k] - gaps[b][k]
                if excess > tolerance and (worst is None or excess > worst[0]):
                    worst = (excess, k, a, b)
    if worst is None:
        return ""
    _excess, k, a, b = worst
    return _("The gap does not follow the parameter count: with {n} sentences {small} "
             "({p_small:,} parameters) overfits by {g_small:.1f} points on average, {big} "
             "({p_big:,} parameters) by {g_big:.1f}.").format(
        n=sizes[k], small=labels[a], p_small=params[a], g_small=100 * gaps[a][k],
        big=labels[b], p_big=params[b], g_big=100 * gaps[b][k])


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


def positions_claim(near: float, far: float, double_role: float) -> str:
    """Tagger (d)'s held-out numbers."""
    return _("Held out: **{near}** of ambiguous words whose deciding word is a neighbour, "
             "**{far}** of those farther away, **{double_role}** of double-role words.").format(
        near=pct(near), far=pct(far), double_role=pct(double_role))


def rope_claim(near: float, far: float, double_role: float, params_rope: int,
               params_learned: int) -> str:
    """Tagger (e)'s held-out numbers beside (d)'s parameters: rotation adds none."""
    return _("Tagger (e) turns each head's $q$ and $k$ by their place instead (rotary "
             "positions, RoPE, as in Llama and SmolLM2; nothing is added to the word vectors). "
             "Held out: **{near}** of ambiguous words whose deciding word is a neighbour, "
             "**{far}** of those farther away, **{double_role}** of double-role words, with "
             "{params:,} parameters, (d)'s minus its table ({learned:,}).").format(
        near=pct(near), far=pct(far), double_role=pct(double_role), params=params_rope,
        learned=params_learned)


def length_claim(longest: int, lengths: tuple[int, int], inputs: int, seeds: Sequence[int],
                 labels: Mapping[str, str], held_out: Mapping[str, float],
                 inside: Mapping[str, float], beyond: Mapping[str, float], places: int,
                 table: int) -> str:
    """The length test in words: how it was run, each kind's mean accuracy on ambiguous
    words of the held-out sentences, of the long inputs' places 1..`longest` and past them
    (means over `seeds`), and what the code does with places a learned table never trained."""
    means = _("; ").join(_("{name}: {short} held out, {near} at places 1–{longest} and {far} "
                           "past them").format(name=labels[k], short=pct(held_out[k]),
                                               near=pct(inside[k]), far=pct(beyond[k]),
                                               longest=longest)
                         for k in labels)
    return _("**Longer than anything seen.** Each kind of position, trained on the corpus "
             "(at most {longest} words a sentence), tags {inputs} inputs of {lo} to {hi} words "
             "per seed, written by the same grammar (its sentences one after another), on "
             "seeds {seeds}. Accuracy on ambiguous words, mean over the seeds: {means}. Even "
             "the first {longest} places of a long input score below the held-out sentences: "
             "a long input holds several sentences, and no training input did. A learned "
             "table has one row per place: here {places} rows, and rows {first} to {places} "
             "get no gradient from sentences of at most {longest} words, so the words at "
             "those places get the random vectors the rows started with. Tagger (d)'s own "
             "table has {table} rows: it cannot read a word past place {table} at all (the "
             "lesson cuts a typed sentence there). Sinusoids and rotations are computed for "
             "any place.").format(
        longest=longest, inputs=inputs, lo=lengths[0], hi=lengths[1],
        seeds=", ".join(map(str, seeds)), means=means, places=places, first=longest + 1,
        table=table)


def reach_claim(params: int, places: int, dim: int, longest: int, change: float,
                wide: int, full: int) -> str:
    """What (d)'s and the widest window's parameters buy, stated as they are: (d) has a table
    of `places` position vectors ($d$ = `dim` numbers each), so it reads at most `places`
    words; the training sentences have at most `longest` words, so the rows past them were
    never trained (`change`: the largest change training made to them); the window is a
    convolution and runs on any length but sees every word only of sentences up to
    (full + 1) / 2 words."""
    return _("Tagger (d) has **{params:,}** parameters, {table:,} of them its table of "
             "{places} position vectors: it reads at most {places} words, and a longer limit "
             "needs {dim} more parameters per place. The training sentences have at most "
             "{longest} words, so the vectors of places {first} to {places} were never trained "
             "({change}): (d) has been tested on sentences of up to "
             "{longest} words only. The window of {full} has {wide:,} parameters; a "
             "convolution runs on a sentence of any length, but it sees every word only of "
             "sentences up to {covers} words (also tested up to {longest}). The table: what "
             "each needs to see every word of a longer sentence.").format(
        params=params, table=places * dim, places=places, dim=dim, longest=longest,
        first=longest + 1, full=full, wide=wide, covers=(full + 1) // 2,
        change=_("training left them exactly as they started") if change == 0 else
        _("training changed them by at most {change:.2g}").format(change=change))


def sink_claim(top: str, top_weight: float, row_share: float, all_share: float,
               word_md: str, label: str) -> str:
    """The attention step's answer: where the second copy puts its largest weight in the
    head shown, its weight on [CLS]/[SEP], and that share over every layer, head and row."""
    return _("The second *{word}* ({label}) puts its largest weight, **{w:.3f}**, on *{top}*; "
             "**{row}** of its weight in this head is on `[CLS]` and `[SEP]`. Over every layer, "
             "head and word of this sentence, **{all}** of the weight is on those two.").format(
        word=word_md, label=label, w=top_weight, top=top, row=pct(row_share),
        all=pct(all_share))


def corpus_claim(n_forms: int, n_sentences: int, n_train: int, lists: float,
                 double_role: float, longest: int, farthest: int,
                 ambiguous: Sequence[str]) -> str:
    """What the taggers' sentences are: synthetic, why, and what that does and does not
    show (analysis.corpus; the shares are counted on the training split)."""
    return _("**Where the sentences come from.** No real tagged text is used: a small grammar "
             "of {forms} word forms (analysis/corpus.py) writes all {total} sentences and "
             "their gold tags, {longest} words at most. It is built to isolate one thing, how "
             "far back the word that decides a role lies. {n_amb} words ({words}) fill both "
             "noun and verb slots; {lists} of the {train} training sentences hold a list such "
             "as *i can duck , fish and fly*, where only the word before the list decides, up "
             "to {farthest} words back; {double} use one word in two roles, as often in one as in "
             "the other. So the results compare what each kind of tagger can *see*; they are not "
             "accuracies on real English, which has far more words and cues and longer "
             "sentences. A few of the training sentences:").format(
        forms=n_forms, total=n_sentences, longest=longest, n_amb=len(ambiguous),
        words=", ".join(f"*{w}*" for w in ambiguous), lists=pct(lists), train=n_train,
        double=pct(double_role), farthest=farthest)


def bert_claim(with_positions: float, without: float, word_md: str) -> str:
    """The two copies' cosine after the last layer, with and without positions."""
    return _("With positions the two *{word}* vectors end at cosine **{with_positions:.3f}**; "
             "without positions the cosine is **{without:.6f}** in every layer: the same "
             "vector, up to float rounding.").format(word=word_md, with_positions=with_positions,
                                                     without=without)


def covering_width(distance: int) -> int:
    """The narrowest window (odd width) that reaches a word `distance` away: 2 d + 1."""
    return 2 * int(distance) + 1

