"""Another commit of this repository, checked out for a benchmark that compares two versions in
the same run (BENCH_BASELINE=REV): a git worktree of the commit in a temporary folder, removed
afterwards, named by its commit in the tables (never by its folder)."""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                          check=False).stdout.strip()


def revision(root: Path = ROOT) -> str:
    """A checkout's commit (short), with "+ changes" where its tracked files differ from it."""
    rev = git(root, "rev-parse", "--short", "HEAD") or "unknown commit"
    return rev + (" + changes" if git(root, "status", "--porcelain", "--untracked-files=no")
                  else "")


@contextlib.contextmanager
def checkout(rev: str) -> Iterator[Path]:
    """The commit `rev` (a hash, a tag, HEAD~3...) checked out in a temporary git worktree."""
    commit = git(ROOT, "rev-parse", "--verify", f"{rev}^{{commit}}")
    if not commit:
        raise SystemExit(f"BENCH_BASELINE={rev!r} names no commit of {ROOT}")
    with tempfile.TemporaryDirectory(prefix="attnviz-baseline-") as tmp:
        folder = Path(tmp) / "checkout"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet",
                        str(folder), commit], check=True)
        try:
            yield folder
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(folder)], check=False)
