"""URL state every page survives: query parameters checked before any widget reads them.

Widgets with `bind="query-params"` take their first value from the URL. Streamlit parses a
number widget's value with float() and then int(), so `inf`, `-inf`, `1e999` or a 100,000-digit
number raises OverflowError inside Streamlit on every rerun of the page, and typing a new
sentence does not recover. The router calls `sanitize()` on every run before any widget
(after the session's language and the navigation are set), so no widget ever sees such a
value, and an option written in another language reads in this one:

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

    a value is named          when it is a bundled model's engine name: Streamlit reads a
                              select box's link as its shown label, so `?model=smollm2`, the
                              short form a teacher types, would be dropped as no option;
                              it becomes SmolLM2's label in this language
                              (ui.model_picker.choice_label)

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

import streamlit as st

from ..i18n import in_this_language
from .model_picker import MODEL_KEY, choice_label

# Text boxes bound to the URL (the sidebar's sentences, the second sentence of the similarity
# and compare pages, the encoder-decoder's target): any text, never translated.
FREE_TEXT = frozenset({"text", "pair", "sim_b", "cmp_b", "fam_target", "abl_corrupted"})
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


def cleaned(params: dict[str, list[str]]) -> tuple[list[str], dict[str, list[str]]]:
    """(keys no widget could take, {key: values in this language} for the values that
    translate) of a link's parameters ({key: [values]}), as `sanitize` changes them."""
    dropped = sorted(k for k, values in params.items() if any(unusable(k, v) for v in values))
    translated = {}
    for key, values in params.items():
        if key in NOT_TRANSLATED or key in dropped:
            continue
        shown = [in_this_language(v) for v in values]
        if key == MODEL_KEY:
            shown = [choice_label(v) or v for v in shown]
        if shown != values:
            translated[key] = shown
    return dropped, translated


def sanitize() -> list[str]:
    """Drop every unusable query parameter, and translate options written in another language,
    before any widget is built; returns the dropped keys.

    Widgets take their first value from the link as it was when the run started, so a link
    that changes is put in the URL (st.query_params, which also updates the browser's address
    bar) and the script is run again from the top (st.rerun), before anything was drawn: once,
    for a link with such values; a clean link never reruns. A parameter a widget of this
    session is bound to already (Streamlit refuses to set it) is left to that widget.
    """
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    dropped, translated = cleaned(params)
    changed = False
    for key in dropped:
        changed |= _change(lambda key=key: st.query_params.pop(key, None))
    for key, values in translated.items():
        changed |= _change(lambda key=key, values=values: st.query_params.__setitem__(
            key, values if len(values) > 1 else values[0]))
    if changed:
        st.rerun()
    return dropped


def _change(edit) -> bool:
    """Apply one edit to st.query_params; False where Streamlit refuses it (a bound key)."""
    try:
        edit()
    except st.errors.StreamlitAPIException:
        return False
    return True
