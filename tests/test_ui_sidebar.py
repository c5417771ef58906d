"""The shared sidebar's sentence boxes: what a link carries, and what the student is told.

A sentence lives in the URL only while its link can be reloaded (ui.urlstate.URL_BUDGET bytes
once percent-encoded): a longer one (a long non-ASCII paragraph) is left out of the link and the
sidebar says so; shortening it puts it back. Text cut at the box's MAX_CHARS is said to be cut.
URL text that reads as a number (`inf`, `1e999`) is a sentence like any other.
"""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from attnviz.ui.sidebar import MAX_CHARS
from attnviz.ui.urlstate import URL_BUDGET, encoded_length
from tests.apptest import APP, open_page
from tests.fresh import last_line

LONG_CHINESE = "我看见了一把锯子。" * 120  # 1,080 characters, ~9,700 bytes in a URL


def sidebar_notes(at: AppTest) -> list[str]:
    return [e.value for e in [*at.sidebar.info, *at.sidebar.warning]]


def url_text(at: AppTest) -> str | None:
    value = at.query_params.get("text")
    return value[-1] if isinstance(value, list) else value


def test_a_sentence_too_long_for_a_link_is_left_out_and_said():
    assert encoded_length(LONG_CHINESE) > URL_BUDGET
    at = open_page()
    at.sidebar.text_area(key="text").input(LONG_CHINESE).run()
    assert not at.exception
    assert at.session_state["text"] == LONG_CHINESE  # the page uses it
    assert url_text(at) is None, "a link this long could not be reloaded"
    notes = sidebar_notes(at)
    assert any("too long for the page's link" in n for n in notes), notes
    at.sidebar.text_area(key="text").input("I saw a saw again").run()
    assert url_text(at) == "I saw a saw again"  # short again: back in the link
    assert not any("link" in n for n in sidebar_notes(at))


def test_a_second_sentence_that_does_not_fit_is_named():
    at = open_page()
    at.sidebar.text_input(key="pair").input(LONG_CHINESE).run()
    assert not at.exception and "pair" not in at.query_params
    assert any(n.startswith("The second sentence is too long") for n in sidebar_notes(at))


def test_text_cut_at_the_box_limit_is_said_to_be_cut():
    at = AppTest.from_file(APP, default_timeout=240)
    at.session_state["text"] = "saw " * (MAX_CHARS // 4)  # exactly the box's limit
    at.run()
    assert not at.exception
    assert any("holds 20,000 characters" in n for n in sidebar_notes(at)), sidebar_notes(at)
    at.sidebar.text_area(key="text").input("I saw a saw").run()
    assert not any("holds" in n for n in sidebar_notes(at))


def test_number_like_sentences_are_sentences():
    for text in ("inf", "1e999", "-inf", "9" * 300):
        at = AppTest.from_file(APP, default_timeout=240)
        at.query_params["text"] = text
        at.run()
        assert not at.exception, text
        assert at.sidebar.text_area(key="text").value == text


def test_the_default_page_does_not_load_streamlits_emoji_table():
    """The language switch shows 中文 without making Streamlit load its emoji table (~0.6 s of
    a fresh server's first page: it looks for a leading emoji in a non-ASCII first word);
    checked in a fresh interpreter, where nothing else has loaded it."""
    code = ("import sys; from tests.apptest import open_page; at = open_page(); "
            "assert not at.exception; print('streamlit.emojis' in sys.modules)")
    assert last_line(code) == "False"
