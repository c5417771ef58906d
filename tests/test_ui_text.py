"""Typed text inside page Markdown renders literally (Markdown, KaTeX and HTML neutralised).

The reference is an independent Markdown renderer (markdown-it, CommonMark with GFM tables
and strikethrough): the escaped text must render to exactly one paragraph holding the typed
characters, no tags. KaTeX: every '$' reaches Streamlit escaped as '\\$' (no math span).
"""

import html
import re

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from attnviz.ui.text import literal

HOSTILE = ["$ $", "* *", "~ ~", "~~gone~~", "[x](javascript:alert(1))", "<b>b</b>", "`code`",
           "a_b_c", "# title", "1. item", "- item", "&amp;", "\\$x\\$", "line\nbreak", "x^2",
           "| a | b |", "> quote", "saw #2", "![img](http://example.com/x.png)", "**bold**"]

RENDER = MarkdownIt("commonmark").enable("table").enable("strikethrough")


@pytest.mark.parametrize("raw", HOSTILE)
def test_literal_renders_as_typed(raw):
    escaped = literal(raw)
    out = RENDER.render(escaped).strip()
    assert out.startswith("<p>") and out.endswith("</p>"), out
    inner = out[3:-4]
    assert "<" not in inner, out  # no tag of any kind
    assert html.unescape(inner) == raw.replace("\n", " ")
    assert not re.search(r"(?<!\\)\$", escaped)  # KaTeX sees no unescaped dollar


def test_streamlit_accepts_it():
    at = AppTest.from_string("import streamlit as st\n"
                             "from attnviz.ui.text import literal\n"
                             f"st.markdown(literal({HOSTILE!r}[4]))")
    at.run()
    assert not at.exception
