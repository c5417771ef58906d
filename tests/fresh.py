"""Python code run in a fresh interpreter in the repository folder: what a new process
imports or sees, unaffected by what this test process has already loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def last_line(code: str, timeout: float = 300) -> str:
    """The last line `code` prints (it must exit cleanly: else its stderr fails the test)."""
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=timeout)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.strip().splitlines()
    return lines[-1] if lines else ""
