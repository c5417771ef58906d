"""English and Chinese: the catalogues, their reader, and the language kept per session.

The `.po` reader is checked on entries written out by hand; the catalogues
against the strings the code marks (the AST of attnviz/ and pages/); the language against two
threads looking strings up at once, as two Streamlit sessions do."""

from __future__ import annotations

import ast
import re
import threading
from pathlib import Path

import pytest

from attnviz import i18n
from attnviz.i18n import extract, po

ROOT = Path(__file__).resolve().parents[1]
FIELD = re.compile(r"\{(\w*)[^{}]*\}")


def test_the_parser_reads_comments_continued_lines_and_escapes():
    text = ('# a comment\nmsgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n'
            'msgid "Head"\nmsgstr "头"\n\nmsgid "two "\n"lines \\"q\\""\n'
            'msgstr "两行"\n"“q”\\n"\n')
    table = po.parse(text)
    assert table["Head"] == "头" and table['two lines "q"'] == "两行“q”\n"
    assert table[""] == "Content-Type: text/plain; charset=UTF-8\n" and len(table) == 3


@pytest.mark.parametrize("bad", ['msgid "a"\nmsgstr "b"\nmsgid "a"\nmsgstr "c"\n',
                                 'msgstr "b"\n', 'msgid "a"\n', 'msgctxt "x"\n'])
def test_the_parser_refuses_what_it_does_not_read(bad):
    with pytest.raises(ValueError):
        po.parse(bad)


def test_quote_round_trips():
    s = 'a "b" \\ c\nd\te'
    assert po.parse(f'msgid {po.quote(s)}\nmsgstr {po.quote(s)}\n') == {s: s}


def test_unescaped_lines_read_as_literal_eval_reads_them(monkeypatch):
    """Lines without a backslash or a quote inside are taken as is (the fast path); every
    catalogue must read exactly as with literal_eval on every line, and a stray quote inside
    still refuses."""
    for lang in i18n.LANGUAGES:
        text = i18n.catalogue_path(lang).read_text(encoding="utf-8")
        fast = po.parse(text)
        monkeypatch.setattr(po, "_unquote", lambda line, where: ast.literal_eval(line.strip()))
        slow = po.parse(text)
        monkeypatch.undo()
        assert fast == slow and list(fast) == list(slow)
    with pytest.raises((ValueError, SyntaxError)):
        po.parse('msgid "a "b" c"\nmsgstr "x"\n')


def test_both_catalogues_hold_exactly_the_strings_the_code_marks():
    marked = set(extract.marked())
    for lang in i18n.LANGUAGES:
        keys = set(i18n.messages(lang))
        assert keys - marked == set(), (lang, "only in the catalogue", keys - marked)
        assert marked - keys == set(), (lang, "marked but not in the catalogue", marked - keys)
    assert set(i18n.messages("en")) == set(i18n.messages("zh"))


def test_every_string_is_translated_with_the_same_fields():
    en, zh = i18n.messages("en"), i18n.messages("zh")
    assert all(en[k] == k for k in en)
    for k, v in zh.items():
        assert v.strip(), f"untranslated: {k!r}"
        assert sorted(FIELD.findall(k)) == sorted(FIELD.findall(v)), (k, v)


def test_a_string_in_one_language_only_fails(tmp_path, monkeypatch):
    (tmp_path / "zh" / "LC_MESSAGES").mkdir(parents=True)
    (tmp_path / "zh" / "LC_MESSAGES" / "attnviz.po").write_text(
        'msgid "Head"\nmsgstr "头"\n', encoding="utf-8")
    monkeypatch.setattr(i18n, "LOCALES", tmp_path)
    assert set(i18n.messages("zh")) != set(extract.marked())


def test_lookup_follows_the_language_and_records_missing():
    i18n.MISSING.clear()
    with i18n.use("zh"):
        assert i18n._("Head") == "头"
        assert i18n._("not a catalogue string") == "not a catalogue string"
    assert i18n._("Head") == "Head"
    assert ("zh", "not a catalogue string") in i18n.MISSING
    i18n.MISSING.clear()
    assert i18n.normalise("fr") == "en" and i18n.normalise(None) == "en"


def test_each_thread_keeps_its_own_language():
    """Two sessions at once (Streamlit runs each in a thread of one process): a teacher in
    Chinese and a student in English never see each other's language."""
    barrier, seen = threading.Barrier(2), {}

    def session(lang: str) -> None:
        i18n.set_language(lang)
        barrier.wait()  # both languages set before either looks up
        seen[lang] = [i18n._("Layer") for _ in range(200)]

    threads = [threading.Thread(target=session, args=(lang,)) for lang in ("zh", "en")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(seen["zh"]) == {"层"} and set(seen["en"]) == {"Layer"}
    assert i18n.language() == "en"  # this thread was never set


# ----------------------------------------------------------------- no untranslated literals
CONVERTED = ["pages/lesson.py", "pages/inside_score.py", "pages/compare.py",
             "pages/value_norms.py", "pages/similarity.py", "pages/corpus_heads.py",
             "pages/head_stats.py", "attnviz/ui/lesson.py",
             "attnviz/ui/lesson_steps.py", "attnviz/ui/sidebar.py", "attnviz/ui/model_picker.py",
             "attnviz/ui/router.py", "attnviz/ui/context.py",
             "pages/step_by_step.py", "pages/positions.py", "pages/windows.py",
             "attnviz/plotting/steps.py", "attnviz/plotting/positions.py",
             "attnviz/plotting/windows.py", "attnviz/analysis/walkthrough.py",
             "attnviz/analysis/positions.py", "attnviz/analysis/windows.py",
             "attnviz/analysis/cost.py", "attnviz/analysis/receptive.py", "pages/layer_heads.py",
             "pages/explore.py", "pages/images.py", "pages/families.py", "attnviz/ui/flow.py",
             *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "attnviz" / "views").glob("*.py"))]
SHOWN = {"title", "header", "subheader", "markdown", "caption", "info", "warning", "error",
         "success", "button", "toggle", "selectbox", "slider", "text_input", "text_area",
         "segmented_control", "popover", "progress", "download_button", "page_link",
         "checkbox", "radio", "number_input", "expander", "tabs", "metric", "write",
         "set_page_config", "download_arrays", "download_csv", "with_progress", "Page",
         "Markdown", "Heading"}  # a view's blocks (attnviz.export.html), shown as they are
TEXT_KEYWORDS = {"label", "help", "text", "placeholder", "page_title", "title", "body"}
ICON = re.compile(r":material/\w+:")


def words_in(node: ast.AST) -> list[str]:
    """English words a value shows without going through the catalogue: string constants
    (f-string parts, concatenations) outside any `_(...)` call; icons and format markup
    ('## ', ' · ', '/') carry no words."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_":
        return []
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("format", "join")):  # _("...").format(...), ", ".join(...)
        return words_in(node.func.value) + [w for a in node.args for w in words_in(a)]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return re.findall(r"[A-Za-z]{2,}", ICON.sub("", node.value))
    if isinstance(node, (ast.JoinedStr, ast.BinOp, ast.IfExp, ast.FormattedValue)):
        return [w for child in ast.iter_child_nodes(node) for w in words_in(child)
                if not isinstance(child, ast.expr_context)]
    return []


def untranslated(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "attr", getattr(node.func, "id", None))
        if name not in SHOWN:
            continue
        first = [] if name in ("page_link", "Page") else node.args[:1]  # theirs is a path
        values = first + [k.value for k in node.keywords if k.arg in TEXT_KEYWORDS]
        if name == "with_progress":
            values = node.args[2:3]
        for v in values:
            if words := words_in(v):
                out.append(f"{path.name}:{node.lineno}: {name}(... {' '.join(words)} ...)")
    return out


@pytest.mark.parametrize("path", CONVERTED)
def test_shown_strings_go_through_the_catalogue(path):
    assert untranslated(ROOT / path) == []


def test_the_check_finds_a_bare_literal(tmp_path):
    f = tmp_path / "p.py"
    f.write_text('import streamlit as st\nst.title("Hello")\nst.caption(f"{x} layers")\n'
                 'st.info(_("ok {n}").format(n=1))\nst.markdown(":material/help: " + _("x"))\n')
    assert [u.split(":")[1] for u in untranslated(f)] == ["2", "3"]


# ----------------------------------------------------------------- the Chinese examples
CJK_RANGE = re.compile(r"^[\u4e00-\u9fff]$")


def test_the_bundled_vocabulary_and_the_chinese_examples(model):
    """What the README and the lesson say about the bundled uncased English WordPiece
    vocabulary: 244 single CJK ideographs; the first two Chinese examples are read whole, the
    third, 我用锯锯木头, loses 用, 锯, 头 to [UNK]; each example repeats one character."""
    from attnviz.analysis import lesson

    vocab = model.tokenizer.get_vocab()
    assert sum(1 for w in vocab if CJK_RANGE.match(w)) == 244
    unk = model.tokenizer.unk_token

    def pieces(w: str) -> list[str]:
        return model.pieces_of(model.tokenized(w).ids)

    found = {t: lesson.unknown_words(lesson.lesson_words(t), pieces, unk)
             for t in lesson.ZH_SENTENCES}
    assert found == {"我上山，山上有花。": [], "我下山，山下有河。": [],
                     "我用锯锯木头。": ["用", "锯", "头"]}
    assert [lesson.repeated_word(lesson.lesson_words(t)) for t in lesson.ZH_SENTENCES] == [
        "上", "下", "锯"]
    tokens = model.trace(lesson.ZH_SENTENCES[0]).tokens
    assert tokens == ["[CLS]", "我", "上", "山", "，", "山", "上", "有", "花", "。", "[SEP]"]
    assert lesson.unknown_words(["a"], pieces, None) == []


def test_a_cached_figure_is_built_once_per_language():
    """Figure text is translated when the figure is built: the figure cache keeps one figure
    per language, so a Chinese session never draws an English session's cached figure."""
    import plotly.graph_objects as go

    from attnviz.ui.figures import cached_figure

    def build() -> go.Figure:
        return go.Figure(layout={"title": {"text": i18n._("Layer")}})

    key = ("test_a_cached_figure_is_built_once_per_language",)
    assert cached_figure(key, build).layout.title.text == "Layer"
    with i18n.use("zh"):
        assert cached_figure(key, build).layout.title.text == "层"
    assert cached_figure(key, build).layout.title.text == "Layer"
