"""Model folders: the bundled one loads offline; anything else is checked and refused clearly."""

import json
import os

import numpy as np
import pytest

import attnviz
from attnviz import i18n
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
    ({"model_type": "t5"}, ("model.safetensors", "vocab.txt"), "not supported.*BERT, RoBERTa"),
    ({"model_type": "bert"}, ("vocab.txt",), "no weights"),
    ({"model_type": "bert"}, ("model.safetensors",), "no tokenizer"),
    ({"model_type": "bert", "position_embedding_type": "relative_key"},
     ("model.safetensors", "vocab.txt"), "absolute"),
])
def test_refused_folders(tmp_path, config, files, message):
    d = make_dir(tmp_path, config, files)
    with pytest.raises(ModelError, match=message):
        check_model_dir(d)


@pytest.mark.parametrize("config,files,english,chinese", [
    (None, ("model.safetensors", "vocab.txt"), "no config.json in .*: not a Hugging Face",
     "中没有 config.json：不是 Hugging Face 检查点文件夹"),
    ({"model_type": "bert"}, ("vocab.txt",), "no weights in .* \\(expected model.safetensors",
     "中没有权重文件（应有 model.safetensors"),
])
def test_refusals_are_in_the_language_of_the_session(tmp_path, config, files, english,
                                                     chinese):
    """The engine's refusals read in the session's language; outside a session (tests, the
    command line) they stay English."""
    d = make_dir(tmp_path, config, files)
    with i18n.use("zh"), pytest.raises(ModelError, match=chinese):
        check_model_dir(d)
    with pytest.raises(ModelError, match=english):
        check_model_dir(d)
    with i18n.use("zh"), pytest.raises(ModelError, match="找不到文件夹：/definitely/missing"):
        check_model_dir("/definitely/missing")


def test_broken_weights_are_refused_with_a_message(tmp_path):
    d = make_dir(tmp_path, {"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2,
                            "num_hidden_layers": 1, "intermediate_size": 8})
    with pytest.raises(ModelError, match="not a safetensors file"):
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


# ------------------------------------------------ checkpoint configs are checked, not trusted
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 2-layer random BERT (engine.random_models) to copy and break."""
    from attnviz.engine.random_models import save_random_checkpoint

    return save_random_checkpoint("bert", tmp_path_factory.mktemp("tiny") / "bert")


def copy_with_config(src, dst, **changes):
    import shutil

    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg.update(changes)
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def never_built(monkeypatch):
    """Make building any model fail loudly: a refusal must come before it."""
    from attnviz.engine.families import FAMILIES

    def boom(*a, **k):
        raise AssertionError("the model was built before the checks refused it")

    for cls in FAMILIES.values():
        monkeypatch.setattr(cls, "setup", boom)


def test_the_tiny_checkpoint_loads(tiny):
    assert attnviz.load_model(tiny, device="cpu").n_layers == 2


def test_a_config_asking_for_more_layers_than_the_weights_hold_is_refused(
        tiny, tmp_path, monkeypatch):
    d = copy_with_config(tiny, tmp_path / "l300", num_hidden_layers=300)
    never_built(monkeypatch)
    with pytest.raises(ModelError, match=r"do not cover the config: .* missing"):
        attnviz.load_model(d, device="cpu", limits=attnviz.engine.Limits(max_layers=512))
    with pytest.raises(ModelError, match="asks for 300 layers; this server loads at most 128"):
        attnviz.load_model(d, device="cpu")


def test_a_config_with_fewer_layers_than_the_weights_is_refused(tiny, tmp_path, monkeypatch):
    d = copy_with_config(tiny, tmp_path / "l1", num_hidden_layers=1)
    never_built(monkeypatch)
    with pytest.raises(ModelError, match="does not explain.*encoder.layer.1"):
        attnviz.load_model(d, device="cpu")


def test_a_huge_config_is_refused_before_anything_is_built(tiny, tmp_path, monkeypatch):
    import time
    import tracemalloc

    d = copy_with_config(tiny, tmp_path / "huge", num_hidden_layers=100_000,
                         hidden_size=65_536, intermediate_size=1 << 20)
    never_built(monkeypatch)
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(ModelError, match="at most"):
        attnviz.load_model(d, device="cpu")
    elapsed, peak = time.perf_counter() - t0, tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 << 20, f"{peak / 2**20:.0f} MB allocated before refusing"
    assert elapsed < 30  # generous: a shared machine; building would take forever


def test_the_byte_cap_refuses_a_model_too_big_for_the_server(tiny):
    import attnviz.settings

    with attnviz.settings.override(max_model_mb=1), \
            pytest.raises(ModelError, match="at most 1 MB"):
        attnviz.load_model(tiny, device="cpu")
    attnviz.load_model(tiny, device="cpu")  # within the default cap


def test_the_byte_cap_comes_from_the_environment_variable(monkeypatch):
    import attnviz.settings
    from attnviz.engine.weights import Limits

    monkeypatch.setenv("ATTNVIZ_MAX_MODEL_MB", "2.5")
    try:
        attnviz.settings.reload()
        assert Limits.from_settings().max_bytes == int(2.5 * (1 << 20))
    finally:
        monkeypatch.undo()
        attnviz.settings.reload()
    assert Limits.from_settings() == Limits()


def test_missing_and_misshapen_tensors_are_refused(tiny, tmp_path, monkeypatch):
    from safetensors.torch import load_file, save_file

    state = load_file(tiny / "model.safetensors")
    d = copy_with_config(tiny, tmp_path / "missing")
    save_file({k: v for k, v in state.items() if "layer.1.output.dense.bias" not in k},
              d / "model.safetensors")
    with pytest.raises(ModelError, match="1 of .* tensors missing.*layer.1.output.dense.bias"):
        attnviz.load_model(d, device="cpu")
    d = copy_with_config(tiny, tmp_path / "wide", intermediate_size=65)
    with pytest.raises(ModelError, match="intermediate.dense.weight is \\[64, 32\\], the config "
                                         "says \\[65, 32\\]"):
        attnviz.load_model(d, device="cpu")
    extra = dict(state, **{"encoder.layer.0.attention.self.extra.weight": state[
        "encoder.layer.0.output.dense.bias"].clone()})
    d = copy_with_config(tiny, tmp_path / "extra")
    save_file(extra, d / "model.safetensors")
    with pytest.raises(ModelError, match="does not explain"):
        attnviz.load_model(d, device="cpu")


def test_a_task_checkpoint_loads_its_backbone_and_ignores_its_head(tiny, tmp_path):
    """BertForMaskedLM-style files: the model under 'bert.', a head under 'cls.'."""
    from safetensors.torch import load_file, save_file

    state = load_file(tiny / "model.safetensors")
    d = copy_with_config(tiny, tmp_path / "task")
    task = {"bert." + k: v for k, v in state.items()}
    task["cls.predictions.bias"] = state["embeddings.LayerNorm.bias"].clone()
    save_file(task, d / "model.safetensors")
    a, b = attnviz.load_model(tiny, device="cpu"), attnviz.load_model(d, device="cpu")
    assert np.array_equal(a.trace("I saw a saw").weights, b.trace("I saw a saw").weights)


def test_a_vocabulary_larger_than_the_embedding_table_is_refused(tiny, tmp_path, monkeypatch):
    from safetensors.torch import load_file, save_file

    state = load_file(tiny / "model.safetensors")
    rows = 1000
    state["embeddings.word_embeddings.weight"] = state["embeddings.word_embeddings.weight"][:rows]
    d = copy_with_config(tiny, tmp_path / "small_vocab", vocab_size=rows)
    save_file(state, d / "model.safetensors")
    never_built(monkeypatch)
    with pytest.raises(ModelError, match="30,522 tokens but the embedding table only 1,000 rows"):
        attnviz.load_model(d, device="cpu")
    with i18n.use("zh"), pytest.raises(ModelError,
                                       match="有 30,522 个 token，但嵌入表只有 1,000 行"):
        attnviz.load_model(d, device="cpu")


def test_a_truncated_weights_file_is_refused_from_its_header(tiny, tmp_path):
    d = copy_with_config(tiny, tmp_path / "cut")
    data = (tiny / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="cut short"):
        attnviz.load_model(d, device="cpu")


def test_a_sharded_checkpoint_loads(tiny, tmp_path):
    from safetensors.torch import load_file, save_file

    state = load_file(tiny / "model.safetensors")
    d = copy_with_config(tiny, tmp_path / "sharded")
    (d / "model.safetensors").unlink()
    keys = sorted(state)
    halves = {"model-00001-of-00002.safetensors": keys[::2],
              "model-00002-of-00002.safetensors": keys[1::2]}
    for name, part in halves.items():
        save_file({k: state[k] for k in part}, d / name)
    index = {"weight_map": {k: name for name, part in halves.items() for k in part}}
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    t = attnviz.load_model(d, device="cpu").trace("I saw a saw")
    ref = attnviz.load_model(tiny, device="cpu").trace("I saw a saw")
    assert np.array_equal(t.hidden_states, ref.hidden_states)
