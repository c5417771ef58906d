"""The tokens a page traces: the server's setting (ATTNVIZ_MAX_TOKENS, default 2,048) bounds
them, each model's own positions bound them further (BERT stays at 512), and a class server
started by `make serve` takes 512 unless its environment says otherwise."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import attnviz
from attnviz import settings as settings_module
from attnviz.engine.random_models import save_random_checkpoint

ROOT = Path(__file__).resolve().parents[1]


def test_the_default_lets_a_decoder_reach_2048_tokens():
    assert settings_module.Settings().max_tokens == 2048
    assert settings_module.Settings.from_env({}).max_tokens == 2048
    assert settings_module.Settings.from_env({"ATTNVIZ_MAX_TOKENS": "300"}).max_tokens == 300


@pytest.fixture(scope="module")
def long_llama(tmp_path_factory):
    folder = save_random_checkpoint("llama", tmp_path_factory.mktemp("m") / "llama",
                                    positions=4096, kv_heads=2, layers=1)
    return folder


def test_a_decoder_is_cut_at_the_setting_and_bert_at_its_own_positions(long_llama):
    cap = settings_module.Settings().max_tokens
    decoder = attnviz.load_model(long_llama, device="cpu", max_tokens=cap)
    assert decoder.model_positions == 4096 and decoder.max_positions == 2048
    t = decoder.trace("saw " * 2500)
    assert t.n_tokens == 2048 and t.dropped > 0
    bert = attnviz.load_model(device="cpu", max_tokens=cap)
    assert bert.max_positions == bert.model_positions == 512
    assert bert.trace("saw " * 600).n_tokens == 512
    class_cap = attnviz.load_model(long_llama, device="cpu", max_tokens=512)
    assert class_cap.max_positions == 512 and class_cap.key != decoder.key


def test_make_serve_starts_its_workers_at_512_tokens_unless_told():
    spec = importlib.util.spec_from_file_location("attnviz_serve_env", ROOT / "scripts/serve.py")
    serve = importlib.util.module_from_spec(spec)
    sys.modules["attnviz_serve_env"] = serve  # its dataclass looks its module up by name
    spec.loader.exec_module(serve)
    env = serve.worker_env({"PATH": "/bin"}, workers=2)
    assert env["ATTNVIZ_MAX_TOKENS"] == "512" == str(serve.CLASS_MAX_TOKENS)
    assert env["ATTNVIZ_PRELOAD"] == "class" and env["HF_HUB_OFFLINE"] == "1"
    told = serve.worker_env({"ATTNVIZ_MAX_TOKENS": "2048", "ATTNVIZ_PRELOAD": "0"}, workers=2)
    assert told["ATTNVIZ_MAX_TOKENS"] == "2048" and told["ATTNVIZ_PRELOAD"] == "0"
