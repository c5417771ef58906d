"""The house of attnviz's modules: the engine at the ground, analysis on it, plotting above,
views above plotting, and the export, the app's Streamlit code (ui) and the command line at the
top. A module imports only from its own floor or below (module-level and function-level
imports alike), and no modules import each other round in a circle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attnviz"

# Each part of the package and its floor: a module may import from parts on its floor or lower.
FLOORS = {
    "i18n": 0, "settings": 0, "defaults": 0,
    "engine": 1,
    "analysis": 2, "classroom": 2,
    "plotting": 3,
    "views": 4,
    "export": 5, "notebook": 5,
    "ui": 6, "cli": 6, "__main__": 7,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports(name: str, tree: ast.AST) -> set[str]:
    """The attnviz modules that module `name` imports, anywhere in it."""
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if not target.startswith("attnviz"):
                continue
            subs = {f"{target}.{a.name}" for a in node.names} & MODULES.keys()
            out |= subs or ({target} & MODULES.keys())
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names} & MODULES.keys()
    return out - {name}


def graph() -> dict[str, set[str]]:
    return {m: imports(m, ast.parse(p.read_text(encoding="utf-8"))) for m, p in MODULES.items()}


def part(name: str) -> str:
    return name.split(".")[1] if "." in name else "attnviz"


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_check_reads_relative_and_absolute_imports():
    tree = ast.parse("from ..engine import model\nfrom ..i18n import _\n"
                     "import attnviz.settings\nfrom . import common\n"
                     "def later():\n    from ..export.html import page_html\n")
    assert imports("attnviz.views.layer_heads", tree) == {
        "attnviz.engine.model", "attnviz.i18n", "attnviz.settings", "attnviz.views.common",
        "attnviz.export.html"}
    assert cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def test_every_part_of_the_package_has_a_floor():
    assert {part(m) for m in MODULES} - {"attnviz"} <= FLOORS.keys()


def test_no_import_runs_up_the_house():
    upward = sorted(f"{m} -> {t}" for m, ts in graph().items() for t in ts
                    if part(m) != "attnviz" and part(t) != "attnviz"
                    and FLOORS[part(t)] > FLOORS[part(m)])
    assert upward == []


def test_no_modules_import_each_other_in_a_circle():
    found = cycle(graph())
    assert found is None, " -> ".join(found or [])
