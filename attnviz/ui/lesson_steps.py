"""The lesson page's step on screen: views.lesson describes a step as Parts (a block and where
it goes), drawn here into the page's containers: `body` (the step's text, its question and
answer; the left column when presenting), `notes` (the measured claims, in smaller type when
presenting, inside `body`), `main` (the step's main figure; the right column when presenting)
and the page under them: when presenting, folded into one expander, closed, so that a
projector shows the question, the figure and Next, and nothing is lost. With a class running
(presenting), the room's answers take the notes' place: the notes and a figure of the text
column go into that expander too (the teacher says them; each student's phone shows them). The
widgets a step has (the attention step's layer and head) and the links of the last step are
drawn here too.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path

import plotly.graph_objects as go
import streamlit as st

from attnviz.analysis import lesson, taggers
from attnviz.classroom import questions
from attnviz.engine import TraceRequest
from attnviz.export.html import Heading, Markdown
from attnviz.i18n import N_, _, language
from attnviz.views import ablation as ablation_view
from attnviz.views import lesson as view

from . import classroom
from .cache import cached
from .context import Context, bert_like, cached_trace
from .lesson import numbers, student, sweep, trained_taggers
from .progress import with_progress
from .render import render
from .text import literal

ROOT = Path(__file__).resolve().parents[2]
FOLD = N_("More on step {n}: details, tables and downloads")  # presenting: the page below


def unknown_words(ctx: Context, ws: list[str]) -> list[str]:
    """The sentence's words the loaded model's vocabulary lacks, once per model and words."""
    return cached("results", ("unknown_words", ctx.model.key, tuple(ws)),
                  lambda: view.unknown_words(ctx.model, ws))


def step_of(ctx: Context, s: lesson.Step, settings: taggers.Settings, ws: list[str],
            big: bool) -> view.Lesson:
    """What the step is made from, the taggers trained (once per settings per server) only
    for the steps that show them."""
    needs = view.needs_taggers(s, ws)
    return view.Lesson(ctx.model, lambda request: cached_trace(ctx.model, request), s,
                       settings, trained_taggers(settings) if needs else None,
                       numbers(settings) if needs else None, lambda: sweep(settings), ws,
                       lesson.repeated_word(ws),
                       unknown_words(ctx, ws) if lesson.is_chinese(ws) else [], big)


class Places:
    """The page's containers for a step's parts; a question or an answer gets a container of
    its own (keyed: the page's style finds them). The page under the columns (`below`) is,
    when presenting (`fold`: the step's number), an expander closed at first, made when
    something is drawn there (its label names the step, so each step's starts closed). In a
    class (`room`, presenting), the notes and the text column's figures go there too: the
    text column holds the step's text, its question with the room's answers, and the answer."""

    def __init__(self, body, main, fold: int | None = None, room: bool = False):
        self.body, self.main, self.notes, self.question = body, main, None, None
        self.fold, self.rest, self.room = fold, None, room and fold is not None

    def below(self):
        """The page under the two columns: folded away when presenting."""
        if self.rest is None:
            self.rest = st.container(key="lesson_rest")
            if self.fold is not None:
                self.rest = self.rest.expander(_(FOLD).format(n=self.fold), expanded=False,
                                               icon=":material/unfold_more:")
        return self.rest

    def where(self, name: str):
        if name == "question":
            if self.question is None:
                self.question = self.body.container(border=True, key="lesson_question")
            return self.question
        if name == "answer":
            return self.body.container(key="lesson_answer")
        if name == "notes":
            if self.notes is None:
                self.notes = (self.below() if self.room else self.body).container(
                    key="lesson_notes")
            return self.notes
        if name == "page":
            return self.below()
        return {"body": self.body, "main": self.main}[name]

    def draw(self, parts: list[view.Part]) -> None:
        for part in parts:
            figure = self.room and part.where == "body" and part.key is not None
            render(part.block, where=self.where("page" if figure else part.where), key=part.key)


def parts(v: view.Lesson, name: str, build: Callable[[], object], *extra: Hashable):
    """A step's parts (`name`: its text, tags, table, view or download) made once per server
    for the model, step, sentence, training settings, presentation switch, language and
    `extra` (the reveal, a layer and head), then drawn from the figures cache (bounded by
    size) for every session: a class on one step costs one drawing, and a figure drawn
    again sends the JSON made the first time (ui.figures.show_figure)."""
    return cached("figures", ("lesson_parts", name, v.model.key, v.step.key, v.text,
                              v.settings, v.big, language(), *extra), build)


def show(v: view.Lesson, shown: bool, body, main, room: bool = False) -> Places:
    """Draw the step under the page's navigation: its text, the tag table, once revealed its
    view (with the attention step's layer and head, the last step's links), the download;
    when presenting (v.big), what lies under the two columns folded into one expander, and in
    a class (`room`) the notes and the text column's figures with it. The page's places are
    returned (class mode draws the room's answers under the question)."""
    places = Places(body, main, lesson.STEPS.index(v.step) + 1 if v.big else None, room)
    said = parts(v, "text", lambda: view.text(v, shown), shown)
    places.draw(classroom.for_student(said) if student() else said)
    places.where("notes")  # under the text, above what the step draws into it
    tags = parts(v, "tags", lambda: view.tags_of(v.trained, v.text))
    places.draw(parts(v, "table", lambda: view.tag_table(v, tags, shown), shown))
    if shown:
        if v.step.key == "attention":
            attention(v, places)
        else:
            places.draw(parts(v, "view", lambda: view.VIEWS[v.step.key](v)))
        if v.step.key == "bert" and bert_like(v.model):
            with places.below():
                heads_off(v)
        if v.step.key == "next":
            for path, title in view.NEXT_PAGES:
                if (ROOT / path).exists():
                    places.below().page_link(path, label=_(title))
    for block in parts(v, "download", lambda: view.download(v, tags)):
        render(block, where=places.below(), key="lesson_download")
    return places


def right_choice(v: view.Lesson) -> int | None:
    """The right choice of the step's question in class mode (classroom.questions): fixed by
    the step's reasoning, or measured on the sentence: where the second copy's largest weight
    lies in the head shown (the attention step), the two copies' cosine after the last layer
    (the real model's step). None where this model or sentence cannot say."""
    q = questions.QUESTIONS.get(v.step.key)
    if q is None or q.right is not None:
        return None if q is None else q.right
    if not bert_like(v.model) or not v.word:
        return None
    t = cached_trace(v.model, TraceRequest(v.text))
    twins = v.twins(t.tokens)
    if len(twins) < 2:
        return None
    if v.step.key == "attention":
        layer = st.session_state.get("lesson_layer", 0)
        head = st.session_state.get("lesson_head", 0)
        return questions.sink_choice(t.weights[layer, head, twins[1]], t.tokens)
    return questions.cosine_choice(float(lesson.cosine_per_layer(t.hidden_states,
                                                                 *twins[:2])[-1]))


def attention(v: view.Lesson, places: Places) -> None:
    """The attention step: a layer and a head (in the notes), then its view."""
    layer = head = 0
    if bert_like(v.model):
        t = cached_trace(v.model, TraceRequest(v.text))
        c1, c2 = places.where("notes").columns(2)
        layer = c1.selectbox(_("Layer"), range(t.n_layers), key="lesson_layer",
                             bind="query-params")
        head = c2.selectbox(_("Head"), range(t.n_heads), key="lesson_head",
                            bind="query-params")
    places.draw(parts(v, "view", lambda: view.attention(v, layer, head), layer, head))


def heads_off(v: view.Lesson) -> None:
    """The real model's step, closed by the causal question (views.ablation.lesson_parts, the
    heads only: the step drew the positions' curves): which heads, switched off one at a time,
    bring the lesson's two copies of its word closest (the two places the step's curves
    measure), computed once per model, sentence, places and language for every session (the
    results cache)."""
    request = TraceRequest(v.text)
    twins = v.twins(cached_trace(v.model, request).tokens)
    if len(twins) < 2:
        return
    pair = (twins[0], twins[1])
    render(Heading(_("Switch heads off and see"), 3))
    try:
        parts = with_progress(
            "results", ("ablation_lesson_heads", v.model.key, request, pair, language()),
            _("Removing each head..."),
            lambda p: ablation_view.lesson_parts(
                v.model, request, lambda done, total: p(done / total, f"{done}/{total}"),
                positions=False, tokens=pair), quick=True)
        for k, part in enumerate(parts):  # each figure under its own key: drawn in place,
            # with its SVG button, and laid out again on a phone (ui.show_figure)
            render(part, key=f"lesson_heads_off_{k}" if isinstance(part, go.Figure) else None)
    except ValueError as e:  # what this model or sentence cannot show, in plain words
        render(Markdown(literal(str(e)), "warning"))
