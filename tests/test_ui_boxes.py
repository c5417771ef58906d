"""ui.boxes: every text box of the app holds at most a cap, checked on the server.

A box without `max_chars` took whatever a client sent: 5,000,000 characters in the ablation
page's "Corrupted sentence" box held the server 10-19 s while other students' reruns waited.
The scan reads the syntax tree of every Python file of the app (pages, attnviz, app.py): each
st.text_input / st.text_area call names a `max_chars` (ui.boxes.text_box passes its own). The
AppTest sends 5,000,000 characters through Streamlit's own widget channel, as a raw client
would, and the page reads the first MAX_CHARS. (A sentence box holds MAX_CHARS, a model
folder or Hub id box 4,096: a path's longest.)
"""

from __future__ import annotations

import ast
from pathlib import Path

from streamlit.testing.v1 import AppTest

from attnviz.ui.boxes import MAX_CHARS, capped

ROOT = Path(__file__).resolve().parents[1]
BOXES = {"text_input", "text_area"}


def boxes_without_a_cap() -> list[tuple[str, int]]:
    """(file, line) of every st.text_input / st.text_area call that names no max_chars."""
    found = []
    files = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")),
             *sorted((ROOT / "attnviz").rglob("*.py"))]
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in BOXES
                    and not any(k.arg == "max_chars" for k in node.keywords)):
                found.append((str(path.relative_to(ROOT)), node.lineno))
    return found


def test_every_text_box_names_a_cap():
    missing = boxes_without_a_cap()
    assert not missing, f"text boxes without max_chars: {missing}"


def test_capped_cuts_and_cleans():
    assert capped("x" * (MAX_CHARS + 10)) == "x" * MAX_CHARS
    assert capped(None) == "" and capped("a\x00b", 5) == "ab" and capped(12) == "12"
    assert capped("abcdef", 3) == "abc"


def _page() -> None:
    import streamlit as st

    from attnviz.ui.boxes import text_box

    got = text_box("Corrupted sentence", key="box", value="I saw a dog")
    st.session_state["read"] = len(got)


def test_a_client_sending_five_million_characters_is_read_to_the_cap():
    at = AppTest.from_function(_page, default_timeout=60).run()
    assert at.session_state["read"] == len("I saw a dog") and not at.caption
    # set_value sends it as a raw client would (AppTest's input() would refuse it as a browser)
    at.text_input(key="box").set_value("saw " * 1_250_000).run()  # 5,000,000 characters
    assert not at.exception
    assert at.session_state["read"] == MAX_CHARS
    assert len(at.session_state["box"]) == MAX_CHARS  # cut on arrival, by the server
    assert "20,000 characters" in at.caption[0].value
