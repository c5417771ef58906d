"""Which strings the code marks for translation, and writing them into the catalogues.

A marked string is the literal first argument of `_(...)`, `gettext(...)` or `N_(...)` in
the project's Python files (attnviz/ and pages/). `python scripts/i18n_extract.py` keeps every
catalogue equal to that set: new strings are added (English: the text itself; other
languages: an empty msgstr to fill in, which the tests reject), strings no longer used are
dropped, existing translations are kept.
"""

from __future__ import annotations

import ast
from pathlib import Path

from . import LANGUAGES, catalogue_path, messages, po

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("attnviz", "pages")
MARKERS = {"_", "gettext", "N_"}


def marked_in(path: Path) -> list[tuple[str, int]]:
    """(msgid, line) for each marked literal in one file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in MARKERS and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)):
            out.append((node.args[0].value, node.lineno))
    return out


def marked(root: Path = ROOT) -> dict[str, list[str]]:
    """{msgid: ["file:line", ...]} over the project's sources, in first-seen order."""
    out: dict[str, list[str]] = {}
    for folder in SOURCES:
        for path in sorted((root / folder).rglob("*.py")):
            for msgid, line in marked_in(path):
                out.setdefault(msgid, []).append(f"{path.relative_to(root)}:{line}")
    return out


HEADER = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
          '"Language: {lang}\\n"\n')


def render(lang: str, found: dict[str, list[str]], old: dict[str, str]) -> str:
    """A catalogue's text: the header, then one entry per marked string (its places as a
    comment), translations from `old` where it has them."""
    parts = [f"# attnviz: {LANGUAGES[lang]} ({lang}). Keys are the English text.\n"
             + HEADER.format(lang=lang)]
    for msgid, where in found.items():
        text = msgid if lang == "en" else old.get(msgid, "")
        parts.append(f"#: {' '.join(where[:3])}\nmsgid {po.quote(msgid)}\n"
                     f"msgstr {po.quote(text)}\n")
    return "\n".join(parts)


def update(root: Path = ROOT) -> dict[str, list[str]]:
    """Rewrite every catalogue from the marked strings; {lang: msgids still untranslated}."""
    found = marked(root)
    todo = {}
    for lang in LANGUAGES:
        path = catalogue_path(lang)
        old = messages(lang) if path.exists() else {}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(lang, found, old), encoding="utf-8")
        todo[lang] = [m for m in found if lang != "en" and not old.get(m)]
    return todo
