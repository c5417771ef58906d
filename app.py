"""attnviz: the router. One shared sidebar (sentence, model, device), then the chosen page.

Run with `make run` (or `streamlit run app.py`).
"""

from pathlib import Path

import streamlit as st

from attnviz import ui

st.set_page_config(
    page_title="attnviz: see self-attention", page_icon=":material/visibility:", layout="wide"
)

HERE = Path(__file__).parent
# (file, title, icon, section). Pages are listed here, in teaching order.
PAGES = [
    ("pages/lesson.py", "I saw a saw: the lesson", ":material/school:", "Learn"),
    ("pages/step_by_step.py", "Self-attention step by step", ":material/calculate:", "Learn"),
    ("pages/positions.py", "Positional encoding", ":material/pin_drop:", "Learn"),
    ("pages/windows.py", "Windows and receptive fields", ":material/width:", "Learn"),
    ("pages/images.py", "Images: attention vs convolution", ":material/image:", "Learn"),
    ("pages/layer_heads.py", "Heads of one layer", ":material/grid_view:", "Explore BERT"),
    ("pages/explore.py", "All heads, token lines", ":material/explore:", "Explore BERT"),
    ("pages/inside_score.py", "Inside one score", ":material/biotech:", "Explore BERT"),
    ("pages/head_stats.py", "Head statistics and rollout", ":material/bar_chart:", "Explore BERT"),
]
DEFAULT_PAGE = "pages/layer_heads.py"

sections: dict[str, list] = {}
for path, title, icon, section in PAGES:
    if (HERE / path).exists():
        page = st.Page(path, title=title, icon=icon, default=(path == DEFAULT_PAGE))
        sections.setdefault(section, []).append(page)

nav = st.navigation(sections)
ui.sidebar()
nav.run()
