"""Run the benchmarks and write docs/performance.md: `python -m benchmarks [NAME ...]`.

With no NAME every benchmarks/bench_*.py runs, in name order; a NAME (`engine`, `lesson`,
...) runs the benchmarks whose name contains it and replaces only their sections of the file.
Each benchmark's `main()` returns its tables (benchmarks.report.Table); from one that returns
nothing, the Markdown tables it prints are taken instead. A benchmark that fails keeps the
section it had, and the command exits with status 1.

    python -m benchmarks                 # all (make bench)
    python -m benchmarks lesson windows  # two of them (make bench BENCH="lesson windows")
    python -m benchmarks --list          # their names and what each measures
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import pkgutil
import sys
import traceback
from pathlib import Path

from benchmarks import report

HERE = Path(__file__).parent


class _Tee(io.TextIOBase):
    """Writes to the terminal and keeps a copy (the tables a benchmark prints)."""

    def __init__(self, out) -> None:
        self.out, self.copy = out, io.StringIO()

    def write(self, s: str) -> int:
        self.copy.write(s)
        return self.out.write(s)

    def flush(self) -> None:
        self.out.flush()


def names() -> list[str]:
    """Every benchmark, by its short name (bench_engine.py: "engine")."""
    return sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([str(HERE)])
                  if m.name.startswith("bench_"))


def module(name: str):
    """benchmarks/bench_NAME.py, imported; None when it cannot be (a missing dependency)."""
    try:
        return importlib.import_module(f"benchmarks.bench_{name}")
    except ImportError as e:
        print(f"benchmarks.bench_{name} cannot be imported: {e}", file=sys.stderr)
        return None


def summary(mod) -> str:
    """What a benchmark measures: the first paragraph of its module docstring."""
    doc = (getattr(mod, "__doc__", None) or "").strip().split("\n\n")[0]
    return " ".join(doc.split())


def run_one(name: str) -> report.Section:
    """Run benchmarks/bench_NAME.py's main() and gather its tables."""
    mod = importlib.import_module(f"benchmarks.bench_{name}")
    load = report.load_average()
    tee = _Tee(sys.stdout)
    argv, sys.argv = sys.argv, [f"benchmarks.bench_{name}"]  # its own options at defaults
    try:
        with contextlib.redirect_stdout(tee):
            result = mod.main()
    finally:
        sys.argv = argv
    if isinstance(result, report.Table):
        tables = [result]
    elif result:
        tables = list(result)
    else:
        tables = report.tables_from_text(tee.copy.getvalue())
    if not tables:
        text = tee.copy.getvalue().strip() or "(it printed nothing)"
        tables = [report.Table(["output"], [[line] for line in text.splitlines()])]
    return report.Section(name, summary(mod), tables, report.today(), report.machine(),
                          load=load)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    parser.add_argument("--out", type=Path, default=report.DEFAULT_PATH,
                        help="the file to write (default: docs/performance.md)")
    args = parser.parse_args(argv)
    every = names()
    modules = {n: module(n) for n in every}
    if args.list:
        for name in every:
            print(f"{name:<20} {summary(modules[name])}")
        return 0
    chosen = [n for n in every if not args.names or any(a in n for a in args.names)]
    if args.names and not chosen:
        parser.error(f"no benchmark matches {' '.join(args.names)} (choose from "
                     f"{', '.join(every)})")
    results, failed = {}, []
    for name in chosen:
        print(f"\n=== {name} ===", flush=True)
        try:
            results[name] = run_one(name)
        except Exception:  # one benchmark's failure keeps the others' figures
            traceback.print_exc()
            failed.append(name)
    path = report.write(results, every, args.out,
                        summaries={n: summary(m) for n, m in modules.items()},
                        costs={n: getattr(m, "COST", "") for n, m in modules.items()})
    print(f"\nwrote {path}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
