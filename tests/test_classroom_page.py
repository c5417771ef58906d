"""Class mode on the lesson page (AppTest sessions, no browser; tests/e2e/test_e2e_class.py
runs it in Chromium on `make serve WORKERS=2`), and its parts without Streamlit: the
questions' choices, the measured right choice against transformers' BertModel (eager) as an
independent reference, the histogram figure.

A teacher's session starts a class, a student's session opens the join link, the teacher
moves to the attention step (its question's right choice is measured) and the student
follows, answers and sees the room's answers beside the right one at the reveal."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz import i18n
from attnviz.analysis import lesson
from attnviz.classroom import questions
from attnviz.classroom.store import ClassStore, Teacher
from attnviz.plotting.classroom import RIGHT, answers_histogram
from attnviz.settings import override
from attnviz.ui import classroom as ui_class
from attnviz.ui import language
from attnviz.ui import lesson as nav
from tests.apptest import open_page

ATTENTION = lesson.step_index("attention") + 1


# ------------------------------------------------------------------ without Streamlit
def test_every_question_belongs_to_a_step_that_asks_one():
    keys = [s.key for s in lesson.STEPS]
    for key, q in questions.QUESTIONS.items():
        step = lesson.STEPS[keys.index(key)]
        assert step.predict and 2 <= len(q.choices) <= 8
        assert q.right is None or 0 <= q.right < len(q.choices)
        assert questions.question(keys.index(key) + 1) is q
    assert questions.question(1) is None and questions.question(0) is None
    assert questions.question(len(keys) + 1) is None


def test_the_sink_choice_is_where_the_largest_weight_lies():
    tokens = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    assert questions.sink_choice(np.array([0.5, 0.1, 0.1, 0.1, 0.1, 0.1]), tokens) == 1
    assert questions.sink_choice(np.array([0.1, 0.1, 0.5, 0.1, 0.1, 0.1]), tokens) == 0
    assert questions.sink_choice(np.array([0.1, 0.1, 0.1, 0.1, 0.1, 0.5]), tokens) == 1


def test_the_cosine_choice_edges():
    assert [questions.cosine_choice(c) for c in (0.95, 0.9, 0.658, 0.5, 0.49, -1.0)] == [
        0, 1, 1, 1, 2, 2]


def test_the_measured_right_choices_match_transformers(hf_model, cpu_model):
    """The attention step's right choice for every head and the real model's step's, from
    the engine's trace, equal those computed from BertModel (eager) in this test."""
    text = "I saw a saw"
    trace = cpu_model.trace(text)
    enc = cpu_model.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = hf_model(**enc, output_attentions=True, output_hidden_states=True)
    tokens = cpu_model.tokenizer.convert_ids_to_tokens(list(enc["input_ids"][0]))
    assert list(trace.tokens) == tokens
    second = lesson.token_positions(tokens, "saw")[1]
    for layer, att in enumerate(out.attentions):
        for head in range(att.shape[1]):
            row = att[0, head, second].numpy()
            ref = int(tokens[int(row.argmax())] in ("[CLS]", "[SEP]"))
            assert questions.sink_choice(trace.weights[layer, head, second], trace.tokens) \
                == ref, (layer, head)
    a, b = lesson.token_positions(tokens, "saw")[:2]
    last = out.hidden_states[-1][0]
    cos = float(torch.nn.functional.cosine_similarity(last[a], last[b], dim=0))
    assert questions.cosine_choice(cos) == questions.cosine_choice(
        float(lesson.cosine_per_layer(trace.hidden_states, a, b)[-1]))


def test_the_histogram_shows_the_counts_the_right_one_and_mine():
    fig = answers_histogram(["Yes", "No <b>", "Maybe"], [3, 5, 0], right=1, mine=0)
    bar = fig.data[0]
    assert list(bar.x) == [3, 5, 0]
    assert list(bar.marker.color)[1] == RIGHT and list(bar.marker.color)[0] != RIGHT
    assert list(bar.marker.line.width) == [4, 0, 0]
    ticks = list(fig.layout.yaxis.ticktext)
    assert ticks[1].startswith("✓") and "&lt;b&gt;" in ticks[1] and "(your answer)" in ticks[0]
    assert "8" in fig.layout.title.text
    # a short bar's count is written after it, inside the axis: the axis reaches past 5
    assert fig.layout.xaxis.range[1] == 5 * 1.5 and bar.cliponaxis is False
    assert list(answers_histogram(["a", "b"], [0, 0], None).layout.xaxis.range) == [0, 1.5]
    # presenting: every text at 18 px, each count after its bar at full size (a count
    # written inside a bar is shrunk to the bar's width), no axis under the bars, 34 px a bar
    big = answers_histogram(["Yes", "No <b>", "Maybe"], [3, 5, 0], right=1, big=True)
    assert (big.data[0].textposition, big.data[0].constraintext) == ("outside", "none")
    assert big.data[0].textfont.size == big.layout.yaxis.tickfont.size == 18
    assert big.layout.title.font.size > 18 and big.layout.xaxis.visible is False
    assert big.layout.height == 36 + 34 * 3 and list(big.data[0].x) == [3, 5, 0]
    with pytest.raises(ValueError):
        answers_histogram(["a"], [1, 2], None)


# ------------------------------------------------------------------ the page
@pytest.fixture
def class_store(tmp_path):
    with override(cache_dir=str(tmp_path)):
        ui_class._store.cache_clear()
        yield ui_class.store()
    ui_class._store.cache_clear()


def click(at, key: str):
    at.button(key=key).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_teacher_leads_and_a_student_follows(class_store: ClassStore, cpu_model):
    teacher = open_page("pages/lesson.py")
    click(teacher, "class_start")
    code = teacher.query_params["class"][0] if isinstance(
        teacher.query_params["class"], list) else teacher.query_params["class"]
    t: Teacher = teacher.session_state[ui_class.TEACHER]
    assert t.code == code and t.secret not in code
    assert class_store.state(code).step == 1

    student = open_page("pages/lesson.py", run=False)
    student.query_params["class"] = code
    student.run()
    assert not student.exception
    assert student.session_state[nav.CLASS_LIMIT] == 1
    assert not [b for b in student.button if b.key == "class_start"]  # no "Start a class"
    # no controls row: the class's sentence, the default training settings, no switch
    assert not [w for w in (*student.selectbox, *student.toggle, *student.button_group)
                if w.key in ("lesson_sentence", "lesson_present", "lesson_seed",
                             "lesson_epochs")]
    assert {"lesson_seed", "lesson_epochs"} <= {b.key for b in teacher.button_group}

    teacher.session_state[nav.STEP_KEY] = ATTENTION
    teacher.run()
    s = class_store.state(code)
    assert (s.step, s.choices, s.shown) == (ATTENTION, 2, False)

    student.run()  # the watch fragment's rerun, as the browser's timer asks
    assert student.session_state[nav.STEP_KEY] == ATTENTION
    radios = [r for r in student.radio if r.key and r.key.startswith("class_choice_")]
    assert len(radios) == 1 and radios[0].options == ["A. On a word of the sentence",
                                                      "B. On [CLS] or [SEP]"]
    radios[0].set_value(1).run()
    assert class_store.counts(teacher.session_state[ui_class.TEACHER]) == (1, 1)
    assert student.button(key="lesson_next").disabled  # no further than the class
    assert not [b for b in student.button if b.label == "Answer ▶"]  # cannot reveal

    click(teacher, "lesson_next")  # "Answer ▶": the reveal, its right choice measured
    s = class_store.state(code)
    tr = cpu_model.trace("I saw a saw")
    row = tr.weights[0, 0, lesson.token_positions(list(tr.tokens), "saw")[1]]  # layer 0, head 0
    assert s.shown and s.right == questions.sink_choice(row, tr.tokens)
    assert class_store.histogram(code, ATTENTION) == [0, 1]
    student.run()
    text = " ".join(m.value for m in student.markdown)
    assert "1 answered." in text and "Your answer: **On [CLS] or [SEP]**." in text

    # the student looks at a layer and head of their own, in the class still
    student.selectbox(key="lesson_layer").set_value(2).run()
    student.selectbox(key="lesson_head").set_value(5).run()
    assert not student.exception
    assert student.session_state[nav.FOLLOW] is True
    assert student.session_state[nav.STEP_KEY] == ATTENTION == class_store.state(code).step
    assert (teacher.session_state["lesson_layer"], teacher.session_state["lesson_head"]) == (0, 0)
    assert " ".join(m.value for m in student.markdown).count("1 answered.") == 1
    from tests.plotly_json import decode, figures_by_key

    np.testing.assert_allclose(  # that head's weights, from the engine's own trace
        decode(figures_by_key(student)["lesson_fig_weights"]["data"][0]["z"]),
        tr.weights[2, 5], atol=1e-7)

    # presenting, the class's line is one line: the code on the button that shows the join
    # dialog, how many answered; the CSV and the end of class mode in the settings; the chart
    # alone says how many answered and which is right
    teacher.toggle(key="lesson_present").set_value(True).run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    assert teacher.button(key="class_code").label == f"Class **{code}**"
    assert teacher.button(key="class_leave").label == "End class mode"
    said = [m.value for m in teacher.markdown]
    assert "1 of 1 answered" in said and not [m for m in said if "1 answered." in m]
    # and the room's answers take the notes' place: the head's claim and the layer and head
    # it is about lie in the step's fold under the columns (closed), the text column keeps
    # the step's text, the question with the room's answers and the answer
    fold = [e for e in teacher.expander if e.label.startswith(f"More on step {ATTENTION}:")]
    assert len(fold) == 1 and not fold[0].proto.expanded
    assert {b.key for b in fold[0].selectbox} == {"lesson_layer", "lesson_head"}
    claims = [[m for m in where.markdown if "puts its largest weight" in m.value]
              for where in (teacher, fold[0])]
    assert len(claims[0]) == len(claims[1]) == 1

    # a student looks back, then returns with one tap
    click(student, "lesson_back")
    assert student.session_state[nav.STEP_KEY] == ATTENTION - 1
    assert student.session_state[nav.FOLLOW] is False


def test_a_process_reads_a_class_once_for_its_students(class_store, monkeypatch):
    """A student's check reads the store at most once per SHARED_S s per process (the read
    shared), a read that began earlier never replaces a later one, the teacher's move on this
    process is seen at once, and a refusal is shared as a refusal."""
    clock = [100.0]
    monkeypatch.setattr(ui_class.time, "monotonic", lambda: clock[0])
    real = class_store.state
    teacher = class_store.create("I saw a saw")
    code = teacher.code
    reads = []
    monkeypatch.setattr(class_store, "state", lambda c: reads.append(c) or real(c))

    def shared(c: str) -> tuple[int, int]:  # (the step read, the store's reads it took)
        n = len(reads)
        return ui_class.shared_state(c).step, len(reads) - n

    assert shared(code) == (1, 1)
    class_store.set_step(teacher, 2, 0, "I saw a saw")
    clock[0] += ui_class.SHARED_S / 2
    assert shared(code) == (1, 0)  # the shared read
    clock[0] += ui_class.SHARED_S / 2
    assert shared(code) == (2, 1)  # read again
    old = real(code)
    state = class_store.set_step(Teacher(code, teacher.secret, teacher.seq + 1), 3, 0, "x")
    ui_class._keep(code, state, clock[0])  # what the teacher's page does after a move
    assert shared(code) == (3, 0)
    ui_class._keep(code, old, clock[0] - 0.1)  # a read that began before: not kept
    assert shared(code) == (3, 0)
    clock[0] += ui_class.SHARED_S
    for took in (1, 0):
        n = len(reads)
        with pytest.raises(ui_class.classroom.UnknownClass):
            ui_class.shared_state("ZZZZ-ZZZZ")
        assert len(reads) - n == took


def test_an_unknown_class_code_is_said_in_a_sentence(class_store):
    at = open_page("pages/lesson.py", run=False)
    at.query_params["class"] = "ZZZZ-ZZZZ"
    at.run()
    assert not at.exception
    assert any("No class has this code" in w.value for w in at.warning)
    at = open_page("pages/lesson.py", run=False)
    at.query_params["class"] = "<script>"
    at.run()
    assert not at.exception and any("No class has this code" in w.value for w in at.warning)


def test_the_browsers_language_is_read_from_its_locale_or_accept_language():
    assert ui_class.locale_language("zh-CN", None) == "zh"
    assert ui_class.locale_language(None, "zh-CN,zh;q=0.9,en;q=0.8") == "zh"
    assert ui_class.locale_language(None, "fr-FR,en;q=0.5,zh;q=0.7") == "zh"  # by weight
    assert ui_class.locale_language(None, "de, en-GB;q=0.8") == "en"
    assert ui_class.locale_language("en-US", "zh-CN") == "en"  # the locale first
    assert ui_class.locale_language("fr", "zh;q=0, de") is None  # q=0: not wanted
    assert ui_class.locale_language(None, "zh_TW;q=bad, <b>;q=2") is None
    assert ui_class.locale_language(None, None) is None and ui_class.locale_language("", "") \
        is None


def _student(code: str, state: dict | None = None, **query):
    at = open_page("pages/lesson.py", run=False, **(state or {}))
    at.query_params["class"] = code
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _started(cpu_model):
    teacher = open_page("pages/lesson.py")
    click(teacher, "class_start")
    return teacher, teacher.session_state[ui_class.TEACHER].code


def test_a_students_page_speaks_the_phones_language(class_store, cpu_model, monkeypatch):
    """A Chinese phone opening the join link (no `lang` in it) gets the lesson in Chinese from
    its first page load: the class's first run asks for the phone's language and the page
    starts again in it, the switch set before it is drawn (Chromium sees `lang` written to the
    URL: tests/e2e/test_e2e_class.py); a link's `?lang=en` wins over the phone; an English
    phone needs no switch."""
    teacher, code = _started(cpu_model)
    monkeypatch.setattr(ui_class, "browser_languages", lambda: (None, "zh-CN,zh;q=0.9,en;q=0.8"))
    zh = _student(code)
    assert zh.session_state["lang"] == "zh" and language.WANTED not in zh.session_state
    assert zh.session_state[nav.CLASS_LIMIT] == 1  # in the class
    with i18n.use("zh"):
        assert [b.label for b in zh.button if b.key == "lesson_back"] == [i18n._("◀ Back")]
        assert i18n._("◀ Back") != "◀ Back"
    assert class_store.counts(teacher.session_state[ui_class.TEACHER]) == (0, 1)
    assert zh.session_state[ui_class.LOCALE_CHECKED]  # asked once per session

    en = _student(code, lang="en")  # the link says
    assert language.WANTED not in en.session_state and en.session_state["lang"] == "en"
    monkeypatch.setattr(ui_class, "browser_languages", lambda: ("en-US", "en-US,en;q=0.9"))
    plain = _student(code)
    assert plain.session_state["lang"] == "en"


def test_a_student_is_told_the_teacher_reveals_the_answer(class_store, cpu_model):
    """The question's hint to press Answer ▶ is the teacher's: a student's page says the
    teacher will reveal the answer instead (English and Chinese)."""
    teacher, code = _started(cpu_model)
    teacher.session_state[nav.STEP_KEY] = ATTENTION
    teacher.run()
    from attnviz import i18n

    for lang in ("en", "zh"):
        with i18n.use(lang):  # AppTest reads a session's widgets in the test's thread
            student = _student(code, {"lang": lang})
            hint, mine = i18n._(ui_class.TEACHER_HINT), i18n._(ui_class.STUDENT_HINT)
        assert student.session_state["lang"] == lang and hint != mine
        said = " ".join(m.value for m in student.markdown)
        assert mine in said and hint not in said, (lang, said[:600])
    said = " ".join(m.value for m in teacher.markdown)
    assert "(Answer ▶ reveals it.)" in said and ui_class.STUDENT_HINT not in said


def test_a_students_sidebar_holds_the_language_and_the_model_line(class_store, cpu_model):
    """A student's lesson reads the teacher's sentence on the bundled model, so from its
    first run (the join) its sidebar has no sentence or model boxes, only the language
    switch, a line that says why, and the model's line; the language still switches. The
    teacher's sidebar keeps every box, and a student who leaves the class (a link without
    it) gets them back; a link with a code no class has is not a student's page."""
    teacher, code = _started(cpu_model)
    student = _student(code)

    def boxes(at) -> set[str]:
        return {w.key for w in (*at.sidebar.text_area, *at.sidebar.text_input,
                                *at.sidebar.selectbox)}

    assert boxes(student) == set()
    said = [c.value for c in student.sidebar.caption]
    assert said[0] == "In a class, the lesson shows the teacher's sentence."
    assert said[1].startswith(f"{cpu_model.name}: ") or "layers x" in said[1]
    assert {"text", "pair", "model"} <= boxes(teacher)
    [switch] = student.sidebar.button_group
    switch.set_value("zh").run()
    assert not student.exception and student.session_state["lang"] == "zh"
    from attnviz import i18n

    with i18n.use("zh"):
        assert student.sidebar.caption[0].value == i18n._(
            "In a class, the lesson shows the teacher's sentence.") != said[0]
    assert boxes(student) == set()  # still in the class

    del student.query_params["class"]  # the lesson without the class's link
    student.run()
    assert {"text", "pair", "model"} <= boxes(student)
    unknown = _student("ZZZZ-ZZZZ")
    assert {"text", "pair", "model"} <= boxes(unknown)


def _choice_page(code: str, student: str) -> None:
    from attnviz.ui import classroom

    classroom._choose(code, student, 2, ["A", "B"])


def test_a_choice_is_the_pages_own_and_a_tap_after_the_reveal_is_refused(class_store):
    """The student's choice is a radio of the page, not a fragment of its own (a tap reruns
    the page, whose run sends the class's check last: ui.classroom's docstring): a tap's
    answer is kept and said; one after the reveal is refused in words, the answer given
    before kept."""
    from streamlit.testing.v1 import AppTest

    from attnviz.classroom.store import NotNow

    teacher = class_store.create("I saw a saw")
    class_store.set_step(teacher, 2, 2, "I saw a saw")
    class_store.join(teacher.code, "s1")
    at = AppTest.from_function(_choice_page, args=(teacher.code, "s1")).run()
    assert not at.exception and len(at.radio) == 1 and at.radio[0].value is None
    at.radio[0].set_value(1).run()
    assert class_store.my_answer(teacher.code, "s1", 2) == 1
    assert [c.value for c in at.caption] == [
        "Your answer is in. You may change it until the teacher reveals."]
    class_store.reveal(Teacher(teacher.code, teacher.secret, teacher.seq + 1), 0)
    at.radio[0].set_value(0).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [w.value for w in at.warning] == [NotNow.message]
    assert class_store.my_answer(teacher.code, "s1", 2) == 1
