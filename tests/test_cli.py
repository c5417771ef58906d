"""`python -m attnviz export` writes the Trace under the API's names; bad arguments fail cleanly;
every command the documentation shows runs as a user types it into a shell (the quick ones in
`make test-fast`, the lesson and the pack marked slow); a checkpoint that is not weights only
and an `html --out` that names no folder, someone else's folder or a link are one sentence."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

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
def test_bad_arguments_give_one_line_and_nonzero_exit(args, tmp_path, monkeypatch, capsys):
    """`attnviz.cli.main` as `python -m attnviz` calls it, in this process (the shell's own
    path is the next test's)."""
    from attnviz.cli import main

    monkeypatch.chdir(tmp_path)
    try:
        code = main(args)
    except SystemExit as stop:  # argparse's exit, as the interpreter would take it
        code = stop.code
    err = capsys.readouterr().err
    assert code not in (0, None)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("attnviz: error:"), err
    assert "Traceback" not in err


@pytest.mark.parametrize("args", [["frobnicate"], ["export", "--text", "  ", "--out", "o.npz"]])
def test_bad_arguments_from_a_shell_give_one_line(args, tmp_path):
    r = subprocess.run([sys.executable, "-m", "attnviz", *args], capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("attnviz: error:"), r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.slow  # trains the lesson's taggers unless the run's warm-up kept them
def test_lesson_json_is_the_analysis(lesson_kept):
    """`lesson --json`: per tagger its parameters and held-out accuracy (all words, ambiguous,
    double-role, near/far and each distance of the deciding word), equal to the analysis
    functions run here on the same taggers (read where the run kept them, as the app keeps
    them: training is deterministic across processes, tests/test_analysis_taggers.py)."""
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


@pytest.mark.slow  # the kept taggers (the run's warm-up keeps them)
def test_lesson_reads_the_kept_taggers_and_trains_them_again_when_asked(lesson_kept,
                                                                          monkeypatch, capsys):
    """`lesson` reads the taggers the app kept for the same settings (no training); with
    `--again` it trains them (train_all), whatever is kept."""
    from attnviz.analysis import taggers as T
    from attnviz.cli import main
    from tests.lesson_trained import trained

    def refused(*a, **k):
        raise AssertionError("trained although kept")

    monkeypatch.setattr(T, "train_all", refused)
    assert main(["lesson", "--json"]) == 0
    kept = json.loads(capsys.readouterr().out)

    def results(report):
        # the taggers' numbers; how long a training took (wall clock) depends on who trained
        # them: this worker's trained() may be its own training, when a test server held the
        # lock, beside the copy the warm-up kept (bit-for-bit the same weights)
        return {k: v for k, v in report.items() if k != "training_seconds"}

    assert results(kept) == results(T.report(trained()))
    assert set(kept["training_seconds"]) == set(kept["taggers"])
    asked = []
    monkeypatch.setattr(T, "train_all", lambda s, *a, **k: asked.append(s) or trained())
    assert main(["lesson", "--json", "--again"]) == 0
    assert asked == [T.Settings()]
    assert results(json.loads(capsys.readouterr().out)) == results(kept)


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


# ------------------------------------------------------------ documented commands, from a shell
ROOT = Path(__file__).resolve().parents[1]
PY_BIN = str(Path(sys.executable).parent)


def documented_commands() -> list[str]:
    """Every `python -m attnviz ...` line in the code blocks of README.md and docs/*.md, as a
    user would type it: continuation lines joined, the trailing comment dropped."""
    found = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        inside, code = False, []
        for line in doc.read_text(encoding="utf-8").splitlines():
            if line.strip().startswith("```"):
                inside = not inside
            elif inside:
                code.append(line)
        for line in "\n".join(code).replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line.startswith("python -m attnviz"):
                found.append(re.sub(r"\s+", " ", line))
    return found


def shell(command: str, cwd: Path, **env) -> subprocess.CompletedProcess:
    """`command` run by bash in `cwd`, `python` being this interpreter, as a user types it."""
    environ = {**os.environ, "PATH": PY_BIN + os.pathsep + os.environ["PATH"],
               "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=environ)


def as_typed(line: str, model: str = "") -> str:
    """A documented line with its optional parts ([...]) left out and its placeholders filled."""
    line = re.sub(r"\s*\[[^\]]*\]", "", line)
    return line.replace("--model DIR", f"--model {model}").replace("--out DIR", "--out pack")


def test_the_documentation_shows_the_commands():
    lines = documented_commands()
    commands = {line.split()[3] for line in lines if len(line.split()) > 3}
    assert {"export", "info", "lesson", "html", "--help"} <= commands, lines


@pytest.mark.parametrize("line", [
    "python -m attnviz --help",
    "python -m attnviz export --help",
    'python -m attnviz export --text "I saw a saw" --out trace.npz',
    "python -m attnviz info",
    "python -m attnviz info --device cpu",
])
def test_quick_documented_commands_run_from_a_shell(line, tmp_path):
    """The README's quick commands, typed into bash (`info` crashed on a missing --device)."""
    assert line in {as_typed(x) for x in documented_commands()} or line.endswith(
        "--device cpu") or line.endswith("export --help")
    r = shell(line, tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    if line.endswith(" info") or "--device" in line:
        assert r.stdout.startswith("Model('all-MiniLM-L6-v2 (bundled)', BERT, layers=6"), r.stdout
    if "trace.npz" in line:
        assert (tmp_path / "trace.npz").is_file()


def test_info_reads_a_hub_id_from_the_cache_from_a_shell(tmp_path):
    from attnviz.engine.random_models import save_random_checkpoint
    from tests.test_hostile_cache import put_in_cache

    ckpt = save_random_checkpoint("bert", tmp_path / "made", seed=1)
    put_in_cache(tmp_path / "hf" / "hub", "org/tiny-bert", ckpt)
    r = shell("python -m attnviz info --model org/tiny-bert", tmp_path,
              HF_HOME=str(tmp_path / "hf"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Model('org/tiny-bert', BERT, layers=2"), r.stdout


class Pickled:
    """An object torch.load(weights_only=True) refuses to build."""


def test_a_pickle_only_checkpoint_is_one_sentence_on_the_command_line(tmp_path):
    """Before: a full UnpicklingError traceback."""
    import shutil

    import torch

    from attnviz.engine.random_models import save_random_checkpoint

    ckpt = save_random_checkpoint("bert", tmp_path / "m", seed=1)
    (ckpt / "model.safetensors").unlink()
    torch.save(Pickled(), ckpt / "pytorch_model.bin")  # an object: not weights only
    for cmd in ("info --model m", 'export --text "I saw a saw" --out t.npz --model m'):
        r = shell(f"python -m attnviz {cmd}", tmp_path)
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert lines[0].startswith("attnviz: error:") and "needs code to load" in lines[0]
    shutil.rmtree(ckpt)


@pytest.mark.parametrize("out, make, why", [
    ("", None, "--out is empty"),
    ("  ", None, "--out is empty"),
    ("full", "foreign", "did not write"),
    ("link", "link", "is a link"),
    ("file.txt", "file", "is a file"),
])
def test_html_out_refuses_before_any_work(out, make, why, tmp_path, monkeypatch, capsys):
    """`--out ""` used to write 58 files into the working folder; a folder of someone else's
    files was overwritten, a link written through. Refused before the model loads."""
    from attnviz.cli import main

    monkeypatch.chdir(tmp_path)
    if make == "foreign":
        (tmp_path / out).mkdir()
        (tmp_path / out / "index.html").write_text("mine")
    elif make == "link":
        (tmp_path / "target").mkdir()
        (tmp_path / out).symlink_to(tmp_path / "target")
    elif make == "file":
        (tmp_path / out).write_text("x")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    import attnviz.engine

    monkeypatch.setattr(attnviz.engine, "load_model", lambda *a, **k: pytest.fail("loaded"))
    assert main(["html", "--text", "I saw a saw", "--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0], err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing written


@pytest.mark.parametrize("command", ["export", "ablate"])
@pytest.mark.parametrize("out, make, why", [
    ("", None, "--out is empty"),
    ("  ", None, "--out is empty"),
    ("link.npz", "link", "is a link"),
    ("folder", "folder", "is a folder"),
    ("missing/o.npz", None, "does not exist"),
])
def test_npz_out_refuses_before_any_work(command, out, make, why, tmp_path, monkeypatch,
                                         capsys):
    """export's and ablate's --out: an empty name, a link (never written through), a folder
    (never turned into FOLDER.npz beside it) or a missing folder is one line and exit 2,
    before the model loads; nothing is written."""
    from attnviz.cli import main

    monkeypatch.chdir(tmp_path)
    if make == "link":
        (tmp_path / "target.npz").write_text("theirs")
        (tmp_path / out).symlink_to(tmp_path / "target.npz")
    elif make == "folder":
        (tmp_path / out).mkdir()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    import attnviz.engine

    monkeypatch.setattr(attnviz.engine, "load_model", lambda *a, **k: pytest.fail("loaded"))
    assert main([command, "--text", "I saw a saw", "--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0], err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    if make == "link":
        assert (tmp_path / "target.npz").read_text() == "theirs"


def test_npz_out_is_written_under_its_own_name_and_renamed_into_place(tmp_path):
    """The file is written beside its name and renamed: exactly the name given (no .npz
    added), no part file left, and a failure while writing leaves the old file as it was."""
    from attnviz.cli import write_npz

    out = tmp_path / "numbers"
    write_npz(out, lambda f: np.savez(f, a=np.arange(3)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["numbers"]
    np.testing.assert_array_equal(np.load(out)["a"], np.arange(3))

    def broken(f):
        f.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError):
        write_npz(out, broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["numbers"]
    np.testing.assert_array_equal(np.load(out)["a"], np.arange(3))


@pytest.mark.slow
@pytest.mark.parametrize("line", list({m[1]: x for x in reversed(documented_commands())
                                       if (m := re.search(r"attnviz (lesson|html)", x))}
                                      .values()))  # each command's first documented line
def test_slow_documented_commands_run_from_a_shell(line, tmp_path, lesson_kept):
    """The lesson (its taggers, kept by the run or trained) and the lesson pack, typed into
    bash as documented."""
    line = as_typed(line)
    r = shell(line, tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    if " html " in line:
        out = tmp_path / line.split("--out ")[1].split()[0]
        assert (out / "index.html").is_file() and (out / ".attnviz-pack").is_file()


@pytest.mark.parametrize("device", ["meta", "bogus", "cuda:x"])
def test_an_unknown_device_is_named_before_the_model_loads(device, capsys):
    """`--device meta` (or a typo) is one sentence naming the device and the choices, not the
    error of a model run on it."""
    from attnviz.cli import main

    assert main(["ablate", "--text", "I saw a saw", "--device", device]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"attnviz: error: unknown device “{device}”: cpu, cuda, cuda:N or auto"]
