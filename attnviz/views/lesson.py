"""The lesson "I saw a saw" (pages/lesson.py): each step's text, its question, its answer and,
once revealed, the measured claims and figures.

Numbers: analysis.taggers (the trained taggers, their held-out scores, parameters and the
overfitting sweep), analysis.corpus, analysis.lesson (the steps and the sentences that state
the measured claims) and Traces of the sentence with and without positions; figures:
plotting.lesson and plotting.heatmaps.

A step is a list of Parts, in the order the page draws them: each a block (or a figure with
its key on the page) and where it goes. The page puts `body` (the step's text), `question`,
`answer` and `notes` (the measured claims) in its text column, `main` in its figure column
(side by side when presenting), `page` under both; the lesson pack writes the blocks in
order (`blocks`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .. import plotting
from ..analysis import corpus as corpora
from ..analysis import lesson, taggers
from ..analysis.corpus import EXAMPLES, FAR_PAIR, Sentence, deciding_distances, max_words, words
from ..engine import TraceRequest
from ..engine.trace import token_labels
from ..i18n import N_, _
from ..plotting import lesson as plots
from ..plotting.common import FONT
from .blocks import Heading, Markdown, Table
from .common import bert_like, literal, numbers, shown_name, why_not_bert_like

NAMES = taggers.NAMES
WIDE = taggers.window_name(taggers.FULL_WIDTH)
ONE = {"per_word": "mlp", "window": "window3", "no_positions": "attention",
       "positions": "attention_pos"}  # the tagger a step is about
NEEDS_TAGGERS = ("per_word", "window", "far", "cost", "no_positions", "positions", "next")
LABELS = {"mlp": N_("(a) per-word MLP"), "attention": N_("(c) self-attention, no positions"),
          "attention_pos": N_("(d) self-attention + positions"),
          "attention_rope": N_("(e) self-attention + rotary positions"),
          "attention_sin": N_("self-attention + sinusoidal positions")}  # taggers.LABELS
SHORT_LABELS = {"mlp": N_("(a) per word"), "attention": N_("(c) attention"),
                "attention_pos": N_("(d) attention + positions"),
                "attention_rope": N_("(e) attention + RoPE"),
                "attention_sin": N_("attention + sinusoids")}  # taggers.SHORT_NAMES
LENGTH_KINDS = {"attention_pos": N_("learned"), "attention_sin": N_("sinusoidal"),
                "attention_rope": N_("rotary")}  # the length test's rows
# A step's text on the projector where the whole one makes the text column a dense block (the
# whole text opens the step's fold)
PRESENT_TEXT = {
    "per_word": N_("One fully connected network tags each word alone: $y^i = f(x^i)$. It is "
                   "scored on {n_test} **held-out** sentences, ones it never saw."),
    "cost": N_("To see all {longest} words of the longest training sentence, a window must be "
               "{full} words wide.")}
NEXT_PAGES = (("pages/step_by_step.py", N_("Self-attention step by step")),
              ("pages/positions.py", N_("Positional encoding")),
              ("pages/windows.py", N_("Windows and receptive fields")),
              ("pages/layer_heads.py", N_("Heads of one layer")))  # linked from the last step


def label(key: str, short: bool = False) -> str:
    """A tagger's name (taggers.NAMES, or SHORT_NAMES when `short`) in the current
    language."""
    if key.startswith("window"):
        w = int(key.removeprefix("window"))
        if short:
            return _("(b) window {w}").format(w=w)
        whole = w == taggers.FULL_WIDTH
        return (_("(b) window of {w} (whole sentence)") if whole
                else _("(b) window of {w}")).format(w=w)
    return _((SHORT_LABELS if short else LABELS)[key])


# ------------------------------------------------------------------ numbers
@dataclass(frozen=True)
class Numbers:
    """Every tagger's held-out Scores and parameter count, and the majority-tag baselines."""

    scores: dict[str, taggers.Scores]  # by tagger name (taggers.NAMES' keys)
    parameters: dict[str, int]
    baseline: dict
    n_train: int
    n_test: int


def numbers_of(trained: taggers.Trained) -> Numbers:
    """The numbers of trained taggers: they depend on the taggers only, not on the sentence."""
    return Numbers({k: taggers.evaluate(m, trained.corpus) for k, m in trained.models.items()},
                   {k: taggers.parameters(m) for k, m in trained.models.items()},
                   taggers.majority_baseline(trained.corpus), len(trained.corpus.train),
                   len(trained.corpus.test))


def unk_token(model) -> str | None:
    """The model's unknown token ([UNK]), None for a tokenizer without one."""
    return getattr(model.tokenizer, "unk_token", None)


def unknown_words(model, ws: list[str]) -> list[str]:
    """The sentence's words the model's vocabulary lacks (each read as [UNK])."""
    return lesson.unknown_words(ws, lambda w: model.pieces_of(model.tokenized(w).ids),
                                unk_token(model))


def fly_distance() -> int:
    """How far back the deciding word of 'fly' lies in the lesson's noun list."""
    text = FAR_PAIR[0]
    return deciding_distances(Sentence(tuple(words(text)), EXAMPLES[text]))[-1]


def tags_of(trained: taggers.Trained | None, text: str) -> dict[str, list[str]]:
    """Each trained tagger's tags for the sentence ({} before training)."""
    if trained is None:
        return {}
    return {k: taggers.tag_sentence(m, trained.corpus, text)[1]
            for k, m in trained.models.items()}


# ------------------------------------------------------------------ a step
@dataclass(frozen=True)
class Part:
    """One block of a step and where the page draws it: "body", "question", "answer",
    "notes", "main" or "page"; `key`: a figure's key on the page."""

    where: str
    block: object
    key: str | None = None


@dataclass(frozen=True)
class Lesson:
    """What a step is made from: the model and its traces (`trace(request)`: the app's cached
    one), the step, the training settings, the trained taggers and their numbers (None on
    steps that need none), the overfitting sweep (`sweep()`, asked for by the cost step
    only), the sentence's words, its repeated ambiguous word, the words the model's
    vocabulary lacks, the presentation switch."""

    model: object
    trace: Callable[[TraceRequest], object]
    step: lesson.Step
    settings: taggers.Settings
    trained: taggers.Trained | None
    numbers: Numbers | None
    sweep: Callable[[], taggers.Sweeps | taggers.Sweep]
    ws: list[str]
    word: str | None  # the sentence's first repeated ambiguous word
    unknown: list[str] = field(default_factory=list)
    big: bool = False

    @property
    def word_md(self) -> str | None:
        return literal(self.word) if self.word else None

    @property
    def text(self) -> str:
        return " ".join(self.ws)

    def twins(self, tokens) -> list[int]:
        """The places of the lesson's word among a trace's tokens, [UNK] copies included
        (analysis.lesson.word_token_positions); [] without a repeated word."""
        if not self.word:
            return []
        return lesson.word_token_positions(list(tokens), self.ws, self.word,
                                           unk_token(self.model))


def title() -> Heading:
    return Heading(_("I saw a saw: why self-attention needs positions"), 1)


def no_model(error: str | None) -> Markdown:
    return Markdown(error or _("No model is loaded."), "error")


def step_banner(step: int, n: int, name: str) -> Markdown:
    """A step's number and title, large (the presentation's heading)."""
    return Markdown(f"## {step}/{n} · {name}")


def sentence_notes(text: str) -> tuple[list[str], list]:
    """(the lesson's words of `text`, what the page says about them: nothing to show, or
    only the first words used)."""
    all_words = lesson.lesson_words(text)
    ws = all_words[: taggers.MAX_WORDS]
    if not ws:
        return ws, [Markdown(_("Type a sentence in the sidebar (or pick an example), e.g. "
                               "*I saw a saw*."), "info")]
    if len(all_words) > taggers.MAX_WORDS:
        return ws, [Markdown(_("The lesson uses the first {n} words of this sentence.").format(
            n=taggers.MAX_WORDS), "warning")]
    return ws, []


def needs_taggers(step: lesson.Step, ws: list[str]) -> bool:
    """Whether the step shows the trained taggers (any step does for a sentence without
    gold tags: its tag table shows tagger (d)'s)."""
    return step.key in NEEDS_TAGGERS or lesson.gold_tags(" ".join(ws)) is None


def fields(v: Lesson) -> dict:
    """The numbers a step's text names ({model}, {longest}, ...)."""
    num = v.numbers
    name = literal(shown_name(v.model))  # a folder's name: shown as typed
    return {"model": lesson.model_description(v.model.name, v.model.n_layers,
                                              v.model.n_heads, shown=name),
            "model_name": name, "longest": max_words(),
            "full": taggers.FULL_WIDTH, "dim": v.settings.dim,
            "fly_distance": fly_distance(),
            "fly_width": lesson.covering_width(fly_distance()),
            **({"n_train": num.n_train, "n_test": num.n_test} if num else {})}


def chinese_notes(v: Lesson) -> list[Part]:
    """For a sentence with Chinese characters: which ones the model's vocabulary lacks (read
    as [UNK]), and that the taggers, trained on English, cannot read any of them (on the
    projector in the step's fold: the text column keeps its room for the question and the
    answer)."""
    if not lesson.is_chinese(v.ws):
        return []
    out = []
    if v.unknown:
        out.append(Part("page" if v.big else "body", Markdown(_(
            "{model}'s vocabulary has no entry for {chars}: each is read as {unk}, one shared "
            "vector, so the model cannot tell them apart by their meaning.").format(
            model=literal(shown_name(v.model)), chars="、".join(literal(w) for w in v.unknown),
            unk=literal(unk_token(v.model))), "warning")))
    if v.step.key in NEEDS_TAGGERS:
        out.append(Part("page" if v.big else "body", Markdown(_(
            "The taggers learned from English sentences: every Chinese character is an unknown "
            "word to them, so their tags here say nothing. The steps with the real model "
            "(self-attention, a real pretrained model) read the Chinese."), "info")))
    return out


def text(v: Lesson, shown: bool) -> list[Part]:
    """The step's title (outside presentation mode), text, question and static answer."""
    s, word_md, f = v.step, v.word_md, fields(v)
    out = [] if v.big else [Part("body", Heading(_(s.title), 2))]
    full = Markdown(lesson.fill(_(s.text), word_md, **f))
    if v.big and s.key in PRESENT_TEXT:  # the projector: fewer words, all of them in the fold
        out += [Part("body", Markdown(lesson.fill(_(PRESENT_TEXT[s.key]), word_md, **f))),
                Part("page", full)]
    else:
        out.append(Part("body", full))
    if v.word is None and s.key not in ("far", "cost", "next"):
        out.append(Part("body", Markdown(_(
            "This sentence has no ambiguous word that occurs twice. Pick an example such as "
            "*They can can the can* or *我上山，山上有花。*, or type a sentence that repeats one "
            "of: {words}.").format(words=", ".join(literal(w) for w in lesson.AMBIGUOUS)),
            "info")))
    out += chinese_notes(v)
    if s.predict:
        out.append(Part("question", Markdown(
            ":material/help: " + _("**Predict first:**") + " "
            + lesson.fill(_(s.predict), word_md, **f)
            + ("" if shown else " " + _("*(Answer ▶ reveals it.)*")))))
    if shown and s.reveal:
        out.append(Part("answer", Markdown(lesson.fill(_(s.reveal), word_md, **f))))
    if s.key == "per_word" and v.trained is not None and not shown:
        out += corpus_parts(v.trained.corpus)  # (once shown: under the answer's table)
    return out


def tag_table(v: Lesson, tags: dict[str, list[str]], shown: bool) -> list[Part]:
    """The sentence's gold tags and the step's tagger (all taggers on the last step)."""
    key = v.step.key
    if key not in ("task", "per_word", "window", "no_positions", "positions", "next"):
        return []
    gold = lesson.gold_tags(v.text)
    hide = [plots.HIDDEN] * len(v.ws)
    if key == "next":
        rows = {label(k, short=True): t for k, t in tags.items()}
    elif key in ONE:
        rows = {label(ONE[key], short=v.big and (key == "positions" or long_sentence(v))):
                tags[ONE[key]] if shown else hide}
        if key == "positions" and "attention_rope" in tags and not v.big:  # (e) beside (d);
            # on the projector (d) alone: the table then fits under the step's text
            rows[label("attention_rope")] = tags["attention_rope"] if shown else hide
    else:
        rows = {}
    if gold is None and not rows:
        rows = {label("attention_pos") + _(": no gold tags for this sentence"):
                tags["attention_pos"] if shown or key != "task" else hide}
    show_gold = gold if gold is None or shown or key != "task" else hide
    body = key == "positions"  # in the text column: on the projector, narrower name lines
    # every tagger's tags of a long sentence, in bands on the projector, are taller than its
    # screen: in the step's fold (the training losses take the figure column)
    where = "body" if body else "page" if key == "next" and banded(v) else "main"
    return [Part(where,
                 plots.tag_table(v.ws, rows, show_gold, v.big,
                                 units=BODY_NAME_UNITS if body and v.big else None,
                                 across=BODY_WORDS_ACROSS if body else plots.WORDS_ACROSS_BIG),
                 "lesson_fig_tags")]


BODY_NAME_UNITS = 14  # a tagger's name line in the projector's text column (CJK counts two)
BODY_WORDS_ACROSS = 4  # words in one row there ("I saw a saw"); a longer sentence in bands
# The figure column of a 1280x720 screen when presenting: it starts under the step's title row
# (134 px down), Streamlit puts 16 px between two figures, 8 px are kept free at the bottom.
PRESENT_ROOM, PRESENT_GAP = 720 - 134 - 8, 16


def long_sentence(v: Lesson) -> bool:
    """Whether the step is on the projector with a sentence whose tag table is in small type
    (plotting.lesson.WORDS_LARGE_BIG): its figures then take the room the table leaves."""
    return v.big and len(v.ws) > plots.WORDS_LARGE_BIG


def banded(v: Lesson) -> bool:
    """Whether the step is on the projector with a sentence whose tag table runs across in
    bands (plotting.lesson.WORDS_ACROSS_BIG)."""
    return v.big and len(v.ws) > plots.WORDS_ACROSS_BIG


def room_under_table(v: Lesson) -> int:
    """px of the projector's figure column left under the step's tag table (its height is
    the same whatever the tags: they are drawn hidden here)."""
    hidden = {k: [plots.HIDDEN] * len(v.ws) for k in NAMES}
    table = [p.block for p in tag_table(v, hidden, False) if p.where == "main"]
    return PRESENT_ROOM - sum(t.layout.height + PRESENT_GAP for t in table)


def task(v: Lesson) -> list[Part]:
    # the step's answer (its static reveal is empty)
    return [Part("answer", Markdown(lesson.roles_claim(v.ws, lesson.gold_tags(v.text),
                                                       v.word_md)))]


def per_word(v: Lesson) -> list[Part]:
    mlp, base = v.numbers.scores["mlp"], v.numbers.baseline
    model, corpus = v.trained.models["mlp"], v.trained.corpus
    forms = lesson.form_table(corpus, {w: taggers.tag_sentence(model, corpus, w)[1][0]
                                       for w in corpus.ambiguous}, base["majority"])
    seen = lesson.receptive_fields(len(v.ws), 3)
    seen.pop("window")
    full = Markdown(lesson.mlp_claim(forms, mlp.ambiguous, base["train_majority"],
                                     base["best_possible"]) + " "
                    + lesson.double_role_claim(mlp.double_role))
    # a projector's text column: the numbers in one sentence, the reasons in the fold
    said = [Part("notes", Markdown(lesson.mlp_short_claim(
        mlp.ambiguous, base["train_majority"], mlp.double_role))), Part("page", full)] \
        if v.big else [Part("notes", full)]
    return [*said,
            Part("main", fields_figure(v, seen), "lesson_fig_fields"),
            Part("page", forms_table(forms)), *corpus_parts(v.trained.corpus)]


def fields_figure(v: Lesson, seen: dict):
    """The receptive fields; on the projector under a long sentence's table (in small type
    or in bands), all the room the table leaves."""
    return plots.receptive_field(v.ws, seen, v.big,
                                 room_under_table(v) if long_sentence(v) else None)


def forms_table(rows: list[lesson.FormRow]) -> Table:
    """Each ambiguous word: its roles in training, its commoner role's share, the one tag
    the per-word tagger gives it, and how many held-out copies that tag gets right."""
    return Table({
        _("word"): [r.word for r in rows],
        _("training copies by tag"): [", ".join(f"{t} {n}" for t, n in sorted(
            r.train.items(), key=lambda x: -x[1])) for r in rows],
        _("most common tag's share"): [lesson.pct(r.commoner_share) for r in rows],
        _("tag (a) gives"): [r.predicted for r in rows],
        _("held-out copies right"): [f"{r.held_out_right} / {sum(r.held_out.values())}"
                                     for r in rows]})


def corpus_parts(corpus) -> list[Part]:
    """What the taggers' sentences are (synthetic: analysis.corpus) and a few of them."""
    train = corpus.train
    shown = corpora.samples(train)
    farthest = max(d for s in train for d in deciding_distances(s) if d is not None)
    return [Part("page", Markdown(lesson.corpus_claim(
                len(corpora.vocabulary()), len(train) + len(corpus.test), len(train),
                sum(map(corpora.has_list, train)) / len(train),
                sum(s.double_role for s in train) / len(train),
                max(len(s.words) for s in (*train, *corpus.test)), farthest,
                corpus.ambiguous))),
            Part("page", Table({_("training sentence"): [s.text for s in shown],
                                _("gold tags"): [" ".join(s.tags) for s in shown]}))]


def window(v: Lesson) -> list[Part]:
    w3, mlp = v.numbers.scores["window3"], v.numbers.scores["mlp"]
    seen = lesson.receptive_fields(len(v.ws), 3)
    seen.pop("self-attention")
    return [Part("notes", Markdown(lesson.window_claim(w3.double_role, mlp.double_role,
                                                       w3.ambiguous))),
            Part("main", fields_figure(v, seen), "lesson_fig_fields")]


def far_tags(v: Lesson) -> dict[str, list[str]]:
    """{window width: [tag of 'fly' in FAR_PAIR[0], in FAR_PAIR[1]]}."""
    return {str(w): [taggers.tag_sentence(v.trained.models[taggers.window_name(w)],
                                          v.trained.corpus, t)[1][-1] for t in FAR_PAIR]
            for w in taggers.WIDTHS}


def far(v: Lesson) -> list[Part]:
    num, windows = v.numbers, [taggers.window_name(w) for w in taggers.WIDTHS]
    counts = {d: n for d, _, n in num.scores["window3"].by_distance}
    table = "page" if v.big else "notes"  # a projector's text column holds no 5-row table
    return [Part(table, Markdown(lesson.far_claim(num.scores["window3"].n_far))),
            Part(table, Table({
                "": [label(n) for n in windows] + [_("majority tag per word")],
                _("held-out accuracy on far words"): [lesson.pct(num.scores[n].far)
                                                      for n in windows]
                + [lesson.pct(num.baseline["far"])]})),
            Part("main", plots.far_table([_("(1) nouns: fly"), _("(2) verbs: fly")],
                                         [EXAMPLES[t][-1] for t in FAR_PAIR], far_tags(v),
                                         v.big), "lesson_fig_far_pair"),
            Part("main", plots.accuracy_by_distance(
                {label(n, short=True): num.scores[n].at_distance() for n in windows},
                num.baseline["by_distance"], counts, v.big), "lesson_fig_distance")]


def as_sweeps(sw: taggers.Sweeps | taggers.Sweep, seed: int = 0) -> taggers.Sweeps:
    """One seed's Sweep as Sweeps (a caller that ran the sweep for one seed only)."""
    return sw if isinstance(sw, taggers.Sweeps) else taggers.Sweeps((seed,), (sw,))


@dataclass(frozen=True)
class ColumnsTable(Table):
    """A Table too wide for a phone: there it is shown one column at a time, each column after
    the first beside the first (ui.render); elsewhere as one table."""

    phone_by_column: bool = True


def sweep_table(sw: taggers.Sweeps) -> Table:
    """Training minus held-out accuracy (points): one row per tagger, one column per training
    size, each cell the mean over the seeds with the smallest and largest seed's gap. A phone
    shows one training size at a time (its column beside the taggers')."""
    cols = {_("tagger"): [label(n, short=True) for n in sw.names]}
    for k, size in enumerate(sw.sizes):
        cells = []
        for n in sw.names:
            g = 100 * sw.gaps(n)[:, k]
            cells.append(f"{g.mean():.1f} ({g.min():.1f} … {g.max():.1f})" if len(g) > 1
                         else f"{g[0]:.1f}")
        cols[_("{n} sentences").format(n=size)] = cells
    return ColumnsTable(cols)


def cost(v: Lesson) -> list[Part]:
    num, sw = v.numbers, as_sweeps(v.sweep(), v.settings.seed)
    params = {"wide": num.parameters[WIDE], "attention": num.parameters["attention_pos"]}
    means = {n: sw.mean_gap(n) for n in sw.names}
    verdict = lesson.parameters_claim({n: num.parameters[n] for n in sw.names}, means, sw.sizes,
                                      {n: label(n, short=True) for n in sw.names})
    claim = [taggers.FULL_WIDTH, params, num.scores[WIDE].far, sw.sizes, sw.seeds,
             sw.gaps(WIDE), sw.gaps("attention_pos")]
    full = Markdown(lesson.cost_claim(*claim) + (" " + verdict if verdict else ""))
    # a projector's text column: the numbers and verdicts briefly, all of it in the fold
    said = [Part("notes", Markdown(lesson.cost_claim(*claim, short=True))), Part("page", full)] \
        if v.big else [Part("notes", full)]
    return [*said,
            Part("main", plots.cost_figure(
                {label(n, short=True): num.parameters[n] for n in sw.names}, sw.sizes,
                {label(n, short=True): sw.gaps(n) for n in sw.names}, v.big),
                "lesson_fig_cost"),
            Part("page", Markdown(_("Training minus held-out accuracy (points): the mean of "
                                    "seeds {seeds}, and in brackets the smallest and largest "
                                    "seed's.").format(seeds=", ".join(map(str, sw.seeds))),
                                  "caption")),
            Part("page", sweep_table(sw))]


def real_model_refused(v: Lesson, what: str) -> list[Part]:
    """The lesson's real-model parts are written for a BERT-like encoder: [] for one, else
    the sentence saying why this part is not shown for the loaded model."""
    if bert_like(v.model):
        return []
    return [Part("notes", Markdown(why_not_bert_like(v.model, what), "info"))]


def attention(v: Lesson, layer: int = 0, head: int = 0) -> list[Part]:
    """The step "Self-attention" for the chosen layer and head (the page's selectboxes)."""
    refused = real_model_refused(v, _("This step's real-model part"))
    if refused:
        return refused
    t = v.trace(TraceRequest(v.text))
    twins = v.twins(t.tokens)
    out = []
    if len(twins) > 1:
        names = token_labels(list(t.tokens))
        j, _tok, w = lesson.top_key(t.weights[layer, head, twins[1]], t.tokens)
        sinks = [i for i, tok in enumerate(t.tokens) if tok in ("[CLS]", "[SEP]")]
        out.append(Part("notes", Markdown(lesson.sink_claim(
            literal(names[j]), w, lesson.special_share(t.weights[layer, head, twins[1]], sinks),
            lesson.special_share(t.weights, sinks), v.word_md, literal(names[twins[1]])))))
    out.append(Part("main", big_map(plotting.attention_heatmap(
        t.weights[layer, head], t.tokens, "weights",
        _("layer {layer}, head {head}: weights α′").format(layer=layer, head=head)), v.big),
        "lesson_fig_weights"))
    out.append(Part("page", big_map(plotting.attention_heatmap(
        t.scores[layer, head], t.tokens, "scores",
        _("layer {layer}, head {head}: scores α = q·k").format(layer=layer, head=head)),
        v.big), "lesson_fig_scores"))
    return out


PRESENT_MAP_HEIGHT = 540  # the attention step's map in the figure column of a 1280x720 screen


def big_map(fig, big: bool):
    """An attention map as the step shows it: on the projector in large type, its labels' and
    colour bar's room measured at that size (plotting.lesson.projector_heatmap)."""
    return plots.projector_heatmap(fig, PRESENT_MAP_HEIGHT) if big else fig


PRESENT_HEADS_HEIGHT = 345  # the heads under the tag table (its toolbar room): one 1280x720 screen
ROW_LINE = 1.25  # a row label's line, in px per px of type


def bar_title(fig, size: int) -> None:
    """The heads grid's colour bar title at `size` px (projector_grid leaves it at the small
    size), the bar that much further below the key labels, which keep their room."""
    bar = fig.layout.coloraxis.colorbar
    grow = size - (bar.title.font.size or FONT["size"])
    if grow <= 0:
        return
    plot = fig.layout.height - (fig.layout.margin.t or 0) - fig.layout.margin.b  # px, before
    fig.layout.margin.b += grow
    bar.y = (bar.y * plot - grow) / (plot - grow)
    bar.title.font.size = size


def tagger_heads(v: Lesson, name: str) -> Part:
    grid = taggers.tagger_weights(v.trained.models[name], v.trained.corpus, v.ws)[0]
    main = name == "attention"
    fig = plotting.heads_grid(grid, v.ws, "weights", title=_(
        "tagger {name}, layer 0: softmax weights (rows = queries)").format(
        name=NAMES[name][:3]))  # layer 0: [heads, n, n]
    long = long_sentence(v)  # under a long sentence's banded table: the room it leaves
    fig = (plots.projector_grid(fig, room_under_table(v) if long else PRESENT_HEADS_HEIGHT)
           if main and v.big else plots.bar_at_bottom(plots.projector(fig, v.big)))
    if main and v.big:  # the colour bar's title as large as the projector's smallest text
        bar_title(fig, plots.LARGE - 4)
        # one query label a row: the projector's smallest text under a long sentence's
        # table, or where rows are closer than a line of large type ("We book the old book")
        plot = fig.layout.height - (fig.layout.margin.t or 0) - fig.layout.margin.b
        if long or plot / max(len(v.ws), 1) < ROW_LINE * plots.LARGE:
            fig.layout.yaxis.tickfont.size = plots.BAND_SIZE
    return Part("main" if main else "page", fig, "lesson_fig_tagger_heads")


def no_positions(v: Lesson) -> list[Part]:
    c = v.numbers.scores["attention"]
    out = [Part("notes", Markdown(lesson.no_positions_claim(
        c.double_role, c.far, lesson.order_free_rule(v.trained.corpus.test))))]
    refused = real_model_refused(v, _("The real-model part of this step"))
    out += refused
    if not refused:
        t_none = v.trace(TraceRequest(v.text, positions="none"))
        twins = v.twins(t_none.tokens)
        if len(twins) > 1:
            cos = lesson.cosine_per_layer(t_none.hidden_states, *twins[:2])
            diff = lesson.max_abs_difference(t_none.hidden_states, *twins[:2])
            out.append(Part("page" if v.big else "notes", Markdown(_(  # (projector: fold)
                "BERT without positions: cosine of the two *{word}* vectors in every layer = "
                "**{cos:.6f}**, max |difference| = **{diff:.2g}**: equal up to float "
                "rounding.").format(word=v.word_md, cos=cos.min(), diff=diff))))
    return [*out, tagger_heads(v, "attention")]


REACH_LENGTHS = (10, 20, 40, 80)  # sentence lengths of the cost table (positions step)


def reach_table(v: Lesson) -> Table:
    """Parameters each needs to see every word of a sentence of L words, counted on built
    models (taggers.cost_by_length)."""
    cost = taggers.cost_by_length(v.trained.corpus, v.settings, REACH_LENGTHS)
    return Table({_("sentence length L (words)"): list(REACH_LENGTHS),
                  _("window of 2L−1: parameters"): [f"{n:,}" for n in cost["window"]],
                  _("(d) with L places: parameters"): [f"{n:,}"
                                                       for n in cost["attention_pos"]]})


def rope_notes(v: Lesson) -> list[Part]:
    """Tagger (e) (rotary positions) beside (d): its held-out numbers ([] without it), on the
    projector in the step's fold (its text column holds (d)'s numbers and tag table)."""
    num = v.numbers
    if "attention_rope" not in num.scores:
        return []
    e = num.scores["attention_rope"]
    return [Part("page" if v.big else "notes", Markdown(lesson.rope_claim(
        e.near, e.far, e.double_role, num.parameters["attention_rope"],
        num.parameters["attention_pos"])))]


def length_cells(values: dict[str, tuple[float, ...]]) -> list[str]:
    """'mean (smallest … largest)' over the seeds, in percent, per tagger."""
    out = []
    for x in values.values():
        a = 100 * np.asarray(x, dtype=np.float64)
        out.append(f"{a.mean():.1f} ({a.min():.1f} … {a.max():.1f})" if len(a) > 1
                   else f"{a[0]:.1f}")
    return out


def length_table(lt: taggers.LengthTest) -> Table:
    """The length test: a row per kind of position, a column per group of ambiguous words."""
    return ColumnsTable({
        _("positions"): [_(LENGTH_KINDS.get(k, k)) for k in lt.names],
        _("held out (≤ {n} words)").format(n=lt.longest): length_cells(lt.held_out),
        _("long inputs, places 1–{n}").format(n=lt.longest): length_cells(lt.inside),
        _("long inputs, places {a}–{b}").format(a=lt.longest + 1, b=lt.lengths[1]):
            length_cells(lt.beyond)})


def length_parts(v: Lesson) -> list[Part]:
    """The length test (taggers.length_test, run with the sweep: Sweeps.lengths): the claim,
    a figure and the table; [] when the sweep carries none."""
    lt = as_sweeps(v.sweep(), v.settings.seed).lengths
    if lt is None:
        return []
    kinds = {k: _(LENGTH_KINDS.get(k, k)) for k in lt.names}
    mean = {part: {k: float(np.mean(x)) for k, x in getattr(lt, part).items()}
            for part in ("held_out", "inside", "beyond")}
    groups = {_("held out (≤ {n} words)").format(n=lt.longest): lt.held_out,
              _("long inputs, places 1–{n}").format(n=lt.longest): lt.inside,
              _("long inputs, places {a}–{b}").format(a=lt.longest + 1, b=lt.lengths[1]):
                  lt.beyond}
    return [Part("page", Markdown(lesson.length_claim(
                lt.longest, lt.lengths, lt.inputs, lt.seeds, kinds, mean["held_out"],
                mean["inside"], mean["beyond"], taggers.LENGTH_PLACES, taggers.MAX_WORDS))),
            Part("page", plots.length_figure(
                {kinds[k]: {g: np.asarray(x[k]) for g, x in groups.items()} for k in lt.names},
                v.big), "lesson_fig_lengths"),
            Part("page", Markdown(_("Accuracy on ambiguous words (%): the mean of seeds "
                                    "{seeds}, and in brackets the smallest and largest "
                                    "seed's.").format(seeds=", ".join(map(str, lt.seeds))),
                                  "caption")),
            Part("page", length_table(lt))]


def positions(v: Lesson) -> list[Part]:
    d, num = v.numbers.scores["attention_pos"], v.numbers
    places, longest, change = taggers.untrained_positions(
        v.trained.models["attention_pos"], v.trained.corpus, v.settings)
    # on the projector (d)'s numbers are the accuracy grid's row beside the text: the
    # sentence goes to the fold, and the text column keeps room for the tag table
    return [Part("page" if v.big else "notes",
                 Markdown(lesson.positions_claim(d.near, d.far, d.double_role))),
            *rope_notes(v),
            Part("main", plots.accuracy_grid(
                {label(k, short=True): s for k, s in num.scores.items()}, num.baseline, v.big),
                "lesson_fig_accuracy"),
            Part("page", Markdown(lesson.reach_claim(
                num.parameters["attention_pos"], places, v.settings.dim, longest, change,
                num.parameters[WIDE], taggers.FULL_WIDTH))),
            Part("page", reach_table(v)),
            tagger_heads(v, "attention_pos"),
            *length_parts(v)]


def bert(v: Lesson) -> list[Part]:
    refused = real_model_refused(v, _("This step"))
    if refused:
        return refused
    request = TraceRequest(v.text)
    t_pos = v.trace(request)
    t_none = v.trace(request.with_options(positions="none"))
    twins = v.twins(t_pos.tokens)
    if len(twins) < 2:
        return []
    learned, none = _("learned positions"), _("no positions")
    curves = {learned: lesson.cosine_per_layer(t_pos.hidden_states, *twins[:2]),
              none: lesson.cosine_per_layer(t_none.hidden_states, *twins[:2])}
    return [Part("notes", Markdown(lesson.bert_claim(curves[learned][-1], curves[none].min(),
                                                     v.word_md))),
            Part("main", plots.cosine_by_layer(curves, v.word, v.big, tuple(twins[:2])),
                 "lesson_fig_cosine")]


def next_steps(v: Lesson) -> list[Part]:
    """The last step (the page adds its links to the other pages under it)."""
    tr = v.trained
    return [Part("main" if banded(v) else "page",  # (its tag table in the fold)
                 plots.loss_curves({label(k, short=True): x for k, x in tr.losses.items()},
                                   v.big, PRESENT_ROOM if banded(v) else None),
                 "lesson_fig_loss"),
            Part("page", Markdown((_(
                "These taggers were read from the server's disk, kept by an earlier run with "
                "the same settings and code. Their training took (s): {times}; total "
                "{total:.1f}") if tr.kept else _(
                "Training time (s) on this server, taken while it served other work: {times}; "
                "total {total:.1f}")).format(
                times=", ".join(f"{label(k)} {x:.1f}" for k, x in tr.seconds.items()),
                total=tr.total_seconds), "caption"))]


VIEWS: dict[str, Callable[[Lesson], list[Part]]] = {
    "task": task, "per_word": per_word, "window": window, "far": far, "cost": cost,
    "attention": attention, "no_positions": no_positions, "positions": positions,
    "bert": bert, "next": next_steps}


def download(v: Lesson, tags: dict[str, list[str]]) -> list:
    """The lesson's numbers as one .npz: tags, parameters, accuracies, baselines, timings
    ([] on a step without trained taggers)."""
    num, tr = v.numbers, v.trained
    if num is None:
        return []
    names = list(num.scores)
    return [numbers(_("Download the lesson's numbers (.npz)"), {
        "words": np.array(v.ws), "taggers": np.array(names),
        "tags": np.array([tags[k] for k in names]),
        "parameters": np.array([num.parameters[k] for k in names]),
        "accuracy_overall_ambiguous_double_role_near_far": np.array(
            [[s.overall, s.ambiguous, s.double_role, s.near, s.far] for s in num.scores.values()]),
        "majority_tag_ambiguous_near_far_double_role": np.array(
            [num.baseline[k] for k in ("train_majority", "near", "far", "double_role")]),
        "training_seconds": np.array([tr.seconds[k] for k in names])},
        "attnviz_lesson.npz")]


def step_parts(v: Lesson, shown: bool, layer: int = 0, head: int = 0) -> list[Part]:
    """The whole step under the page's navigation, in the order drawn (the attention step's
    layer and head selectboxes, the last step's links and the download left out)."""
    tags = tags_of(v.trained, v.text)
    out = [*text(v, shown), *tag_table(v, tags, shown)]
    if shown:
        out += attention(v, layer, head) if v.step.key == "attention" else VIEWS[v.step.key](v)
    return out


def blocks(parts: list[Part]) -> list:
    return [p.block for p in parts]


def page(model, trace: Callable, text: str, step: int, trained: Callable[[], taggers.Trained],
         numbers: Callable[[], Numbers], sweep: Callable[[], taggers.Sweep],
         settings: taggers.Settings | None = None, shown: bool = True) -> list:
    """Step `step` (1..N) as the page opens on it for `text` with the training `settings`,
    outside presentation mode, its answer `shown`: the trained taggers, their numbers and
    the sweep are asked for only by the steps that show them."""
    s = lesson.STEPS[step - 1]
    ws, notes = sentence_notes(text)
    if not ws:
        return [title(), *notes]
    needs = needs_taggers(s, ws)
    v = Lesson(model, trace, s, settings or taggers.Settings(), trained() if needs else None,
               numbers() if needs else None, sweep, ws, lesson.repeated_word(ws),
               unknown_words(model, ws) if lesson.is_chinese(ws) else [])
    return [title(), *notes, *blocks(step_parts(v, shown)),
            *download(v, tags_of(v.trained, v.text))]
