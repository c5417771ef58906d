"""Page styles. The one place that hands markup to the browser (`st.html`), and all it hands
over is a `<style>` block built from the constant CSS below: never user text, never a value
computed at run time. tests/test_config.py allows `st.html` in this file only."""

import streamlit as st

STYLES: dict[str, str] = {
    # Every page, on a phone (up to 640 px wide, e.g. 390 x 844): a chart takes the screen's
    # width, so what it is for is seen without scrolling sideways (colour bars lie below or
    # above the plots; a heads grid is one heatmap of few columns: plotting; panels side by
    # side are laid out again a few to a row in the browser: ui.phone_layout); only a figure
    # of three subplots or more that is not laid out again (an equation of matrices; ui.
    # live_chart marks it wide) keeps 760 px and scrolls sideways inside its own frame, never
    # the page; the chart toolbar keeps only its first group (the PNG camera), so
    # on a touch it cannot cover a title (pinch zooms instead); tables scroll inside their
    # frame too, a row's token label ('saw #2') on one line (headers may wrap). Titles shrink
    # (Streamlit's title took three lines of an 844 px screen) and the empty band above them
    # narrows to the header's height; a large number (st.metric) wraps instead of ending in
    # '...'. Streamlit itself collapses the sidebar and stacks columns there.
    # A table rendered twice by ui.render (a phone's tables of one column each, then the whole
    # table): a screen's width shows one of them.
    "phone": """
@media (max-width: 640px) {[class*="st-key-attnviz_table_whole_"] {display: none;}}
@media (min-width: 641px) {[class*="st-key-attnviz_table_columns_"] {display: none;}}
@media (max-width: 640px) {
  [data-testid="stMainBlockContainer"] {padding-top: 3.75rem;}
  .stMain .stHeading h1 {font-size: 1.9rem; padding-top: 0.5rem;}
  .stMain .stHeading h2 {font-size: 1.45rem;}
  .stMain .stHeading h3 {font-size: 1.2rem;}
  [data-testid="stMetricValue"] {font-size: 1.9rem;}
  [data-testid="stMetricValue"] div {white-space: normal;}
  .stElementContainer:has(.stPlotlyChart),
  .stElementContainer:has(.attnviz-live-chart) {overflow-x: auto; overflow-y: hidden;
                                                scrollbar-width: thin;}
  .attnviz-live-chart.attnviz-wide {min-width: 760px;}
  .stPlotlyChart .modebar-group:not(:first-child),
  .attnviz-live-chart .modebar-group:not(:first-child) {display: none;}
  [data-testid="stTable"], [data-testid="stDataFrame"] {overflow-x: auto;}
  [data-testid="stTable"] td, [data-testid="stTable"] tbody th {white-space: nowrap;}
}
""",
    # The clicker's hidden buttons: only their keyboard shortcuts matter.
    "lesson": """
.st-key-lesson_hotkeys {display: none;}
""",
    # Presentation mode: larger text, less padding, no SVG download buttons, no figure-number
    # expanders (the projector shows the pictures; a student's own view keeps them).
    "lesson_present": """
[data-testid="stMainBlockContainer"] {padding-top: 3.9rem; padding-bottom: 1rem;}
.st-key-lesson_body p, .st-key-lesson_body li {font-size: 1.3rem; line-height: 1.35;}
.st-key-lesson_body .st-key-lesson_notes p {font-size: 1.08rem; line-height: 1.35;}
.st-key-lesson_question p {font-size: 1.4rem;}
.st-key-lesson_top h2 {font-size: 1.75rem; padding: 0.1rem 0;}
.st-key-lesson_body [data-testid="stVerticalBlock"] {gap: 0.6rem;}
[class*="st-key-svg_lesson_"], [class*="st-key-numbers_lesson_"] {display: none;}
""",
}


def css(*names: str) -> str:
    """The `<style>` block for the named styles (a KeyError for a name not in STYLES)."""
    return "<style>" + "".join(STYLES[n] for n in names) + "</style>"


def apply(*names: str) -> None:
    """Add the named constant styles to the page."""
    st.html(css(*names))
