"""A number chosen from 0..n-1 (a layer, a head), bound to the page's URL.

Up to BUTTONS_UP_TO options it is a row of buttons (Streamlit's segmented control), so every
option is in sight and a change is one click, as bertviz's head squares are; past that (a
24-layer model) a select box, which a long row would not fit.
"""

from __future__ import annotations

BUTTONS_UP_TO = 16  # options shown as one row of buttons; more: a select box


def choose_number(where, label: str, n: int, key: str) -> int:
    """0..n-1 in `where` (st or a column), labelled `label`, under `key` (also the URL's)."""
    if n <= BUTTONS_UP_TO:
        return where.segmented_control(label, range(n), key=key, bind="query-params",
                                       required=True, default=0, wrap=True)
    return where.selectbox(label, range(n), key=key, bind="query-params")
