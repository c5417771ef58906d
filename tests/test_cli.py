"""`python -m attnviz export` writes the Trace under the API's names; bad arguments fail cleanly."""

import json
import subprocess
import sys

import numpy as np
import pytest

from attnviz.engine import ARRAY_FIELDS


def run(*args):
    return subprocess.run([sys.executable, "-m", "attnviz", *args], capture_output=True,
                          text=True, timeout=300)


def test_export_round_trip(tmp_path, model):
    out = tmp_path / "trace.npz"
    r = run("export", "--text", "I saw a saw", "--out", str(out), "--window", "2", "--causal",
            "--device", "cpu")  # the same device as `model`: the arrays are equal to 1e-6
    assert r.returncode == 0, r.stderr
    data = np.load(out)
    assert data["tokens"].tolist() == ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    t = model.trace("I saw a saw", window=2, causal=True)
    for name in ARRAY_FIELDS:
        assert data[name].shape == getattr(t, name).shape, name
        np.testing.assert_allclose(data[name], getattr(t, name), atol=1e-6, err_msg=name)
    assert set(ARRAY_FIELDS) | {"tokens", "scale", "request"} == set(data.files)
    assert json.loads(str(data["request"])) == t.request.as_dict()
    assert json.loads(str(data["request"]))["window"] == 2


@pytest.mark.parametrize("args", [
    ["export", "--text", "x", "--out", "o.npz", "--window", "-2"],
    ["export", "--text", "x", "--out", "o.npz", "--positions", "relative"],
    ["export", "--text", "x", "--out", "o.npz", "--model", "/definitely/missing"],
    ["export", "--text", "  ", "--out", "o.npz"],
    ["export", "--text", "x"],
    ["export", "--text", "x", "--out", "/no/such/folder/o.npz"],
    ["frobnicate"],
])
def test_bad_arguments_give_one_line_and_nonzero_exit(args, tmp_path):
    r = subprocess.run([sys.executable, "-m", "attnviz", *args], capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("attnviz: error:"), r.stderr
    assert "Traceback" not in r.stderr


def test_lesson_json_is_the_analysis():
    """`lesson --json`: per tagger its parameters and held-out accuracy (all words, ambiguous,
    double-role, near/far and each distance of the deciding word), equal to the analysis
    functions run here (training is deterministic across processes)."""
    from attnviz.analysis import taggers as T
    from tests.lesson_trained import trained
    from tests.test_analysis_taggers import recount

    r = run("lesson", "--json", "--seed", "0")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    tr = trained()
    c = tr.corpus
    assert set(out["taggers"]) == set(T.NAMES) and out["settings"]["seed"] == 0
    assert out["sentences"] == {"train": len(c.train), "held_out": len(c.test)}
    for name, row in out["taggers"].items():
        m = tr.models[name]
        ref = recount(c, c.test, T.predict(m, c, c.test))
        h = row["held_out"]
        assert row["parameters"] == sum(p.numel() for p in m.parameters()), name
        for key, ref_key in (("all", "all"), ("ambiguous", "ambiguous"), ("near", "near"),
                             ("far", "far"), ("double_role", "double_role")):
            assert h[key] == pytest.approx(ref[ref_key], abs=1e-12), (name, key)
        assert h["by_distance"] == pytest.approx({d[1:]: v for d, v in ref.items()
                                                  if d.startswith("d") and d != "double_role"},
                                                 abs=1e-12)
    assert out["majority_tag"]["far"] == pytest.approx(T.majority_baseline(c)["far"], abs=1e-12)


@pytest.mark.parametrize("args", [["lesson", "--seed", "-1"], ["lesson", "--epochs", "0"],
                                  ["lesson", "--seed", "x"]])
def test_lesson_bad_arguments(args):
    r = run(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().startswith("attnviz: error:")


@pytest.fixture(scope="module")
def family_folders(tmp_path_factory):
    from attnviz.engine.random_models import save_random_checkpoint

    root = tmp_path_factory.mktemp("cli_families")
    return {f: save_random_checkpoint(f, root / f, seed=i)
            for i, f in enumerate(("vit", "bart", "gpt2"))}


def test_export_other_families(tmp_path, family_folders):
    """--image for a ViT, --target for BART's decoder; the arrays are the engine's."""
    from PIL import Image

    from attnviz.engine import TraceRequest, load_model

    pixels = (np.arange(40 * 48 * 3).reshape(40, 48, 3) % 251).astype(np.uint8)
    Image.fromarray(pixels).save(tmp_path / "pic.png")
    out = tmp_path / "vit.npz"
    r = run("export", "--image", str(tmp_path / "pic.png"), "--model",
            str(family_folders["vit"]), "--out", str(out))
    assert r.returncode == 0, r.stderr
    t = load_model(family_folders["vit"]).trace(TraceRequest(image=pixels))
    np.testing.assert_allclose(np.load(out)["weights"], t.weights, atol=1e-6)

    out = tmp_path / "bart.npz"
    r = run("export", "--text", "I saw a saw", "--target", "a saw", "--model",
            str(family_folders["bart"]), "--out", str(out))
    assert r.returncode == 0, r.stderr
    t = load_model(family_folders["bart"]).trace(TraceRequest("I saw a saw", target="a saw"))
    np.testing.assert_allclose(np.load(out)["cross_weights"], t.cross_weights, atol=1e-6)


@pytest.mark.parametrize("family,args", [
    ("vit", ["--text", "I saw a saw"]),  # a ViT reads an image
    ("gpt2", ["--image", "missing.png"]),
    ("gpt2", ["--text", "I saw a saw", "--target", "x"]),  # a target is for BART
])
def test_export_refuses_what_a_family_cannot_do(family, args, tmp_path, family_folders):
    r = subprocess.run([sys.executable, "-m", "attnviz", "export", *args, "--model",
                        str(family_folders[family]), "--out", "o.npz"], capture_output=True,
                       text=True, cwd=tmp_path, timeout=300)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("attnviz: error:"), \
        r.stderr


def test_help_names_the_families():
    r = run("export", "--help")
    assert r.returncode == 0
    for name in ("RoBERTa", "DistilBERT", "GPT-2", "ViT", "BART", "Hub id", "--image",
                 "--target"):
        assert name in r.stdout, name
