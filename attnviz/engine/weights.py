"""Reading a checkpoint's weights, checked against its config before anything is built.

A config.json is not trusted: it could ask for 300 layers when the file holds 6 (transformers
would fill the rest with random numbers, silently) or for 100,000 (memory runs out before any
check). So, in this order:

1. the config's sizes against a server's caps (`Limits`), from the config alone;
2. the tensors the family reads (names and shapes the config implies) against the file's
   header, which lists every tensor's name, dtype and shape without reading the data:
   a tensor missing, of another shape, or one of the model's own that the config does not
   explain (an unexpected layer) refuses the folder;
3. only then the tensors are read (as float32) and the model built.

safetensors files (also sharded, with model.safetensors.index.json) are read by their header;
a PyTorch .bin file is opened memory-mapped with weights_only=True (no code is run). Before
any of it, the files' sizes are checked against the byte cap (`Limits.check_files`: a file
far larger than the model the server agrees to build is refused unread), a safetensors header
or a .bin file's pickle larger than MAX_HEADER is refused before it is parsed, and a refusal
is remembered by (path, size, modification time), so asking again costs a stat.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import pickle
import re
import struct
import threading
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import torch

from ..settings import settings

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
MAX_HEADER = 2 << 20  # a safetensors header (or a .bin's pickle) larger: not a checkpoint's
MAX_TENSORS = 20_000  # tensors listed in one file's header (GPT-2 XL: about 600)
FILE_FACTOR = 2  # weight files may hold this many times the cap (float64, a task's head)
MAX_OLD_FORMAT = 512 << 20  # an old-format .bin (read whole) larger: refused (BERT-base: 420 MB)
DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


class WeightsError(ValueError):
    """The weights do not match the config, or a cap refuses them; the message says which."""


@dataclass(frozen=True)
class Limits:
    """What a server agrees to build. The byte cap is the float32 size of the tensors read;
    the setting max_model_mb (ATTNVIZ_MAX_MODEL_MB) sets it (default 4096 MB: GPT-2 large
    fits, GPT-2 XL does not)."""

    max_bytes: int = 4096 << 20
    max_layers: int = 128
    max_heads: int = 256
    max_hidden: int = 16384
    max_intermediate: int = 65536
    max_positions: int = 65536
    max_vocab: int = 1 << 20

    @classmethod
    def from_settings(cls) -> Limits:
        """The caps with the byte cap of the setting max_model_mb (attnviz.settings)."""
        return cls(max_bytes=int(settings().max_model_mb * (1 << 20)))

    def check_sizes(self, sizes: dict[str, int]) -> None:
        """Refuse a config whose sizes are not positive whole numbers or exceed the caps."""
        caps = {"layers": self.max_layers, "decoder_layers": self.max_layers,
                "heads": self.max_heads, "decoder_heads": self.max_heads,
                "hidden": self.max_hidden, "intermediate": self.max_intermediate,
                "decoder_intermediate": self.max_intermediate,
                "positions": self.max_positions, "vocab": self.max_vocab}
        for name, value in sizes.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise WeightsError(f"config size {name} = {value!r} is not a whole number")
            low = 0 if name in ("vocab",) else 1
            if value < low:
                raise WeightsError(f"config size {name} = {value} is not positive")
            if name in caps and value > caps[name]:
                raise WeightsError(f"the config asks for {value} {name.replace('_', ' ')}; "
                                   f"this server loads at most {caps[name]}")
        if sizes["hidden"] % sizes["heads"]:
            raise WeightsError(f"hidden size {sizes['hidden']} is not a multiple of "
                               f"{sizes['heads']} heads")

    def check_files(self, files: list[Path]) -> int:
        """Refuse weight files larger in all than FILE_FACTOR times the byte cap, from their
        sizes alone (nothing is read); their total size in bytes."""
        total = sum(f.stat().st_size for f in files)
        if total > FILE_FACTOR * self.max_bytes:
            raise WeightsError(f"the weight files hold {total / (1 << 20):,.0f} MB; this server "
                               f"reads at most {FILE_FACTOR * self.max_bytes / (1 << 20):,.0f} "
                               f"MB of weight files ({FILE_FACTOR} x ATTNVIZ_MAX_MODEL_MB)")
        return total

    def check_total(self, shapes: dict[str, tuple[int, ...]]) -> int:
        total = 4 * sum(math.prod(s) for s in shapes.values())
        if total > self.max_bytes:
            raise WeightsError(f"the model needs {total / (1 << 20):,.0f} MB of float32 "
                               f"weights; this server loads at most "
                               f"{self.max_bytes / (1 << 20):,.0f} MB (ATTNVIZ_MAX_MODEL_MB)")
        return total


# ------------------------------------------------------------------------- the file's header
def weight_files(folder: Path) -> list[Path]:
    """The weight files of a checkpoint folder (shards listed by an index), safetensors first."""
    for name in WEIGHT_FILES:
        path = folder / name
        if not path.is_file():
            continue
        if not name.endswith(".index.json"):
            return [path]
        try:
            index = json.loads(path.read_text(encoding="utf-8"))
            shards = sorted(set(index["weight_map"].values()))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError,
                AttributeError) as e:
            raise WeightsError(f"{name} cannot be read: {e}") from e
        files = []
        for shard in shards:
            if not isinstance(shard, str) or "/" in shard or "\\" in shard or shard in (".", ".."):
                raise WeightsError(f"{name} names a shard outside the folder")
            if not (folder / shard).is_file():
                raise WeightsError(f"{name} names a missing shard {shard}")
            files.append(folder / shard)
        return files
    raise WeightsError(f"no weights (expected {' or '.join(WEIGHT_FILES[::2])})")


def _safetensors_header(path: Path) -> dict[str, tuple[int, ...]]:
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise WeightsError(f"{path.name} is not a safetensors file")
        (n,) = struct.unpack("<Q", head)
        if n > MAX_HEADER:  # refused before a byte of it is read
            raise WeightsError(f"{path.name} is not a safetensors file: its header would be "
                               f"{n:,} bytes, a checkpoint's is at most {MAX_HEADER >> 20} MB")
        if n > size - 8:
            raise WeightsError(f"{path.name} is not a safetensors file (bad header)")
        try:
            header = json.loads(f.read(n))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise WeightsError(f"{path.name} is not a safetensors file (bad header)") from e
    if not isinstance(header, dict):
        raise WeightsError(f"{path.name} is not a safetensors file (bad header)")
    if len(header) > MAX_TENSORS:
        raise WeightsError(f"{path.name} lists {len(header):,} tensors; a checkpoint's file "
                           f"holds at most {MAX_TENSORS:,}")
    shapes, end = {}, 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            shape = tuple(int(x) for x in info["shape"])
            start, stop = (int(x) for x in info["data_offsets"])
            need = math.prod(shape) * DTYPE_BYTES[info["dtype"]]
        except (KeyError, TypeError, ValueError) as e:
            raise WeightsError(f"{path.name}: tensor {name} has a bad header entry") from e
        if stop - start != need or start < 0:
            raise WeightsError(f"{path.name}: tensor {name}'s size does not match its shape")
        shapes[name] = shape
        end = max(end, stop)
    if 8 + n + end > size:
        raise WeightsError(f"{path.name} is cut short: its header lists "
                           f"{8 + n + end:,} bytes, the file has {size:,}")
    return shapes


def _check_pickle(path: Path) -> None:
    """A .bin file in torch's zip format: its pickle (the tensors' names and shapes; the data
    lies beside it) must be at most MAX_HEADER bytes, checked from the zip's directory. A file
    in torch's old (non-zip) format cannot be memory-mapped, so it is read whole: one larger
    than MAX_OLD_FORMAT is refused unread, with the way to convert it."""
    try:
        with zipfile.ZipFile(path) as z:
            pickles = [i for i in z.infolist() if i.filename.endswith("data.pkl")]
    except (zipfile.BadZipFile, OSError, ValueError):
        size = path.stat().st_size
        if size > MAX_OLD_FORMAT:
            raise WeightsError(
                f"{path.name} is in PyTorch's old (non-zip) format, which is read whole: "
                f"{size / (1 << 20):,.0f} MB, and this server reads at most "
                f"{MAX_OLD_FORMAT >> 20} MB of it that way. Save it again once in today's format "
                "(memory-mapped, only the tensors used are read), in the folder: python -c "
                "\"import torch; torch.save(torch.load('pytorch_model.bin', weights_only=True), "
                "'pytorch_model.bin')\"") from None
        return
    if len(pickles) != 1 or pickles[0].file_size > MAX_HEADER:
        raise WeightsError(f"{path.name} is not a PyTorch state dict attnviz can read")


def _load_bin(path: Path) -> dict[str, torch.Tensor]:
    """The file's tensors, memory-mapped (only the tensors used are ever read), weights only:
    a file that needs code to load (a pickled object) is refused, its code never run."""
    _check_pickle(path)
    try:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except RuntimeError as e:  # an old (non-zip) file cannot be memory-mapped
            if "mmap" not in str(e) and "zip" not in str(e):
                raise
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        raise WeightsError(f"{path.name} holds more than tensors (a pickled object that needs "
                           "code to load); attnviz reads weights only and never runs a "
                           "checkpoint's code") from e
    except (RuntimeError, EOFError, ValueError, TypeError, AttributeError, KeyError) as e:
        raise WeightsError(f"{path.name} cannot be read as PyTorch weights "
                           f"({type(e).__name__})") from e
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise WeightsError(f"{path.name} does not hold a dict of tensors")
    return state


_REFUSED: OrderedDict[tuple, str] = OrderedDict()  # (path, size, mtime) -> the refusal
_REFUSED_LOCK = threading.Lock()
_REFUSED_MAX = 256


def _stamp(path: Path) -> tuple:
    st = os.stat(path)
    return (str(path.resolve()), st.st_size, st.st_mtime_ns)


def _file_shapes(path: Path) -> dict[str, tuple[int, ...]]:
    if path.suffix == ".safetensors":
        return _safetensors_header(path)
    return {k: tuple(v.shape) for k, v in _load_bin(path).items()}


def read_shapes(files: list[Path]) -> dict[str, tuple[int, ...]]:
    """Every tensor's name and shape, without reading tensor data (safetensors) or with the
    data memory-mapped, not read (.bin). A file refused once is refused again at the cost of
    a stat while its size and modification time are the same."""
    shapes: dict[str, tuple[int, ...]] = {}
    for path in files:
        stamp = _stamp(path)
        with _REFUSED_LOCK:
            known = _REFUSED.get(stamp)
        if known is not None:
            raise WeightsError(known)
        try:
            shapes |= _file_shapes(path)
        except WeightsError as e:
            with _REFUSED_LOCK:
                _REFUSED[stamp] = str(e)
                while len(_REFUSED) > _REFUSED_MAX:
                    _REFUSED.popitem(last=False)
            raise
    return shapes


def read_tensors(files: list[Path], names: dict[str, str]) -> dict[str, torch.Tensor]:
    """The tensors {our name: file's name}, read as float32 CPU tensors."""
    from safetensors import safe_open

    wanted = {v: k for k, v in names.items()}
    out: dict[str, torch.Tensor] = {}
    for path in files:
        if path.suffix == ".safetensors":
            with safe_open(str(path), framework="pt") as f:
                for key in f.keys():  # noqa: SIM118 - safe_open has no __iter__
                    if key in wanted:
                        out[wanted[key]] = f.get_tensor(key).to(torch.float32)
        else:
            for key, value in _load_bin(path).items():
                if key in wanted:
                    out[wanted[key]] = value.to(torch.float32)
    return out


# --------------------------------------------------------------------- matching to the config
_RENAMES = ((re.compile(r"\.gamma$"), ".weight"), (re.compile(r"\.beta$"), ".bias"))


def _canonical(key: str) -> str:
    """Old checkpoints (TensorFlow conversions) call LayerNorm weights gamma and beta."""
    for pattern, new in _RENAMES:
        key = pattern.sub(new, key)
    return key


@dataclass(frozen=True)
class Match:
    names: dict[str, str]  # the family's name -> the file's name
    prefix: str


def match_weights(file_shapes: dict[str, tuple[int, ...]],
                  expected: dict[str, tuple[int, ...]],
                  aliases: dict[str, tuple[str, ...]],
                  prefixes: tuple[str, ...],
                  ignorable: tuple[str, ...]) -> Match:
    """Pair the family's tensors with the file's; refuse missing, misshapen or unexpected ones.

    A task checkpoint (e.g. BertForMaskedLM) stores the model under a prefix ('bert.') beside
    its head ('cls.'): the prefix that names the most expected tensors is used; tensors outside
    it are the head's and are not read. Inside it, a tensor in one of the model's own groups
    (e.g. 'encoder.') that the config does not explain is unexpected.
    """
    canon = {}
    for key in file_shapes:
        canon.setdefault(_canonical(key), key)
    best, best_hits = "", -1
    for prefix in ("", *prefixes):
        hits = sum(prefix + name in canon for name in expected)
        if hits > best_hits:
            best, best_hits = prefix, hits
    names: dict[str, str] = {}
    missing, wrong = [], []
    for name, shape in expected.items():
        found = next((canon[best + n] for n in (name, *aliases.get(name, ()))
                      if best + n in canon), None)
        if found is None:
            missing.append(name)
        elif tuple(file_shapes[found]) != tuple(shape):
            wrong.append(f"{name} is {list(file_shapes[found])}, the config says {list(shape)}")
        else:
            names[name] = found
    if missing:
        raise WeightsError(
            f"the weights do not cover the config: {len(missing)} of {len(expected)} tensors "
            f"missing (e.g. {', '.join(missing[:3])})")
    if wrong:
        raise WeightsError(f"the weights do not match the config: {'; '.join(wrong[:3])}")
    groups = {name.split(".")[0] for name in expected}
    known = set(expected) | {a for alts in aliases.values() for a in alts}
    skip = [re.compile(p) for p in ignorable]
    unexpected = []
    for key in canon:
        if not key.startswith(best):
            continue
        inner = key[len(best):]
        if inner.split(".")[0] in groups and inner not in known and not any(
                p.search(inner) for p in skip):
            unexpected.append(inner)
    if unexpected:
        raise WeightsError(
            f"the weights hold {len(unexpected)} tensors the config does not explain "
            f"(e.g. {', '.join(sorted(unexpected)[:3])}): config and weights disagree")
    return Match(names, best)


def all_finite(state: dict[str, torch.Tensor]) -> bool:
    """Whether every value of every tensor is finite. A tensor's float64 sum is finite exactly
    when all its values are (a NaN or an infinity makes it NaN or infinite, and finite float32
    values cannot add up past float64's range): one pass, no [numel] mask made."""
    return all(bool(torch.isfinite(t.sum(dtype=torch.float64))) for t in state.values())


def state_digest(state: dict[str, torch.Tensor]) -> str:
    """The identity of a set of weights: SHA-256 of every tensor's name, dtype, shape and bytes
    (16 hex digits). Two checkpoints saved into one folder have two digests; Model.key carries
    it, so every cache of model-derived values is keyed by the weights, not by the folder."""
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous().reshape(-1)
        h.update(f"{name}|{t.dtype}|{tuple(state[name].shape)}\n".encode())
        h.update(t.view(torch.uint8).numpy())
    return h.hexdigest()[:16]
