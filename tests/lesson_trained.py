"""The lesson's trained taggers and overfitting sweeps for the default settings, computed once
per test run and shared by the test modules that need them (training is the slowest step of
the lesson's tests). `prefill_app_cache()` hands the same objects to the app's cache
registry, so AppTest runs of the lesson page show exactly these taggers without retraining
(the app computes them with the very same functions; tests/test_determinism.py runs the page
with empty caches).

They are kept where the app keeps them (`taggers.kept_or_trained` / `kept_or_swept` in the
cache folder's "lesson" folder, which tests/conftest.py makes once per run and every xdist
worker and test server shares), under the lock the app's own training child takes: whoever
comes first (a worker, or a test server's preload) trains them, the others read the same
weights bit for bit (tests/test_analysis_taggers.py checks a kept copy against a training);
a worker that finds the lock held trains its own, unless the holder is the run's own warm-up
(`warm`, started at normal priority by tests/conftest.py at the start of a parallel run):
then it waits for it and reads what it kept."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
from pathlib import Path

from attnviz.analysis import taggers as T
from attnviz.settings import settings


def folder() -> Path:
    """The app's folder for kept taggers (attnviz.ui.lesson.kept_folder)."""
    return settings().cache_path / "lesson"


WARMING = "warming.pid"  # in folder(): the process id of the run's warm-up while it works


def _warming() -> bool:
    """Whether the run's warm-up (`warm`) is alive and working."""
    try:
        pid = int((folder() / WARMING).read_text())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


@contextlib.contextmanager
def _locked():
    """The lock the app's training child holds while it trains (ui.preload.CHILD), taken if
    it is free: yields the folder to keep in, or None while another process holds it (a test
    server's child trains at the lowest priority: this process then trains at its own, without
    keeping, rather than wait on it). Held by the run's warm-up, which trains at normal
    priority, the lock is waited for."""
    folder().mkdir(parents=True, exist_ok=True)
    with open(folder() / "lesson.lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not _warming():
                yield None
                return
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@functools.cache
def trained(seed: int = 0) -> T.Trained:
    """Seed `seed`'s taggers: the kept copy when there is one (read without the lock: the
    store is an SQLite database that several processes read while one writes, and a test
    server's child may hold the lock a long time for other settings), else under the lock."""
    settings = T.Settings(seed=seed)
    kept = T.load_trained(folder(), settings)
    if kept is not None and tuple(kept.models) == tuple(T.NAMES):
        return kept
    with _locked() as kept_in:
        return T.kept_or_trained(settings, kept_in)


@functools.cache
def sweeps() -> T.Sweeps:
    """The page's sweep over T.SWEEP_SEEDS (what T.overfitting_seeds computes for the default
    settings, seed 0's reusing its trained taggers; tests/test_analysis_taggers.py checks it
    run by run): the kept copy when there is one (read as `trained` reads), else under the
    lock."""
    tr = trained(0)
    if T.is_kept(folder(), T.Settings(), "sweeps"):
        return T.kept_or_swept(T.Settings(), folder(), trained=tr)
    with _locked() as kept_in:
        return T.kept_or_swept(T.Settings(), kept_in, trained=tr)


@functools.cache
def sweep(seed: int = 0) -> T.Sweep:
    if seed in T.SWEEP_SEEDS:
        return sweeps().runs[T.SWEEP_SEEDS.index(seed)]
    return T.overfitting(T.Settings(seed=seed), trained=trained(seed))


def prefill_app_cache(with_sweep: bool = True) -> None:
    from attnviz.ui.cache import cached

    settings_ = T.Settings()
    cached("taggers", settings_, trained)
    if with_sweep:
        cached("results", ("lesson_sweeps", settings_), sweeps)


def warm() -> None:
    """Train and keep the default settings' taggers and sweeps under the lock, in the run's
    own process at normal priority (tests/conftest.py starts it at the start of a parallel
    run): the workers, the test servers' training children and the command-line tests then
    read one kept copy instead of each training its own."""
    folder().mkdir(parents=True, exist_ok=True)
    marker = folder() / WARMING
    marker.write_text(str(os.getpid()))
    try:
        with open(folder() / "lesson.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            tr = T.kept_or_trained(T.Settings(), folder())
            T.kept_or_swept(T.Settings(), folder(), trained=tr)
    finally:
        marker.unlink(missing_ok=True)
