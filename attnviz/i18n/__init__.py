"""English and Chinese: every user-facing string is looked up in a gettext catalogue.

    from attnviz.i18n import _, N_
    st.title(_("Positional encoding"))          # looked up now, in the session's language
    TITLE = N_("Heads of one layer")            # marked for the catalogue, looked up later
    _(TITLE)

Catalogues: `locales/<lang>/LC_MESSAGES/attnviz.po`, keyed by the English text (gettext's
convention), one per language in LANGUAGES. A language's `.po` text is read once, at its first
use, into a {msgid: msgstr} table (`po.parse`): no extra dependency and no build step.
`scripts/i18n_extract.py` lists the strings the code marks (`_("...")`, `N_("...")`) and adds
new ones to the catalogues.

The language is per session, never per process: Streamlit runs every session's script in a
thread of one server process, a teacher in Chinese beside a student in English. The language
lives in a `contextvars.ContextVar`, which each thread sees separately; app.py's router sets it
at the start of every run from the session (ui.sidebar.language). Outside Streamlit it is
English unless `use("zh")` says otherwise. No Streamlit here: analysis/ may call `_`.

A string the catalogue lacks is shown in English and recorded in MISSING (tests assert it
stays empty after a page runs in each language).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path

from . import po

LANGUAGES: dict[str, str] = {"en": "English", "zh": "中文"}
DEFAULT = "en"
DOMAIN = "attnviz"
LOCALES = Path(__file__).parent / "locales"
MISSING: set[tuple[str, str]] = set()  # (language, msgid) looked up but not in the catalogue

_language: ContextVar[str] = ContextVar("attnviz_language", default=DEFAULT)


def catalogue_path(lang: str) -> Path:
    return LOCALES / lang / "LC_MESSAGES" / f"{DOMAIN}.po"


def messages(lang: str) -> dict[str, str]:
    """{msgid: msgstr} of a language's catalogue, without the header entry."""
    out = po.parse(catalogue_path(lang).read_text(encoding="utf-8"), str(catalogue_path(lang)))
    out.pop("", None)
    return out


@cache
def translations(lang: str) -> dict[str, str]:
    """{msgid: msgstr} of a language's catalogue, read once (a msgstr left empty is not a
    translation)."""
    return {k: v for k, v in messages(lang).items() if v}


def normalise(lang: object) -> str:
    """A language code from LANGUAGES; anything else (a typo in a URL) is the default."""
    return lang if isinstance(lang, str) and lang in LANGUAGES else DEFAULT


def set_language(lang: object) -> str:
    """Set this thread's (this session's run's) language; returns the code used."""
    code = normalise(lang)
    _language.set(code)
    return code


def language() -> str:
    """The language of the current session's run."""
    return _language.get()


@contextmanager
def use(lang: str) -> Iterator[None]:
    """Within the block, look strings up in `lang` (tests, the command line)."""
    token = _language.set(normalise(lang))
    try:
        yield
    finally:
        _language.reset(token)


def gettext(msgid: str) -> str:
    """`msgid` in the current language; the English text (and a MISSING entry) when the
    catalogue has no translation for it."""
    lang = _language.get()
    table = translations(lang)
    text = table.get(msgid)
    if not text:
        MISSING.add((lang, msgid))
        return msgid
    return text


@cache
def _any_language() -> dict[str, str]:
    """{text in any language: msgid} over every catalogue (a text shared by two msgids keeps
    the first; English texts are their own msgids)."""
    out: dict[str, str] = {}
    for lang in LANGUAGES:
        for msgid, text in translations(lang).items():
            if msgid and isinstance(msgid, str) and text:
                out.setdefault(msgid, msgid)
                out.setdefault(text, msgid)
    return out


def in_this_language(text: str) -> str:
    """A catalogue text written in any language, as the current language writes it; any other
    text unchanged. Links carry translated option labels (a radio's or a tab's label), so a link
    made in Chinese opens the same option in English and the other way round."""
    msgid = _any_language().get(text)
    if msgid is None:
        return text
    return translations(_language.get()).get(msgid) or msgid


def N_(msgid: str) -> str:  # noqa: N802 - gettext's conventional name
    """Mark a constant for the catalogue without looking it up (looked up where shown)."""
    return msgid


_ = gettext

__all__ = ["DEFAULT", "LANGUAGES", "MISSING", "N_", "_", "gettext", "in_this_language",
           "language", "messages",
           "normalise", "set_language", "translations", "use"]
