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
from tests.plotly_json import figures, figures_by_key

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
KEPT = {"rollout", "flow", "MDS", "CLS", "SEP", "softmax", "nats", "cos"}
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
    assert "第二个 *上*（上 \\#6）" in said  # [CLS] 我 上 山 ， 山 上: token 6 (# escaped)
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


def test_a_link_copied_after_the_switch_keeps_its_language(zh):
    """The switch, bound to the URL, writes its shown label there when clicked (`lang=%20中文`,
    `lang=English`): a link copied from the address bar then opens in that language."""
    at = url_session(" 中文")
    assert at.session_state["lang"] == "zh" and at.text_area(key="text").label == "句子"
    assert url_session("English").session_state["lang"] == "en"


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
    ("pages/head_stats.py", {}, "头的统计、注意力展开与注意力流", "层"),
    ("pages/head_stats.py", {"hs_tab": "注意力展开与注意力流"}, "头的统计、注意力展开与注意力流",
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


def test_the_switch_changes_the_language_of_this_session_only():
    """Clicking 中文 in one session relabels its sidebar; another session stays English. The
    test thread stays English: both sessions' widgets are English when AppTest reads them."""
    at = open_page(None)
    other = open_page(None)
    switch = at.get("button_group")[0]
    assert switch.key == "lang" and [o.strip() for o in switch.options] == ["English", "中文"]
    switch.set_value("zh").run()
    assert not at.exception
    assert at.text_area(key="text").label == "句子"
    other.run()
    assert other.text_area(key="text").label == "Sentence"


# ------------------------------------------- step by step, positions, windows in Chinese
CJK = re.compile(r"[\u4e00-\u9fff]")


def shown(at) -> str:
    """Every text the page shows, widget labels and figure titles included."""
    figs = figures_by_key(at)
    titles = [f["layout"].get("title", {}).get("text", "") for f in figs.values()]
    labels = [w.label for w in [*at.radio, *at.selectbox, *at.slider, *at.number_input,
                                *at.select_slider, *at.checkbox, *at.toggle]]
    return "\n".join([texts(at), *[s.value for s in at.subheader], *titles, *labels])


def no_missing_and_chinese(at, figure_titles: bool = True) -> dict:
    """No exception, no Chinese string missing from the catalogue, and the figures titled in
    Chinese (math-only titles such as 'I (4 × 3)' aside, at least one is); the figures."""
    assert not at.exception, [e.value for e in at.exception]
    assert {m for m in i18n.MISSING if m[0] == "zh"} == set()
    figs = figures_by_key(at)
    titles = [f["layout"].get("title", {}).get("text", "") or "" for f in figs.values()]
    if figure_titles:
        assert any(CJK.search(t) for t in titles), titles
    return figs


SBS_STEPS = range(1, 9)


@pytest.mark.parametrize("mode", ["toy", "real"])
def test_step_by_step_in_chinese_every_step(zh, mode):
    """Every step in both modes: Chinese labels, sentences and figure titles, no string missing
    (toy step 7 measures its 40 seeds too)."""
    i18n.MISSING.clear()
    at = open_page("pages/step_by_step.py", timeout=600, lang="zh", text="I saw a saw",
                   sbs_mode=mode)
    assert at.title[0].value == "自注意力逐步演示"
    assert at.radio(key="sbs_step").label == "步骤"
    for step in SBS_STEPS:
        at.session_state["sbs_step"] = step
        at.run()
        figs = no_missing_and_chinese(at, figure_titles=step > 2)  # 1, 2: math titles
        said = shown(at)
        assert f"第 {step} 步：" in said
    # step 8 is open: its two figures carry the translated titles
    assert figs["s8_S"]["layout"]["title"]["text"] == "同一组 q、k 上的两种相似度"
    at.session_state["sbs_step"] = 4
    at.run()
    said = shown(at)
    assert "T → 0 时" in said and "温度 T" in said
    assert "Temperature" not in said and "largest weight" not in said


def test_step_by_step_keys_radio_in_chinese(zh):
    """The rows radio shows 查询/键 while its values (the URL's) stay queries/keys."""
    i18n.MISSING.clear()
    at = open_page("pages/step_by_step.py", timeout=600, lang="zh", text="I saw a saw",
                   sbs_step=3, sbs_conv="keys")
    figs = no_missing_and_chinese(at)
    rows = at.radio(key="sbs_conv")
    assert rows.options == ["查询", "键"] and rows.value == "keys"
    assert "（行 = 键）" in figs["s3_S"]["layout"]["title"]["text"]


POS_TABS = ["1 · 打乱词序", "2 · I saw a saw", "3 · 位置编码本身", "4 · 比较各种选择",
            "5 · 旋转位置编码（RoPE）"]


@pytest.mark.parametrize("tab", POS_TABS)
def test_positions_in_chinese_every_tab(zh, tab):
    i18n.MISSING.clear()
    at = open_page("pages/positions.py", timeout=600, lang="zh", text="I saw a saw",
                   pos_tab=tab)
    figs = no_missing_and_chinese(at)
    assert at.title[0].value == "位置编码的作用"
    assert [t.label for t in at.tabs] == POS_TABS
    said = shown(at)
    assert "自注意力中没有位置信息" in said
    if tab == POS_TABS[0]:
        assert "**没有位置编码时**它们是相同的向量" in said
        bars = figs["pos_fig_equi"]
        assert [d["name"] for d in bars["data"] if d["type"] == "bar"] == [
            "无位置编码", "学到的位置编码（BERT）"]
    elif tab == POS_TABS[1]:
        assert "逐层看 saw #2 与 saw #4 的余弦相似度" in said
    elif tab == POS_TABS[3]:
        assert "各头平均：" in said and "Mean over heads" not in said
    elif tab == POS_TABS[4]:  # RoPE: the toys, and MiniLM's note that it has no rotary positions
        assert "**只有距离起作用**" in said and "没有旋转位置编码" in said
        assert {"pos_fig_rot", "pos_fig_grid", "pos_fig_rdist"} <= set(figs)
        assert not {k: e for k, f in figs.items() if (e := english_in(f, {"saw", "I", "a"}))}


WIN_TABS = ["掩码与注意力权重", "感受野", "需要多少上下文？", "长序列：代价",
            "今天的解码器：滑动窗口与注意力汇聚点"]


@pytest.mark.parametrize("tab", WIN_TABS)
def test_windows_in_chinese_every_tab(zh, tab):
    i18n.MISSING.clear()
    at = open_page("pages/windows.py", timeout=600, lang="zh", text="I saw a saw",
                   win_tab=tab, win_maxlen=1024, win_cost_w=16)
    figs = no_missing_and_chinese(at)
    assert at.title[0].value == "窗口与感受野"
    assert [t.label for t in at.tabs] == WIN_TABS
    said = shown(at)
    if tab == WIN_TABS[0]:
        titles = [a["text"] for a in figs["win_masks"]["layout"]["annotations"]]
        assert "掩码：全注意力" in titles and "注意力权重：窗口 ±1" in titles
        assert at.selectbox(key="win_layer").value == 0
    elif tab == WIN_TABS[1]:
        assert "深度 6 时：全注意力 覆盖 #0..#" in said and "At depth" not in said
        assert at.radio(key="win_rf_text").options == ["一段较长的文字", "侧边栏中的句子"]
    elif tab == WIN_TABS[2]:
        assert "它们充当“停靠处”，即*注意力汇聚点*（sink）" in said
    elif tab == WIN_TABS[3]:
        assert "测量设备：" in figs["win_cost"]["layout"]["title"]["text"]
        assert "线程" in figs["win_cost"]["layout"]["title"]["text"]
    else:  # sliding windows on MiniLM; the sink is measured on a decoder only
        assert "**滑动窗口**" in said and "最后 **131,040** 个 token" in said
        assert "注意力汇聚点要在解码器上测量" in said
        assert {"win_slide_masks", "win_reach"} <= set(figs)
        assert not {k: e for k, f in figs.items() if (e := english_in(f, {"saw", "I", "a"}))}


@pytest.mark.parametrize("page, state, title", [
    ("pages/step_by_step.py", {"sbs_step": 4}, "Self-attention step by step"),
    ("pages/positions.py", {}, "What positional encoding does"),
    ("pages/windows.py", {}, "Windows and receptive fields"),
])
def test_converted_pages_stay_english(page, state, title):
    """The English run of the newly converted pages: English titles and figures, no lookup
    missing (the catalogue keys are the English text)."""
    i18n.MISSING.clear()
    at = open_page(page, timeout=600, text="I saw a saw", **state)
    assert at.title[0].value == title
    assert not CJK.search(shown(at))
    assert i18n.MISSING == set()


def test_the_less_common_branches_in_chinese(zh):
    """Messages the default sentence never shows, in Chinese: the toy's cut sentence, a tie at
    low temperature, no repeated word, the same token twice, no pair to follow."""
    i18n.MISSING.clear()
    long = "one two three four five six seven eight nine ten"
    at = open_page("pages/step_by_step.py", timeout=600, lang="zh", text=long, sbs_step=1)
    assert "最后 2 个词被舍去" in "\n".join(w.value for w in at.warning)
    for key, value in dict(text="I saw a saw", sbs_step=4, sbs_seed=3, sbs_query=2).items():
        at.session_state[key] = value
    at.run()
    assert "T → 0 时 saw #2, saw #4 各得 0.5（并列）" in texts(at)
    no_missing_and_chinese(at)

    at = open_page("pages/positions.py", timeout=600, lang="zh", text="Dogs bark loudly",
                   pos_tab=POS_TABS[1])
    assert any("没有重复的词" in i.value for i in at.info)
    assert "本身不同" in texts(at)
    at.selectbox(key="pos_j").set_value("dogs #1").run()
    assert any("同一个 token" in i.value for i in at.info)
    no_missing_and_chinese(at)

    at = open_page("pages/windows.py", timeout=600, lang="zh", text="Dogs bark loudly",
                   win_tab=WIN_TABS[2])
    assert any("没有出现两次的 token" in i.value for i in at.info)
    no_missing_and_chinese(at)


# ------------------------------------------- heads, all heads, images, beyond BERT in Chinese
HEADS_TABS = ["Weights, all heads", "Scores, all heads", "One head, exact"]
IMAGE_TABS = ["Attention map vs conv window", "Convolution as attention"]
FAMILY_TABS = ["Decoder vs encoder", "Encoder-decoder: cross-attention",
               "Vision: [CLS] over the image"]
VIEWS = [  # page, tab key, tab (English), more state, title (English, Chinese)
    *[("pages/layer_heads.py", "lh_tab", tab, {}, "Heads of one layer", "一层中的各个头")
      for tab in HEADS_TABS],
    ("pages/explore.py", None, None, {}, "All heads, token lines", "所有头的 token 连线"),
    ("pages/explore.py", None, None,
     {"pair": "It cut the wood", "ex_seg": "A->B", "ex_hide": True, "ex_more": [1]},
     "All heads, token lines", "所有头的 token 连线"),
    *[("pages/images.py", "img_tab", tab, {"img_size": 16, "img_row": 5, "img_col": 7},
       "Images: attention vs convolution", "图像：注意力与卷积") for tab in IMAGE_TABS],
    *[("pages/families.py", "fam_tab", tab, {}, "Beyond BERT: decoders, encoder-decoders, "
       "images", "BERT 之外：解码器、编码器-解码器与图像") for tab in FAMILY_TABS],
]


def figure_titles(at) -> list[str]:
    """Each chart's title, else its subplot titles (a row of images has only those)."""
    out = []
    for fig in figures(at):
        layout = fig["layout"]
        title = (layout.get("title") or {}).get("text") or " ".join(
            a.get("text", "") for a in layout.get("annotations", []))
        out.append(title)
    return out


def open_view(page, tab_key, tab, state, lang):
    tabs = {tab_key: i18n._(tab)} if tab_key else {}
    return open_page(page, lang=lang, **state, **tabs)


@pytest.mark.parametrize("page, tab_key, tab, state, title_en, title_zh", VIEWS)
def test_heads_images_and_families_pages_in_chinese(zh, page, tab_key, tab, state, title_en,
                                                    title_zh):
    """Every tab of the four pages in Chinese: no exception, no string missing, the title,
    text and every figure's title in Chinese (tokens typed by the user stay as typed)."""
    i18n.MISSING.clear()
    at = open_view(page, tab_key, tab, state, "zh")
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert {m for m in i18n.MISSING if m[0] == "zh"} == set()
    assert at.title[0].value == title_zh
    said = texts(at)
    assert CJK.search(said) and "Download" not in said
    titles = figure_titles(at)
    assert titles and all(CJK.search(t) for t in titles), titles
    if tab_key:
        assert [t.label for t in at.tabs if t.label == i18n._(tab)]
    if page == "pages/families.py" and tab != FAMILY_TABS[2]:  # the engine's notes too
        notes = [c.value for c in at.caption if c.value.startswith(":material/info:")]
        assert notes and all(CJK.search(n) for n in notes), notes


@pytest.mark.parametrize("page, tab_key, tab, state, title_en, title_zh",
                         [VIEWS[2], VIEWS[4], VIEWS[6], VIEWS[9]])
def test_the_same_pages_in_english_stay_english(page, tab_key, tab, state, title_en, title_zh):
    i18n.MISSING.clear()
    at = open_view(page, tab_key, tab, state, "en")
    assert not at.exception
    assert i18n.MISSING == set()
    assert at.title[0].value == title_en
    assert not CJK.search(" ".join(figure_titles(at)))


def test_the_pair_shares_caption_names_the_filters_in_chinese(zh):
    at = open_view(*VIEWS[4][:4], "zh")
    shares = [c.value for c in at.caption if c.value.startswith("此头注意力权重的占比")]
    assert shares and "A 内部" in shares[0] and "跨句" in shares[0]
    assert at.radio(key="ex_seg").options == ["全部", "A 内部", "B 内部", "A->B", "B->A", "跨句"]


def legend_names(at) -> list[str]:
    return [d.get("name", "") for fig in figures(at)
            for d in fig["data"] if d.get("type") == "scatter"]


def test_the_later_weight_legend_names_the_models_in_the_language(zh):
    """The bundled model and the random demo are named in the session's language."""
    at = open_view(*VIEWS[7][:4], "zh")
    assert {"BERT：all-MiniLM-L6-v2（内置）", "GPT-2：随机权重的演示模型"} <= set(legend_names(at))
    with i18n.use("en"):
        at = open_view(*VIEWS[7][:4], "en")
        assert {"BERT: all-MiniLM-L6-v2 (bundled)", "GPT-2: random demo weights"} <= set(
            legend_names(at))


FORMULAS = {"log10 I/max"}  # a colour bar's formula, the same in both languages


@pytest.mark.parametrize("page", [p[0] for p in __import__(
    "attnviz.ui.router", fromlist=["PAGES"]).PAGES])
def test_every_pages_figures_in_chinese(zh, page):
    """Every page as it opens, in Chinese: no figure title, axis, colour bar, legend or hover
    word left in English (tokens of the sentence, method names and formulas aside)."""
    at = open_page(page, timeout=600, lang="zh")
    figs = figures_by_key(at)
    assert figs or page in ("pages/inside_score.py",), "the page draws figures"
    left = {key: [t for t in english_in(fig, {"saw", "I", "a"}) if t not in FORMULAS]
            for key, fig in figs.items()}
    assert not {k: v for k, v in left.items() if v}
