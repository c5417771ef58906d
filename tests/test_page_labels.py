"""A repeated word keeps its own label in every figure of every page: "I saw a saw" (the
default sentence) shows `saw #2` and `saw #4`, never a bare "saw" and never `'saw' #2`.

Each page of the router opens in AppTest on the default sentence; in every figure it draws,
every axis's tick texts and every category a trace is drawn on (x, y, text, names) are read:
no tick text or category is the bare word "saw" or the word in quotes, and no two tick texts
of one axis are equal (two rows that read the same cannot be told apart; a heads grid's
blocks each name their own tokens). Compare two
sentences showed a bare "saw" when only one of A's two saws was aligned; Positional encoding's
shuffle figure four of them.
"""

from __future__ import annotations

import html
import json
import re

import pytest

from tests.apptest import open_page
from tests.pages_list import existing_pages
from tests.plotly_json import charts

WORD = "saw"  # the default sentence's repeated word
TAGS = re.compile(r"<[^>]+>")


def shown(text) -> str:
    """A label as the reader sees it: no tags, entities read, spaces trimmed."""
    return html.unescape(TAGS.sub("", str(text))).strip()


def axes_of(layout: dict) -> dict[str, dict]:
    return {k: v for k, v in layout.items()
            if re.fullmatch(r"[xy]axis\d*", k) and isinstance(v, dict)}


# The default sentence's tokens (any model's start and end tokens too): an axis whose ticks
# are all of them shows "I saw a saw", where a bare "saw" cannot say which saw it is. (Another
# sentence on the page, such as Similarity's B, "She cut the wood with a saw.", has one saw,
# shown bare by the convention.)
SENTENCE = {"[cls]", "[sep]", "<s>", "</s>", "<|endoftext|>", "i", WORD, "a", "'saw'"}


def token_of(tick: str) -> str:
    """The token a tick names: its number ('#27 the', 'saw #2') and piece mark left out."""
    return re.sub(r"^#\d+ |\s#\d+$", "", tick).lstrip("…").lower()


def blocks(ticks: list[str]) -> bool:
    """Whether the ticks are one sequence of distinct labels repeated (a heads grid drawn as
    one heatmap of blocks: each block names its own tokens)."""
    n = len(ticks)
    return any(n % p == 0 and ticks == ticks[:p] * (n // p) and len(set(ticks[:p])) == p
               for p in range(2, n // 2 + 1))


def label_faults(fig: dict) -> list[str]:
    """What breaks the convention in one figure's JSON (empty when nothing does)."""
    faults = []
    bare = {WORD, f"'{WORD}'", f"“{WORD}”"}
    for name, axis in axes_of(fig.get("layout", {})).items():
        ticks = [shown(t) for t in axis.get("ticktext") or []]
        ours = all(token_of(t) in SENTENCE for t in ticks if t)
        if any(t.startswith(f"'{WORD}'") or (ours and t in bare) for t in ticks):
            faults.append(f"{name}: bare or quoted {WORD!r} in ticks {ticks}")
        repeated = sorted({t for t in ticks if t and ticks.count(t) > 1})
        if repeated and not blocks(ticks):
            faults.append(f"{name}: tick texts repeated {repeated} in {ticks}")
        for value in axis.get("categoryarray") or []:
            if shown(value) in bare:
                faults.append(f"{name}: bare {WORD!r} category")
    for i, trace in enumerate(fig.get("data", [])):
        for field in ("x", "y", "text", "labels"):
            values = trace.get(field)
            if isinstance(values, list):
                flat = [v for row in values for v in (row if isinstance(row, list) else [row])]
                if any(isinstance(v, str) and (shown(v) in bare
                                               or shown(v).startswith(f"'{WORD}'"))
                       for v in flat):
                    faults.append(f"trace {i} {field}: bare or quoted {WORD!r}")
    return faults


def test_the_check_finds_what_it_should():
    good = {"layout": {"xaxis": {"ticktext": ["[CLS]", "i", "saw #2", "a", "saw #4"]}},
            "data": [{"x": ["saw #2", "saw #4"], "y": ["a", "b"]}]}
    assert label_faults(good) == []
    assert label_faults({"layout": {"xaxis": {"ticktext": ["i", "<b>saw</b>"]}}})
    assert label_faults({"layout": {"yaxis2": {"ticktext": ["a #1", "a #1"]}}})
    assert label_faults({"layout": {}, "data": [{"y": [["'saw' #2"]]}]})
    assert label_faults({"layout": {}, "data": [{"x": ["saw", "i"]}]})
    # one saw in another sentence is bare by the convention; a grid's blocks repeat their names
    assert label_faults({"layout": {"xaxis": {"ticktext": ["she", "cut", "a", "saw"]}}}) == []
    assert label_faults({"layout": {"xaxis": {"ticktext": ["i", "saw #2", "i", "saw #2"]}}}) \
        == []
    assert label_faults({"layout": {"xaxis": {"ticktext": ["i", "#2 saw", "a", "saw"]}}})


@pytest.mark.parametrize("page", existing_pages())
def test_every_figure_labels_the_repeated_word(page):
    at = open_page(page)
    faults = {key: found for key, spec in charts(at)
              if (found := label_faults(json.loads(spec)))}
    assert not faults, faults
