"""The model loaded while the server starts, so that the first visitor does not wait for it.

Without this, a fresh server imports torch and transformers and loads the model on the first
request, and its first visitor waits for all of it. `preload()` does that work in a
background thread of the server process (started by scripts/run_app.py as soon as Streamlit
answers its health check): it loads the bundled model into the cache registry under the very key the
sidebar's default asks for (`context.cached_model(None, "auto")`), computes the default
sentence's trace, and imports the plotting code. A page that arrives before it is done waits
on the registry's key (the "Loading the model" spinner) and gets the same model: each key is
computed once, whoever asks.

The rest is a fast path (settings().fast_paths; off, each page computes its own on its first
visit, benchmarks/bench_fast_paths.py measures both). Unless settings().preload == "0", the
same thread warms the lesson (`warm_lesson`): its
taggers and overfitting sweeps for the page's default settings, read from the cache folder
where an earlier run kept them (taggers.kept_or_trained: same settings and code, the same
weights bit for bit), else first trained by a child process at the lowest CPU priority, which
keeps them there, so a teacher who starts the server before class never waits for training,
and the pages keep the CPU.

With settings().preload == "class" (ATTNVIZ_PRELOAD=class, what `make serve` sets for its
workers) the same thread then does
the slow first computations a whole class would otherwise wait for together (`warm_class`): the
lesson's taggers for the default settings, their numbers and the overfitting sweep, the corpus
page's bundled sample, the families page's random demo models (GPT-2, BART, ViT), the similarity
page's default sentence B prepared for every student's A (analysis.attribution.prepare_side),
the Inside one score page's grids for every sentence length (plotting.neuron.prepare_grids) and
the windows page's timings at its default choices; a page that asks while it runs waits on
the key. It first starts the flow's worker processes, so that every sentence's flow, a short
one's too, is solved outside the server's GIL (ui.flow.workers_for).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from attnviz.defaults import DEFAULT_DEVICE as PRELOAD_DEVICE  # the sidebar's default device
from attnviz.settings import settings

STATE: dict[str, float | str | None] = {"started": None, "done": None, "error": None,
                                        "class_done": None, "class_error": None,
                                        "lesson_done": None, "lesson_error": None}


def preload() -> None:
    """Load the bundled model (and the default sentence's trace) into the cache registry."""
    STATE["started"] = time.time()
    try:
        from attnviz.ui.context import DEFAULT_TEXT, adapted_request, cached_model, cached_trace

        model = cached_model(None, PRELOAD_DEVICE)
        request, _ = adapted_request(model, DEFAULT_TEXT, None)
        cached_trace(model, request)
        import plotly.graph_objects  # noqa: F401

        import attnviz.plotting  # noqa: F401 - the figures' modules, imported once here

        print("attnviz: preload done (the bundled model and the default sentence are ready)",
              file=sys.stderr, flush=True)  # harnesses wait for this line in the server's log
    except Exception as e:  # the first page then loads (and reports) it
        STATE["error"] = f"{type(e).__name__}: {e}"
        print(f"attnviz: preload failed ({STATE['error']}); the first page will load the "
              "model", file=sys.stderr, flush=True)
    finally:
        STATE["done"] = time.time()
    if not settings().fast_paths:
        return
    if settings().preload == "class" and STATE["error"] is None:
        warm_class()
    elif settings().preload != "0":
        warm_lesson()


# The child process that trains and keeps the lesson's taggers (then its sweeps) for one
# settings: python -c CHILD + KEEP folder settings-json what server-pid. CHILD runs first,
# whatever KEEP holds: the lowest CPU priority (nice 19), a request to be ended with the
# server (Linux's parent-death signal, set by util-linux's setpriv --pdeathsig, which then
# runs the child in its own process: a stopped server leaves no training behind), then one
# lock per folder held while it works, so two workers of one server never train the same
# taggers at once (the second reads what the first kept).
CHILD = ("import fcntl, os, sys\n"
         "os.nice(19)\n"
         "if os.getppid() != int(sys.argv[4]):  # the server ended before the request\n"
         "    sys.exit(1)\n"
         "os.makedirs(sys.argv[1], exist_ok=True)\n"
         "_lock = open(os.path.join(sys.argv[1], 'lesson.lock'), 'a')\n"
         "fcntl.flock(_lock, fcntl.LOCK_EX)\n")
KEEP = ("import json\n"
        "from attnviz.analysis import taggers as T\n"
        "folder, what = sys.argv[1], sys.argv[3]\n"
        "s = T.Settings(**json.loads(sys.argv[2]))\n"
        "tr = T.kept_or_trained(s, folder)\n"
        "if what == 'sweeps':\n"
        "    T.kept_or_swept(s, folder, trained=tr)\n")


def keep_in_background(settings, folder, what: str) -> tuple[int, str]:
    """Train and keep `what` ("taggers" or "sweeps") for `settings` in `folder`, in a child
    process at the lowest CPU priority with one thread (CHILD, then KEEP): the server's pages
    and the browser always run first, and the child holds none of the server's GIL. (Its
    exit status, the last line it wrote to stderr.)"""
    import dataclasses
    import json
    import os
    import subprocess
    from pathlib import Path

    package_root = str(Path(__file__).resolve().parents[2])  # attnviz importable from anywhere
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, (package_root,
                                                       os.environ.get("PYTHONPATH"))))}
    import shutil

    setpriv = shutil.which("setpriv")  # util-linux; elsewhere the child ends on its own
    ended_with_server = [setpriv, "--pdeathsig", "TERM", "--"] if setpriv else []
    done = subprocess.run(
        [*ended_with_server, sys.executable, "-c", CHILD + KEEP, str(folder),
          json.dumps(dataclasses.asdict(settings)), what, str(os.getpid())], env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return done.returncode, lines[-1] if lines else ""


def warm_lesson() -> None:
    """The lesson's taggers and sweeps for the page's default settings, under the keys the
    page asks for: read from the cache folder, else first trained and kept there by a child
    process at the lowest priority (keep_in_background), then read. No cache key is held
    while the child works: a page that asks before it is done trains them itself, live, with
    its progress bar (never waiting on work that yields the CPU to everything else), and
    keeps them in the folder. Never stops the preload: where nothing
    could be kept, the page trains them itself."""
    try:
        from attnviz.analysis import taggers
        from attnviz.ui import lesson
        from attnviz.ui.cache import cached, is_cached

        settings = lesson.settings_from(0, taggers.Settings.epochs)  # the page's defaults
        folder = lesson.kept_folder()
        sweeps_key = ("lesson_sweeps", settings)

        def kept(what: str, done: Callable[[], bool]) -> None:
            """Train and keep `what` in the child unless a page has it or it is kept."""
            if done() or taggers.is_kept(folder, settings, what):
                return
            status, why = keep_in_background(settings, folder, what)
            if not (done() or taggers.is_kept(folder, settings, what)):
                raise OSError(f"the lesson's {what} could not be kept in {folder} "
                              f"(exit status {status}: {why})")

        def read_taggers() -> taggers.Trained:
            tr = taggers.load_trained(folder, settings)
            if tr is None:
                raise OSError(f"the lesson's taggers kept in {folder} could not be read")
            return tr

        kept("taggers", lambda: is_cached("taggers", settings))
        trained = cached("taggers", settings, read_taggers)  # a page's own when it has them
        lesson.numbers(settings)  # the taggers are cached: no Streamlit call is made
        kept("sweeps", lambda: is_cached("results", sweeps_key))
        cached("results", sweeps_key, lambda: taggers.kept_or_swept(
            settings, folder, trained=trained))  # read: the child kept them
        STATE["lesson_done"] = time.time()
        print(f"attnviz: lesson warmed ({STATE['lesson_done'] - STATE['done']:.0f} s)",
              file=sys.stderr, flush=True)
    except Exception as e:  # noqa: BLE001 - the page trains (and reports) them itself
        STATE["lesson_error"] = f"{type(e).__name__}: {e}"
        print(f"attnviz: lesson not warmed ({STATE['lesson_error']})", file=sys.stderr,
              flush=True)


def warm_class() -> None:
    """The class's shared first computations, under the very keys the pages ask for."""
    try:
        from attnviz.analysis import flow_workers
        flow_workers.prestart(flow_workers.default_workers())
    except Exception:  # noqa: BLE001 (no worker: flows are solved in-process)
        pass
    try:
        from attnviz.analysis import corpus_heads
        from attnviz.analysis.head_stats import CONVENTIONS
        from attnviz.ui import window_cost
        from attnviz.ui.cache import cached
        from attnviz.ui.context import DEMO, cached_model, demo_model

        warm_lesson()
        model = cached_model(None, PRELOAD_DEVICE)
        sentences = tuple(corpus_heads.split_sentences(corpus_heads.sample_text()))
        conv = next(iter(CONVENTIONS))  # the page's default
        cached("results", ("corpus", model.key, sentences, conv),
               lambda: corpus_heads.corpus_heads(model, sentences, conv))
        for kind in DEMO:  # the families page's random GPT-2, BART and ViT (and
            demo_model(kind, PRELOAD_DEVICE)  # transformers' import)
        try:  # the similarity page's default sentence B, for every student's A
            from attnviz.analysis import attribution
            cached("results", attribution.side_key(model.key, attribution.DEFAULT_B,
                                                   attribution.DEFAULT_STEPS),
                   lambda: attribution.prepare_side(model, attribution.DEFAULT_B))
        except Exception as e:  # noqa: BLE001 - the page then encodes both paths itself
            print(f"attnviz: similarity's sentence B not prepared ({type(e).__name__}: {e})",
                  file=sys.stderr, flush=True)
        from attnviz.plotting import neuron

        neuron.prepare_grids()  # Inside one score's two grids, for every sentence's length
        dev = str(model.device)  # the windows page's cost tab at its defaults: not the sentence's
        lengths, w = window_cost.lengths_up_to(window_cost.DEFAULT_TOP), window_cost.DEFAULT_WINDOW
        cached("results", window_cost.key(dev, lengths, w),
               lambda: window_cost.measure(dev, lengths, w, _quiet))
    except Exception as e:  # each page computes (and reports) its own
        STATE["class_error"] = f"{type(e).__name__}: {e}"
        print(f"attnviz: class warm-up failed ({STATE['class_error']})", file=sys.stderr,
              flush=True)
    finally:
        STATE["class_done"] = time.time()
        if STATE["class_error"] is None:  # tests/load/run_load.py --class-warm-up waits for it
            print(f"attnviz: class warm-up done ({STATE['class_done'] - STATE['done']:.0f} s)",
                  file=sys.stderr, flush=True)


def _quiet(fraction: float, message: str) -> None:
    """A progress callback that shows nothing (no session watches the warm-up)."""
