"""The code stays ruff-clean (pyproject's [tool.ruff] settings), checked on every `make test`."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is a test dependency (pip install -e '.[test]')"
    r = subprocess.run([ruff, "check", "attnviz", "pages", "tests", "app.py", "benchmarks",
                        "scripts", "--output-format", "concise"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_eslint_clean():
    """The browser files' JavaScript (attnviz/ui/components, attnviz/export/page) passes ESLint
    (eslint.config.mjs), as `make lint` runs it; ESLint comes from npm (`npm ci`, which `make
    lint` and `make test` run): without node_modules/ this test skips and says so."""
    eslint = ROOT / "node_modules" / ".bin" / "eslint"
    if not eslint.exists() or not shutil.which("node"):
        pytest.skip("ESLint is not installed here: `make lint` (or `npm ci`) installs it")
    r = subprocess.run([str(eslint), "attnviz/ui/components", "attnviz/export/page"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
