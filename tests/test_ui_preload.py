"""The model loaded while the server starts (attnviz.ui.preload, started by scripts/run_app.py)
is the one the first page uses: it lies in the cache registry under the key the sidebar's
default asks for, a page that asks while it is loading waits and gets the same object (one
load, not two), and the default page then runs without loading anything. scripts/run_app.py
imports neither torch nor Streamlit before the server runs, and starts the preload once the
server answers its health check (checked in a fresh interpreter).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from pathlib import Path

import pytest

from attnviz import settings as app_settings
from attnviz.engine import TraceRequest
from attnviz.ui import preload
from attnviz.ui.cache import CACHES, forget, peek
from attnviz.ui.context import DEFAULT_TEXT, cached_model
from tests.apptest import open_page
from tests.fresh import last_line
from tests.plotly_json import specs

ROOT = Path(__file__).resolve().parents[1]


def test_a_page_asking_during_the_preload_gets_the_preloaded_model():
    models, traces = CACHES["models"], CACHES["traces"]
    models.clear()
    misses = models.misses
    thread = threading.Thread(target=preload.preload)
    thread.start()
    asked = cached_model(None, preload.PRELOAD_DEVICE)  # waits on the key if it is loading
    thread.join(300)
    assert preload.STATE["error"] is None and preload.STATE["done"] is not None
    assert models.misses == misses + 1  # loaded once, by whichever came first
    assert cached_model(None, preload.PRELOAD_DEVICE) is asked
    assert (asked.key, TraceRequest(DEFAULT_TEXT)) in traces  # the default sentence

    before = (models.misses, traces.misses)
    at = open_page()  # the page served at "/" with the sidebar's defaults
    assert specs(at), "the first page draws its heatmaps"
    assert (models.misses, traces.misses) == before  # nothing loaded or computed again


def test_run_app_imports_no_torch_before_the_server_answers():
    """The preload thread waits for the health check before it imports anything: until the
    server answers, only attnviz's settings are imported (no torch, Streamlit or attnviz.ui)."""
    code = ("import runpy, sys, time; sys.argv = ['run_app.py']; "
            "m = runpy.run_path('scripts/run_app.py', run_name='not_main'); "
            "url = m['health_url'](['--server.port', '1']); "
            "thread = m['start_preload'](url); time.sleep(1.0); "
            "print(url, thread.is_alive(), sorted(k for k in sys.modules if k.split('.')[0] in "
            "('torch', 'attnviz', 'transformers', 'streamlit')))")
    assert last_line(code, timeout=120) == (
        "http://127.0.0.1:1/_stcore/health True ['attnviz', 'attnviz.settings']")


@pytest.mark.parametrize("flags, env, url", [
    ([], {}, "http://127.0.0.1:8501/_stcore/health"),
    (["--server.port", "8600"], {}, "http://127.0.0.1:8600/_stcore/health"),
    (["--server.port=8601", "--server.address", "0.0.0.0"], {},
     "http://127.0.0.1:8601/_stcore/health"),
    (["--server.address=10.1.2.3"], {"STREAMLIT_SERVER_PORT": "9000"},
     "http://10.1.2.3:9000/_stcore/health"),
    ([], {"STREAMLIT_SERVER_ADDRESS": "::1"}, "http://[::1]:8501/_stcore/health")])
def test_run_app_waits_for_the_server_its_flags_start(monkeypatch, flags, env, url):
    import runpy

    for name in ("STREAMLIT_SERVER_PORT", "STREAMLIT_SERVER_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    m = runpy.run_path(str(ROOT / "scripts" / "run_app.py"), run_name="not_main")
    assert m["health_url"](flags) == url
    assert not m["wait_until_answering"]("http://127.0.0.1:1/_stcore/health", timeout_s=0.3)


def test_a_class_server_warms_the_lessons_and_the_samples_slow_first_work(monkeypatch, tmp_path,
                                                                         request):
    """Every server but ATTNVIZ_PRELOAD=0 warms the lesson's taggers, numbers and sweeps for
    the default settings, read from where an earlier run kept them. ATTNVIZ_PRELOAD=class
    (make serve's workers): after the model, the preload thread computes
    the lesson's taggers, numbers and sweeps for the default settings, the corpus page's bundled
    sample, the families page's random demo models, the similarity page's default sentence B
    (prepared for every A), the inside-score page's grids and the windows page's default timings,
    under the keys the pages ask for, after starting the flow's worker processes; the lesson
    page then trains nothing, the families page builds no model, the windows page times
    nothing. Without it, or with settings().fast_paths off, nothing of the class's work is
    started."""
    from attnviz.analysis import attribution, corpus_heads, cost, flow_workers, taggers
    from attnviz.analysis.head_stats import CONVENTIONS
    from attnviz.engine import random_models
    from attnviz.ui import lesson, window_cost
    from attnviz.ui.context import DEMO

    settings = lesson.settings_from(0, taggers.Settings.epochs)
    model = cached_model(None, preload.PRELOAD_DEVICE)
    corpus_key = ("corpus", model.key,
                  tuple(corpus_heads.split_sentences(corpus_heads.sample_text())),
                  next(iter(CONVENTIONS)))
    lesson_keys = [("taggers", settings), ("results", ("lesson_numbers", settings)),
                   ("results", ("lesson_sweeps", settings))]
    keys = [*lesson_keys, ("results", corpus_key),
            *[("models", ("demo", kind, preload.PRELOAD_DEVICE)) for kind in DEMO],
            ("results", window_cost.key(str(model.device),
                                        window_cost.lengths_up_to(window_cost.DEFAULT_TOP),
                                        window_cost.DEFAULT_WINDOW)),
            ("results", attribution.side_key(model.key, attribution.DEFAULT_B,
                                             attribution.DEFAULT_STEPS))]
    kept = {}  # values earlier tests computed: handed back by the warm-up's calls (not a
    for kind, key in keys:  # second training); what matters here is under which keys they land
        item = peek(kind, key)
        forget(kind, key)  # (not a pop from its items: the cache's total must drop with it)
        if item is not None:
            kept[key] = item
    # The lesson's taggers and sweeps as an earlier run kept them in the cache folder (the
    # shared ones; seed 0's sweep only): the warm-up reads them and trains nothing. The folder
    # is this test's own: the run's, shared by every worker, holds the whole sweeps (the
    # length test included) that other modules read.
    from tests.lesson_trained import sweep, trained

    own = contextlib.ExitStack()
    own.enter_context(app_settings.override(cache_dir=str(tmp_path)))
    request.addfinalizer(own.close)
    folder = lesson.kept_folder()
    assert folder == tmp_path / "lesson"
    taggers.save_trained(trained(), folder)
    taggers.save_sweeps(taggers.Sweeps((0,), (sweep(),)), folder, settings)
    monkeypatch.setattr(preload, "keep_in_background",
                        lambda *a: pytest.fail("the warm-up trained what was kept"))

    from attnviz.plotting import neuron

    laid_out = []  # Inside one score's grids, for every sentence length
    monkeypatch.setattr(neuron, "prepare_grids", lambda real=neuron.prepare_grids:
                        laid_out.append(real()))
    with app_settings.override(preload="1", fast_paths=True):
        preload.preload()  # a plain server warms the lesson only
    assert preload.STATE["lesson_error"] is None
    assert all(key in CACHES[kind] for kind, key in lesson_keys)
    assert not any(key in CACHES[kind] for kind, key in keys[len(lesson_keys):])
    assert not laid_out
    for kind, key in lesson_keys:
        forget(kind, key)
    with app_settings.override(preload="0"):
        preload.preload()
    assert not any(key in CACHES[kind] for kind, key in keys)
    with app_settings.override(preload="class", fast_paths=False):
        preload.preload()  # the fast paths off: the model only, each page computes its own
    assert preload.STATE["error"] is None
    assert not any(key in CACHES[kind] for kind, key in keys) and not laid_out

    with app_settings.override(preload="class", fast_paths=True):
        preload.preload()
    assert preload.STATE["class_error"] is None
    assert laid_out == [16]
    assert all(key in CACHES[kind] for kind, key in keys), [key in CACHES[k] for k, key in keys]
    wanted = flow_workers.default_workers()  # the flow's worker processes, started first
    assert flow_workers.running_workers() == (wanted if wanted > 1 else 0)

    def refuse(*args, **kwargs):
        raise AssertionError("the page trained again")

    monkeypatch.setattr(taggers, "train_all", refuse)
    monkeypatch.setattr(taggers, "overfitting", refuse)
    monkeypatch.setattr(taggers, "overfitting_seeds", refuse)
    monkeypatch.setattr(corpus_heads, "corpus_heads", refuse)
    monkeypatch.setattr(random_models, "save_random_checkpoint", refuse)
    monkeypatch.setattr(cost, "measure_attention", refuse)
    at = open_page("pages/corpus_heads.py", ch_src="sample")  # the warmed sample, same key
    assert not at.exception, [e.value for e in at.exception]
    assert specs(at)
    at = open_page("pages/families.py")  # its three random demo models, made by the warm-up
    assert not at.exception, [e.value for e in at.exception]
    assert specs(at)
    at = open_page("pages/windows.py", win_tab="Long sequences: cost")  # timed by the warm-up
    assert not at.exception, [e.value for e in at.exception]
    assert specs(at) and at.select_slider(key="win_cost_w").value == 64
    at = open_page("pages/lesson.py", lesson_step=5)  # "The cost of a wide window": the sweep
    if lesson.lesson.STEPS[4].predict:  # its answer (and figures) after the Answer button
        at.button(key="lesson_next").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert specs(at)


@pytest.mark.parametrize("preload_mode, omp, cores, want", [
    ("class", None, 2, "1"), ("class", None, 16, "15"), ("class", None, 1, "1"),
    ("class", "4", 2, "4"), ("1", None, 2, None), (None, None, 2, None)])
def test_a_class_server_leaves_a_core_to_the_pages(monkeypatch, preload_mode, omp, cores, want):
    """scripts/run_app.class_threads: on a class server torch gets one core fewer than the
    machine (the pages' Python thread keeps one), unless OMP_NUM_THREADS was given; any other
    server keeps torch's default."""
    import runpy

    env = {k: v for k, v in os.environ.items() if k not in ("ATTNVIZ_PRELOAD", "OMP_NUM_THREADS")}
    env.update({k: v for k, v in (("ATTNVIZ_PRELOAD", preload_mode), ("OMP_NUM_THREADS", omp))
                if v is not None})
    monkeypatch.setattr(os, "environ", env)  # a copy: nothing leaks into later tests
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    try:
        app_settings.reload()  # from this environment
        runpy.run_path("scripts/run_app.py", run_name="not_main")["class_threads"]()
    finally:
        monkeypatch.undo()
        app_settings.reload()
    assert env.get("OMP_NUM_THREADS") == want


def test_importing_attnviz_imports_no_torch():
    """Importing the attnviz package, its settings and the engine's modules that need no model
    must not wait for torch: scripts/run_app.py imports the settings before the server starts,
    the sidebar reads the others before a model is loaded (checked in a fresh interpreter)."""
    out = last_line("import sys, attnviz, attnviz.settings, attnviz.defaults, "
                    "attnviz.engine.request, attnviz.engine.trace, attnviz.engine.kinds, "
                    "attnviz.engine.folders; "
                    "print('torch' in sys.modules, 'streamlit' in sys.modules)")
    assert out == "False False"
    out = last_line("from attnviz import TraceRequest, load_model; "
                    "print(TraceRequest.__module__, load_model.__module__)")
    assert out == "attnviz.engine.request attnviz.engine.load", out


def test_the_lessons_background_training_runs_at_the_lowest_priority(tmp_path, monkeypatch):
    """keep_in_background's child process: nice 19, one thread, ended with its parent, the
    folder's lock held, given the folder and every setting (its work replaced here by code
    that reports them)."""
    import json

    from attnviz.analysis import taggers

    monkeypatch.setattr(preload, "KEEP", (
        "import fcntl\n"
        "probe = open(os.path.join(sys.argv[1], 'lesson.lock'), 'a')\n"
        "try:\n"
        "    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "    held = 'free'\n"
        "except OSError:\n"
        "    held = 'held'\n"
        "import ctypes\n"
        "sig = ctypes.c_int()\n"
        "ctypes.CDLL(None).prctl(2, ctypes.byref(sig))\n"  # PR_GET_PDEATHSIG
        "open(os.path.join(sys.argv[1], 'child'), 'w').write(chr(10).join(["
        "str(os.nice(0)), os.environ['OMP_NUM_THREADS'], str(sig.value), held, "
        "*sys.argv[2:4]]))\n"))
    settings = taggers.Settings(seed=2, epochs=12, n_sentences=300)
    assert preload.keep_in_background(settings, tmp_path, "sweeps") == (0, "")
    nice, threads, sig, lock, given, what = (tmp_path / "child").read_text().split("\n")
    assert (int(nice), threads, int(sig)) == (max(19, os.nice(0)), "1", signal.SIGTERM)
    assert lock == "held"  # (flock is per open file: the child's second open waits too)
    assert taggers.Settings(**json.loads(given)) == settings and what == "sweeps"


def test_the_kept_lesson_lives_in_the_users_cache_folder():
    """Never in the repository: under settings().cache_path."""
    from attnviz.ui import lesson

    folder = lesson.kept_folder().resolve()
    assert folder.is_relative_to(app_settings.settings().cache_path.resolve())
    assert not folder.is_relative_to(ROOT)


@pytest.mark.slow
def test_taggers_kept_by_the_background_child_are_bit_for_bit_those_trained_here(tmp_path):
    """The child process (another interpreter, one thread, nice 19) keeps taggers whose every
    weight and loss equal those train_all gives in this process for the same settings."""
    import torch

    from attnviz.analysis import taggers

    small = taggers.Settings(seed=3, n_sentences=200, epochs=1)
    assert preload.keep_in_background(small, tmp_path, "taggers")[0] == 0
    kept = taggers.load_trained(tmp_path, small)
    assert kept is not None and kept.kept == taggers.kept_name(tmp_path, small)
    here = taggers.train_all(small)
    assert kept.losses == here.losses
    for name, m in here.models.items():
        for (k, a), b in zip(m.state_dict().items(), kept.models[name].state_dict().values(),
                             strict=True):
            assert torch.equal(a, b), (name, k)


def test_a_page_never_waits_on_the_background_training(monkeypatch, tmp_path):
    """While the child trains, no cache key is held: a page asking then computes its own
    (here in another thread, which must finish at once), and the warm-up then takes the
    page's taggers and sweeps (here the child keeps nothing), not a copy of its own."""
    from attnviz.analysis import taggers
    from attnviz.ui import lesson
    from attnviz.ui.cache import cached, is_cached, peek

    settings = lesson.settings_from(0, taggers.Settings.epochs)
    keys = [("taggers", settings), ("results", ("lesson_numbers", settings)),
            ("results", ("lesson_sweeps", settings))]
    before = {k: peek(*k) for k in keys}
    for k in keys:
        forget(*k)
    page = {"taggers": object(), "sweeps": object()}  # what a page computed
    monkeypatch.setattr(lesson, "numbers", lambda s: None)  # (numbers of those taggers)
    asked = []

    def child(s, folder, what):
        kind, key = keys[0] if what == "taggers" else keys[2]
        t = threading.Thread(target=lambda: cached(kind, key, lambda: page[what]))
        t.start()
        t.join(10)
        asked.append((what, t.is_alive()))
        return 1, "stopped by the test"

    monkeypatch.setattr(preload, "keep_in_background", child)
    try:
        with app_settings.override(cache_dir=str(tmp_path)):
            preload.STATE["done"] = 0.0
            preload.warm_lesson()  # nothing kept, nothing cached: the child is asked
        assert asked == [("taggers", False), ("sweeps", False)]
        assert preload.STATE["lesson_error"] is None
        assert peek(*keys[0]) is page["taggers"] and peek(*keys[2]) is page["sweeps"]
    finally:
        for k in keys:
            forget(*k)
            if before[k] is not None:
                cached(*k, lambda v=before[k]: v)
    assert all(is_cached(*k) == (before[k] is not None) for k in keys)
