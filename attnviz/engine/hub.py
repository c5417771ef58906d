"""Hub ids ('bert-base-uncased', 'gpt2', 'google/vit-base-patch16-224') resolved offline, in
the user's Hugging Face cache, laid out as huggingface_hub lays it out:

    $HF_HUB_CACHE  (default $HF_HOME/hub, default ~/.cache/huggingface/hub)
      models--ORG--NAME/                  ('models--gpt2' for an id without organisation)
        refs/main                          the commit the id points to
        snapshots/<commit>/config.json     the files of that commit (links into blobs/)

Nothing is downloaded: an id that is not in the cache is refused. The environment is read on
every call, so a test (or a user) can point HF_HOME somewhere else at run time.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")
_REF = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
MAX_CONFIG_BYTES = 16 << 20  # a config.json larger than this is not a checkpoint's (real: KB)


def hub_cache_dir() -> Path:
    """Where Hugging Face keeps downloaded models, as huggingface_hub decides it."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var, "").strip():
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME", "").strip():
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def looks_like_hub_id(text: str) -> bool:
    """'gpt2' or 'org/name': letters, digits, '.', '_', '-' (no '..', no leading '/')."""
    return bool(_ID.match(text)) and ".." not in text


def link_homes(folder: Path) -> tuple[Path, ...]:
    """Where the files of a (resolved) checkpoint folder may really lie: the folder itself,
    and for a snapshot of the Hugging Face cache (models--ORG--NAME/snapshots/REV) also that
    repository's blobs/, which the snapshot's files link into."""
    repo = folder.parent.parent
    if folder.parent.name == "snapshots" and repo.name.startswith("models--"):
        return folder, repo / "blobs"
    return (folder,)


def file_inside(file: Path, folder: Path) -> bool:
    """Whether `file` (an entry of the resolved `folder`), its links followed, lies in one of
    the folder's link_homes; a link that cannot be resolved (a loop) is not inside."""
    try:
        real = file.resolve()
    except (OSError, RuntimeError, ValueError):
        return False
    return any(real.is_relative_to(home) for home in link_homes(folder))


def _snapshot(repo: Path) -> Path | None:
    """refs/main's snapshot; without refs/main, the only (or newest) snapshot."""
    snaps = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        try:
            commit = ref.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            commit = ""
        if _REF.match(commit) and commit not in (".", "..") and (snaps / commit).is_dir():
            return snaps / commit
    try:
        found = [p for p in snaps.iterdir() if p.is_dir() and (p / "config.json").is_file()]
    except OSError:
        return None
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def resolve_hub_id(model_id: str, cache: Path | None = None) -> Path | None:
    """The cached snapshot folder of a Hub id, or None when it is not in the cache.

    An id without organisation also matches a single cached 'ORG/<id>' (the Hub moved
    'gpt2' to 'openai-community/gpt2'; either spelling finds the other's download)."""
    if not looks_like_hub_id(model_id):
        return None
    cache = hub_cache_dir() if cache is None else cache
    repo = cache / ("models--" + model_id.replace("/", "--"))
    if repo.is_dir():
        return _snapshot(repo)
    name = model_id.split("/")[-1]
    try:
        candidates = sorted(cache.glob(f"models--*--{name}")) if "/" not in model_id else []
    except OSError:
        candidates = []
    if len(candidates) == 1 and candidates[0].is_dir():
        return _snapshot(candidates[0])
    return None


@dataclass(frozen=True)
class CachedModel:
    id: str  # 'gpt2', 'google/vit-base-patch16-224'
    model_type: str  # config.model_type
    folder: Path  # the snapshot


def cached_models(model_types: tuple[str, ...] | None = None,
                  cache: Path | None = None) -> list[CachedModel]:
    """The models in the Hugging Face cache with a config.json (of `model_types`, if given),
    sorted by id."""
    cache = hub_cache_dir() if cache is None else cache
    out = []
    try:
        repos = sorted(p for p in cache.iterdir() if p.name.startswith("models--"))
    except OSError:
        return []
    for repo in repos:
        model_id = repo.name[len("models--"):].replace("--", "/")
        if not looks_like_hub_id(model_id):
            continue
        snap = _snapshot(repo)
        if snap is None or not file_inside(snap / "config.json", snap.resolve()):
            continue
        try:
            if (snap / "config.json").stat().st_size > MAX_CONFIG_BYTES:
                continue
            config = json.loads((snap / "config.json").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        mtype = config.get("model_type") if isinstance(config, dict) else None
        if isinstance(mtype, str) and (model_types is None or mtype in model_types):
            out.append(CachedModel(model_id, mtype, snap))
    return out
