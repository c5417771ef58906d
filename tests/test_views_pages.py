"""Every page is a view: pages/NAME.py is described by attnviz/views/NAME.py, and a page draws
its main area only through ui.render (widgets aside), so its "Download this view (HTML)" file
holds exactly the blocks its view gave it. Read from the source, no app run."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.pages_list import ROOT, existing_pages

# Streamlit's calls that show content (not widgets): a page hands blocks to ui.render instead
SHOWN = {"markdown", "caption", "title", "header", "subheader", "info", "warning", "error",
         "success", "plotly_chart", "dataframe", "table", "metric", "latex", "code", "write",
         "json", "image", "html"}
# attnviz's own ways to show content around ui.render
AROUND = {"record", "record_figure", "note_numbers", "show_figure", "download_arrays",
          "download_csv"}


def calls(tree: ast.AST) -> list[str]:
    """The names a module calls (`x.name(...)`, `name(...)`), but its view's functions."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name):
            out.append(f.id)
        elif isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name)
                                                   and f.value.id == "view"):
            out.append(f.attr)
    return out


def imported(tree: ast.AST) -> set[str]:
    return {node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module}


@pytest.mark.parametrize("page", existing_pages())
def test_every_page_has_its_view(page):
    stem = Path(page).stem
    assert (ROOT / "attnviz" / "views" / f"{stem}.py").is_file()
    src = (ROOT / page).read_text(encoding="utf-8")
    assert re.search(rf"from attnviz\.views import {stem} as view\b", src), page


@pytest.mark.parametrize("page", existing_pages())
def test_a_page_shows_content_only_through_render(page):
    tree = ast.parse((ROOT / page).read_text(encoding="utf-8"))
    found = sorted(set(calls(tree)) & (SHOWN | AROUND))
    assert found == [], f"{page} draws {found} itself: render its view's blocks"
    assert not {m for m in imported(tree)
                if m.startswith(("attnviz.export", "attnviz.ui.recorder"))}


@pytest.mark.parametrize("page", existing_pages())
def test_pages_stay_thin(page):
    assert len((ROOT / page).read_text(encoding="utf-8").splitlines()) < 150


def test_the_blocks_live_in_views_and_export_takes_them_from_there():
    from attnviz.export import html
    from attnviz.views import blocks

    for name in ("Heading", "Markdown", "Tex", "Code", "Figure", "Table", "Metric", "Numbers",
                 "View"):
        assert getattr(html, name) is getattr(blocks, name)
        assert getattr(blocks, name).__module__ == "attnviz.views.blocks"
