"""Determinism (issue 8): the same input gives the same numbers in every session and rerun.

- Engine: two runs, a freshly loaded second model, four threads at once, and a separate Python
  process all give bit-identical arrays (every Trace field compared as raw bytes).
- App: for every page that takes text, two fresh AppTest sessions (all Streamlit caches and
  attnviz's shared trace and figure caches cleared between them, so the second one
  recomputes) give bit-identical exports and identical Plotly figure JSON, tab by tab where
  tabs are lazy. The exports are read from the view the page recorded (attnviz.ui.recorder,
  kept in the session's state): every .npz and .csv download a page offers goes through it
  (ui.download_arrays, ui.download_csv), each array compared as dtype, shape and raw bytes,
  and the "Download this view (HTML)" file as its text.

Measured timings (the windows page's cost benchmark, the lesson's training time) are not a
function of the input and are left out by name.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from attnviz.engine import ARRAY_FIELDS
from attnviz.export import html as export
from attnviz.ui import recorder
from attnviz.ui.cache import clear_caches
from tests.apptest import APP
from tests.pages_list import default_page, text_pages
from tests.plotly_json import charts

ROOT = Path(__file__).resolve().parents[1]
TEXT = "I saw a saw, and the saw saw me."
PAIR = "我看见了一把锯子"
OPTIONS = [dict(), dict(window=1), dict(causal=True), dict(positions="shuffled", seed=3)]

# Exports and figures that hold measured times, not results of the input: {page: substrings
# of a download's "file name" or "file name:member" or of a chart's element id}.
# A page's "Download this view (HTML)" holds what the page showed, measured times included.
TIMINGS: dict[str, tuple[str, ...]] = {
    "pages/windows.py": ("cost", ".html"),
    "pages/lesson.py": ("training_seconds", ".html"),
}

# Pages whose tabs compute only when open: {page: the tab group's key}.
LAZY_TABS = {"pages/positions.py": "pos_tab", "pages/windows.py": "win_tab",
             "pages/layer_heads.py": "lh_tab"}


# ---------------------------------------------------------------------------- engine
def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def assert_same_trace(t1, t2, label: str) -> None:
    assert t1.tokens == t2.tokens, label
    for name in ARRAY_FIELDS:
        assert same_bits(getattr(t1, name), getattr(t2, name)), f"{label}: {name} differs"


def test_same_bits_can_fail():
    a = np.arange(6, dtype=np.float32)
    b = a.copy()
    b[3] = np.nextafter(b[3], np.float32(10))  # one ulp
    assert same_bits(a, a.copy()) and not same_bits(a, b)
    assert not same_bits(a, a.astype(np.float64)) and not same_bits(a, a.reshape(2, 3))


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                  o.items()) or "default")
def test_engine_twice_same_bits(model, opts):
    t1 = model.trace(TEXT, PAIR, **opts)
    t2 = model.trace(TEXT, PAIR, **opts)
    assert t1.weights is not t2.weights
    assert_same_trace(t1, t2, str(opts))


def test_engine_fresh_model_and_threads_same_bits(model):
    import attnviz

    ref = model.trace(TEXT, PAIR)
    assert_same_trace(ref, attnviz.load_model(device="cpu").trace(TEXT, PAIR), "fresh model")
    results, errors = [None] * 4, []

    def work(i: int) -> None:
        try:
            results[i] = model.trace(TEXT, PAIR)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for i, t in enumerate(results):
        assert_same_trace(ref, t, f"thread {i}")


def test_engine_other_process_same_bits(model, tmp_path):
    out = tmp_path / "other.npz"
    code = (
        "import sys, attnviz; m = attnviz.load_model(device='cpu');"
        "t = m.trace(sys.argv[1], sys.argv[2]);"
        "import numpy as np; np.savez(sys.argv[3], tokens=np.array(t.tokens),"
        f"**{{k: getattr(t, k) for k in {list(ARRAY_FIELDS)!r}}})"
    )
    subprocess.run([sys.executable, "-c", code, TEXT, PAIR, str(out)], cwd=ROOT, check=True,
                   timeout=300, capture_output=True)
    ref = model.trace(TEXT, PAIR)
    with np.load(out) as other:
        assert list(other["tokens"]) == ref.tokens
        for name in ARRAY_FIELDS:
            assert same_bits(getattr(ref, name), other[name]), f"other process: {name}"


# ---------------------------------------------------------------------------- app
class Recorder:
    """Kept for tests/test_page_value_norms.py until it reads its download with
    tests.apptest.download: every file a download button hands to Streamlit, by file id,
    through a patch of Streamlit's media file storage (not used here)."""

    def __init__(self, monkeypatch) -> None:
        from streamlit.runtime.media_file_manager import MediaFileManager
        from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

        self.files: dict[str, tuple[str | None, bytes]] = {}
        self.deferred: dict = {}
        original = MemoryMediaFileStorage.load_and_get_id
        original_deferred = MediaFileManager.add_deferred

        def load_and_get_id(storage, path_or_data, mimetype, kind, filename=None):
            file_id = original(storage, path_or_data, mimetype, kind, filename)
            self.files[file_id] = (filename, storage._files_by_id[file_id].content)
            return file_id

        def add_deferred(manager, data_callable, mimetype, coordinates, file_name=None, **kw):
            file_id = original_deferred(manager, data_callable, mimetype, coordinates, file_name,
                                        **kw)
            self.deferred[file_id] = (file_name, data_callable)
            return file_id

        monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", load_and_get_id)
        monkeypatch.setattr(MediaFileManager, "add_deferred", add_deferred)

    def content(self, button) -> tuple[str | None, bytes] | None:
        if button.proto.url:
            return self.files[Path(button.proto.url).stem]
        name, make = self.deferred[button.proto.deferred_file_id]
        data = make()
        return name, data.encode() if isinstance(data, str) else data


def array_bytes(value) -> bytes:
    """An array (or a token list) as its dtype, shape and raw bytes."""
    arr = np.asarray(value)
    return f"{arr.dtype.str} {arr.shape} ".encode() + (
        arr.tobytes() if arr.dtype != object else repr(arr.tolist()).encode())


def exports_of(at: AppTest) -> dict[str, bytes]:
    """What the page offers for download now: each .npz's arrays and each .csv's text, from
    the view it recorded (made as a click would make them), and the view's HTML file."""
    rec = at.session_state[recorder.STATE_KEY]
    out: dict[str, bytes] = {}
    for block in rec.view().blocks:
        if not isinstance(block, export.Numbers):
            continue
        made = block.make()
        if block.kind == "csv":
            out[block.file_name] = export.csv_text(made).encode()
        else:
            out.update({f"{block.file_name}:{k}": array_bytes(v) for k, v in made.items()})
    out[recorder.file_name(rec.title)] = recorder.html_of(rec).encode()
    return out


def fresh_session(page: str) -> dict:
    """Run the page in a new AppTest session after clearing every cache; collect its output."""
    st.cache_data.clear()
    st.cache_resource.clear()
    clear_caches()  # the app's own registry: traces, results, figures, taggers
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.session_state["text"] = TEXT
    at.session_state["pair"] = PAIR
    if page != default_page():
        at.switch_page(page)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    skip = TIMINGS.get(page, ())
    exports: dict[str, bytes] = {}
    figures: list[str] = []
    labels = [t.label for t in at.tabs] if page in LAZY_TABS else []
    for label in labels[1:] + [None]:  # every tab of a lazy tab group (each run computes one)
        exports.update({k: v for k, v in exports_of(at).items()
                        if not any(s in k for s in skip)})
        figures += [spec for key, spec in charts(at) if not any(s in key for s in skip)]
        if label is not None:
            at.session_state[LAZY_TABS[page]] = label
            at.run()
            assert not at.exception, [e.value for e in at.exception]
    return {"exports": exports, "figures": figures}


def test_array_bytes_tell_dtype_shape_and_values_apart():
    a = np.arange(6, dtype=np.float32)
    assert array_bytes(a) == array_bytes(a.copy())
    assert array_bytes(a) != array_bytes(a.reshape(2, 3))
    assert array_bytes(a) != array_bytes(a.astype(np.float64))
    b = a.copy()
    b[3] = np.nextafter(b[3], np.float32(10))
    assert array_bytes(a) != array_bytes(b)
    assert array_bytes(["a", "b"]) != array_bytes(["a", "c"])


@pytest.mark.parametrize("page", text_pages(), ids=lambda p: Path(p).stem)
def test_two_sessions_same_exports(page):
    first = fresh_session(page)
    second = fresh_session(page)
    assert [k for k in first["exports"] if not k.endswith(".html")], \
        f"{page}: no numbers to compare (each page offers its numbers)"
    assert sorted(first["exports"]) == sorted(second["exports"])
    for name, data in first["exports"].items():
        assert data == second["exports"][name], f"{page}: export {name} differs between sessions"
    assert len(first["figures"]) == len(second["figures"])
    for i, (a, b) in enumerate(zip(first["figures"], second["figures"], strict=True)):
        assert a == b, f"{page}: figure {i} differs ({json.loads(a).get('layout', {})})"
