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
    r = run("export", "--text", "I saw a saw", "--out", str(out), "--window", "2", "--causal")
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
