"""Page styles. The one place that hands markup to the browser (`st.html`), and all it hands
over is a `<style>` block built from the constant CSS below: never user text, never a value
computed at run time. tests/test_config.py allows `st.html` in this file only."""

import streamlit as st

STYLES: dict[str, str] = {
    # The clicker's hidden buttons: only their keyboard shortcuts matter.
    "lesson": """
.st-key-lesson_hotkeys {display: none;}
""",
    # Presentation mode: larger text, less padding, no SVG download buttons.
    "lesson_present": """
[data-testid="stMainBlockContainer"] {padding-top: 3.9rem; padding-bottom: 1rem;}
.st-key-lesson_body p, .st-key-lesson_body li {font-size: 1.3rem; line-height: 1.35;}
.st-key-lesson_body .st-key-lesson_notes p {font-size: 1.08rem; line-height: 1.35;}
.st-key-lesson_question p {font-size: 1.4rem;}
.st-key-lesson_top h2 {font-size: 1.75rem; padding: 0.1rem 0;}
.st-key-lesson_body [data-testid="stVerticalBlock"] {gap: 0.6rem;}
[class*="st-key-svg_lesson_"] {display: none;}
""",
}


def css(*names: str) -> str:
    """The `<style>` block for the named styles (a KeyError for a name not in STYLES)."""
    return "<style>" + "".join(STYLES[n] for n in names) + "</style>"


def apply(*names: str) -> None:
    """Add the named constant styles to the page."""
    st.html(css(*names))
