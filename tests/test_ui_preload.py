"""The model loaded while the server starts (attnviz.ui.preload, started by scripts/run_app.py)
is the one the first page uses: it lies in the cache registry under the key the sidebar's
default asks for, a page that asks while it is loading waits and gets the same object (one
load, not two), and the default page then runs without loading anything. scripts/run_app.py
imports neither torch nor Streamlit before the server runs, and starts the preload once the
server answers its health check (checked in a fresh interpreter).
"""

from __future__ import annotations

import os
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


def test_a_class_server_warms_the_lessons_and_the_samples_slow_first_work(monkeypatch):
    """ATTNVIZ_PRELOAD=class (make serve's workers): after the model, the preload thread computes
    the lesson's taggers, numbers and sweep for the default settings, the corpus page's bundled
    sample, the families page's random demo models, the similarity page's default sentence B
    (prepared for every A), the inside-score page's grids and the windows page's default timings,
    under the keys the pages ask for, after starting the flow's worker processes; the lesson
    page then trains nothing, the families page builds no model, the windows page times
    nothing. Without it, nothing of the class's work is started."""
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
    keys = [("taggers", settings), ("results", ("lesson_numbers", settings)),
            ("results", ("lesson_sweep", settings)), ("results", corpus_key),
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
    for name, key in (("train_all", settings), ("overfitting", ("lesson_sweep", settings))):
        real = getattr(taggers, name)
        monkeypatch.setattr(taggers, name, lambda *a, real=real, key=key, **k:
                            kept[key] if key in kept else real(*a, **k))

    from attnviz.plotting import neuron

    laid_out = []  # Inside one score's grids, for every sentence length
    monkeypatch.setattr(neuron, "prepare_grids", lambda real=neuron.prepare_grids:
                        laid_out.append(real()))
    with app_settings.override(preload="1"):
        preload.preload()
    assert not any(key in CACHES[kind] for kind, key in keys)
    assert not laid_out

    with app_settings.override(preload="class"):
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
    """Importing the attnviz package (and its settings) must not wait for torch: a fresh
    server's preload and first page import it first (checked in a fresh interpreter)."""
    out = last_line("import sys, attnviz, attnviz.settings, attnviz.first_view; "
                    "print('torch' in sys.modules, 'streamlit' in sys.modules)")
    assert out == "False False"
    out = last_line("from attnviz import TraceRequest, load_model; "
                    "print(TraceRequest.__module__, load_model.__module__)")
    assert out == "attnviz.engine.request attnviz.engine.load", out
