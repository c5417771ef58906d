"""Hub ids resolved offline from a Hugging Face cache laid out as huggingface_hub lays it out
(models--ORG--NAME/refs/main + snapshots/<commit>/ with files linked into blobs/), with
HF_HOME pointed at a temporary folder; no socket is ever opened."""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest

import attnviz
from attnviz.engine import ModelError, cached_models, hub_cache_dir, resolve_hub_id
from attnviz.engine.random_models import save_random_checkpoint


def put_in_cache(hub: Path, model_id: str, checkpoint: Path, commit: str) -> Path:
    """Lay `checkpoint`'s files out as a download of `model_id` at `commit` would be."""
    repo = hub / ("models--" + model_id.replace("/", "--"))
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    (repo / "blobs").mkdir(exist_ok=True)
    for f in checkpoint.iterdir():
        digest = hashlib.sha256(f.read_bytes()).hexdigest()
        blob = repo / "blobs" / digest
        if not blob.exists():
            shutil.copy(f, blob)
        (snap / f.name).symlink_to(os.path.relpath(blob, snap))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return snap


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("made")
    return {f: save_random_checkpoint(f, root / f, seed=i)
            for i, f in enumerate(("gpt2", "bert", "vit"))}


@pytest.fixture
def hf_home(tmp_path, monkeypatch, checkpoints):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    hub = tmp_path / "hf" / "hub"
    put_in_cache(hub, "openai-community/gpt2", checkpoints["gpt2"], "a" * 40)
    put_in_cache(hub, "bert-base-uncased", checkpoints["bert"], "b" * 40)
    old = put_in_cache(hub, "google/vit-tiny", checkpoints["vit"], "c" * 40)
    newer = hub / "models--google--vit-tiny" / "snapshots" / ("d" * 40)
    shutil.copytree(old, newer, symlinks=True)
    (newer / "config.json").unlink()  # a broken later snapshot that refs/main does not name
    (hub / "models--not-a-model").mkdir()  # no snapshots: not listed
    return hub


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a socket was opened: nothing may be downloaded")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_the_cache_follows_hf_home_and_hf_hub_cache(hf_home, monkeypatch, tmp_path):
    assert hub_cache_dir() == hf_home
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    assert hub_cache_dir() == tmp_path / "elsewhere"


def test_ids_load_offline_from_the_cache(hf_home, checkpoints, no_network):
    for model_id in ("gpt2", "openai-community/gpt2"):  # the bare id finds the moved repo
        m = attnviz.load_model(model_id, device="cpu")
        assert m.family == "gpt2" and m.name == "openai-community/gpt2"
        assert Path(m.source) == (hf_home / "models--openai-community--gpt2" / "snapshots" /
                                  ("a" * 40)).resolve()
    direct = attnviz.load_model(checkpoints["gpt2"], device="cpu")
    assert np.array_equal(m.trace("I saw a saw").weights, direct.trace("I saw a saw").weights)
    assert attnviz.load_model("bert-base-uncased", device="cpu").family == "bert"


def test_refs_main_names_the_snapshot(hf_home):
    assert resolve_hub_id("google/vit-tiny").name == "c" * 40
    (hf_home / "models--google--vit-tiny" / "refs" / "main").write_text("../../../../etc")
    assert resolve_hub_id("google/vit-tiny").name == "c" * 40  # a bad ref is not followed


def test_a_missing_id_is_one_sentence_naming_what_is_supported(hf_home, no_network):
    with pytest.raises(ModelError) as e:
        attnviz.load_model("facebook/bart-large", device="cpu")
    msg = str(e.value)
    assert "neither a folder nor a model in the Hugging Face cache" in msg
    assert "nothing is downloaded" in msg and "GPT-2" in msg and "BART" in msg
    assert "\n" not in msg


@pytest.mark.parametrize("bad", ["../etc", "a/b/c", "/etc/passwd", "..", "org/..",
                                 "https://huggingface.co/gpt2"])
def test_what_is_not_an_id_is_never_looked_up(hf_home, bad):
    assert resolve_hub_id(bad) is None
    with pytest.raises(ModelError):
        attnviz.load_model(bad, device="cpu")


def test_cached_models_are_listed_by_id_and_type(hf_home):
    found = {(c.id, c.model_type) for c in cached_models()}
    assert found == {("openai-community/gpt2", "gpt2"), ("bert-base-uncased", "bert"),
                     ("google/vit-tiny", "vit")}
    assert [c.id for c in cached_models(("vit",))] == ["google/vit-tiny"]
