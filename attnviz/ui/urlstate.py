"""URL state every page survives: query parameters checked before any widget reads them.

Widgets with `bind="query-params"` take their first value from the URL. Streamlit parses a
number widget's value with float() and then int(), so `inf`, `-inf`, `1e999` or a 100,000-digit
number raises OverflowError inside Streamlit on every rerun of the page, and typing a new
sentence does not recover. The router calls `sanitize()` first on every run (after the
session's language is set), so no widget ever sees such a value, and an option written in
another language reads in this one:

    a value is dropped when   it reads as a number that is not finite or beyond +-2**53
                              (no widget of the app has such a value; JavaScript numbers
                              stop being exact integers there), or it is longer than
                              MAX_VALUE_CHARS (no option label, number or tab name is), or
                              it is empty (`ex_head=`: no option is empty, and Streamlit
                              leaves a widget at its default out of the link; a row of
                              buttons would read it as nothing chosen, a head of None)

    a value is translated     when it is a catalogue text (an option's or tab's label) in
                              another language: Streamlit writes a radio's or tab's shown
                              label into the link, so `sbs_mode=real` from an English link
                              becomes 真实 in a Chinese session (i18n.in_this_language)

Finite numbers outside a widget's own range are left to Streamlit, which checks them against
the range the page declared and falls back to the widget's default (tests/test_ui_urlstate.py
tries every bound parameter of every page). The sidebar's sentences (FREE_TEXT) may be any text,
`inf` included; they only have to fit in a link: their percent-encoded length is kept under
URL_BUDGET bytes, so a link the app writes can always be reloaded. Streamlit's own server
answers HTTP 400 to request lines of some 100-150 KB (one Chinese character is 9 bytes in a URL),
and a proxy in front of it may refuse far less: nginx's default buffers hold 8 KB per line.
"""

from __future__ import annotations

import math
from urllib.parse import quote_plus

from ..i18n import in_this_language

# Text boxes bound to the URL (the sidebar's sentences, the second sentence of the similarity
# and compare pages, the encoder-decoder's target): any text, never translated.
FREE_TEXT = frozenset({"text", "pair", "sim_b", "cmp_b", "fam_target"})
# Widgets whose link holds a token of the sentence (a word such as "key" or "head" is also a
# catalogue text, and must stay as typed) or the language itself: never translated.
NOT_TRANSLATED = FREE_TEXT | {"lang", "ins_query", "win_token", "pos_ref", "pos_i", "pos_j",
                              "lesson_sentence"}
MAX_NUMBER = 2.0**53
MAX_VALUE_CHARS = 512
URL_BUDGET = 6000  # bytes of percent-encoded sentence + second sentence in one link


def encoded_length(*texts: str | None) -> int:
    """Bytes the texts take in a URL query string (UTF-8, percent-encoded)."""
    return sum(len(quote_plus(t, safe="")) for t in texts if t)


def fits_in_link(text: str | None, pair: str | None = None) -> bool:
    """Whether the sentence (and second sentence) can live in a reloadable link."""
    return encoded_length(text, pair) <= URL_BUDGET


def unusable(key: str, value: str) -> bool:
    """Whether no widget could take this query value (see the module docstring)."""
    if key in FREE_TEXT:
        return encoded_length(value) > URL_BUDGET
    if len(value) > MAX_VALUE_CHARS or not value.strip():
        return True
    try:
        number = float(value)  # accepts 'inf', 'nan', '1e999', ' 7 ', '1_000'
    except ValueError:
        return False  # not a number: an option or tab label, checked by Streamlit
    return not math.isfinite(number) or abs(number) > MAX_NUMBER


def _values(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def sanitize() -> list[str]:
    """Drop every unusable query parameter before any widget is built; returns their keys.

    Streamlit seeds widgets from a snapshot of the URL taken when the run starts (its
    `_initial_query_params`), so both the live parameters and that snapshot are cleaned; the
    browser's address bar is updated. Outside a Streamlit run this does nothing.
    """
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return []
    dropped: set[str] = set()
    with ctx.session_state.query_params() as qp:
        live = dict(qp._query_params)
        initial = qp._initial_query_params
        for key, value in [*live.items(), *initial.items()]:
            if any(unusable(key, v) for v in _values(value)):
                dropped.add(key)
        for key in dropped:
            initial.pop(key, None)
            qp.remove_param(key)  # tells the browser, when the URL had it
        for key, value in list(initial.items()):  # {key: [values]}: what widgets start from
            if key not in NOT_TRANSLATED and key not in dropped:
                initial[key] = [in_this_language(v) for v in _values(value)]
        for key, value in live.items():
            if key in NOT_TRANSLATED or key in dropped or isinstance(value, (list, tuple)):
                continue
            shown = in_this_language(str(value))
            if shown != value:
                qp[key] = shown  # tells the browser
    return sorted(dropped)
