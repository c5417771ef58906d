"""Model folders: the bundled one loads offline; anything else is checked and refused clearly."""

import json
import os

import pytest

import attnviz
from attnviz.engine import ModelError, bundled_model_dir, check_model_dir, pick_device


def test_bundled_model_is_the_default_and_offline(model):
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert (model.n_layers, model.n_heads, model.hidden) == (6, 12, 384)
    assert (bundled_model_dir() / "model.safetensors").is_file()
    assert "bundled" in model.name and model.device.type == "cpu"


def make_dir(tmp_path, config=None, files=("model.safetensors", "vocab.txt")):
    d = tmp_path / "ckpt"
    d.mkdir()
    if config is not None:
        (d / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))
    for f in files:
        (d / f).write_bytes(b"not really weights")
    return d


@pytest.mark.parametrize("config,files,message", [
    (None, ("model.safetensors", "vocab.txt"), "no config.json"),
    ("{not json", ("model.safetensors", "vocab.txt"), "cannot be read"),
    ({"model_type": "gpt2"}, ("model.safetensors", "vocab.txt"), "not supported"),
    ({"model_type": "bert"}, ("vocab.txt",), "no weights"),
    ({"model_type": "bert"}, ("model.safetensors",), "no tokenizer"),
    ({"model_type": "bert", "position_embedding_type": "relative_key"},
     ("model.safetensors", "vocab.txt"), "absolute"),
])
def test_refused_folders(tmp_path, config, files, message):
    d = make_dir(tmp_path, config, files)
    with pytest.raises(ModelError, match=message):
        check_model_dir(d)


def test_broken_weights_are_refused_with_a_message(tmp_path):
    d = make_dir(tmp_path, {"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2,
                            "num_hidden_layers": 1, "intermediate_size": 8})
    with pytest.raises(ModelError, match="cannot load"):
        attnviz.load_model(d)


@pytest.mark.parametrize("path", ["", "   ", "/definitely/missing", "https://huggingface.co/bert",
                                  "/etc/hostname"])
def test_bad_paths(path):
    with pytest.raises(ModelError):
        check_model_dir(path)


def test_device_choice():
    assert pick_device("cpu").type == "cpu"
    assert pick_device(None).type in ("cpu", "cuda")
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(ModelError, match="CUDA"):
            pick_device("cuda")
