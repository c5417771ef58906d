"""A fresh server's first page without waiting for torch: the default sentence's trace, stored
by a server that computed it, read back by the next one while its model still loads.

Without it a fresh server's first visitor waits for the preload (ui.preload): importing torch
and loading the model, while the same cores run the browser that compiles Plotly's script.
The trace of the default sentence is the same every time the same engine code runs the same
weights, so the server that computes it (the preload does, once per server) writes it here,
and the next server draws its first page from it: `ModelCard` stands in for the model (its
name and sizes, what the sidebar and the page's caption show) and the stored Trace fills the
trace cache under the model's own key. Anything else asked of the card (another sentence,
another page's question) waits for the real model. Meanwhile the preload waits for that first
page to be drawn before it imports torch (`wait_for_first_page`), so the server's one Python
process serves the browser first. What it gains against the plain path is measured by
benchmarks/bench_fast_paths.py (docs/performance.md).

The file is valid only for the exact inputs that made it (`fingerprint`): the engine's source
files, the bundled model's files (names, sizes, modification times), the versions of torch and
NumPy, the sentence, the device setting, CUDA_VISIBLE_DEVICES and the server's token limit.
Anything else changed, the file is not used (and the next preload writes a new one). Arrays
and JSON only, read without pickle. It lives in settings().cache_path (ATTNVIZ_CACHE_DIR, else
$XDG_CACHE_HOME/attnviz, else ~/.cache/attnviz); with settings().fast_paths off
(ATTNVIZ_FAST_PATHS=0) it is neither read nor written. Standard library and NumPy only:
importing this module imports neither torch nor Streamlit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from attnviz.defaults import DEFAULT_DEVICE, DEFAULT_TEXT
from attnviz.engine.request import TraceRequest
from attnviz.engine.trace import Trace
from attnviz.settings import settings

FORMAT = 1  # what this module writes; a change makes every stored file stale
TUPLE_FIELDS = ("typed_control_tokens", "notes", "patch_grid")
ENGINE_DIR = Path(__file__).resolve().parent / "engine"
FIRST_PAGE = threading.Event()  # set by the router each time a page run ends
FIRST_PAGE_WAIT_S = 10.0  # the longest a preload waits for a first page
# Set while a server's preload thread (scripts/run_app.py) runs: until the bundled model is in
# the cache, pages may draw the stored first view (ui.context.first_view_card).
PRELOADING = threading.Event()


def enabled() -> bool:
    """Whether the stored first view is read and written (settings().fast_paths)."""
    return settings().fast_paths


def default_args() -> dict:
    """The inputs of the view a fresh server stores and reads: the sidebar's default sentence
    and device, and the server's token limit."""
    return dict(text=DEFAULT_TEXT, device=DEFAULT_DEVICE, max_tokens=settings().max_tokens)


def wait_for_first_page(timeout: float = FIRST_PAGE_WAIT_S) -> float:
    """What the preload thread does first (scripts/run_app.py), before it imports anything:
    where a stored first view will draw a fresh server's first page, wait until a page run has
    ended or `timeout` seconds have passed; the seconds waited (0 when it did not wait).

    The server's one Python process serves the browser's files and runs the page, and a
    preload importing torch meanwhile slows both (holding the GIL). With a stored view the
    first page does not need the model, so it goes first; a page that needs the model before
    the preload has it loads it itself, as every page waits on one cache key. No wait without
    a stored view (the page then waits for the model: the sooner it loads the better), and
    none on a class server (settings().preload == "class": its browsers are on other
    computers, and its warm-up is long)."""
    if settings().preload == "class" or not enabled():
        return 0.0
    try:
        if not path_for(**default_args()).is_file():
            return 0.0
    except Exception:  # noqa: BLE001 - no bundled model: the preload reports it
        return 0.0
    start = time.monotonic()
    FIRST_PAGE.wait(timeout)
    return time.monotonic() - start


def cache_dir() -> Path:
    """Where the stored first view lives (settings().cache_path)."""
    return settings().cache_path


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "-"


def fingerprint(text: str, device: str, max_tokens: int) -> str:
    """A digest of everything the default trace depends on (see the module's docstring)."""
    from attnviz.engine.folders import bundled_model_dir

    h = hashlib.sha256()
    h.update(json.dumps([FORMAT, text, device, max_tokens, os.environ.get("CUDA_VISIBLE_DEVICES"),
                         _version("torch"), _version("numpy")]).encode())
    for path in sorted(ENGINE_DIR.rglob("*.py")):
        h.update(str(path.relative_to(ENGINE_DIR)).encode() + b"\0" + path.read_bytes())
    folder = bundled_model_dir()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            st = path.stat()
            h.update(f"{path.relative_to(folder)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def path_for(text: str, device: str, max_tokens: int) -> Path:
    return cache_dir() / f"first-view-{fingerprint(text, device, max_tokens)[:24]}.npz"


@dataclass(frozen=True)
class ModelCard:
    """What a page reads of the bundled model before it is loaded: its name, sizes and folder,
    as the server that stored the first view had them. Any other attribute (`trace`, `capabilities`,
    `tokenizer`, ...) is the real model's: `real()` returns it, waiting for it to load."""

    name: str
    title: str
    kind: str
    family: str
    key: str  # Model.key: the stored trace is cached under it, as the real model's would be
    n_layers: int
    n_heads: int
    hidden: int
    device_type: str  # 'cpu' or 'cuda'
    max_positions: int
    source: str  # the checkpoint folder (views.common.model_notes reads it: engine.bundled)
    cuda: bool  # torch.cuda.is_available() where it was stored: the sidebar's device list
    real: Callable[[], Any] | None = field(default=None, compare=False, repr=False)

    CARD_FIELDS = ("name", "title", "kind", "family", "key", "n_layers", "n_heads", "hidden",
                   "device_type", "max_positions", "source")

    def __getattr__(self, name: str):  # only for what the card does not hold
        if name.startswith("__") or self.real is None:
            raise AttributeError(name)
        return getattr(self.real(), name)

    @classmethod
    def of(cls, model, cuda: bool) -> ModelCard:
        return cls(**{f: getattr(model, f) for f in cls.CARD_FIELDS}, cuda=cuda)

    def as_dict(self) -> dict:
        return {f: getattr(self, f) for f in (*self.CARD_FIELDS, "cuda")}


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def trace_to_arrays(trace: Trace) -> dict[str, np.ndarray]:
    """Every field of a text trace: its arrays under their names, the rest as one JSON."""
    if trace.request.image is not None or trace.request.ids is not None:
        raise ValueError("only a text request's trace is stored")
    arrays, meta = {}, {}
    for f in dataclasses.fields(Trace):
        value = getattr(trace, f.name)
        if isinstance(value, np.ndarray):
            arrays[f.name] = value
        elif f.name == "request":
            meta["request"] = value.as_dict()
        else:
            meta[f.name] = _plain(value)
    return {**arrays, "meta": np.array(json.dumps(meta, ensure_ascii=False))}


def trace_from_arrays(stored) -> Trace:
    """The Trace `trace_to_arrays` wrote (a mapping of arrays, e.g. an opened .npz)."""
    meta = json.loads(str(stored["meta"][()]))
    names = set(stored.files) if hasattr(stored, "files") else set(stored)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(Trace):
        if f.name in meta:
            value = meta[f.name]
            if f.name == "request":
                value = TraceRequest(**{k: v for k, v in value.items() if v is not None})
            elif f.name in TUPLE_FIELDS and value is not None:
                value = tuple(value)
            values[f.name] = value
        elif f.name in names:
            values[f.name] = np.asarray(stored[f.name])
    return Trace(**values)


def same(a: Trace, b: Trace, atol: float = 1e-5) -> bool:
    """Whether two traces agree: every array within `atol` (float32's tolerance, the one the
    tests hold the engine to), everything else equal."""
    for f in dataclasses.fields(Trace):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray)
                    and x.shape == y.shape and x.dtype == y.dtype):
                return False
            close = (np.allclose(x, y, rtol=0.0, atol=atol) if x.dtype.kind in "fc"
                     else np.array_equal(x, y))
            if not close:
                return False
        elif x != y:
            return False
    return True


def save(model, trace: Trace, *, text: str, device: str, max_tokens: int, cuda: bool) -> Path:
    """Store `trace` (the model's trace of `text`) and the model's card, atomically."""
    path = path_for(text, device, max_tokens)
    path.parent.mkdir(parents=True, exist_ok=True)
    card = json.dumps(ModelCard.of(model, cuda).as_dict(), ensure_ascii=False)
    fd, tmp = tempfile.mkstemp(prefix=".first-view-", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, card=np.array(card), **trace_to_arrays(trace))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load(text: str, device: str, max_tokens: int,
         real: Callable[[], Any] | None = None) -> tuple[ModelCard, Trace] | None:
    """The stored card and trace for these inputs, checked, or None (none stored, stale,
    unreadable or inconsistent: the page then waits for the model)."""
    if not enabled():
        return None
    try:
        path = path_for(text, device, max_tokens)
        if not path.is_file():
            return None
        with np.load(path, allow_pickle=False) as stored:
            card = ModelCard(**json.loads(str(stored["card"][()])), real=real)
            trace = trace_from_arrays(stored)
        n = len(trace.tokens)
        shape = (card.n_layers, card.n_heads, n, n)
        if (trace.weights.shape != shape or trace.scores.shape != shape
                or trace.model_key != card.key or trace.request.text != text):
            return None
    except Exception as e:  # noqa: BLE001 - a damaged file is only a slower first page
        print(f"attnviz: the stored first view was not used ({type(e).__name__}: {e})",
              file=sys.stderr, flush=True)
        return None
    return card, trace
