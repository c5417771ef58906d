"""attnviz/ui's modules import each other without a cycle (module-level and function-level
imports alike), and what pages read (`ui.context()`) never reruns the script: a page that
Streamlit runs alone (its `pages/` folder mode, a fresh server's first request for a sub-page)
gets the router's sidebar drawn in the same run."""

from __future__ import annotations

import ast
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.plotly_json import specs
from tests.test_layers import cycle

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "attnviz" / "ui"
MODULES = sorted(p.stem for p in UI.glob("*.py") if p.stem != "__init__")


def imported(path: Path) -> set[str]:
    """The attnviz.ui modules a file imports, anywhere in it (inside functions too)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from . import x / from .x import y
                base = node.module
            elif node.level == 0 and node.module and node.module.startswith("attnviz.ui"):
                base = node.module.removeprefix("attnviz.ui").lstrip(".") or None
            else:
                continue
            if base is None:
                names = [a.name for a in node.names]
            else:
                names = [base.split(".")[0]]
        elif isinstance(node, ast.Import):
            names = [a.name.removeprefix("attnviz.ui.").split(".")[0] for a in node.names
                     if a.name.startswith("attnviz.ui.")]
        out |= {n for n in names if n in MODULES}
    return out


def graph() -> dict[str, set[str]]:
    return {m: imported(UI / f"{m}.py") - {m} for m in MODULES}


def test_the_check_reads_every_kind_of_import(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from . import cache, text\nfrom .context import Context\n"
                 "from attnviz.ui import sidebar\nimport attnviz.ui.figures\n"
                 "from ..i18n import _\n"
                 "def later():\n    from .router import PAGES\n")
    assert imported(f) == {"cache", "text", "context", "sidebar", "figures", "router"}
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_ui_has_no_import_cycle():
    edges = graph()
    assert "context" in edges and edges["sidebar"] >= {"context", "language"}
    assert cycle(edges) is None, " -> ".join(cycle(edges) or [])


def test_the_language_module_imports_nothing_from_ui():
    """ui.recorder's fragments set the session's language from here, before anything else."""
    assert graph()["language"] == set()


def reruns(tree: ast.AST) -> list[int]:
    return [c.lineno for c in ast.walk(tree) if isinstance(c, ast.Call)
            and "rerun" in (getattr(c.func, "attr", None), getattr(c.func, "id", None))]


def test_reading_the_context_never_reruns():
    """ui.context reads the widgets' state and reruns nothing; what pages call
    (ui.router.context) is that reading alone; only ensure_router, each page's first call, may
    rerun (the hand-over of Streamlit's pages/ folder mode, tested below)."""
    assert reruns(ast.parse((UI / "context.py").read_text(encoding="utf-8"))) == []
    router = {n.name: n for n in ast.parse((UI / "router.py").read_text(encoding="utf-8")).body
              if isinstance(n, ast.FunctionDef)}
    assert reruns(router["navigation"]) == [] and reruns(router["context"]) == []
    called = [c.func.id for c in ast.walk(router["context"])
              if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]
    assert called == ["read_context"]
    for page in sorted((UI.parents[1] / "pages").glob("*.py")):  # every page hands over first
        main = next(n for n in ast.parse(page.read_text(encoding="utf-8")).body
                    if isinstance(n, ast.FunctionDef) and n.name == "main")
        first = next(s for s in main.body if not (isinstance(s, ast.Expr)
                                                   and isinstance(s.value, ast.Constant)))
        assert "ensure_router" in ast.unparse(first), page.name


def test_a_page_asked_for_first_is_handed_to_the_router_once(monkeypatch):
    """Streamlit's AppTest runs a sub-page alone at every run (its pages/ folder mode), as a
    fresh server does for a first request: the page hands over to app.py once (one router run
    draws it, in the session's language, with the sidebar); the default page, which app.py
    runs, is drawn by one router run with no hand-over."""
    from attnviz.ui import router
    from tests.apptest import APP

    runs = []
    real = router._page
    monkeypatch.setattr(router, "_page", lambda root: runs.append(root) or real(root))
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["text"] = "I watch my watch"
    at.run()
    assert not at.exception and len(runs) == 1
    at.session_state["lang"] = "zh"
    at.switch_page("pages/positions.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(runs) == 2 and at.session_state[router.HANDED_OVER] is False
    assert at.title[0].value == "位置编码的作用" and len(at.title) == 1
    assert at.text_area(key="text").value == "I watch my watch"
    assert specs(at)
