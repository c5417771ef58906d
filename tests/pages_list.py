"""The app's page files, read from app.py's PAGES (parsed with ast, not imported).

Importing app.py would run Streamlit code; parsing it keeps this list in step with the router,
so a page that lands later is covered by every suite that loops over `existing_pages()`.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"


def all_pages() -> list[tuple[str, str]]:
    """(file, title) for each entry of app.py's PAGES, in teaching order."""
    tree = ast.parse(APP.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "PAGES" for t in node.targets
        ):
            entries = ast.literal_eval(node.value)
            return [(e[0], e[1]) for e in entries]
    raise LookupError("app.py has no PAGES list")


def default_page() -> str:
    """app.py's DEFAULT_PAGE (served at '/')."""
    tree = ast.parse(APP.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "DEFAULT_PAGE" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise LookupError("app.py has no DEFAULT_PAGE")


def existing_pages() -> list[str]:
    """The page files of PAGES that exist now (a page appears in the app once its file exists)."""
    return [path for path, _ in all_pages() if (ROOT / path).is_file()]


def takes_text(path: str) -> bool:
    """Whether a page reads the sidebar's sentence (it calls ui.context / trace_or_message)."""
    src = (ROOT / path).read_text(encoding="utf-8")
    return any(s in src for s in ("context()", "trace_or_message", "ctx.text"))


def text_pages() -> list[str]:
    """Existing pages that take the sidebar's text: the ones hostile input must go through."""
    return [p for p in existing_pages() if takes_text(p)]


def url_path(path: str) -> str:
    """The page's URL path: '/' for the default page, else '/<file stem>'."""
    return "/" if path == default_page() else "/" + Path(path).stem
