"""A hostile model folder or Hugging Face cache, each laid out in the test as the Hub lays it
out (models--ORG--NAME/{blobs,refs,snapshots/REV}), and what the loader does with it:

- a snapshot's files link into the same repository's blobs/ (loads); a file, or a blob, that
  links anywhere else is refused before any file is opened, with the same message as a
  folder outside the allowed roots;
- weight files far larger than the server's cap are refused from their size alone; a .bin
  is read memory-mapped (an unused tensor is never read); a pickle that needs code is one
  sentence, its code never run;
- a safetensors header larger than MAX_HEADER is refused before it is read, and the refusal
  is remembered by (path, size, modification time);
- a tokenizer of a million tokens is refused by its files' size, unread.

Peak memory is the process's high-water mark (VmHWM) after resetting it
(/proc/self/clear_refs), so reading a sparse 1 GiB file whole would show.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
from pathlib import Path

import pytest
import torch

import attnviz.settings
from attnviz.engine import ModelError, TraceRequest, cached_models, check_allowed_folder, load_model
from attnviz.engine import weights as weights_module
from attnviz.engine.random_models import save_random_checkpoint


def put_in_cache(hub: Path, model_id: str, checkpoint: Path, commit: str = "a" * 40) -> Path:
    """`checkpoint`'s files as a download of `model_id` lays them out; the snapshot folder."""
    repo = hub / ("models--" + model_id.replace("/", "--"))
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir(exist_ok=True)
    for f in sorted(checkpoint.iterdir()):
        blob = repo / "blobs" / hashlib.sha256(f.read_bytes()).hexdigest()
        if not blob.exists():
            shutil.copy(f, blob)
        (snap / f.name).symlink_to(os.path.relpath(blob, snap))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snap


def peak_growth_mb(work) -> tuple[float, object]:
    """(MB the process's peak resident memory rose by while `work()` ran, its result or the
    exception it raised)."""
    def hwm() -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM"))

    def rss() -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS"))

    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pytest.skip("the peak memory cannot be reset here (/proc/self/clear_refs)")
    before = rss()
    try:
        result = work()
    except Exception as e:  # noqa: BLE001 - the refusal is the result
        result = e
    return (hwm() - before) / 1024, result


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    return save_random_checkpoint("bert", tmp_path_factory.mktemp("made") / "bert", seed=3)


@pytest.fixture
def hub(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    return tmp_path / "hf" / "hub"


def roots_message() -> str:
    """The message for a folder outside the allowed roots (what exists there: not said)."""
    with pytest.raises(ModelError) as e:
        check_allowed_folder("/")
    return str(e.value)


# ----------------------------------------------------------------- 1. links out of the folder
def test_a_snapshot_linking_into_its_blobs_loads(hub, bert):
    put_in_cache(hub, "org/tiny-bert", bert)
    model = load_model("org/tiny-bert")
    assert model.name == "org/tiny-bert" and model.n_layers == 2
    check_allowed_folder(hub / "models--org--tiny-bert" / "snapshots" / ("a" * 40))


@pytest.mark.parametrize("name", ["vocab.txt", "config.json", "model.safetensors",
                                  "tokenizer_config.json"])
def test_a_file_linking_out_of_the_cache_is_refused(hub, bert, tmp_path, name):
    """The file outside holds exactly what the snapshot's would: only where it lies refuses
    it (before the fix, the vocabulary was read from outside and typed words showed it)."""
    snap = put_in_cache(hub, "org/tiny-bert", bert)
    outside = tmp_path / "elsewhere" / name
    outside.parent.mkdir()
    shutil.copy(bert / name, outside)
    (snap / name).unlink()
    (snap / name).symlink_to(outside)
    with pytest.raises(ModelError) as e:
        check_allowed_folder(snap)
    assert str(e.value) == roots_message()  # the same words as any refusal
    with pytest.raises(ModelError, match=f"{name} link outside the checkpoint folder"):
        load_model("org/tiny-bert")
    with pytest.raises(ModelError, match="link outside"):
        load_model(str(snap))  # typed as a folder: the same
    if name == "config.json":
        assert cached_models(cache=hub) == []  # not even listed


def test_a_blob_linking_out_of_the_cache_is_refused(hub, bert, tmp_path):
    snap = put_in_cache(hub, "org/tiny-bert", bert)
    blob = (snap / "vocab.txt").resolve()
    outside = tmp_path / "secret.txt"
    outside.write_text("secret\nwords\n")
    blob.unlink()
    blob.symlink_to(outside)
    with pytest.raises(ModelError):
        check_allowed_folder(snap)
    with pytest.raises(ModelError, match="vocab.txt link outside"):
        load_model("org/tiny-bert")


def test_a_plain_folder_linking_to_a_file_beside_it_is_refused(bert, tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(bert, folder)
    (tmp_path / "vocab.txt").write_text((bert / "vocab.txt").read_text())
    (folder / "vocab.txt").unlink()
    (folder / "vocab.txt").symlink_to(tmp_path / "vocab.txt")
    with pytest.raises(ModelError, match="link outside"):
        load_model(folder)
    (folder / "vocab.txt").unlink()
    (folder / "vocab.txt").symlink_to("../m/tokenizer.json")  # a link inside the folder: fine
    assert check_allowed_folder(folder) == folder.resolve()


# ----------------------------------------------------------------- 2. .bin weights
def bin_checkpoint(bert: Path, folder: Path, extra: dict | None = None, **save) -> Path:
    """The checkpoint with its weights as pytorch_model.bin (plus `extra` tensors)."""
    from safetensors.torch import load_file

    shutil.copytree(bert, folder)
    state = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    torch.save({**state, **(extra or {})}, folder / "pytorch_model.bin", **save)
    return folder


def test_weight_files_far_over_the_cap_are_refused_unread(bert, tmp_path):
    """A 1 GiB .bin (sparse here) with ATTNVIZ_MAX_MODEL_MB=64: refused by its size; before
    the fix it was read whole (1.3 GB peak)."""
    folder = bin_checkpoint(bert, tmp_path / "m")
    os.truncate(folder / "pytorch_model.bin", 1 << 30)
    with attnviz.settings.override(max_model_mb=64):
        grew, result = peak_growth_mb(lambda: load_model(folder))
    assert isinstance(result, ModelError), result
    assert "the weight files hold 1,024 MB" in str(result) and "128 MB" in str(result)
    assert grew < 64, grew


def test_a_bin_is_read_lazily_an_unused_tensor_never(bert, tmp_path):
    folder = bin_checkpoint(bert, tmp_path / "m",
                            {"cls.unused": torch.ones(48 << 20, dtype=torch.float32)})
    grew, model = peak_growth_mb(lambda: load_model(folder))  # 192 MB never read
    assert not isinstance(model, Exception), model
    assert grew < 96, grew
    request = TraceRequest("I saw a saw")
    assert torch.equal(torch.as_tensor(model.trace(request).hidden_states),
                       torch.as_tensor(load_model(bert).trace(request).hidden_states))


def test_an_old_format_bin_within_the_cap_still_loads(bert, tmp_path):
    folder = bin_checkpoint(bert, tmp_path / "m", _use_new_zipfile_serialization=False)
    assert load_model(folder).n_layers == 2


class Payload:  # a pickled object: torch.load(weights_only=True) refuses to build it
    ran = False

    def __reduce__(self):
        return (Payload._run, ())

    @staticmethod
    def _run():
        Payload.ran = True
        return {}


def test_a_pickle_that_needs_code_is_one_sentence_and_never_runs(bert, tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(bert, folder)
    (folder / "model.safetensors").unlink()
    torch.save(Payload(), folder / "pytorch_model.bin")
    with pytest.raises(ModelError, match="needs code to load") as e:
        load_model(folder)
    assert "\n" not in str(e.value) and not Payload.ran


# ----------------------------------------------------------------- 3. safetensors headers
def huge_header(folder: Path, header_bytes: int) -> Path:
    """model.safetensors whose first 8 bytes declare a header of `header_bytes` (sparse)."""
    path = folder / "model.safetensors"
    path.unlink()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", header_bytes) + b"{")
    os.truncate(path, header_bytes + 8)
    return path


def test_a_huge_header_is_refused_before_it_is_read_and_the_refusal_remembered(
        bert, tmp_path, monkeypatch):
    """A 200 MB header (before the fix: parsed, +680 MB and 39-64 s a try)."""
    folder = tmp_path / "m"
    shutil.copytree(bert, folder)
    path = huge_header(folder, 200 << 20)
    grew, result = peak_growth_mb(lambda: load_model(folder))
    assert isinstance(result, ModelError) and "header would be 209,715,200 bytes" in str(result)
    assert grew < 32, grew
    calls = []
    real = weights_module._file_shapes
    monkeypatch.setattr(weights_module, "_file_shapes", lambda p: calls.append(p) or real(p))
    for _ in range(3):
        with pytest.raises(ModelError, match="header would be"):
            load_model(folder)
    assert calls == []  # asked again: a stat, not a read
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # the file changed: looked at
    with pytest.raises(ModelError, match="header would be"):
        load_model(folder)
    assert len(calls) == 1


def test_the_header_cap_is_far_below_the_old_one():
    assert weights_module.MAX_HEADER <= 2 << 20  # was 100 MB


# ----------------------------------------------------------------- 4. tokenizers
def test_a_million_token_tokenizer_is_refused_by_its_size(bert, tmp_path, monkeypatch):
    """Before the fix: loaded (14-17 s, 700 MB), then refused for its length."""
    folder = tmp_path / "m"
    shutil.copytree(bert, folder)
    words = (bert / "vocab.txt").read_text().splitlines()
    with open(folder / "vocab.txt", "w") as f:
        f.write("\n".join(words) + "\n" + "".join(f"w{i}\n" for i in range(1_000_000)))
    (folder / "tokenizer.json").unlink()  # transformers would make it from vocab.txt

    import transformers

    def never(*a, **k):
        raise AssertionError("the tokenizer was read")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", never)
    grew, result = peak_growth_mb(lambda: load_model(folder))
    assert isinstance(result, ModelError), result
    assert "tokenizer files" in str(result) and "refused unread" in str(result)
    assert grew < 32, grew


def test_the_app_gives_a_link_out_the_words_of_a_missing_folder(hub, bert, tmp_path):
    """The page's refusal (ui.context.open_checkpoint) says nothing about what is where."""
    from attnviz.ui.context import neutral_refusal, open_checkpoint

    snap = put_in_cache(hub, "org/tiny-bert", bert)
    (snap / "vocab.txt").unlink()
    (snap / "vocab.txt").symlink_to(tmp_path / "anything.txt")
    for typed in ("org/tiny-bert", str(snap)):
        with pytest.raises(ModelError) as e:
            open_checkpoint(typed)
        assert str(e.value) == neutral_refusal(typed)
