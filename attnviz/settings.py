"""Every tunable of attnviz in one place: a typed, validated `Settings`, read once from the
environment (`settings()`), the only code in the project that reads an ATTNVIZ_* variable.

    from attnviz.settings import settings
    settings().max_tokens          # 2048 unless ATTNVIZ_MAX_TOKENS says otherwise

Each field has one environment variable (its name in capitals after ATTNVIZ_), a default and
a line of documentation; docs/settings.md is the same table (a test keeps the two equal). A
value that cannot be read is refused when the settings are read, with a sentence naming the
variable, so a misspelt server setting stops the server instead of being ignored.

Tests change a setting with `override(name=value)` (a context manager) or by setting the
variable and calling `reload()`.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "ATTNVIZ_"
PRELOAD_MODES = ("0", "1", "class")


def _doc(text: str) -> dict:
    return {"doc": text}


@dataclass(frozen=True)
class Settings:
    """What a server (or a notebook) may tune. Defaults are the values used when the
    environment says nothing."""

    # --- limits on what one request may cost
    max_tokens: int = field(default=2048, metadata=_doc(
        "Tokens per trace a server computes; each model's own positions bound it further "
        "(BERT 512, GPT-2 1024). A 2,048-token trace of SmolLM2 keeps 658 MiB (queries, keys, "
        "values, outputs and hidden states; its weights are computed again a layer at a time, "
        "not kept), about the whole trace cache; `make serve` starts its workers with 512 "
        "unless this is set."))
    max_model_mb: float = field(default=4096.0, metadata=_doc(
        "Largest checkpoint a server builds, in MB of float32 tensors."))
    model_roots: tuple[str, ...] = field(default=(), metadata=_doc(
        "Folders under which a checkpoint may be opened, joined by the system's path "
        "separator (empty: the user's home and the working folder)."))
    view_max_mb: float = field(default=24.0, metadata=_doc(
        "Largest \"Download this view (HTML)\" file a session may build, in MB."))
    # --- the server's caches
    models: int = field(default=4, metadata=_doc("Models kept loaded at once."))
    trace_cache_mb: float = field(default=640.0, metadata=_doc("Traces kept, in MB."))
    result_cache_mb: float = field(default=128.0, metadata=_doc(
        "Analysis results kept (head statistics, rollout, attributions...), in MB."))
    figure_cache_mb: float = field(default=128.0, metadata=_doc("Figures kept, in MB."))
    # --- heavy work taking turns
    heavy_slots: int = field(default=1, metadata=_doc(
        "Long computations (training, sweeps, attributions) run at once per server."))
    trace_slots: int = field(default=1, metadata=_doc(
        "Page runs that read a long text (over 128 tokens) at once per server."))
    quick_slots: int = field(default=0, metadata=_doc(
        "Short computations run at once per server (0: one per core)."))
    flow_workers: int = field(default=0, metadata=_doc(
        "Processes that solve attention flow's max-flows (0: one per core; 1: in-process)."))
    # --- start-up
    fast_paths: bool = field(default=True, metadata=_doc(
        "The fast path, measured against the plain path in docs/performance.md "
        "(fast_paths): the preload computes the lesson's taggers and what a class opens first "
        "under the pages' own keys. 0: the plain path (each page computes its own)."))
    preload: str = field(default="1", metadata=_doc(
        "What a server does while it starts: 1 loads the bundled model and the default "
        "sentence, then (with fast_paths) has the lesson's taggers trained at the lowest "
        "priority and kept in the cache folder (or reads them there); class also warms the "
        "pages a class opens first (with fast_paths); 0 nothing."))
    cache_dir: str = field(default="", metadata=_doc(
        "Where the lesson's trained taggers, the converted SmolLM2 checkpoint and the class "
        "mode's SQLite store live (empty: "
        "$XDG_CACHE_HOME/attnviz or ~/.cache/attnviz)."))
    workers: int = field(default=2, metadata=_doc(
        "Streamlit processes `make serve` starts behind nginx."))
    redis_url: str = field(default="", metadata=_doc(
        "The class mode's store: a Redis server (redis://host:6379/0) that every worker and "
        "pod shares (empty: an SQLite file in the cache folder, for the workers of one "
        "machine)."))

    # ------------------------------------------------------------------ derived values
    @property
    def quick_slots_or_cores(self) -> int:
        return self.quick_slots or os.cpu_count() or 1

    @property
    def model_root_paths(self) -> list[Path]:
        roots = self.model_roots or (str(Path.home()), os.getcwd())
        return [Path(r).expanduser().resolve() for r in roots if r.strip()]

    @property
    def cache_path(self) -> Path:
        if self.cache_dir:
            return Path(self.cache_dir).expanduser()
        base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
        return Path(base).expanduser() / "attnviz"

    @staticmethod
    def env_name(name: str) -> str:
        return PREFIX + name.upper()

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings the environment gives; ValueError naming the variable for a value
        that cannot be read (a number that is no number, a negative size, an unknown mode)."""
        environ = os.environ if environ is None else environ
        values = {}
        for f in dataclasses.fields(cls):
            raw = environ.get(cls.env_name(f.name))
            if raw is None:
                continue
            values[f.name] = _parse(f, raw.strip())
        return cls(**values)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.type in ("int", "float") and value < 0:
                raise ValueError(f"{self.env_name(f.name)} must not be negative (got {value})")
        for name in ("max_tokens", "models", "heavy_slots", "trace_slots", "workers"):
            if getattr(self, name) < 1:
                raise ValueError(f"{self.env_name(name)} must be at least 1")
        if self.max_model_mb <= 0:
            raise ValueError(f"{self.env_name('max_model_mb')} must be more than 0")
        if self.preload not in PRELOAD_MODES:
            raise ValueError(f"{self.env_name('preload')} must be one of "
                             f"{', '.join(PRELOAD_MODES)} (got {self.preload!r})")


def _parse(f: dataclasses.Field, raw: str):
    name = Settings.env_name(f.name)
    try:
        if f.type == "int":
            return int(raw)
        if f.type == "float":
            value = float(raw)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError
            return value
        if f.type == "bool":
            if raw.lower() in ("1", "true", "yes", "on"):
                return True
            if raw.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if f.type == "tuple[str, ...]":
            return tuple(p for p in raw.split(os.pathsep) if p.strip())
        return raw
    except ValueError:
        kind = {"int": "a whole number", "float": "a number",
                "bool": "1 or 0"}.get(f.type, "text")
        raise ValueError(f"{name} must be {kind} (got {raw!r})") from None


_lock = threading.Lock()
_current: Settings | None = None


def settings() -> Settings:
    """The settings, read from the environment once per process."""
    global _current
    if _current is None:
        with _lock:
            if _current is None:
                _current = Settings.from_env()
    return _current


def reload() -> Settings:
    """Read the environment again (tests that set a variable)."""
    global _current
    with _lock:
        _current = Settings.from_env()
    return _current


@contextmanager
def override(**values) -> Iterator[Settings]:
    """The settings with `values` changed, for the length of a with-block (tests)."""
    global _current
    before = settings()
    with _lock:
        _current = dataclasses.replace(before, **values)
    try:
        yield _current
    finally:
        with _lock:
            _current = before


def table() -> list[tuple[str, str, str]]:
    """(variable, default, meaning) for each setting: the table in docs/settings.md."""
    rows = []
    for f in dataclasses.fields(Settings):
        default = f.default
        if isinstance(default, tuple):
            default = os.pathsep.join(default)
        elif isinstance(default, bool):
            default = int(default)
        elif isinstance(default, float) and default.is_integer():
            default = int(default)
        rows.append((Settings.env_name(f.name), str(default), f.metadata["doc"]))
    return rows
