"""Bring the translation catalogues up to date with the strings the code marks.

    .venv/bin/python scripts/i18n_extract.py

Adds new strings (to be translated where the msgstr is empty), drops unused ones, keeps
existing translations; prints what is still untranslated.
"""

from attnviz.i18n.extract import update

if __name__ == "__main__":
    for lang, todo in update().items():
        for msgid in todo:
            print(f"{lang}: untranslated: {msgid!r}")
