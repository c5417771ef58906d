"""The lesson's text on a projector (presentation mode, views.lesson with big=True): steps 2
and 5 say their numbers in a few sentences in the text column (analysis.lesson.mlp_short_claim,
cost_claim(short=True)), with the same numbers and verdicts as the full claims, which move into
the step's fold; off the projector the text column keeps the full claims."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attnviz.analysis import lesson as L
from attnviz.i18n import use
from attnviz.views import lesson as view
from tests.lesson_trained import trained
from tests.test_views_lesson import step_of

PROJECTOR_WORDS = 50  # at most, in the short notes of one step (English; the full ones: 100+)


def test_the_per_word_tagger_in_one_sentence():
    text = L.mlp_short_claim(0.498, 0.527, 0.442)
    assert text == ("Held out it tags **49.8%** of ambiguous words right, below the "
                    "**majority-tag baseline** (52.7%), and **44.2%** of **double-role** words "
                    "(like the two saws): one tag per word is right on at most half of them.")
    assert "at the **majority-tag baseline** (50.0%)" in L.mlp_short_claim(0.5, 0.5, 0.45)
    assert len(text.split()) <= PROJECTOR_WORDS
    with use("zh"):
        zh = L.mlp_short_claim(0.498, 0.527, 0.442)
    assert "**49.8%**" in zh and "（52.7%）" in zh and "**44.2%**" in zh and "低于" in zh


def test_the_cost_of_a_wide_window_briefly_with_the_same_verdicts():
    params = {"wide": 168393, "attention": 73545}
    wide = np.array([[0.292, 0.125, 0.017], [0.276, 0.109, 0.008], [0.272, 0.130, 0.004]])
    att = np.array([[0.274, 0.023, 0.004], [0.167, 0.031, 0.008], [0.244, 0.036, 0.008]])
    args = (39, params, 0.958, (50, 200, 1600), (0, 1, 2), wide, att)
    full, short = L.cost_claim(*args), L.cost_claim(*args, short=True)
    assert short == ("Yes, **95.8%** of far words held out, with **168,393** parameters (2.3 "
                     "times self-attention's 73,545). With 200 training sentences the window "
                     "of 39 overfits more than self-attention in every seed, as the lecture "
                     "says. With 50 the seeds disagree. With 1600 it does not overfit more in "
                     "any seed.")
    for said in ("overfits more than self-attention in every seed", "With 50 the seeds disagree",
                 "With 1600 it does not overfit more in any seed"):
        assert said in full and said in short  # the same verdicts
    assert len(short.split()) <= PROJECTOR_WORDS < len(full.split())
    one = L.cost_claim(39, params, 0.9, (50,), (0,), np.array([[0.1]]), np.array([[0.2]]),
                       short=True)
    assert one.endswith("With 50 it does not overfit more in any seed.")
    with use("zh"):
        zh = L.cost_claim(*args, short=True)
    assert "**95.8%**" in zh and "**168,393**" in zh and "73,545" in zh and "2.3" in zh


def test_step_2_on_a_projector_short_notes_full_claims_in_the_fold(model):
    numbers = view.numbers_of(trained())
    v = step_of(model, "per_word", numbers=numbers)
    off = [p for p in view.per_word(v) if p.where == "notes"]
    on = view.per_word(dataclasses.replace(v, big=True))
    notes = [p.block.text for p in on if p.where == "notes"]
    mlp, base = numbers.scores["mlp"], numbers.baseline
    assert notes == [L.mlp_short_claim(mlp.ambiguous, base["train_majority"], mlp.double_role)]
    assert len(notes[0].split()) <= PROJECTOR_WORDS
    folded = [p.block.text for p in on if p.where == "page" and hasattr(p.block, "text")]
    assert off[0].block.text in folded  # every sentence of the full claim, in the fold


@pytest.mark.slow  # reads the lesson's sweep over seeds
def test_step_5_on_a_projector_short_notes_full_claims_in_the_fold(model):
    v = step_of(model, "cost")
    off = [p.block.text for p in view.cost(v) if p.where == "notes"]
    on = view.cost(dataclasses.replace(v, big=True))
    notes = [p.block.text for p in on if p.where == "notes"]
    assert len(notes) == 1 and notes[0].startswith("Yes, **") and "The table" not in notes[0]
    assert len(notes[0].split()) <= PROJECTOR_WORDS < len(off[0].split())
    assert off[0] in [p.block.text for p in on if p.where == "page" and hasattr(p.block, "text")]
