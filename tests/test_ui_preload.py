"""The model loaded while the server starts (attnviz.ui.preload, started by scripts/run_app.py)
is the one the first page uses: it lies in the cache registry under the key the sidebar's
default asks for, a page that asks while it is loading waits and gets the same object (one
load, not two), and the default page then runs without loading anything. scripts/run_app.py
imports neither torch nor attnviz before Streamlit listens (checked in a fresh interpreter).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from attnviz.engine import TraceRequest
from attnviz.ui import preload
from attnviz.ui.cache import CACHES
from attnviz.ui.context import DEFAULT_TEXT, cached_model
from tests.apptest import open_page

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
    assert at.get("plotly_chart"), "the first page draws its heatmaps"
    assert (models.misses, traces.misses) == before  # nothing loaded or computed again


def test_run_app_imports_no_torch_before_streamlit_listens():
    code = ("import runpy, sys; sys.argv = ['run_app.py']; "
            "m = runpy.run_path('scripts/run_app.py', run_name='not_main'); "
            "m['preload_when_serving'](); "
            "print(sorted(k for k in sys.modules if k.split('.')[0] in ('torch', 'attnviz', "
            "'transformers')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
