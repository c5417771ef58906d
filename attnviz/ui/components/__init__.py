"""The browser side of the app's components, a folder per component: its JavaScript (.js) and
CSS (.css) files, shipped with the package (pyproject's package-data), read as text and handed
to Streamlit (the component API, or a page's style block).

- live_chart/: a Plotly chart redrawn in place (ui.live_chart): live_chart.js (the
  component's module), phone_layout.js (its layout on a phone's narrow frame, run before it),
  live_chart.css.
- page_style/: the pages' constant styles (ui.style), one .css file per style.

The JavaScript is linted with ESLint (`make lint`, eslint.config.mjs at the repository's root)
and phone_layout.js is run under Node by the plotting tests on real figures.
"""

from importlib.resources import files


def read(component: str, name: str) -> str:
    """The text of file `name` of component folder `component` (UTF-8)."""
    return files(__package__).joinpath(component, name).read_text(encoding="utf-8")
