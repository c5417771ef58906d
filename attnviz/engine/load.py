"""Loading a checkpoint, offline: a local folder or a Hub id found in the Hugging Face cache.

    load_model()                          the bundled all-MiniLM-L6-v2 (a BERT)
    load_model("path/to/folder")          any supported checkpoint folder
    load_model("gpt2")                    a Hub id, from $HF_HOME/hub (engine.hub)
    load_model("smollm2")                 a bundled model by name (engine.bundled: "minilm",
                                          "smollm2", converted from its GGUF file once)

The family comes from config.model_type (engine.families: one file per family). transformers
reads the config and the tokenizer; the weights are read by engine.weights, checked against the
config before anything is built (missing, misshapen or unexpected tensors refuse the folder; a
server's caps refuse what is too big), and the engine does the maths. The hub is never
contacted: HF_HUB_OFFLINE is set before transformers is imported and every `from_pretrained`
call passes local_files_only=True. Remote code is never trusted.

A server shared by a class opens folders only under its allowed roots (`check_allowed_folder`,
the setting model_roots), with one message for everything outside that says nothing about what
exists there. Whoever calls, every file the loader opens must really lie in the checkpoint's
folder (or, for a Hugging Face cache snapshot, in its repository's blobs/): a link out of it
refuses the folder (folders.outside_files). What costs memory or time is refused by size
before it is read: weight files (Limits.check_files), a safetensors header, the tokenizer's
files (TOKENIZER_BYTES_PER_ROW).
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from ..i18n import _  # noqa: E402 - messages in the language of the session that loads
from .bundled import (  # noqa: E402
    NAMES,
    Progress,
    bundled_folder,
    is_bundled,
    transformers_module,
)
from .families import family_for  # noqa: E402
from .folders import (  # noqa: E402, F401 - engine.load's names since the first release
    BUNDLED_NAME,
    ModelError,
    allowed_model_roots,
    bundled_model_dir,
    check_allowed_folder,
    locate_model,
    outside_files,
    read_config,
    supported_sentence,
)
from .model import Model  # noqa: E402
from .weights import (  # noqa: E402
    WEIGHT_FILES,
    Limits,
    WeightsError,
    all_finite,
    match_weights,
    read_shapes,
    read_tensors,
    weight_files,
)

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "vocab.json")
# Every file a tokenizer may read, and their size in all: at most 1 MB plus this many bytes per
# embedding row (GPT-2's three files: 2.9 MB for 50,257 rows; XLM-R's: 22 MB for 250,002).
TOKENIZER_READS = ("tokenizer.json", "vocab.txt", "vocab.json", "merges.txt",
                   "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "spiece.model", "sentencepiece.bpe.model")
TOKENIZER_BYTES_PER_ROW = 128


def pick_device(device: str | torch.device | None = None) -> torch.device:
    """CUDA when available, else CPU; an explicit choice wins (and is checked)."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise ModelError(_("unknown device “{device}”: cpu, cuda, cuda:N or auto")
                         .format(device=str(device)))
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ModelError(_("CUDA was asked for but no CUDA device is available"))
    return dev


def check_model_dir(path: str | os.PathLike) -> Path:
    """Refuse, with a clear message, anything that is not a supported checkpoint folder."""
    text = str(path).strip()
    if not text:
        raise ModelError(_("no model folder given"))
    if "://" in text:
        raise ModelError(_("only local folders are accepted, not addresses"))
    p = Path(text).expanduser()
    if not p.exists():
        raise ModelError(_("folder not found: {folder}").format(folder=text))
    if not p.is_dir():
        raise ModelError(_("not a folder: {folder}").format(folder=text))
    escaping = outside_files(p.resolve())  # before any file is opened
    if escaping:
        raise ModelError(_("{folder} refused: {files} link outside the checkpoint folder (only "
                           "a Hugging Face cache snapshot's links into its blobs/ are "
                           "followed)").format(folder=p.name, files=", ".join(escaping)))
    config = read_config(p, text)
    mtype = config.get("model_type")
    try:
        family = family_for(mtype)
    except ValueError as e:
        raise ModelError(_("{error}. {supported}").format(
            error=e, supported=supported_sentence())) from None
    reason = family.refuse(config)
    if reason:
        raise ModelError(reason)
    if not any((p / f).is_file() for f in WEIGHT_FILES):
        raise ModelError(_("no weights in {folder} (expected {files})").format(
            folder=text, files=" or ".join(WEIGHT_FILES[::2])))
    if family.needs_tokenizer and not any((p / f).is_file() for f in TOKENIZER_FILES):
        raise ModelError(_("no tokenizer in {folder} (expected {files})").format(
            folder=text, files=" or ".join(TOKENIZER_FILES)))
    return p


def load_model(path: str | os.PathLike | None = None, device: str | None = None,
               max_tokens: int | None = None, limits: Limits | None = None,
               progress: Progress | None = None) -> Model:
    """Load a checkpoint (default: the bundled model) into the attnviz engine.

    `path`: a folder, a Hub id in the local Hugging Face cache, or a bundled model's name
    (engine.bundled.BUNDLED; `progress` is told, a line at a time, about a first use's
    conversion). `max_tokens`: a server's limit on tokens per trace (default: the model's
    positions). `limits`: what a server agrees to build (default:
    engine.weights.Limits.from_settings(), the setting max_model_mb).
    """
    if is_bundled(path):
        folder = bundled_folder(path, progress)
    else:
        folder = bundled_model_dir() if path is None else locate_model(path)
    folder = check_model_dir(folder).resolve()
    raw = read_config(folder, str(folder))
    family = family_for(raw["model_type"])
    limits = Limits.from_settings() if limits is None else limits
    dev = pick_device(device)
    config = _hf_config(folder)
    try:
        sizes = family.sizes(config)
        limits.check_sizes(sizes)
        expected = family.parameter_shapes(config)
        limits.check_total(expected)
        files = weight_files(folder)
        limits.check_files(files)
        match = match_weights(read_shapes(files), expected, family.aliases(config),
                              family.base_prefixes, family.ignorable)
    except (WeightsError, OSError, AttributeError, TypeError) as e:
        raise ModelError(_("{folder} refused: {error}").format(folder=folder.name, error=e)) from e
    tokenizer = None
    if family.needs_tokenizer:
        tokenizer = _tokenizer(folder, sizes["vocab"])
    try:
        state = read_tensors(files, match.names)
    except Exception as e:
        raise ModelError(_("cannot read the weights in {folder}: {error}").format(
            folder=folder, error=f"{type(e).__name__}: {e}")) from e
    if not all_finite(state):
        raise ModelError(_("the weights in {folder} contain NaN or infinite values").format(
            folder=folder))
    name = (BUNDLED_NAME if path is None else NAMES[path] if is_bundled(path)
            else _display_name(folder))
    try:
        return family(state, config, tokenizer, name=name, device=dev, source=str(folder),
                      max_tokens=max_tokens)
    except (ValueError, KeyError) as e:
        raise ModelError(_("cannot build the model in {folder}: {error}").format(
            folder=folder, error=e)) from e


def _display_name(folder: Path) -> str:
    """A cached snapshot's Hub id ('openai-community/gpt2'), else the folder's name."""
    repo = folder.parent.parent
    if folder.parent.name == "snapshots" and repo.name.startswith("models--"):
        return repo.name[len("models--"):].replace("--", "/")
    return folder.name


def _transformers():
    """transformers, imported when first needed (under engine.bundled's lock) and kept quiet
    (errors only, no progress bars)."""
    return transformers_module()


def _hf_config(folder: Path):
    """The folder's config as transformers reads it."""
    try:
        return _transformers().AutoConfig.from_pretrained(folder, local_files_only=True,
                                                          trust_remote_code=False)
    except Exception as e:  # transformers raises many kinds; say which file is wrong
        raise ModelError(_("cannot load the checkpoint in {folder}: {error}").format(
            folder=folder, error=f"{type(e).__name__}: {e}")) from e


def check_tokenizer_size(folder: Path, rows: int) -> int:
    """Refuse, from their sizes alone, tokenizer files too large for an embedding table of
    `rows` rows (a tokenizer of a million tokens takes seconds and hundreds of MB to load);
    their size in bytes."""
    total = sum(f.stat().st_size for f in (folder / n for n in TOKENIZER_READS) if f.is_file())
    allowed = (1 << 20) + TOKENIZER_BYTES_PER_ROW * rows
    if total > allowed:
        raise ModelError(_("the tokenizer files in {folder} hold {mb:,.1f} MB, more than a "
                           "tokenizer for {rows:,} embedding rows needs ({cap:,.1f} MB at "
                           "most): refused unread").format(folder=folder.name, mb=total / 2**20,
                                                           rows=rows, cap=allowed / 2**20))
    return total


def _tokenizer(folder: Path, rows: int):
    """The folder's tokenizer (transformers'), refused when it makes ids the embedding table
    does not have."""
    check_tokenizer_size(folder, rows)
    try:
        tokenizer = _transformers().AutoTokenizer.from_pretrained(
            folder, local_files_only=True, trust_remote_code=False)
    except Exception as e:
        raise ModelError(_("cannot load the tokenizer in {folder}: {error}").format(
            folder=folder, error=f"{type(e).__name__}: {e}")) from e
    size = len(tokenizer)
    if size > rows:
        raise ModelError(_("the tokenizer in {folder} has {size:,} tokens but the embedding "
                           "table only {rows:,} rows: ids beyond {last} would have no "
                           "vector").format(folder=folder.name, size=size, rows=rows,
                                            last=rows - 1))
    return tokenizer
