"""What each step of the lesson shows after its answer is revealed: the claim with its
measured numbers (analysis.lesson) and the step's figures (plotting.lesson).

Each view gets a `View`: the page's context, the step, the trained taggers and their numbers
(None on steps that need none), the sentence's words, its repeated ambiguous word, the
presentation switch, and where to write: `body` (text; the left column when presenting) and
`notes` (the measured claims, in smaller type when presenting, inside `body`) and `main`
(the step's main figure; the right column when presenting).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import streamlit as st

from attnviz import plotting
from attnviz.analysis import lesson, taggers
from attnviz.analysis.corpus import EXAMPLES, FAR_PAIR, Sentence, deciding_distances, words
from attnviz.engine import TraceRequest
from attnviz.i18n import N_, _
from attnviz.plotting import lesson as plots

from .cache import cached
from .context import Context, bert_like, cached_trace, why_not_bert_like
from .downloads import download_arrays
from .figures import show_figure
from .lesson import Numbers, sweep
from .text import literal

NAMES, SHORT = taggers.NAMES, taggers.SHORT_NAMES
WIDE = taggers.window_name(taggers.FULL_WIDTH)
ONE = {"per_word": "mlp", "window": "window3", "no_positions": "attention",
       "positions": "attention_pos"}  # the tagger a step is about
ROOT = Path(__file__).resolve().parents[2]
LABELS = {"mlp": N_("(a) per-word MLP"), "attention": N_("(c) self-attention, no positions"),
          "attention_pos": N_("(d) self-attention + positions")}  # taggers.NAMES, translated
SHORT_LABELS = {"mlp": N_("(a) per word"), "attention": N_("(c) attention"),
                "attention_pos": N_("(d) attention + positions")}  # taggers.SHORT_NAMES


def label(key: str, short: bool = False) -> str:
    """A tagger's name (taggers.NAMES, or SHORT_NAMES when `short`) in the session's
    language."""
    if key.startswith("window"):
        w = int(key.removeprefix("window"))
        if short:
            return _("(b) window {w}").format(w=w)
        whole = w == taggers.FULL_WIDTH
        return (_("(b) window of {w} (whole sentence)") if whole
                else _("(b) window of {w}")).format(w=w)
    return _((SHORT_LABELS if short else LABELS)[key])


@dataclass(frozen=True)
class View:
    ctx: Context
    step: lesson.Step
    trained: taggers.Trained | None
    numbers: Numbers | None
    ws: list[str]
    word: str | None  # the sentence's first repeated ambiguous word
    big: bool
    body: object  # Streamlit containers: the text, the measured claims, the main figure
    notes: object
    main: object

    @property
    def word_md(self) -> str | None:
        return literal(self.word) if self.word else None

    @property
    def text(self) -> str:
        return " ".join(self.ws)


def unknown_words(ctx: Context, ws: list[str]) -> list[str]:
    """The sentence's words the loaded model's vocabulary lacks (each read as [UNK]), once
    per model and words."""
    def compute() -> list[str]:
        unk = getattr(ctx.model.tokenizer, "unk_token", None)
        return lesson.unknown_words(
            ws, lambda w: ctx.model.pieces_of(ctx.model.tokenized(w).ids), unk)

    return cached("results", ("unknown_words", ctx.model.key, tuple(ws)), compute)


def fly_distance() -> int:
    """How far back the deciding word of 'fly' lies in the lesson's noun list."""
    text = FAR_PAIR[0]
    return deciding_distances(Sentence(tuple(words(text)), EXAMPLES[text]))[-1]


def tags_of(v: View) -> dict[str, list[str]]:
    """Each trained tagger's tags for the sentence ({} before training)."""
    if v.trained is None:
        return {}
    return {k: taggers.tag_sentence(m, v.trained.corpus, v.text)[1]
            for k, m in v.trained.models.items()}


def tag_table(v: View, tags: dict[str, list[str]], shown: bool) -> None:
    """The sentence's gold tags and the step's tagger (all taggers on the last step)."""
    gold = lesson.gold_tags(v.text)
    hide = [plots.HIDDEN] * len(v.ws)
    key = v.step.key
    if key == "next":
        rows = {label(k, short=True): t for k, t in tags.items()}
    elif key in ONE:
        rows = {label(ONE[key]): tags[ONE[key]] if shown else hide}
    else:
        rows = {}
    if gold is None and not rows:
        rows = {label("attention_pos") + _(": no gold tags for this sentence"):
                tags["attention_pos"] if shown or key != "task" else hide}
    show_gold = gold if gold is None or shown or key != "task" else hide
    with v.body if key == "positions" else v.main:
        show_figure(plots.tag_table(v.ws, rows, show_gold, v.big), key="lesson_fig_tags")


def task(v: View) -> None:
    with v.body:  # the step's answer (its static reveal is empty)
        st.container(key="lesson_answer").markdown(
            lesson.roles_claim(v.ws, lesson.gold_tags(v.text), v.word_md))


def per_word(v: View) -> None:
    mlp, base = v.numbers.scores["mlp"], v.numbers.baseline
    model, corpus = v.trained.models["mlp"], v.trained.corpus
    forms = lesson.form_table(corpus, {w: taggers.tag_sentence(model, corpus, w)[1][0]
                                       for w in corpus.ambiguous}, base["majority"])
    with v.notes:
        st.markdown(lesson.mlp_claim(forms, mlp.ambiguous, base["train_majority"],
                                     base["best_possible"]) + " "
                    + lesson.double_role_claim(mlp.double_role))
    fields = lesson.receptive_fields(len(v.ws), 3)
    fields.pop("window")
    with v.main:
        show_figure(plots.receptive_field(v.ws, fields, v.big), key="lesson_fig_fields")


def window(v: View) -> None:
    w3, mlp = v.numbers.scores["window3"], v.numbers.scores["mlp"]
    with v.notes:
        st.markdown(lesson.window_claim(w3.double_role, mlp.double_role, w3.ambiguous))
    fields = lesson.receptive_fields(len(v.ws), 3)
    fields.pop("self-attention")
    with v.main:
        show_figure(plots.receptive_field(v.ws, fields, v.big), key="lesson_fig_fields")


def far_tags(v: View) -> dict[str, list[str]]:
    """{window width: [tag of 'fly' in FAR_PAIR[0], in FAR_PAIR[1]]}."""
    return {str(w): [taggers.tag_sentence(v.trained.models[taggers.window_name(w)],
                                          v.trained.corpus, t)[1][-1] for t in FAR_PAIR]
            for w in taggers.WIDTHS}


def far(v: View) -> None:
    num, windows = v.numbers, [taggers.window_name(w) for w in taggers.WIDTHS]
    with v.notes:
        st.markdown(lesson.far_claim({w: num.scores[n].far for w, n in zip(
            taggers.WIDTHS, windows, strict=True)}, num.baseline["far"],
            num.scores["window3"].n_far))
    with v.main:
        show_figure(plots.far_table([_("(1) nouns: fly"), _("(2) verbs: fly")],
                                    [EXAMPLES[t][-1] for t in FAR_PAIR], far_tags(v), v.big),
                    key="lesson_fig_far_pair")
        counts = {d: n for d, _, n in num.scores["window3"].by_distance}
        show_figure(plots.accuracy_by_distance(
            {label(n, short=True): num.scores[n].at_distance() for n in windows},
            num.baseline["by_distance"], counts, v.big), key="lesson_fig_distance")


def cost(v: View) -> None:
    num, sw = v.numbers, sweep(v.trained.settings)
    params = {"wide": num.parameters[WIDE], "attention": num.parameters["attention_pos"]}
    with v.notes:
        st.markdown(lesson.cost_claim(taggers.FULL_WIDTH, params, num.scores[WIDE].far,
                                      sw.sizes, sw.gap(WIDE), sw.gap("attention_pos")))
    with v.main:
        show_figure(plots.cost_figure({label(n, short=True): num.parameters[n] for n in sw.train},
                                      sw.sizes, {label(n, short=True): sw.gap(n) for n in sw.train},
                                      v.big), key="lesson_fig_cost")


def real_model_ok(v: View, what: str) -> bool:
    """The lesson's real-model parts are written for a BERT-like encoder: True for one, else
    one sentence saying why this part is not shown for the loaded model."""
    if bert_like(v.ctx.model):
        return True
    with v.notes:
        st.info(why_not_bert_like(v.ctx.model, what))
    return False


def attention(v: View) -> None:
    if not real_model_ok(v, _("This step's real-model part")):
        return
    t = cached_trace(v.ctx.model, TraceRequest(v.text))
    twins = lesson.token_positions(t.tokens, v.word) if v.word else []
    with v.notes:
        c1, c2 = st.columns(2)
        layer = c1.selectbox(_("Layer"), range(t.n_layers), key="lesson_layer",
                             bind="query-params")
        head = c2.selectbox(_("Head"), range(t.n_heads), key="lesson_head",
                            bind="query-params")
        if len(twins) > 1:
            j, tok, w = lesson.top_key(t.weights[layer, head, twins[1]], t.tokens)
            st.markdown(_("The second *{word}* (token {i}) puts its largest weight, **{w:.3f}**, "
                          "on *{token}* (token {j}).").format(
                word=v.word_md, i=twins[1], w=w, token=literal(tok), j=j))
    with v.main:
        show_figure(plots.projector(plotting.attention_heatmap(
            t.weights[layer, head], t.tokens, "weights",
            _("layer {layer}, head {head}: weights α′").format(layer=layer, head=head)), v.big),
            key="lesson_fig_weights")
    show_figure(plots.projector(plotting.attention_heatmap(
        t.scores[layer, head], t.tokens, "scores",
        _("layer {layer}, head {head}: scores α = q·k").format(layer=layer, head=head)),
        v.big), key="lesson_fig_scores")


def no_positions(v: View) -> None:
    c = v.numbers.scores["attention"]
    with v.notes:
        st.markdown(lesson.no_positions_claim(c.double_role, c.far, lesson.order_free_rule(
            v.trained.corpus.test)))
    if real_model_ok(v, _("The real-model part of this step")):
        t_none = cached_trace(v.ctx.model, TraceRequest(v.text, positions="none"))
        twins = lesson.token_positions(t_none.tokens, v.word) if v.word else []
        if len(twins) > 1:
            cos = lesson.cosine_per_layer(t_none.hidden_states, *twins[:2])
            diff = lesson.max_abs_difference(t_none.hidden_states, *twins[:2])
            v.notes.markdown(_("BERT without positions: cosine of the two *{word}* vectors in "
                               "every layer = **{cos:.6f}**, max |difference| = **{diff:.2g}**: "
                               "equal up to float rounding.").format(
                word=v.word_md, cos=cos.min(), diff=diff))
    tagger_heads(v, "attention")


def positions(v: View) -> None:
    d, num = v.numbers.scores["attention_pos"], v.numbers
    with v.notes:
        st.markdown(lesson.positions_claim(d.near, d.far, d.double_role,
                                           num.parameters["attention_pos"], num.parameters[WIDE],
                                           taggers.FULL_WIDTH, taggers.MAX_WORDS))
    with v.main:
        show_figure(plots.accuracy_grid({label(k, short=True): s for k, s in num.scores.items()},
                                        num.baseline, v.big), key="lesson_fig_accuracy")
    tagger_heads(v, "attention_pos")


def tagger_heads(v: View, name: str) -> None:
    grid = taggers.tagger_weights(v.trained.models[name], v.trained.corpus, v.ws)[0]
    with v.main if name == "attention" else st.container():
        show_figure(plots.projector(plotting.heads_grid(grid, v.ws, "weights", title=_(
            "tagger {name}, layer 0: softmax weights (rows = queries)").format(
                name=NAMES[name][:3])), v.big),
            key="lesson_fig_tagger_heads")  # layer 0: [heads, n, n]


def bert(v: View) -> None:
    if not real_model_ok(v, _("This step")):
        return
    request = TraceRequest(v.text)
    t_pos = cached_trace(v.ctx.model, request)
    t_none = cached_trace(v.ctx.model, request.with_options(positions="none"))
    twins = lesson.token_positions(t_pos.tokens, v.word) if v.word else []
    if len(twins) < 2:
        return
    learned, none = _("learned positions"), _("no positions")
    curves = {learned: lesson.cosine_per_layer(t_pos.hidden_states, *twins[:2]),
              none: lesson.cosine_per_layer(t_none.hidden_states, *twins[:2])}
    with v.notes:
        st.markdown(lesson.bert_claim(curves[learned][-1], curves[none].min(), v.word_md))
    with v.main:
        show_figure(plots.cosine_by_layer(curves, v.word, v.big, tuple(twins[:2])),
                    key="lesson_fig_cosine")


def next_steps(v: View) -> None:
    tr = v.trained
    show_figure(plots.loss_curves({label(k, short=True): x for k, x in tr.losses.items()}, v.big),
                key="lesson_fig_loss")
    st.caption(_("Training time (s) on this server, taken while it served other work: "
                 "{times}; total {total:.1f}").format(
        times=", ".join(f"{label(k)} {x:.1f}" for k, x in tr.seconds.items()),
        total=tr.total_seconds))
    for path, title in (("pages/step_by_step.py", N_("Self-attention step by step")),
                        ("pages/positions.py", N_("Positional encoding")),
                        ("pages/windows.py", N_("Windows and receptive fields")),
                        ("pages/layer_heads.py", N_("Heads of one layer"))):
        if (ROOT / path).exists():
            st.page_link(path, label=_(title))


VIEWS: dict[str, Callable[[View], None]] = {
    "task": task, "per_word": per_word, "window": window, "far": far, "cost": cost,
    "attention": attention, "no_positions": no_positions, "positions": positions,
    "bert": bert, "next": next_steps}


def download(v: View, tags: dict[str, list[str]]) -> None:
    """The lesson's numbers as one .npz: tags, parameters, accuracies, baselines, timings."""
    num, tr = v.numbers, v.trained
    if num is None:
        return
    names = list(num.scores)
    download_arrays(_("Download the lesson's numbers (.npz)"), {
        "words": np.array(v.ws), "taggers": np.array(names),
        "tags": np.array([tags[k] for k in names]),
        "parameters": np.array([num.parameters[k] for k in names]),
        "accuracy_overall_ambiguous_double_role_near_far": np.array(
            [[s.overall, s.ambiguous, s.double_role, s.near, s.far] for s in num.scores.values()]),
        "majority_tag_ambiguous_near_far_double_role": np.array(
            [num.baseline[k] for k in ("train_majority", "near", "far", "double_role")]),
        "training_seconds": np.array([tr.seconds[k] for k in names])},
        file_name="attnviz_lesson.npz", key="lesson_download")
