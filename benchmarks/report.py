"""docs/performance.md, written by the benchmarks themselves (`make bench`).

Each benchmark's `main()` returns its figures as `Table`s; `python -m benchmarks` runs them and
`write()` puts them into docs/performance.md: the machine, the versions and the date of the
run at the top, then one section per benchmark with its tables. A section lies between two
markers,

    <!-- bench NAME {"date": ..., "machine": {...}} -->
    ...
    <!-- /bench NAME -->

so that running one benchmark (`python -m benchmarks NAME`) replaces its own section and keeps
the others as they were. A section measured on another machine, or with other versions, than
the one at the top says so under its title. A benchmark that never ran here has a section that
says how to run it. The file holds current figures only: its history is git's.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import platform
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PATH = ROOT / "docs" / "performance.md"
_NUMBER = re.compile(r"^[~<>+-]?\d[\d,.]*(e[+-]?\d+)?( ?[%x]| \(.*\))?$")
VERSIONS = ("torch", "transformers", "streamlit", "plotly")
_SECTION = re.compile(r"<!-- bench (?P<name>[\w-]+) (?P<meta>\{.*?\}) -->\n(?P<body>.*?)"
                      r"<!-- /bench (?P=name) -->\n?", re.S)


@dataclass
class Table:
    """One table of a benchmark: column names, rows of cells (text or numbers), a caption
    above it and a note below it (both optional)."""

    columns: Sequence[str]
    rows: list[Sequence] = field(default_factory=list)
    title: str = ""
    note: str = ""

    def markdown(self) -> str:
        lines = []
        if self.title:
            lines += [self.title, ""]
        lines.append("| " + " | ".join(_cell(c) for c in self.columns) + " |")
        lines.append("|" + "|".join("---:" if i and self._numeric(i) else "---"
                                    for i in range(len(self.columns))) + "|")
        for row in self.rows:
            if len(row) != len(self.columns):
                raise ValueError(f"a row of {len(row)} cells in a table of "
                                 f"{len(self.columns)} columns: {row!r}")
            lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
        if self.note:
            lines += ["", self.note]
        return "\n".join(lines)

    def _numeric(self, column: int) -> bool:
        """Whether every cell of the column is a number or "-" (then it is right-aligned)."""
        cells = [_cell(r[column]) for r in self.rows if column < len(r)]
        cells = [c for c in cells if c != "-"]
        return bool(cells) and all(_NUMBER.match(c) for c in cells)


def show(*tables: Table) -> list[Table]:
    """Print the tables (a benchmark run alone shows its figures) and return them (for
    docs/performance.md)."""
    for t in tables:
        print("\n" + t.markdown(), flush=True)
    return list(tables)


def rows_table(rows: Iterable[dict], title: str = "", note: str = "",
               columns: dict[str, str] | None = None, digits: int = 1) -> Table:
    """A Table from dicts that share their keys (the keys, or `columns[key]`, as headings;
    floats rounded to `digits` places)."""
    rows = list(rows)
    keys = list(rows[0]) if rows else list(columns or {})
    names = [(columns or {}).get(k, k) for k in keys]
    return Table(names, [[_round(r[k], digits) for k in keys] for r in rows], title, note)


def _round(value, digits: int):
    return f"{value:.{digits}f}" if isinstance(value, float) else value


def _cell(value) -> str:
    return ("-" if value is None else str(value)).replace("|", "\\|").replace("\n", " ")


def tables_from_text(text: str) -> list[Table]:
    """The Markdown tables a benchmark printed (lines that start with "|"), each with the line
    printed just before it as its caption: for benchmarks whose main() returns nothing."""
    out: list[Table] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].lstrip().startswith("|"):
            i += 1
            continue
        start = i
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            i += 1
        block = [_split(line) for line in lines[start:i]]
        caption = next((lines[j].strip() for j in range(start - 1, -1, -1)
                        if lines[j].strip()), "")
        if len(block) >= 2 and all(set(c) <= set(":-") for c in block[1]):
            out.append(Table(block[0], block[2:], caption))
    return out


def _split(line: str) -> list[str]:
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


# ------------------------------------------------------------------------- the machine
def machine() -> dict[str, str]:
    """The machine and versions a run measures: CPU model (/proc/cpuinfo), cores, memory,
    GPU (torch.cuda), Python and the libraries the app runs on, and the date."""
    info = {"CPU": _cpu_model(), "cores": str(os.cpu_count() or "?"), "memory": _memory(),
            "GPU": _gpu(), "python": platform.python_version()}
    for package in VERSIONS:
        try:
            info[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            info[package] = "not installed"
    return info


def today() -> str:
    return datetime.date.today().isoformat()


def load_average() -> str:
    """The one-minute load average, against the number of cores ("" where unknown)."""
    try:
        return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except (OSError, AttributeError):
        return ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return "unknown"


def _gpu() -> str:
    try:
        import torch
    except ImportError:
        return "none"
    if not torch.cuda.is_available():
        return "none"
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return ", ".join(names) + f" (CUDA {torch.version.cuda})"


def _describe(env: dict[str, str]) -> str:
    return "; ".join(f"{k} {v}" for k, v in env.items())


# ------------------------------------------------------------------------- the file
@dataclass
class Section:
    """One benchmark's part of the file."""

    name: str
    summary: str = ""  # what it measures, one sentence
    tables: list[Table] = field(default_factory=list)
    date: str = ""
    env: dict[str, str] = field(default_factory=dict)
    text: str = ""  # its body as read from the file (kept as is when it is not rerun)
    load: str = ""  # the machine's load average when the run began (other work on it)
    placeholder: str = ""  # set when it has not run: how to run it

    def render(self, header_env: dict[str, str]) -> str:
        meta = json.dumps({"date": self.date, "machine": self.env}, sort_keys=True,
                          ensure_ascii=False)
        if self.text and not self.tables:
            body = self.text
        else:
            parts = [f"## {self.name}", ""]
            if self.summary:
                parts += [self.summary, ""]
            if self.placeholder:
                parts += [self.placeholder, ""]
            else:
                where = ("machine and versions as above" if self.env == header_env
                         else "on " + _describe(self.env))
                parts += [f"Run on {self.date}, {where}."]
                if self.load:
                    parts += [f"Load average when it began: {self.load} (other work on the "
                              "machine slows every figure).", ""]
                else:
                    parts += [""]
                for t in self.tables:
                    parts += [t.markdown(), ""]
            body = "\n".join(parts)
        return (f"<!-- bench {self.name} {meta} -->\n{body.rstrip()}\n\n"
                f"<!-- /bench {self.name} -->\n")


def read_sections(path: Path) -> dict[str, Section]:
    """The sections already in the file, by benchmark name."""
    if not path.exists():
        return {}
    out = {}
    for m in _SECTION.finditer(path.read_text(encoding="utf-8")):
        meta = json.loads(m["meta"])
        out[m["name"]] = Section(m["name"], date=meta.get("date", ""),
                                 env=meta.get("machine", {}), text=m["body"])
    return out


def placeholder(name: str, cost: str = "") -> str:
    command = f"`python -m benchmarks {name}` (or `make bench BENCH={name}`)"
    return (f"Not run on this machine. Run it with {command}." + (f" {cost}" if cost else ""))


def write(results: dict[str, Section], names: Sequence[str], path: Path = DEFAULT_PATH,
          summaries: dict[str, str] | None = None, costs: dict[str, str] | None = None) -> Path:
    """Write the file: `results` (the sections just measured) replace theirs, the other
    benchmarks of `names` keep what the file held, or a line saying how to run them. The top
    names the machine and versions of this run."""
    summaries, costs = summaries or {}, costs or {}
    old = read_sections(path)
    env = next((s.env for s in results.values() if s.env), None) or machine()
    sections = []
    for name in names:
        if name in results:
            s = results[name]
        elif name in old and not _is_placeholder(old[name]):
            s = old[name]
        else:
            s = Section(name, placeholder=placeholder(name, costs.get(name, "")))
        s.summary = s.summary or summaries.get(name, "")
        if s.text and not s.tables:
            s.text = _relabel(s, env)
        sections.append(s)
    date = max((s.date for s in sections if s.date and not s.placeholder), default=today())
    head = [
        "# Performance",
        "",
        "<!-- Written by `make bench` (benchmarks/report.py): edit the benchmarks, not this "
        "file. -->",
        "",
        "The current figures of every benchmark under `benchmarks/`, written by `make bench` "
        "(`python -m benchmarks`); `python -m benchmarks NAME` runs one benchmark and replaces "
        "its section only. Figures from earlier runs are in the history of this file in git.",
        "",
        "Timings depend on the machine and on what else runs on it: compare figures taken in "
        "the same run (most tables run their peers alternately for that reason).",
        "",
        "## Machine and versions",
        "",
        Table(["", ""], [[k, v] for k, v in env.items()] + [["latest run", date]]).markdown(),
        "",
    ]
    text = "\n".join(head) + "\n" + "\n".join(s.render(env) for s in sections)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _is_placeholder(section: Section) -> bool:
    return "Not run on this machine." in section.text


def _relabel(section: Section, env: dict[str, str]) -> str:
    """A kept section's body with its "Run on ..." line naming its machine when the top of
    the file now names another one (and "as above" when it names the same)."""
    where = ("machine and versions as above" if section.env == env
             else "on " + _describe(section.env))
    return re.sub(r"^Run on (\S+), .*?\.$", lambda m: f"Run on {m[1]}, {where}.",
                  section.text, count=1, flags=re.M)
