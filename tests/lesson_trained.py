"""The lesson's trained taggers and overfitting sweeps for the default settings, computed once
per test process and shared by the test modules that need them (training takes seconds to a
minute on a busy CPU). `prefill_app_cache()` hands the same objects to the app's cache
registry, so AppTest runs of the lesson page show exactly these taggers without retraining
(the app computes them with the very same functions; tests/test_determinism.py runs the page
with empty caches)."""

from __future__ import annotations

import functools

from attnviz.analysis import taggers as T


@functools.cache
def trained(seed: int = 0) -> T.Trained:
    return T.train_all(T.Settings(seed=seed))


@functools.cache
def sweep(seed: int = 0) -> T.Sweep:
    return T.overfitting(T.Settings(seed=seed), trained=trained(seed))


@functools.cache
def sweeps() -> T.Sweeps:
    """The page's sweep over T.SWEEP_SEEDS: seed 0's shared sweep and the others' (what
    T.overfitting_seeds computes, tests/test_analysis_taggers.py checks it run by run)."""
    return T.Sweeps(T.SWEEP_SEEDS, tuple(sweep(0) if s == 0 else T.overfitting(T.Settings(seed=s))
                                         for s in T.SWEEP_SEEDS))


def prefill_app_cache(with_sweep: bool = True) -> None:
    from attnviz.ui.cache import cached

    settings = T.Settings()
    cached("taggers", settings, trained)
    if with_sweep:
        cached("results", ("lesson_sweeps", settings), sweeps)
