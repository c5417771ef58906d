"""GNU gettext catalogues: read a `.po` file into {msgid: msgstr}, and quote a string for one.

The catalogues are kept as `.po` text (reviewable, diffable) and read as they are: no build
step and no compiled file in the repository.

Supported `.po` subset (what the project's catalogues use): `#` comments, `msgid` /
`msgstr` with continued string lines, C escapes (\\n \\t \\" \\\\). No `msgctxt`, no plurals.
"""

from __future__ import annotations

import ast


def _unquote(line: str, where: str) -> str:
    line = line.strip()
    if len(line) < 2 or line[0] != '"' or line[-1] != '"':
        raise ValueError(f"{where}: expected a quoted string, got {line!r}")
    inner = line[1:-1]
    if "\\" not in inner and '"' not in inner:  # no escape: the text as is, without
        return inner  # literal_eval, which is much slower
    return ast.literal_eval(line)  # a C-style string literal is also a Python one


def parse(text: str, name: str = "<po>") -> dict[str, str]:
    """{msgid: msgstr} of a `.po` text, the header entry (msgid "") included. A repeated
    msgid or a keyword outside the supported subset raises ValueError naming the line."""
    out: dict[str, str] = {}
    msgid: list[str] | None = None
    msgstr: list[str] | None = None
    current: list[str] | None = None

    def flush(lineno: int) -> None:
        nonlocal msgid, msgstr
        if msgid is None:
            return
        if msgstr is None:
            raise ValueError(f"{name}:{lineno}: msgid without msgstr")
        key = "".join(msgid)
        if key in out:
            raise ValueError(f"{name}:{lineno}: repeated msgid {key!r}")
        out[key] = "".join(msgstr)
        msgid = msgstr = None

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        where = f"{name}:{n}"
        if not line or line.startswith("#"):
            continue
        if line.startswith("msgid "):
            flush(n)
            msgid, current = [_unquote(line[6:], where)], None
            current = msgid
        elif line.startswith("msgstr "):
            if msgid is None or msgstr is not None:
                raise ValueError(f"{where}: msgstr without msgid")
            msgstr = [_unquote(line[7:], where)]
            current = msgstr
        elif line.startswith('"'):
            if current is None:
                raise ValueError(f"{where}: string outside an entry")
            current.append(_unquote(line, where))
        else:
            raise ValueError(f"{where}: unsupported line {line!r}")
    flush(len(text.splitlines()) + 1)
    return out


def quote(s: str) -> str:
    """`s` as a `.po` string literal (one line; escapes \\, ", newline, tab)."""
    return '"' + (s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
                  .replace("\t", "\\t")) + '"'
