"""The lesson page's taggers: trained once per settings per server, with a progress bar."""

from __future__ import annotations

from attnviz.analysis import taggers

from .cache import cached
from .progress import with_progress


def trained_taggers(settings: taggers.Settings) -> taggers.Trained:
    """The trained taggers for `settings`; trains them (with a progress bar) on first use."""
    return with_progress("taggers", settings, "Training four taggers on the CPU (once per "
                         "settings)...", lambda progress: taggers.train_all(settings, progress))


def held_out_scores(settings: taggers.Settings) -> tuple[dict[str, taggers.Scores], dict]:
    """({tagger name: held-out Scores}, majority baselines) for `settings`, computed once per
    server: they depend on the trained taggers only, not on the sentence or the session."""
    def evaluate():
        tr = trained_taggers(settings)
        return ({taggers.NAMES[k]: taggers.evaluate(m, tr.corpus) for k, m in tr.models.items()},
                taggers.majority_baseline(tr.corpus))

    return cached("results", ("held_out_scores", settings), evaluate)
