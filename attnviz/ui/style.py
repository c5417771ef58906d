"""Page styles. The one place that hands markup to the browser (`st.html`), and all it hands
over is a `<style>` block built from the constant CSS files of components/page_style/ (one per
style, read once at import, each saying what it does): never user text, never a value
computed at run time. tests/test_config.py allows `st.html` in this file only."""

import streamlit as st

from .components import read

# phone: every page on a phone's screen; lesson: the clicker; lesson_present: the lesson's
# presentation mode.
STYLES: dict[str, str] = {name: read("page_style", f"{name}.css")
                          for name in ("phone", "lesson", "lesson_present")}


def css(*names: str) -> str:
    """The `<style>` block for the named styles (a KeyError for a name not in STYLES)."""
    return "<style>" + "".join(STYLES[n] for n in names) + "</style>"


def apply(*names: str) -> None:
    """Add the named constant styles to the page."""
    st.html(css(*names))
