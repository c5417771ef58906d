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


# ------------------------------------------------------------------ the lesson pack
# Figures on each page of the pack for "I saw a saw" (what the app's pages show as they open
# with each view's settings).
PACK_FIGURES = {
    "lesson-1-10-the-task-one-tag-per-word": 1, "lesson-2-10-a-a-classifier-that-sees-one-word": 2,
    "lesson-3-10-b-a-window-of-neighbours": 2, "lesson-4-10-where-a-window-of-3-is-not-enough": 2,
    "lesson-5-10-the-cost-of-a-wide-window": 1,
    "lesson-6-10-self-attention-each-word-looks-at-all": 2,
    "lesson-7-10-c-self-attention-without-positions": 2,
    "lesson-8-10-d-self-attention-with-positions": 4, "lesson-9-10-a-real-pretrained-model": 1,
    "lesson-10-10-what-to-try-next": 2, "step-by-step-1-vectors": 1,
    "step-by-step-2-queries-keys-values": 3, "step-by-step-3-similarity": 2,
    "step-by-step-4-scale-temperature": 4, "step-by-step-5-softmax": 1,
    "step-by-step-6-weighted-sum": 3, "step-by-step-7-multi-head": 3,
    "step-by-step-8-why-softmax": 2, "positional-encoding": 3,
    "windows-and-receptive-fields": 1, **{f"heads-of-layer-{i}": 1 for i in range(6)},
    "all-heads-token-lines": 3, "inside-one-score": 2,
    "head-statistics-rollout-and-flow": 2, "weights-vs-value-norms": 2,
    "switch-it-off-and-see": 12}


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    """The pack for "I saw a saw", its taggers and sweeps over seeds the tests' trained ones
    (tests.lesson_trained: the same functions with the same settings, trained once per test
    process), handed to it where the app's kept ones would be read."""
    from attnviz.analysis import taggers
    from attnviz.export import site
    from tests.lesson_trained import sweeps, trained

    out = tmp_path_factory.mktemp("pack")
    lines: list[str] = []
    done = {"trained": trained(), "sweep": sweeps()}  # trained before the pack asks
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(taggers, "kept_or_trained", lambda settings, *a, **k: done["trained"])
        mp.setattr(taggers, "kept_or_swept", lambda settings, *a, **k: done["sweep"])
        written = site.build(out, "I saw a saw", progress=lines.append)
    return out, written, lines


@pytest.mark.slow  # reads the lesson's sweep over seeds (the run's warm-up keeps it)
def test_pack_has_every_view_with_its_figures(pack):
    out, written, lines = pack
    assert lines[0] == "[1/31] Lesson 1/10: The task: one tag per word"
    assert sorted(p.stem for p in out.glob("*.html")) == sorted([*PACK_FIGURES, "index"])
    assert set(written) == set(out.iterdir())
    for name, n in PACK_FIGURES.items():
        page = (out / f"{name}.html").read_text()
        assert page.count('class="attnviz-figure"') == n, name
        assert '<p class="settings">sentence: <span><bdi>I saw a saw</bdi></span> · lang: ' \
               '<span><bdi>English</bdi></span>' in page
        assert not URL.search(page.encode()), name
    assert "· layer: <span><bdi>3</bdi></span>" in (out / "heads-of-layer-3.html").read_text()
    assert "<h2>Heads of one layer</h2>" in (out / "heads-of-layer-3.html").read_text()
    cost = (out / "lesson-5-10-the-cost-of-a-wide-window.html").read_text()
    assert "seeds 0, 1, 2" in cost  # the overfitting over every seed, as the page shows it
    lesson = (out / "lesson-2-10-a-a-classifier-that-sees-one-word.html").read_text()
    assert "<h3>(a) A classifier that sees one word</h3>" in lesson
    assert "<strong>Predict first:</strong>" in lesson and ":material" not in lesson
    positions = (out / "lesson-8-10-d-self-attention-with-positions.html").read_text()
    assert "long inputs, places 1–" in positions  # the length test: its figure and table


@pytest.mark.slow  # reads the lesson's sweep over seeds (the run's warm-up keeps it)
def test_pack_numbers_are_the_traces(pack, model):
    out, _written, _lines = pack
    t = model.trace("I saw a saw")
    with np.load(out / "heads-of-layer-2_attnviz_layer2.npz") as z:
        for name in ("scores", "weights", "queries", "keys", "values"):
            np.testing.assert_array_equal(z[name], getattr(t, name)[2])
    page = (out / "heads-of-layer-2.html").read_text()
    (payload,) = re.findall(r'class="attnviz-figure">(.*?)</script>', page, re.S)
    from attnviz.plotting.summary import grid_panels

    fig = json.loads(payload)["figure"]
    assert "template" not in fig["layout"]  # plotly.js's own defaults in a file
    for h, (_title, z, _keys, _queries) in enumerate(grid_panels(fig)):
        np.testing.assert_allclose(z, t.weights[2, h], rtol=0, atol=1e-7)


def test_pack_views_run_without_streamlit():
    """Every view but the trained lesson steps, in a process that never imports Streamlit."""
    code = (
        "import sys\n"
        "from attnviz import engine\n"
        "from attnviz.export import site, html\n"
        "p = site.Pack(engine.load_model(), 'I saw a saw')\n"
        "specs = site.views(p.model.n_layers)\n"
        "made = [s.make(p) for i, s in enumerate(specs) if i not in (1, 2, 3, 4, 6, 7, 9)]\n"
        "assert all(made) and len(made) == 24\n"
        "html.page_html(html.View('v', made[-1]))\n"
        "print(sorted(k for k in sys.modules if k.split('.')[0] == 'streamlit'))\n")
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"


# ------------------------------------------------------------ a careless --out, odd text
def test_site_never_writes_through_a_link(tmp_path):
    """A folder attnviz wrote whose index.html (and a page) were made links to files
    elsewhere: the links are replaced by the site's files, the files they named untouched
    (before: the target was overwritten)."""
    out = tmp_path / "pack"
    export.write_site(out, [_view("I saw a saw")], "t")
    victim = tmp_path / "victim.html"
    victim.write_text("precious")
    for name in ("index.html", "a-view.html"):
        (out / name).unlink()
        (out / name).symlink_to(victim)
    export.write_site(out, [_view("I saw a saw")], "t")
    assert victim.read_text() == "precious"
    for name in ("index.html", "a-view.html"):
        assert not (out / name).is_symlink() and "<!DOCTYPE html>" in (out / name).read_text()
    assert not list(out.glob(".*.tmp"))


def test_site_writes_only_into_a_new_empty_or_its_own_folder(tmp_path):
    foreign = tmp_path / "notes"
    foreign.mkdir()
    (foreign / "index.html").write_text("my own page")
    with pytest.raises(ValueError, match="did not write: name a new or empty folder"):
        export.write_site(foreign, [_view("x")], "t")
    assert (foreign / "index.html").read_text() == "my own page"
    (foreign / export.PACK_MARK).symlink_to(tmp_path / "elsewhere")  # a mark must be a file
    with pytest.raises(ValueError, match="did not write"):
        export.write_site(foreign, [_view("x")], "t")
    (foreign / export.PACK_MARK).unlink()
    written = export.write_site(foreign, [_view("x")], "t", replace=True)  # asked to
    assert (foreign / "index.html").read_text() != "my own page" and written
    export.write_site(foreign, [_view("x")], "t")  # now attnviz's own: no need to ask
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "somewhere")
    for bad, why in ((link, "is a link"), ("", "name is empty"), (" ", "name is empty"),
                     (foreign / "index.html", "is a file")):
        with pytest.raises(ValueError, match=why):
            export.write_site(bad, [_view("x")], "t")
    assert not (tmp_path / "somewhere").exists()


ODD = "I saw\x00 a\x1b[31m saw\x07\u202e evil\r"  # NUL, an escape, a bell, an unclosed RLO


def test_shown_text_has_no_control_characters_and_closes_its_directions():
    view = _view(ODD)
    view.title = ODD
    doc = export.page_html(view)
    body = _body(doc)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", body)  # before: NUL bytes in the file
    assert "\\u0000" not in body and "\\u001b" not in body  # nor as JSON escapes
    assert "I saw a[31m saw" in body
    for line in re.sub(r"<script.*?</script>", "", body, flags=re.S).splitlines():
        opened = line.count("\u202e") + line.count("\u202b") + line.count("\u202d") + \
            line.count("\u202a")
        assert line.count("\u202c") >= opened, line  # no override runs into the next line
    assert f"<h1><bdi>{export.shown_text(ODD)}</bdi></h1>" in doc
    assert "sentence: <span><bdi>" in doc


@pytest.mark.parametrize("text, shown", [
    ("a\u202eb", "a\u202eb\u202c"),
    ("a\u202eb\u202cc", "a\u202eb\u202cc"),
    ("\u2067x\u202ey", "\u2067x\u202ey\u202c\u2069"),
    ("\u2067x\u202ey\u2069z", "\u2067x\u202ey\u2069z"),  # PDI closes the override inside it
    ("one\u202e\ntwo", "one\u202e\u202c\ntwo"),
    ("tab\tok\n", "tab\tok\n"),
])
def test_directions_are_closed_where_their_line_ends(text, shown):
    assert export.shown_text(text) == shown


@pytest.mark.slow
def test_a_long_text_makes_a_bounded_pack_that_says_what_it_left_out(tmp_path):
    """20,000 characters (before: a 241 MB pack, one view 39 MB, 1.96 GB peak): the pack's
    traces read PACK_MAX_TOKENS tokens, the pages show the text's start, the index says what
    was left out."""
    from attnviz.analysis import taggers
    from attnviz.export import site
    from tests.lesson_trained import sweep, trained

    text = ("I saw a saw with a saw. " * 900)[:20_000]
    done = {"trained": trained(), "sweep": sweep()}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(taggers, "kept_or_trained", lambda settings, *a, **k: done["trained"])
        mp.setattr(taggers, "kept_or_swept", lambda settings, *a, **k: done["sweep"])
        written = site.build(tmp_path / "pack", text, progress=lambda line: None)
    sizes = {p.name: p.stat().st_size for p in written}
    assert sum(sizes.values()) < 40 << 20 and max(sizes.values()) < 8 << 20, sizes
    index = (tmp_path / "pack" / "index.html").read_text()
    assert f"its pages show its first {site.PACK_MAX_TOKENS} tokens" in index
    assert "(19,000 more characters)" in index
    page = (tmp_path / "pack" / "heads-of-layer-0.html").read_text()
    assert "tokens at the end were dropped" in page and len(page) < 4 << 20
