"""A fresh server's first page drawn from the stored first view (attnviz/first_view.py) while
the preload still loads the model: the stored trace is the engine's, field for field; it is used
only for the exact inputs that made it; the page drawn from it is the page drawn with the model
loaded, and it needs neither the model nor torch; the preload checks it against the engine and
replaces one that differs."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import threading

import numpy as np
import pytest

from attnviz import first_view, settings
from attnviz.engine import TraceRequest
from attnviz.engine.kinds import MODEL_TYPES
from attnviz.ui import preload
from attnviz.ui.cache import CACHES, clear_caches
from attnviz.ui.context import DEFAULT_TEXT
from tests.apptest import open_page
from tests.fresh import last_line
from tests.plotly_json import specs
from tests.test_determinism import same_bits

ARGS = first_view.default_args()


def identical(a, b) -> None:
    """Every field of two traces equal: arrays bit for bit (dtype and shape too), the rest
    equal and of the same type."""
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray) and same_bits(x, y), f.name
        else:
            assert x == y and type(x) is type(y), (f.name, x, y)


@pytest.fixture
def cache_dir(tmp_path):
    clear_caches("results")  # the process's look at the stored view (context.first_view_card)
    with settings.override(cache_dir=str(tmp_path / "cache")):
        yield tmp_path / "cache"
    clear_caches("results")


def test_a_stored_trace_reads_back_as_the_engine_made_it(cpu_model, tmp_path):
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    traces = [cpu_model.trace("I saw a saw"), cpu_model.trace(TraceRequest(
        "The cat sat.", "It was [MASK] tired.", window=1, positions="sinusoidal"))]
    for family, request in (("gpt2", TraceRequest("I saw a saw")),
                            ("bart", TraceRequest("I saw a saw", target="Ich sah"))):
        folder = save_random_checkpoint(family, tmp_path / family)
        traces.append(attnviz.load_model(folder, device="cpu").trace(request))
    for t in traces:
        arrays = first_view.trace_to_arrays(t)
        assert all(isinstance(v, np.ndarray) and v.dtype != object for v in arrays.values())
        np.savez(tmp_path / "t.npz", **arrays)
        with np.load(tmp_path / "t.npz", allow_pickle=False) as stored:
            back = first_view.trace_from_arrays(stored)
        identical(back, t)
        assert back.key == t.key and first_view.same(back, t)
    assert traces[1].typed_control_tokens and traces[2].notes  # tuples, round-tripped
    shifted = dataclasses.replace(traces[0], weights=traces[0].weights + 2e-5)
    assert not first_view.same(shifted, traces[0])  # beyond float32's 1e-5
    assert first_view.same(dataclasses.replace(traces[0], weights=traces[0].weights + 5e-6),
                           traces[0])
    assert not first_view.same(dataclasses.replace(traces[0], tokens=["x"] * 6), traces[0])
    with pytest.raises(ValueError):
        first_view.trace_to_arrays(cpu_model.trace(TraceRequest(ids=(101, 1045, 102))))


def test_the_card_holds_what_the_first_page_reads_and_asks_the_model_for_the_rest(
        cpu_model, cache_dir):
    t = cpu_model.trace(DEFAULT_TEXT)
    path = first_view.save(cpu_model, t, cuda=False, **ARGS)
    assert path.parent == cache_dir and path.is_file()
    card, back = first_view.load(**ARGS, real=lambda: cpu_model)
    identical(back, t)
    for name in first_view.ModelCard.CARD_FIELDS:
        assert getattr(card, name) == getattr(cpu_model, name), name
    assert card.device_type == "cpu" and card.cuda is False
    assert back.key == (cpu_model.key, TraceRequest(DEFAULT_TEXT))
    # what the card does not hold is the real model's (the page then waits for it)
    assert card.capabilities == cpu_model.capabilities
    assert card.tokenizer is cpu_model.tokenizer
    alone, _ = first_view.load(**ARGS)  # no model to ask: a plain AttributeError
    with pytest.raises(AttributeError):
        alone.capabilities  # noqa: B018


def test_a_stored_view_is_used_only_for_the_inputs_that_made_it(cpu_model, cache_dir,
                                                                 monkeypatch, tmp_path):
    t = cpu_model.trace(DEFAULT_TEXT)
    first_view.save(cpu_model, t, cuda=False, **ARGS)
    assert first_view.load(**ARGS) is not None
    for other in (dict(ARGS, text="I saw a cat"), dict(ARGS, device="cpu"),
                  dict(ARGS, max_tokens=128)):
        assert first_view.load(**other) is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert first_view.load(**ARGS) is None
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with settings.override(fast_paths=False):
        assert first_view.load(**ARGS) is None

    # another engine: one source file changed
    engine = tmp_path / "engine"
    shutil.copytree(first_view.ENGINE_DIR, engine, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(first_view, "ENGINE_DIR", engine)
    assert first_view.load(**ARGS) is not None  # the same files: the same view
    path = engine / "attention.py"
    path.write_text(path.read_text() + "\n# changed\n")
    assert first_view.load(**ARGS) is None
    monkeypatch.undo()

    # other weights: the bundled model's files touched
    from attnviz.engine import folders

    model = tmp_path / "model"
    shutil.copytree(folders.bundled_model_dir(), model)
    monkeypatch.setattr(folders, "bundled_model_dir", lambda: model)
    assert first_view.load(**ARGS) is not None  # the same files (copied with their times)
    weights = next(p for p in model.iterdir() if p.suffix in (".safetensors", ".bin"))
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1))
    assert first_view.load(**ARGS) is None  # rewritten weights

    monkeypatch.undo()
    assert first_view.load(**ARGS) is not None
    # a damaged or inconsistent file is not used, and says so without raising
    path = first_view.path_for(**ARGS)
    data = dict(np.load(path, allow_pickle=False))
    card = json.loads(str(data["card"][()]))
    np.savez(path, **dict(data, card=np.array(json.dumps(dict(card, n_layers=5)))))
    assert first_view.load(**ARGS) is None
    path.write_bytes(b"not a zip file")
    assert first_view.load(**ARGS) is None


def test_the_first_page_drawn_from_the_stored_view_is_the_page_without_the_model(
        app_model, cache_dir, monkeypatch):
    """While the preload runs and no model is loaded, the default page and its sidebar are
    drawn from the card and the stored trace: the same charts and captions as with the model
    loaded, and no model is loaded (or asked for) to draw them."""
    t = app_model.trace(DEFAULT_TEXT)
    first_view.save(app_model, t, cuda=app_model.device_type == "cuda", **ARGS)
    normal = open_page()

    for kind in ("models", "traces", "figures"):  # a fresh server: no model yet
        monkeypatch.setitem(CACHES, kind, CACHES[kind].fresh())
    models = CACHES["models"]
    misses = models.misses
    first_view.PRELOADING.set()  # the preload thread of scripts/run_app.py runs
    try:
        drawn = open_page()
        assert models.misses == misses and len(models) == 0  # the model was never needed
    finally:
        first_view.PRELOADING.clear()
    assert specs(drawn) and specs(drawn) == specs(normal)
    assert [c.value for c in drawn.sidebar.caption] == [c.value for c in normal.sidebar.caption]
    assert [c.value for c in drawn.caption] == [c.value for c in normal.caption]
    assert [m.value for m in drawn.markdown] == [m.value for m in normal.markdown]


def test_a_fresh_server_draws_its_first_page_without_importing_torch(app_model, cache_dir):
    """In a fresh interpreter with a stored view, a preload that has not loaded the model yet,
    and the default page run (Streamlit's AppTest): the heatmaps are drawn and torch has not
    been imported."""
    first_view.save(app_model, app_model.trace(DEFAULT_TEXT),
                    cuda=app_model.device_type == "cuda", **ARGS)
    code = (
        "import os, sys; "
        f"os.environ['ATTNVIZ_CACHE_DIR'] = {str(cache_dir)!r}; "
        "from attnviz import first_view; first_view.PRELOADING.set(); "
        "from tests.apptest import open_page; from tests.plotly_json import specs; "
        "at = open_page(); print(len(specs(at)), 'torch' in sys.modules)")
    assert last_line(code) == "1 False"


def test_the_preload_stores_checks_and_replaces_the_first_view(cpu_model, cache_dir):
    request = TraceRequest(DEFAULT_TEXT)
    preload.keep_first_view(cpu_model, request)
    assert preload.STATE["first_view"] == "stored"
    card, stored = first_view.load(**ARGS)
    identical(stored, cpu_model.trace(request))
    preload.keep_first_view(cpu_model, request)
    assert preload.STATE["first_view"] == "checked"

    # a stored view that is not what the engine computes (here: tampered with) is replaced,
    # and the caches no longer hold what was made from it
    path = first_view.path_for(**ARGS)
    data = dict(np.load(path, allow_pickle=False))
    np.savez(path, **dict(data, weights=data["weights"] + 1e-3))
    key = (cpu_model.key, request)
    CACHES["traces"].discard(key)
    CACHES["traces"].get(key, lambda: first_view.load(**ARGS)[1])  # a page drew it
    CACHES["figures"].get(("grid_w", key, 0), lambda: "a figure of the tampered trace")
    preload.keep_first_view(cpu_model, request)
    assert preload.STATE["first_view"] == "replaced"
    identical(first_view.load(**ARGS)[1], cpu_model.trace(request))
    identical(CACHES["traces"].get(key, lambda: None), cpu_model.trace(request))
    assert ("grid_w", key, 0) not in CACHES["figures"]

    # a cache folder that cannot be written (here a file stands where it should be): the
    # preload goes on without storing anything
    shutil.rmtree(cache_dir)
    cache_dir.write_text("a file, not a folder")
    preload.keep_first_view(cpu_model, request)
    assert preload.STATE["first_view"].startswith(("FileExistsError", "NotADirectoryError"))
    cache_dir.unlink()


def test_the_kinds_list_every_family_the_engine_reads():
    from attnviz.engine.families import FAMILIES, supported_types

    assert list(MODEL_TYPES) == list(supported_types())
    assert MODEL_TYPES == {t: (FAMILIES[t].title, FAMILIES[t].kind) for t in FAMILIES}


def test_with_a_stored_view_the_preload_waits_for_the_first_page(cpu_model, cache_dir,
                                                                 monkeypatch):
    """A fresh server's preload thread (scripts/run_app.py) waits, before it imports anything,
    for the first page run to end (the router sets FIRST_PAGE), at most FIRST_PAGE_WAIT_S;
    without a stored view, or on a class server, it does not wait."""
    monkeypatch.setattr(first_view, "FIRST_PAGE", threading.Event())
    assert first_view.wait_for_first_page(5) == 0.0  # nothing stored
    first_view.save(cpu_model, cpu_model.trace(DEFAULT_TEXT), cuda=False, **ARGS)
    assert 0.2 <= first_view.wait_for_first_page(0.2) < 2  # no page: the timeout
    with settings.override(preload="class"):
        assert first_view.wait_for_first_page(5) == 0.0
    threading.Timer(0.3, first_view.FIRST_PAGE.set).start()
    assert 0.25 <= first_view.wait_for_first_page(30) < 10  # a page: at its end
    first_view.FIRST_PAGE.clear()
    open_page()
    assert first_view.FIRST_PAGE.is_set()  # the router's run said so

    # the thread scripts/run_app.py starts: nothing imported while it waits, the model loaded
    # once the first page is drawn (then no lesson warmed: that is test_ui_preload's)
    code = (
        "import os, sys, time, runpy; "
        f"os.environ['ATTNVIZ_CACHE_DIR'] = {str(cache_dir)!r}; "
        "os.environ['ATTNVIZ_PRELOAD'] = '0'; "
        "m = runpy.run_path('scripts/run_app.py', run_name='not_main'); "
        "thread = m['start_preload'](); from attnviz import first_view\n"
        # the thread's own imports come first; on a busy machine they may take a while
        "t = time.monotonic()\n"
        "while not first_view.PRELOADING.is_set() and time.monotonic() - t < 120: "
        "time.sleep(0.01)\n"
        "time.sleep(1.0); "
        "early = [k for k in ('torch', 'attnviz.ui', 'streamlit') if k in sys.modules]; "
        "first_view.FIRST_PAGE.set(); thread.join(300); "
        "from attnviz.ui.preload import STATE; "
        "print(early, STATE['waited'] > 0.5, STATE['error'], STATE['first_view'])")
    assert last_line(code) == "[] True None checked"


def test_with_the_fast_paths_off_a_fresh_server_draws_its_first_page_from_the_engine(
        app_model, cache_dir):
    """settings().fast_paths off (ATTNVIZ_FAST_PATHS=0), in a fresh interpreter where a stored
    view lies ready and the preload has not loaded the model: the view is neither read nor
    waited for, the first page loads the model and draws its heatmaps; the preload stores no
    view."""
    first_view.save(app_model, app_model.trace(DEFAULT_TEXT),
                    cuda=app_model.device_type == "cuda", **ARGS)
    with settings.override(fast_paths=False):
        assert first_view.load(**ARGS) is None
        assert first_view.wait_for_first_page(5) == 0.0
    code = (
        "import os, sys; "
        f"os.environ['ATTNVIZ_CACHE_DIR'] = {str(cache_dir)!r}; "
        "os.environ['ATTNVIZ_FAST_PATHS'] = '0'; "
        "from attnviz import first_view; first_view.PRELOADING.set(); "
        "from tests.apptest import open_page; from tests.plotly_json import specs; "
        "at = open_page(); "
        "from attnviz.ui.context import cached_model; "
        "m = cached_model(None, 'auto'); "
        "print(len(specs(at)) > 0, not at.exception, m.n_layers > 0, 'torch' in sys.modules)")
    assert last_line(code) == "True True True True"
    with settings.override(fast_paths=False):  # the preload keeps nothing on disk
        os.remove(first_view.path_for(**ARGS))
        preload.keep_first_view(app_model, TraceRequest(DEFAULT_TEXT))
        assert not first_view.path_for(**ARGS).exists()
