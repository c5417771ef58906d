"""The code stays ruff-clean (pyproject's [tool.ruff] settings), checked on every `make test`."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is a test dependency (pip install -e '.[test]')"
    r = subprocess.run([ruff, "check", "attnviz", "pages", "tests", "app.py", "benchmarks",
                        "scripts", "--output-format", "concise"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
