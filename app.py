"""attnviz: the router. One shared sidebar (sentence, model, device), then the chosen page.

Run with `make run` (or `streamlit run app.py`).
"""

from pathlib import Path

import streamlit as st

from attnviz import ui

st.set_page_config(page_title="attnviz: see self-attention", page_icon="🔎", layout="wide")

HERE = Path(__file__).parent
# (file, title, icon, section). Pages are listed here, in teaching order.
PAGES = [
    ("pages/lesson.py", "I saw a saw: the lesson", "🎓", "Learn"),
    ("pages/step_by_step.py", "Self-attention step by step", "🧮", "Learn"),
    ("pages/positions.py", "Positional encoding", "📍", "Learn"),
    ("pages/windows.py", "Windows and receptive fields", "🪟", "Learn"),
    ("pages/images.py", "Images: attention vs convolution", "🖼️", "Learn"),
    ("pages/layer_heads.py", "Heads of one layer", "🔥", "Explore BERT"),
    ("pages/explore.py", "All heads, token lines", "🧭", "Explore BERT"),
    ("pages/inside_score.py", "Inside one score", "🔬", "Explore BERT"),
    ("pages/head_stats.py", "Head statistics and rollout", "📊", "Explore BERT"),
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
