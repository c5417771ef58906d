"""The lesson's questions (analysis.lesson.STEPS' `predict`) as choices a student taps.

Each question offers a few choices; its right choice is either fixed by the reasoning the
step's reveal states (the same input gives the same output; a window of 3 sees different
neighbours; without positions the two copies are one input) or measured on the sentence by
the teacher's page when it reveals: where the second copy's largest weight lies in the head
shown (`sink_choice`), and the two copies' cosine after the last layer (`cosine_choice`).
The task step (tag each word yourself) and the cost step (a figure to read) ask no choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..analysis import lesson
from ..i18n import N_

SPECIAL = ("[CLS]", "[SEP]")
COSINE_EDGES = (0.9, 0.5)  # the cosine choices: above 0.9, 0.5 to 0.9, below 0.5


@dataclass(frozen=True)
class Question:
    """A step's choices (English, marked for translation) and its right one (None: measured
    on the sentence when revealed)."""

    step: str
    choices: tuple[str, ...]
    right: int | None


YES_NO = (N_("Yes"), N_("No"))
QUESTIONS: dict[str, Question] = {q.step: q for q in (
    Question("per_word", (N_("The same tag for both"), N_("A different tag for each")), 0),
    Question("window", YES_NO, 0),
    Question("far", (N_("The same tag for fly in (1) and (2)"),
                     N_("The right tag in each")), 0),
    Question("attention", (N_("On a word of the sentence"), N_("On [CLS] or [SEP]")), None),
    Question("no_positions", YES_NO, 1),
    Question("positions", YES_NO, 0),
    Question("bert", (N_("Above 0.9: nearly the same direction"), N_("Between 0.5 and 0.9"),
                      N_("Below 0.5")), None),
)}


def question(step: int) -> Question | None:
    """The question of lesson step `step` (1..N) as choices, or None (no choice to tap)."""
    if not 1 <= step <= len(lesson.STEPS):
        return None
    return QUESTIONS.get(lesson.STEPS[step - 1].key)


def sink_choice(weights_row: np.ndarray, tokens: Sequence[str]) -> int:
    """The attention question's right choice: 1 when the query's largest weight is on
    [CLS] or [SEP], else 0 (a word of the sentence)."""
    _j, token, _w = lesson.top_key(np.asarray(weights_row), list(tokens))
    return int(token in SPECIAL)


def cosine_choice(cosine: float) -> int:
    """The real-model question's right choice for the last layer's cosine: 0 above 0.9,
    1 from 0.5 to 0.9, 2 below 0.5."""
    hi, lo = COSINE_EDGES
    return 0 if cosine > hi else 1 if cosine >= lo else 2
