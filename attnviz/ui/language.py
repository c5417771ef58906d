"""The session's language (English or Chinese), read from the sidebar's switch or the link.

The language switch (ui.sidebar) keeps its value in the URL as `lang` (`?lang=zh`), so a link
opens in the language it was made in. Every script run sets the session's language first
(`use_session_language`): the router at the start of a page's run, ui.recorder for a fragment
that reruns alone. This module imports nothing else from attnviz.ui.
"""

from __future__ import annotations

import streamlit as st

from attnviz import i18n

LANG_KEY = "lang"
WANTED = "lang_wanted"  # a language to switch to at the start of the next run (want)


def session_language() -> str:
    """The session's language: the switch's value once drawn, else the URL's `lang`
    (a first visit from a shared link), else English. Anything unknown is English."""
    if LANG_KEY in st.session_state:
        return i18n.normalise(st.session_state[LANG_KEY])
    return language_in_link(st.query_params.get(LANG_KEY, i18n.DEFAULT))


def language_in_link(value: object) -> str:
    """The language a link's `lang` names: its code (`lang=zh`, as a link is written by hand)
    or the name the switch writes there when clicked (`lang=English`, `lang=%20中文`: Streamlit
    keeps a bound option widget's shown label in the URL). Anything else is English."""
    if isinstance(value, str):
        for code, name in i18n.LANGUAGES.items():
            if value.strip() in (code, name):
                return code
    return i18n.DEFAULT


def want(lang: str) -> None:
    """Switch the session to `lang` and draw the page again in it. The switch is drawn before
    a page's content, so its value can be set only at the start of a run (adopt_wanted)."""
    st.session_state[WANTED] = lang
    st.rerun()


def adopt_wanted() -> None:
    """At the start of a whole page's run, before the switch is drawn: the language `want`
    asked for becomes the switch's value (Streamlit writes it to the URL as `lang`)."""
    lang = st.session_state.pop(WANTED, None)
    if lang in i18n.LANGUAGES:
        st.session_state[LANG_KEY] = lang


def use_session_language() -> str:
    """Look strings up in this session's language for the rest of this run (per thread,
    so other sessions keep theirs). A `lang` the URL mistyped is set back to the default."""
    lang = session_language()
    if st.session_state.get(LANG_KEY) != lang:
        st.session_state[LANG_KEY] = lang  # the switch starts from it (it has no default)
    return i18n.set_language(lang)
