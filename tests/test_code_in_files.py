"""JavaScript and CSS live in files of their own (attnviz/ui/components/), where an editor and
ESLint see them: no string in attnviz/ or pages/ holds more than a line of either, and no
Python there reads or writes a private (underscored) name of Streamlit, Plotly, plotly.js or
torch."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "attnviz").rglob("*.py"), *(ROOT / "pages").glob("*.py"),
                  ROOT / "app.py"])
JS_LINE = re.compile(r"^\s*(function\b|const |let |var |return\b.*;|document\.|window\.|"
                     r"[\w.]+\s*=>|}\s*\)?;?\s*$|.*\)\s*\{\s*$)")
CSS_LINE = re.compile(r"^\s*([\w\-]+\s*:\s*[^;{}]+;|[@.#\[\w][^{};]*\{|\}\s*$)")
PRIVATE = re.compile(r"\b(st|streamlit|go|fig|figure|plotly|pio|torch|tensor|gd)\._[A-Za-z]")


def code_lines(text: str) -> int:
    """How many lines of `text` read as a line of JavaScript or CSS."""
    return sum(bool(JS_LINE.match(line) or CSS_LINE.match(line)) for line in text.splitlines())


def test_the_check_sees_javascript_and_css():
    assert code_lines("function f(a) {\n  const b = a + 1;\n  return b;\n}\n") == 4
    assert code_lines(".x {\n  color: red;\n}\n") == 3
    assert code_lines("The weights of one head.\n\nRows are queries: who looks.\n") == 0


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module and its classes and functions (their
    formulas may read as code: they are prose)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_javascript_or_css_inside_python_strings(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = docstrings(tree)
    found = [(node.lineno, code_lines(node.value)) for node in ast.walk(tree)
             if isinstance(node, ast.Constant) and isinstance(node.value, str)
             and id(node) not in prose and code_lines(node.value) >= 2]
    assert found == [], found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_names_of_the_libraries(path):
    lines = [f"{i}: {line.strip()}" for i, line in
             enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if PRIVATE.search(line.split("#")[0])]
    assert lines == []
