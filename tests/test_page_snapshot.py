"""Every page's figures and text, as a small snapshot (tests/data/page_snapshot.json).

Each page of the router opens in AppTest on the default sentence; what its main area shows
(headings, text, captions, messages, metrics, tables) and each figure (its JSON without
Streamlit's theme template) must equal the stored snapshot, as must the blocks of its
"Download this view (HTML)" file. Each is kept as a digest: a hash of its words and shape with
every number taken out, how many numbers there were, and their sum and sum of absolute values,
compared within float rounding (a float's last digits depend on the threads that summed it).
A change to what a page teaches shows up here as a changed digest.

To record the snapshot again after an intended change:
    ATTNVIZ_WRITE_SNAPSHOT=1 .venv/bin/python -m pytest -q -n 0 tests/test_page_snapshot.py
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from attnviz.ui import recorder
from tests.apptest import open_page
from tests.pages_list import existing_pages
from tests.plotly_json import charts, decode
from tests.test_ui_recorder import _recorded, _screen

SNAPSHOT = Path(__file__).parent / "data" / "page_snapshot.json"
WRITE = os.environ.get("ATTNVIZ_WRITE_SNAPSHOT") == "1"
# A number, in the figures' JSON or written in a text: compared by value, not by its digits
# (the last digits of a float depend on the threads that summed it).
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
ABS, REL = 2e-3, 1e-4  # how far a sum of numbers may move: float rounding, a last digit


def _split(value, numbers: list[float]):
    """`value` with every float and every number written in a string replaced by "#" (their
    values appended to `numbers`); numpy's base64 arrays decoded first."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            return _split(decode(value).tolist(), numbers)
        return {k: _split(v, numbers) for k, v in value.items() if k != "uid"}
    if isinstance(value, (list, tuple)):
        return [_split(v, numbers) for v in value]
    if isinstance(value, float):
        numbers.append(value if np.isfinite(value) else 0.0)
        return "#" if np.isfinite(value) else str(value)
    if isinstance(value, str):
        def number(m: re.Match) -> str:
            v = float(m.group(0))
            if not np.isfinite(v) or abs(v) > 1e12:  # digits that are no quantity: kept
                return m.group(0)
            numbers.append(v)
            return "#"
        return NUMBER.sub(number, value)
    return value


def digest(value) -> list:
    """[hash of the value's words and shape, how many numbers, their sum, their sum of
    absolute values]."""
    numbers: list[float] = []
    shape = _split(value, numbers)
    text = json.dumps(shape, sort_keys=True, ensure_ascii=False, default=str)
    a = np.asarray(numbers, dtype=np.float64)
    return [hashlib.sha1(text.encode("utf-8")).hexdigest()[:16], len(numbers),
            round(float(a.sum()), 6), round(float(np.abs(a).sum()), 6)]


def same(got: list, want: list) -> bool:
    """The same words and shape, as many numbers, and sums within float rounding."""
    return got[:2] == want[:2] and all(
        abs(g - w) <= ABS + REL * abs(w) for g, w in zip(got[2:], want[2:], strict=True))


def snapshot_of(at) -> dict:
    """What the page shows: text and tables as [kind, digest], figures as digests, and its
    HTML file's blocks as [kind, digest]."""
    figures = []
    for _key, spec in charts(at):
        fig = json.loads(spec)
        fig.get("layout", {}).pop("template", None)
        figures.append(digest(fig))
    screen = [[kind, digest(what)] for kind, what in _screen(at.main, []) if kind != "figure"]
    recorded = _recorded(at.session_state[recorder.STATE_KEY].view())
    file = [[kind, digest(what)] for kind, what in recorded]
    return {"screen": screen, "figures": figures, "file": file}


def _stored() -> dict:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8")) if SNAPSHOT.is_file() else {}


@pytest.mark.parametrize("page", existing_pages())
def test_page_unchanged(page):
    got = snapshot_of(open_page(page))
    if WRITE:
        stored = _stored()
        stored[page] = got
        SNAPSHOT.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n",
                            encoding="utf-8")
        return
    stored = _stored()
    assert page in stored, f"no snapshot of {page}: record it (see this module's docstring)"
    want = stored[page]
    for part in ("screen", "figures", "file"):
        assert len(got[part]) == len(want[part]), (part, got[part], want[part])
        for i, (g, w) in enumerate(zip(got[part], want[part], strict=True)):
            if part != "figures":
                assert g[0] == w[0], (part, i, g, w)
                g, w = g[1], w[1]
            assert same(g, w), (part, i, g, w)


def test_a_number_is_compared_by_value():
    """Float rounding in a figure or a text (1.91e-06 against 2.05e-06, 0.6580 against
    0.6581) keeps a digest the same; another word, another count of numbers or a number moved
    by more than rounding does not."""
    a = digest({"z": [0.5, 1.91e-06], "text": "largest difference 1.91e-06, cosine 0.6580"})
    b = digest({"z": [0.5, 2.05e-06], "text": "largest difference 2.05e-06, cosine 0.6581"})
    assert same(a, b)
    assert not same(a, digest({"z": [0.5, 1.91e-06],
                               "text": "largest change 1.91e-06, cosine 0.6580"}))
    assert not same(a, digest({"z": [0.5], "text": "largest difference 1.91e-06, cosine 0.6580"}))
    assert not same(a, digest({"z": [0.6, 1.91e-06],
                               "text": "largest difference 1.91e-06, cosine 0.6580"}))
    assert digest("saw #2 and saw #4")[1] == 2  # a token's number is a number too
