"""AppTest of the converted pages in Chinese: no exception, no string missing from the
catalogue, Chinese text where English was; the lesson with its Chinese example sentences
(a character in two roles; [UNK] named when the model's vocabulary lacks a character)."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from attnviz import i18n
from attnviz.analysis import lesson as L
from tests.apptest import APP, open_page
from tests.lesson_trained import prefill_app_cache

N = len(L.STEPS)


@pytest.fixture(scope="module", autouse=True)
def taggers_trained_once():
    prefill_app_cache()


@pytest.fixture
def zh():
    """The test thread reads widgets as a Chinese session does: AppTest applies a selectbox's
    format_func (a translated label) in the test's own thread."""
    with i18n.use("zh"):
        yield


def texts(at) -> str:
    parts = [m.value for m in [*at.markdown, *at.caption, *at.info, *at.warning, *at.error]]
    parts += [h.value for h in [*at.title, *at.header]]
    return "\n".join(parts)


CJK = re.compile(r"[\u4e00-\u9fff]")
WORD = re.compile(r"[A-Za-z]{2,}")
# names that stay as they are in Chinese (the lecture keeps them): methods, special tokens
KEPT = {"rollout", "flow", "MDS", "CLS", "SEP", "softmax", "nats"}
TOKENS = {"saw", "dog"}  # the default sentences' words, typed text (never translated)


def figure_texts(fig: dict) -> list[str]:
    """The words a figure shows around its data: title, subplot titles (annotations), axis
    titles, colour bar and legend titles, the names of legend entries, the words of hovers,
    a table's header and first column (tokens, the data, are left out: ticks, cells)."""
    lay, out = fig.get("layout", {}), []

    def add(x) -> None:
        x = x.get("text") if isinstance(x, dict) else x
        if isinstance(x, str) and x:
            out.append(x)

    add(lay.get("title"))
    add(lay.get("legend", {}).get("title"))
    for note in lay.get("annotations", []):
        add(note)
    for name, value in lay.items():
        if name.startswith(("xaxis", "yaxis")):
            add(value.get("title"))
        if name.startswith("coloraxis"):
            add(value.get("colorbar", {}).get("title"))
    for tr in fig.get("data", []):
        add(tr.get("colorbar", {}).get("title"))
        if tr.get("showlegend") is not False and tr.get("type") in ("scatter", "bar"):
            add(tr.get("name"))
        hover = re.sub(r"%\{[^}]*\}|<extra>.*?</extra>", " ", tr.get("hovertemplate") or "")
        add(hover)
        if tr.get("type") == "table":
            out += [v for v in tr["header"]["values"] if isinstance(v, str)]
            out += [v for v in tr["cells"]["values"][0] if isinstance(v, str)]
    return out


def english_in(fig: dict, tokens: set[str] = frozenset()) -> list[str]:
    """The figure texts still in English: words outside KEPT and the sentence's tokens, in
    a text with no Chinese character."""
    return [t for t in figure_texts(fig) if not CJK.search(t)
            and set(WORD.findall(re.sub(r"<[^>]*>", " ", t))) - KEPT - set(tokens)]


def test_the_figure_check_finds_english():
    fig = {"layout": {"title": {"text": "层"}, "xaxis": {"title": {"text": "head"}},
                      "coloraxis": {"colorbar": {"title": {"text": "A - B"}}}},
           "data": [{"type": "heatmap", "hovertemplate": "第 %{y} 层<extra>weight</extra>"},
                    {"type": "scatter", "name": "saw", "hovertemplate": "query %{y}"}]}
    assert english_in(fig, {"saw"}) == ["head", "query  "]


def step(at, k: int):
    at.session_state["lesson_step"] = k + 1
    at.run()
    if L.STEPS[k].predict:
        at.button(key="lesson_next").click().run()
    assert not at.exception, [e.value for e in at.exception]


def test_lesson_in_chinese_every_step(zh):
    i18n.MISSING.clear()
    at = open_page("pages/lesson.py", timeout=600, lang="zh")
    assert at.title[0].value == "I saw a saw：自注意力为什么需要位置编码"
    assert at.text_area(key="text").label == "句子"
    for k in range(N):
        step(at, k)
        assert i18n._(L.STEPS[k].title) in texts(at) or k == 0
    assert at.button(key="lesson_back").label == "◀ 上一步"
    assert {m for m in i18n.MISSING if m[0] == "zh"} == set()


def test_lesson_in_english_stays_english():
    i18n.MISSING.clear()
    at = open_page("pages/lesson.py", timeout=600)
    assert at.title[0].value == "I saw a saw: why self-attention needs positions"
    step(at, L.step_index("bert"))
    assert "cosine" in texts(at)
    assert i18n.MISSING == set()


def test_a_chinese_sentence_with_every_character_known(zh):
    """我上山，山上有花。: 上 a verb, then a localiser. Every character is in the bundled
    vocabulary, so no [UNK] warning; the real-model steps follow the two 上."""
    at = open_page("pages/lesson.py", timeout=600, lang="zh",
                   lesson_sentence=L.ZH_SENTENCES[0])
    step(at, L.step_index("attention"))
    said = texts(at)
    assert "[UNK]" not in said
    assert "第二个 *上*（第 6 个 token）" in said  # [CLS] 我 上 山 ， 山 上: token 6
    step(at, L.step_index("bert"))
    assert "两个 *上* 向量最终的余弦" in texts(at)
    assert "这些标注器只从英文句子中学习" not in texts(at)  # bert needs no tagger
    step(at, L.step_index("per_word"))
    assert "这些标注器只从英文句子中学习" in texts(at)


def test_unknown_characters_are_named(zh):
    """我用锯锯木头。(the lecture's saw): the bundled uncased English WordPiece vocabulary has
    我, 木 but not 用, 锯, 头: they are named, and read as [UNK]."""
    at = open_page("pages/lesson.py", timeout=600, lang="zh",
                   lesson_sentence=L.ZH_SENTENCES[2])
    step(at, L.step_index("bert"))
    warning = "\n".join(w.value for w in at.warning)
    assert "用、锯、头" in warning and "\\[UNK\\]" in warning
    assert not at.exception


def url_session(lang: str) -> AppTest:
    """A first visit from a link with ?lang=..."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params["lang"] = lang
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_url_chooses_the_language(zh):
    at = url_session("zh")
    assert at.session_state["lang"] == "zh"
    assert at.text_area(key="text").label == "句子"


def test_an_unknown_language_is_english():
    at = url_session("fr")
    assert at.session_state["lang"] == "en"
    assert at.text_area(key="text").label == "Sentence"


@pytest.mark.parametrize("page, state, title, label", [
    ("pages/inside_score.py", {}, "拆开一个注意力分数", "层"),
    ("pages/compare.py", {}, "比较两个句子", "层"),
    ("pages/value_norms.py", {}, "注意力权重与值向量范数", "层"),
    ("pages/similarity.py", {"sim_steps": 8}, "两个句子为何相似？", "积分步数"),
    ("pages/corpus_heads.py", {}, "多个句子中的各个头", "层"),
    ("pages/head_stats.py", {}, "头的统计、rollout 与 flow", "层"),
    ("pages/head_stats.py", {"hs_tab": "Rollout 与 flow"}, "头的统计、rollout 与 flow",
     "截至第几层"),
])
def test_converted_pages_in_chinese(zh, page, state, title, label):
    """Each converted page in Chinese: no exception, no string missing from the catalogue, its
    title and its figures' titles as the page passes them."""
    i18n.MISSING.clear()
    at = open_page(page, lang="zh", **state)
    assert at.title[0].value == title
    assert {m for m in i18n.MISSING if m[0] == "zh"} == set()
    labels = [w.label for w in [*at.selectbox, *at.select_slider]]
    assert label in labels, labels


def test_the_switch_changes_the_language_of_this_session_only(zh):
    """Clicking 中文 in one session relabels its sidebar; another session stays English."""
    at = open_page(None)
    other = open_page(None)
    switch = at.get("button_group")[0]
    assert switch.key == "lang" and switch.options == ["English", "中文"]
    switch.set_value("zh").run()
    assert not at.exception
    assert at.text_area(key="text").label == "句子"
    other.run()
    assert other.text_area(key="text").label == "Sentence"
