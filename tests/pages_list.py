"""The app's page files, from the router's PAGES (attnviz.ui.router), in teaching order.

A page that lands later is covered by every suite that loops over `existing_pages()`.
"""

from __future__ import annotations

from pathlib import Path

from attnviz.ui.router import DEFAULT_PAGE, PAGES

ROOT = Path(__file__).resolve().parents[1]


def all_pages() -> list[tuple[str, str]]:
    """(file, title) for each entry of PAGES, in teaching order."""
    return [(path, title) for path, title, _, _ in PAGES]


def default_page() -> str:
    """The page served at '/'."""
    return DEFAULT_PAGE


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
