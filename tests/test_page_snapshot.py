"""Every page's figures and text, as a small snapshot (tests/data/page_snapshot.json).

Each page of the router opens in AppTest on the default sentence; what its main area shows
(headings, text, captions, messages, metrics, tables: kind and a hash of the content) and each
figure (its JSON with Streamlit's theme template and numbers rounded to 5 decimals, hashed)
must equal the stored snapshot, as must the blocks of its "Download this view (HTML)" file
(kind and a hash of the text, table or label). A change to what a page teaches shows up here
as a changed hash.

To record the snapshot again after an intended change:
    ATTNVIZ_WRITE_SNAPSHOT=1 .venv/bin/python -m pytest -q -n 0 tests/test_page_snapshot.py
"""

from __future__ import annotations

import hashlib
import json
import os
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
DECIMALS = 5


def _stable(value):
    """JSON with numpy's base64 arrays decoded and every float rounded (to DECIMALS)."""
    if isinstance(value, dict):
        if "bdata" in value and "dtype" in value:
            a = decode(value)
            return (np.round(a.astype(np.float64), DECIMALS) + 0.0).tolist() \
                if a.dtype.kind == "f" else a.tolist()
        return {k: _stable(v) for k, v in value.items() if k != "uid"}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, float):
        return round(value, DECIMALS) + 0.0
    return value


def digest(value) -> str:
    text = json.dumps(_stable(value), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def snapshot_of(at) -> dict:
    """What the page shows: text and tables as (kind, hash), figures as hashes, and the kinds
    of its HTML file's blocks."""
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
    assert got["screen"] == want["screen"]
    assert got["figures"] == want["figures"]
    assert got["file"] == want["file"]
