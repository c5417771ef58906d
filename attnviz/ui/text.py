"""User text inside page text: shown literally, never as Markdown, KaTeX or HTML.

Streamlit's st.markdown / st.caption interpret *emphasis*, [links](...), $math$, `code`, HTML
entities and more. A token or sentence the user typed goes through `literal()` first, so
'$ $', '* *', '~ ~' or '[x](javascript:...)' show exactly as typed.
"""

from __future__ import annotations

import re

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!$<>|~&:=^\"'])")


def literal(text: str) -> str:
    """`text` escaped for st.markdown: every Markdown/KaTeX/HTML special character gets a
    backslash, so it renders as itself; newlines become spaces."""
    return _MARKDOWN.sub(r"\\\1", str(text).replace("\r", " ").replace("\n", " "))
