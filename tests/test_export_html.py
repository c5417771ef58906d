"""The HTML writer: user text shown literally, plotly.js once, no URL, numbers included."""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest

from attnviz import plotting
from attnviz.export import html as export
from attnviz.ui.text import literal

HOSTILE = "<script>alert(1)</script> $x$ **b**"
URL = re.compile(rb"https?://", re.I)


def _view(text: str = HOSTILE) -> export.View:
    fig = plotting.attention_heatmap(np.eye(3, dtype=np.float32), ["[CLS]", text, "saw"],
                                     "weights", title=text)
    numbers = {"tokens": ["[CLS]", text, "saw"], "weights": np.eye(3, dtype=np.float32)}
    return export.View("A view", [
        export.Heading(literal(text)),  # pages pass typed text through literal()
        export.Markdown(f"The sentence **{literal(text)}**."),
        export.Markdown(literal(text), "caption"),
        export.Tex(text),
        export.Code(text),
        export.Figure(export.figure_spec(fig), {"displaylogo": False}),
        export.Table({text: [text, 1.5], "n": [1, 2]}),
        export.Numbers("Numbers (.npz)", lambda: numbers, "attnviz_x.npz"),
        export.Numbers("Table (.csv)", lambda: {"a": [1, 2], "b": [0.5, 0.25]}, "x.csv", "csv"),
    ], {"sentence": text}, "a-view")


def _body(doc: str) -> str:
    """The document without the inline plotly.js (the one <script> with no attribute that is
    not the drawing code)."""
    js = export.plotly_js()
    assert doc.count(js) == 1
    return doc.replace(js, "")


def test_plotly_js_is_the_packages_and_cannot_close_its_script():
    js = export.plotly_js()
    assert "</script" not in js.lower() and len(js) > 1_000_000


def test_user_text_is_shown_literally_never_as_markup():
    body = _body(export.page_html(_view()))
    assert "<script>alert" not in body and "<b>b</b>" not in body and "<strong>b" not in body
    shown = "&lt;script&gt;alert(1)&lt;/script&gt; $x$ **b**"  # as typed
    # heading, Markdown, caption, TeX, code, table header and cell, settings, the tokens array
    assert body.count(shown) == 9
    assert "The sentence <strong>" + shown + "</strong>." in body  # the page's own Markdown
    assert body.count("<script") == 3  # plotly.js (emptied here), the figure, the drawing code
    # figure JSON: '<' and '>' as JSON escapes, so the figure cannot end its <script> element
    specs = re.findall(r'<script type="application/json" class="attnviz-figure">(.*?)</script>',
                       body, re.S)
    assert len(specs) == 1 and "<" not in specs[0]
    fig = json.loads(specs[0])["figure"]
    assert fig["layout"]["title"]["text"] == HOSTILE  # the JSON decodes to the figure's own


def test_markdown_math_and_escapes():
    out = export.markdown_html(r"the \$5 and $q^i \cdot k^j$ and [x](javascript:alert(1))")
    assert "the $5" in out and '<span class="tex">q^i \\cdot k^j</span>' in out
    assert 'href="javascript' not in out
    assert export.markdown_html(":material/help: **Predict**").strip() == (
        "<p><strong>Predict</strong></p>")


def test_one_file_holds_plotly_once_and_no_url_outside_it():
    doc = export.page_html(_view())
    assert doc.count("<script>" + export.plotly_js() + "</script>") == 1
    assert not URL.search(_body(doc).encode())
    assert "src=" not in _body(doc)  # nothing to load


def test_numbers_are_embedded_and_round_trip():
    body = _body(export.page_html(_view()))
    (href,) = re.findall(r'href="data:application/octet-stream;base64,([^"]+)" '
                         r'download="attnviz_x.npz"', body)
    import base64

    with np.load(io.BytesIO(base64.b64decode(href))) as z:
        assert list(z["tokens"]) == ["[CLS]", HOSTILE, "saw"]
        np.testing.assert_array_equal(z["weights"], np.eye(3, dtype=np.float32))
    (csv,) = re.findall(r'href="data:text/csv;base64,([^"]+)"', body)
    assert base64.b64decode(csv).decode() == "a,b\n1,0.5\n2,0.25\n"
    assert "<td>0.25</td>" in body  # small numbers shown as a table too


def test_failing_numbers_do_not_break_the_view():
    view = export.View("v", [export.Numbers("N", lambda: 1 / 0, "n.npz")])
    assert "not available (ZeroDivisionError)" in export.page_html(view)


def test_site_writes_plotly_once_pages_reference_it_and_no_url(tmp_path):
    views = [_view(), _view("I saw a saw")]
    views[1].slug = "view"
    written = export.write_site(tmp_path, views, HOSTILE, ["An *intro*."], {"sentence": HOSTILE})
    names = sorted(p.name for p in tmp_path.iterdir())
    assert sorted(p.name for p in written) == names
    assert names.count("plotly.min.js") == 1
    assert (tmp_path / "plotly.min.js").read_bytes() == export.plotly_js_path().read_bytes()
    pages = [p for p in tmp_path.glob("*.html")]
    assert {p.name for p in pages} == {"index.html", "a-view.html", "a-view-2.html"}
    for p in tmp_path.iterdir():
        if p.name != "plotly.min.js":
            assert not URL.search(p.read_bytes()), p.name
    for p in pages:
        text = p.read_text()
        assert text.count('<script src="plotly.min.js"></script>') == 1
        assert export.plotly_js()[:2000] not in text  # referenced, not copied
        assert "<script>alert" not in text
    assert (tmp_path / "a-view_attnviz_x.npz").is_file()
    assert 'href="a-view_attnviz_x.npz"' in (tmp_path / "a-view.html").read_text()
    index = (tmp_path / "index.html").read_text()
    assert 'href="a-view.html"' in index and 'href="a-view-2.html"' in index
    assert "<em>intro</em>" in index


@pytest.mark.parametrize("bad", ["", "../../etc", "index"])
def test_slugs_are_file_safe_and_distinct(bad):
    views = [export.View(bad, slug=bad or "view"), export.View(bad, slug=bad or "view")]
    export.unique_slugs(views)
    assert len({v.slug for v in views}) == 2 and all(
        re.fullmatch(r"[a-z0-9-]+", v.slug) and v.slug != "index" for v in views)
