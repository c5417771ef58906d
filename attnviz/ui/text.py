"""User text inside page text: shown literally, never as Markdown, KaTeX or HTML.

Streamlit's st.markdown / st.caption interpret *emphasis*, [links](...), $math$, `code`, HTML
entities and more. A token or sentence the user typed goes through `literal()` first, so
'$ $', '* *', '~ ~' or '[x](javascript:...)' show exactly as typed.
The function is attnviz.views.common's (no Streamlit), which the views use as well.
"""

from __future__ import annotations

from attnviz.views.common import literal

__all__ = ["literal"]
