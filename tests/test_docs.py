"""The documentation tells the truth about the code.

- README.md is a newcomer's page: under 300 lines; every `make` target and `python -m attnviz`
  command (with its options) it shows exists; every `attnviz.NAME` it uses is exported.
- docs/settings.md's table is `attnviz.settings.table()`, row for row.
- The paths README.md and docs/ name exist.
- No tracked file outside tests/ speaks of stops, sessions or the order in which things were
  built (the project's hook's pattern).
- benchmarks/report.py writes docs/performance.md as documented: one section per benchmark,
  a rerun of one replaces only its own, a benchmark that never ran says how to run it; and
  docs/performance.md has a section for every benchmarks/bench_*.py.

`python tests/test_docs.py` prints the settings table as docs/settings.md should hold it.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
HISTORY = re.compile(r"(first|second|third|[a-z]+teenth|[a-z]+th|this|last|previous|next) "
                     r"stop\b|stop's|session of 20[0-9][0-9]", re.I)


def settings_markdown() -> str:
    """The settings table as docs/settings.md holds it."""
    from attnviz.settings import table

    lines = ["| variable | default | meaning |", "|---|---|---|"]
    lines += [f"| `{var}` | {default} | {meaning.replace('|', chr(92) + '|')} |"
              for var, default, meaning in table()]
    return "\n".join(lines)


def _table_rows(text: str, header: str) -> list[tuple[str, ...]]:
    """The rows of the Markdown table under `header` (its first line), cells stripped."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == header)
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
        rows.append(tuple(c.strip().replace("\\|", "|") for c in cells))
    return rows


def code_lines(text: str) -> list[str]:
    """The lines of the fenced code blocks and the inline code spans of a Markdown text."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            out.append(line)
        else:
            out += re.findall(r"`([^`]+)`", line)
    return out


# ------------------------------------------------------------------------------ README.md
def test_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n < 300, f"README.md has {n} lines: longer material belongs in docs/"


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*):(?!=)", text, re.M))


def test_readme_make_targets_exist():
    targets = makefile_targets()
    makefile = (ROOT / "Makefile").read_text()
    shown = [line for line in code_lines(README.read_text(encoding="utf-8")) if "make " in line]
    assert shown, "README.md shows no make command"
    for line in shown:
        for target in re.findall(r"\bmake ([a-z][\w-]*)", line):
            assert target in targets, f"README shows `make {target}`, not in the Makefile"
        for variable in re.findall(r"\b([A-Z][A-Z_]+)=", line):
            if variable.startswith(("ATTNVIZ_", "STREAMLIT_", "HF_")):
                continue
            assert f"$({variable})" in makefile, (
                f"README passes {variable}= to make; the Makefile does not use it")


def cli_help(*command: str) -> str:
    """What `python -m attnviz [COMMAND] --help` prints."""
    from attnviz.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    return out.getvalue()


def test_readme_cli_commands_exist():
    top = cli_help()
    commands = set(re.search(r"\{([\w,]+)\}", top)[1].split(","))
    shown = [line for line in code_lines(README.read_text(encoding="utf-8"))
             if "python -m attnviz" in line]
    assert shown, "README.md shows no python -m attnviz command"
    helps: dict[str, str] = {}
    for line in shown:
        m = re.search(r"python -m attnviz\s+([a-z][\w-]*)?", line)
        command = m[1]
        if command is None:
            continue
        assert command in commands, f"README shows `python -m attnviz {command}`: no such command"
        helps.setdefault(command, cli_help(command))
        for option in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", line[m.end():]):
            assert option in helps[command] or option == "--help", (
                f"README shows `python -m attnviz {command} ... {option}`: no such option")


def test_readme_python_names_exist():
    import attnviz

    code = "\n".join(code_lines(README.read_text(encoding="utf-8")))
    names = set(re.findall(r"\battnviz\.([A-Za-z_]\w*)\b", code))
    assert names, "README.md shows no attnviz.NAME"
    missing = sorted(n for n in names if n not in attnviz.__all__ and n not in {
        "engine", "analysis", "plotting", "settings", "ui"})
    assert not missing, f"README uses attnviz names that attnviz does not export: {missing}"


# ------------------------------------------------------------------------------ docs/
def test_settings_table_is_the_settings():
    from attnviz.settings import table

    rows = _table_rows((DOCS / "settings.md").read_text(encoding="utf-8"),
                       "| variable | default | meaning |")
    documented = [(var.strip("`"), default, meaning) for var, default, meaning in rows]
    assert documented == table(), (
        "docs/settings.md's table differs from attnviz.settings.table(); it should read:\n"
        + settings_markdown())


PATH_ROOTS = ("attnviz/", "pages/", "tests/", "scripts/", "benchmarks/", "docs/", "deploy/",
              "assets/", ".streamlit/", ".ci/", "app.py", "Makefile", "Dockerfile",
              "pyproject.toml", "README.md")


def named_paths(path: Path) -> set[str]:
    """The repository paths a Markdown file names: in code spans and in links (resolved
    against the file's folder). Templates (NAME, <lang>, *) are left out."""
    text = path.read_text(encoding="utf-8")
    found = set()
    for span in re.findall(r"`([^`\s]+)`", text):
        if span.startswith(PATH_ROOTS):
            found.add(span.rstrip(".,:;)"))
    for link in re.findall(r"\]\(([^)\s#]+)", text):
        if "://" not in link:
            found.add(str((path.parent / link).resolve().relative_to(ROOT)))
    return {p for p in found if not re.search(r"[A-Z]{3,}|<|\*|\{", p.split("/")[-1])
            or p in ("Makefile", "Dockerfile", "README.md")}


@pytest.mark.parametrize("doc", ["README.md", *sorted(
    str(p.relative_to(ROOT)) for p in DOCS.glob("*.md"))])
def test_named_paths_exist(doc):
    missing = sorted(p for p in named_paths(ROOT / doc) if not (ROOT / p).exists())
    assert not missing, f"{doc} names paths that do not exist: {missing}"


def test_no_file_speaks_of_stops_or_sessions():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.splitlines()
    hits = []
    for name in files:
        if name.startswith(("tests/", ".git")):
            continue
        try:
            text = (ROOT / name).read_text(encoding="utf-8")
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        hits += [f"{name}:{i}: {line.strip()}" for i, line in enumerate(text.splitlines(), 1)
                 if HISTORY.search(line)]
    assert not hits, "the project speaks of the product only; history is git's:\n" + "\n".join(
        hits)


# ------------------------------------------------------------------------------ performance
def test_performance_has_a_section_per_benchmark():
    from benchmarks.__main__ import names
    from benchmarks.report import read_sections

    sections = read_sections(DOCS / "performance.md")
    assert sorted(sections) == names(), "run `make bench` (or `python -m benchmarks NAME`)"
    for name, section in sections.items():
        assert section.text.startswith(f"## {name}\n"), name
        assert ("Not run on this machine" in section.text) or section.date, name


def test_report_writes_and_updates_one_section(tmp_path, monkeypatch):
    from benchmarks import report

    env_a = {"CPU": "A", "cores": "2"}
    env_b = {"CPU": "B", "cores": "8"}
    monkeypatch.setattr(report, "machine", lambda: env_a)
    path = tmp_path / "performance.md"
    one = report.Table(["tokens", "ms"], [[16, "1.5"], [512, "~2,000"]], "Speed", "a note")
    two = report.Table(["x", "y"], [["a | b", None]])
    report.write({"alpha": report.Section("alpha", "What alpha does.", [one], "2030-01-02",
                                          env_a, load="0.5 on 2 cores")},
                 ["alpha", "beta"], path, costs={"beta": "It takes an hour."})
    text = path.read_text()
    assert "| CPU | A |" in text and "| latest run | 2030-01-02 |" in text
    assert ("## alpha\n\nWhat alpha does.\n\nRun on 2030-01-02, machine and versions as above.\n"
            "Load average when it began: 0.5 on 2 cores") in text
    assert "| tokens | ms |\n|---|---:|\n| 16 | 1.5 |\n| 512 | ~2,000 |\n\na note" in text
    assert ("Not run on this machine. Run it with `python -m benchmarks beta` (or `make bench "
            "BENCH=beta`). It takes an hour.") in text

    # beta runs alone on another machine: alpha keeps its figures and names its own machine
    report.write({"beta": report.Section("beta", "", [two], "2030-02-03", env_b)},
                 ["alpha", "beta"], path)
    sections = report.read_sections(path)
    assert sorted(sections) == ["alpha", "beta"]
    assert sections["alpha"].env == env_a and sections["alpha"].date == "2030-01-02"
    assert "| 512 | ~2,000 |" in sections["alpha"].text
    assert "Run on 2030-01-02, on CPU A; cores 2." in sections["alpha"].text
    assert "| a \\| b | - |" in sections["beta"].text
    assert "| CPU | B |" in path.read_text() and "| latest run | 2030-02-03 |" in path.read_text()

    # alpha again on machine B: both sections as above
    report.write({"alpha": report.Section("alpha", "", [one], "2030-02-04", env_b)},
                 ["alpha", "beta"], path)
    text = path.read_text()
    assert text.count("machine and versions as above") == 2
    assert "Not run" not in text


def test_tables_from_printed_text():
    from benchmarks.report import tables_from_text

    printed = ("Engine trace vs transformers on CPU; median of 20\n"
               "| tokens | attnviz (ms) | ratio |\n|---:|---:|---:|\n| 16 | 4.8 | 0.79x |\n"
               "| 512 | 70.0 | 0.70x |\n\nsome line\n| a | b |\n|---|---|\n| 1 | 2 |\n")
    tables = tables_from_text(printed)
    assert [t.title for t in tables] == ["Engine trace vs transformers on CPU; median of 20",
                                         "some line"]
    assert tables[0].columns == ["tokens", "attnviz (ms)", "ratio"]
    assert tables[0].rows == [["16", "4.8", "0.79x"], ["512", "70.0", "0.70x"]]
    assert tables[1].rows == [["1", "2"]]


if __name__ == "__main__":
    print(settings_markdown())
