"""The cap of every text box: at most MAX_CHARS characters, the sidebar's sentence's, checked
on the server.

Streamlit's `max_chars` is enforced twice: the browser's box stops taking text there, and the
server cuts the value a client sends to that length when it arrives (the widget's
deserializer), so a client that sends 5,000,000 characters has its first MAX_CHARS read and
never the rest. `capped` cuts a value that reached a page another way (the URL, the session's
state) the same way; `text_box` is st.text_input with both, and says so when the text was
cut. tests/test_ui_boxes.py checks that every text box of the app has a cap.
"""

from __future__ import annotations

import streamlit as st

from attnviz.i18n import _

from .sidebar import MAX_CHARS


def capped(value: object, limit: int = MAX_CHARS) -> str:
    """`value` as text of at most `limit` characters (None: empty), NUL characters left out."""
    text = "" if value is None else str(value)
    return text[:limit].replace("\x00", "")


def text_box(label: str, *, key: str, value: str = "", limit: int = MAX_CHARS,
             where=None, **kwargs) -> str:
    """st.text_input (in `where`, default the page) holding at most `limit` characters,
    checked on the server; its value, capped; a caption when the text was cut there."""
    box = (where or st).text_input(label, value=value, key=key, max_chars=limit, **kwargs)
    text = capped(box, limit)
    if len(str(box or "")) >= limit:
        (where or st).caption(_("This box holds {n} characters: the text was cut there.")
                              .format(n=f"{limit:,}"))
    return text
