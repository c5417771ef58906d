"""The one way tests open the app in Streamlit's AppTest (no browser)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from attnviz.ui.router import DEFAULT_PAGE

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def open_page(page: str | None = None, timeout: int = 240, run: bool = True,
              **state) -> AppTest:
    """A fresh AppTest session of app.py on `page` (default: the page served at "/").

    `state` (text=..., pair=..., any widget key) is set before the first run. With run=False
    the page is chosen but not run yet (to set more state first). A run that raised fails the
    calling test with the exception's message.
    """
    at = AppTest.from_file(APP, default_timeout=timeout)
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    if page is not None and page != DEFAULT_PAGE:
        at.switch_page(page)
        if run:
            at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


NUMBERS = "Numbers in this figure"


def open_numbers(at: AppTest, label: str = NUMBERS) -> AppTest:
    """Open every "Numbers in this figure" expander of the page and rerun: their tables are
    made only while they are open (ui.figures.show_numbers), as a click in a browser does."""
    keys = [e.key for e in at.expander if e.label == label]
    assert keys and all(keys), keys  # each tracks its state under a key
    for key in keys:
        at.session_state[key] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def download(at: AppTest, file_name: str) -> bytes:
    """The bytes of the page's download `file_name` (.npz or .csv) as a click would make them,
    read from the view the page recorded (attnviz.ui.recorder: every download_arrays and
    download_csv goes there)."""
    from attnviz.export import html as export
    from attnviz.ui import recorder

    rec = at.session_state[recorder.STATE_KEY]
    found = [b for b in rec.view().blocks
             if isinstance(b, export.Numbers) and b.file_name == file_name]
    assert found, f"no download {file_name!r} on the page"
    block = found[-1]
    if block.kind == "csv":
        return export.csv_text(block.make()).encode()
    return export.npz_bytes(block.make())
