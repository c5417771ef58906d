"""The Chinese catalogue says rollout, attention flow and one-hot in Chinese (注意力展开,
注意力流, 独热): the English term appears only in parentheses after the Chinese one (where
a page defines it, so a student can look the paper up), never as the word itself."""

from __future__ import annotations

import re

from attnviz import i18n

TERMS = re.compile(r"\b(rollout|flow|one-hot)\b", re.IGNORECASE)
ASIDE = re.compile(r"（[^）]*）|\([^)]*\)|\$[^$]*\$|`[^`]*`")  # parentheses, math, code


def test_the_terms_are_said_in_chinese():
    found = {}
    for msgid, msgstr in i18n.messages("zh").items():
        said = ASIDE.sub("", msgstr)
        if TERMS.search(said):
            found[msgid[:60]] = msgstr[:120]
    assert not found, found
    zh = i18n.messages("zh")
    assert zh["rollout"] == "注意力展开" and zh["flow"] == "注意力流"
    assert zh["Head statistics, rollout and flow"] == "头的统计、注意力展开与注意力流"
