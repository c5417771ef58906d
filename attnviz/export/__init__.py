"""Views of the app written as files: `html` (self-contained HTML pages and a static site;
no Streamlit) and `site` (the lesson pack: the real pages run headless, each view recorded)."""
