"""Class mode on the lesson page: the teacher starts a class, every student's phone follows the
teacher's step, each student answers the question, and at the reveal the room's answers
appear beside the right one on every screen (attnviz.classroom keeps the class).

The join link carries only the class code (`?class=ABCD-EFGH`). The teacher's control secret
lives in the teacher's session (st.session_state); after a reload the same browser takes
control again with a token only it holds (the unmasked bytes of Streamlit's XSRF cookie,
`browser_token`), never with anything in the link or the QR code.

A student's page re-reads the class every POLL_S seconds in an st.fragment with
`run_every` (a read of the store that a process's students share, at most one every SHARED_S
seconds: shared_state; it draws nothing) and reruns the whole page when the teacher moved or
revealed (a student's page has no controls row, so that run draws less); the teacher's page
re-reads how many answered every COUNT_S seconds the same way, into a place the page keeps
for it in the class's line. Both fragments are the page's last call (`watch`). The browser
starts a fragment's timer when the page's run sends it, so the first check comes POLL_S
(COUNT_S) after the run ended; sent at the top of the page, it would come POLL_S after the
run began, at the very end of the run on a busy server. A request that reaches a session
just as its run ends starts a new run, and Streamlit then drops what the ended run had not
yet sent: its last elements (a phone would keep its choices after the reveal) and its end.
A student's answer is a radio of the page, not a fragment of its own: a tap reruns the page,
which sends the check last again, where a fragment's run could end just as the check asks
and lose its last elements the same way. A student may look back (Back, the step slider)
and return to the class with one tap (ui.lesson keeps the student at or before the class's
step).

A class's pages share their drawing: a step's parts come from ui.lesson_steps.parts and the
room's histogram from cached_figure, made once per server for every student on that step. A
student's page speaks the browser's language when the join link names none (phone_language),
and its question says that the teacher will reveal the answer (for_student).
"""

from __future__ import annotations

import functools
import io
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import streamlit as st

from attnviz import classroom, i18n
from attnviz.analysis import lesson
from attnviz.classroom import questions
from attnviz.classroom.store import ClassError, ClassState, NotTeacher, Teacher
from attnviz.i18n import N_, _, language
from attnviz.plotting.classroom import answers_histogram
from attnviz.settings import settings
from attnviz.views.blocks import Markdown

from . import lesson as nav
from .figures import cached_figure
from .language import LANG_KEY, use_session_language, want
from .render import render
from .sidebar import CLASS_PARAM

PARAM = CLASS_PARAM
TEACHER = "class_teacher"  # the Teacher (code, secret, next sequence number)
STUDENT = "class_student"  # this session's student id
DIALOG = "class_show_code"  # open the join dialog on this run
LOCALE_CHECKED = "class_locale_checked"  # a student's browser language was looked at
UNREAD = "class_unread"  # a student's last check of the class was refused
POLL_S = 1.0
SHARED_S = 0.25  # a worker reads a class at most once per SHARED_S s for its students
COUNT_S = 2.0
XSRF_COOKIE = "_streamlit_xsrf"
QR_PIXELS = 460  # the QR code's width on the teacher's screen (the dialog)


@functools.cache
def _store(redis_url: str, folder: str) -> classroom.ClassStore:
    return classroom.open_store()


def store() -> classroom.ClassStore:
    """The class store the settings name (one per process and setting)."""
    s = settings()
    return _store(s.redis_url, str(s.cache_path))


_reads: dict[tuple, tuple[float, ClassState | ClassError]] = {}
_reads_lock = threading.Lock()


def shared_state(code: str) -> ClassState:
    """The class as a student's page reads it (its check each POLL_S s, the page drawn after
    it): one read of the store per process and class every SHARED_S seconds, shared by the
    students this process serves (a class's refusal is shared the same way). A read replaces
    the kept one only when it began later, so what the students get never goes back; the
    teacher's move or reveal on this process replaces it at once (`_keep`)."""
    began = time.monotonic()
    with _reads_lock:
        kept = _reads.get((store(), code))
    if kept is None or began - kept[0] >= SHARED_S:
        try:
            got: ClassState | ClassError = store().state(code)
        except ClassError as e:
            got = e
        kept = _keep(code, got, began)
    if isinstance(kept[1], ClassError):
        raise kept[1]
    return kept[1]


def _keep(code: str, got: ClassState | ClassError,
          began: float) -> tuple[float, ClassState | ClassError]:
    """Keep `got`, read (or written) from `began` on, unless one that began later is kept;
    the one kept is returned."""
    key = (store(), code)
    with _reads_lock:
        kept = _reads.get(key)
        if kept is None or kept[0] <= began:
            if len(_reads) > 4096:  # classes long over
                _reads.clear()
            kept = _reads[key] = (began, got)
        return kept


def browser_token() -> str | None:
    """A token only this browser holds and keeps across reloads: the 16 random bytes of
    Streamlit's XSRF cookie, unmasked (the cookie is re-masked on each response; format
    `2|mask|masked|time`). None without the cookie (XSRF off, a client that keeps none)."""
    raw = st.context.cookies.get(XSRF_COOKIE)
    if not raw:
        return None
    try:
        version, mask_hex, masked_hex, _t = raw.strip("\"'").split("|")
        mask, masked = bytes.fromhex(mask_hex), bytes.fromhex(masked_hex)
    except ValueError:
        return None
    if version != "2" or not mask or not masked:
        return None
    return bytes(b ^ mask[i % len(mask)] for i, b in enumerate(masked)).hex()


def student_id(code: str) -> str:
    """This student's id in class `code`: derived from the browser's token (so a reload or
    a reconnection to another worker is the same student, with the same answers), else a
    random id for this session."""
    if STUDENT not in st.session_state:
        import hashlib
        import secrets

        token = browser_token()
        st.session_state[STUDENT] = (hashlib.sha256(f"{code}:{token}".encode()).hexdigest()[:32]
                                     if token else secrets.token_hex(16))
    return st.session_state[STUDENT]


@dataclass
class Class:
    """This session in a class: the code, the Teacher when it leads, else the student's
    id, the class as last read, and the place in the class's line that `watch` keeps up to
    date (the teacher's count of answers, a student's warning when the class cannot be read)."""

    code: str
    teacher: Teacher | None
    student: str | None
    state: ClassState
    slot: Any = field(default=None, compare=False)
    compact: bool = False  # the teacher's line is one line (presentation mode)

    @property
    def leads(self) -> bool:
        return self.teacher is not None


# ------------------------------------------------------------------ joining
def a_students_page() -> bool:
    """Whether this run draws a student's lesson: the link names a class this session does
    not lead. The browser that started the class takes control again here (`_reclaim`,
    once per session), so the router knows before it draws the sidebar (a student's has
    the language switch alone: router.students_lesson). A link that names no class, an
    ended one, or a store that cannot answer, is not a student's page (begin says why)."""
    code = classroom.parse_code(st.query_params.get(PARAM))
    if code is None:
        return False
    teacher = st.session_state.get(TEACHER)
    if teacher is not None and teacher.code == code:
        return False
    try:
        if _reclaim(code) is not None:
            return False
        shared_state(code)  # raises for no such class, an ended one, a store that cannot answer
    except ClassError:
        return False
    return True


def begin() -> Class | None:
    """The class this session is in (the link's `class`, or the one it started), with the
    student's step and reveals set for the page; None outside class mode. A refusal
    (unknown code, ended class, full class, store unreachable) is said in one sentence."""
    raw = st.query_params.get(PARAM)
    teacher = st.session_state.get(TEACHER)
    if raw is None and teacher is None:
        return None
    code = classroom.parse_code(raw) if raw is not None else teacher.code
    if code is None:
        st.warning(_(classroom.UnknownClass.message))
        return None
    if teacher is not None and teacher.code != code:
        teacher = None  # a link to another class: a student there
    try:
        if teacher is None:
            teacher = _reclaim(code)
        if raw is None:
            st.query_params[PARAM] = code  # a reload finds the class
        if teacher is not None:
            c = Class(code, teacher, None, store().state(code))
            _reveals(c)  # a reload shows what the class was shown
            return c
        phone_language()
        student = student_id(code)
        seated = f"class_seated_{code}"  # joined once per session; then read the class
        state = shared_state(code) if seated in st.session_state else store().join(code,
                                                                                    student)
        st.session_state[seated] = True
        c = Class(code, None, student, state)
    except ClassError as e:
        st.warning(_(e.message))
        return None
    follow(c)
    return c


def locale_language(locale: str | None, accept: str | None) -> str | None:
    """The app's language a browser asks for: its locale (`zh-CN`), else the first language
    of its Accept-Language header (`zh-CN,zh;q=0.9,en;q=0.8`, by weight) that the app
    speaks; None when neither names one."""
    asked: list[tuple[float, int, str]] = []
    if isinstance(locale, str) and locale.strip():
        asked.append((2.0, 0, locale))
    for k, item in enumerate((accept or "").split(",")[:32]):
        tag, _sep, params = item.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        if tag and 0 < q <= 1:
            asked.append((q, k + 1, tag))
    for _q, _k, tag in sorted(asked, key=lambda a: (-a[0], a[1])):
        code = tag.strip().lower().replace("_", "-").split("-")[0]
        if code in i18n.LANGUAGES:
            return code
    return None


def browser_languages() -> tuple[str | None, str | None]:
    """(the browser's locale, its Accept-Language header), either None when not sent."""
    return st.context.locale, st.context.headers.get("Accept-Language")


def phone_language() -> None:
    """A student's page in the language of the student's browser (st.context.locale, else its
    Accept-Language header) when the link names none (`?lang=` wins): looked at on the
    session's first class run, which then starts again in it (language.want; the page's
    heavy work comes after this)."""
    if st.session_state.get(LOCALE_CHECKED):
        return
    st.session_state[LOCALE_CHECKED] = True
    if LANG_KEY in st.query_params:
        return
    lang = locale_language(*browser_languages())
    if lang is not None and lang != language():
        want(lang)


def _reclaim(code: str) -> Teacher | None:
    """The Teacher again when this browser started the class (once per session)."""
    tried = f"class_reclaim_{code}"
    if st.session_state.get(tried):
        return None
    st.session_state[tried] = True
    token = browser_token()
    if not token:
        return None
    try:
        teacher = store().reclaim(code, token)
    except NotTeacher:
        return None
    st.session_state[TEACHER] = teacher
    return teacher


def follow(c: Class) -> None:
    """A student's page: the class's step when following, never past it; the class's
    reveals shown."""
    st.session_state[nav.CLASS_LIMIT] = c.state.step
    if st.session_state.get(nav.FOLLOW, True):
        st.session_state[nav.STEP_KEY] = c.state.step
        st.session_state[nav.FOLLOW] = True
    elif st.session_state.get(nav.STEP_KEY, 1) > c.state.step:
        st.session_state[nav.STEP_KEY] = c.state.step
    _reveals(c)


def _reveals(c: Class) -> None:
    for step in c.state.revealed:
        if 1 <= step <= nav.N:
            nav.reveal(lesson.STEPS[step - 1].key)


TEACHER_HINT = N_("*(Answer ▶ reveals it.)*")  # the step's question, on the teacher's page
STUDENT_HINT = N_("*(Your teacher will reveal the answer: choose yours below first.)*")


def for_student(parts: list) -> list:
    """A step's text as a student's page shows it: the question says that the teacher will
    reveal the answer, instead of the teacher's hint to press Answer ▶ (which a student's
    page does not have)."""
    hint, mine = _(TEACHER_HINT), _(STUDENT_HINT)
    return [replace(p, block=replace(p.block, text=p.block.text.replace(hint, mine)))
            if p.where == "question" and isinstance(p.block, Markdown) else p for p in parts]


def class_text(c: Class | None, text: str) -> str:
    """The sentence this session's lesson shows: the teacher's for a student."""
    return c.state.text if c is not None and not c.leads and c.state.text else text


# ------------------------------------------------------------------ the teacher
def _start(text: str) -> None:
    teacher = store().create(text, browser_token())
    st.session_state[TEACHER] = teacher
    st.session_state[DIALOG] = True
    st.query_params[PARAM] = teacher.code


def start_button(text: str, where=st) -> None:
    """The teacher's "Start a class" button (outside a class)."""
    where.button(_("Start a class"), icon=":material/groups:", key="class_start",
                 on_click=_start, args=(text,), width="stretch",
                 help=_("Students join with a code or a QR code on their phones and follow "
                        "your steps; each answers the questions, and the room's answers "
                        "appear at the reveal."))


def _control(c: Class, send: Callable[[Teacher], ClassState]) -> None:
    """Send one control message with the session's Teacher; the next one gets the next
    sequence number."""
    t = st.session_state.get(TEACHER, c.teacher)
    try:
        c.state = send(t)
    except ClassError as e:
        st.warning(_(e.message))
        return
    _keep(c.code, c.state, time.monotonic())  # this process's students see it at their check
    c.teacher = st.session_state[TEACHER] = Teacher(t.code, t.secret, t.seq + 1)


def lead_step(c: Class | None, step: int, text: str) -> None:
    """The teacher's page shows `step` of the lesson on `text`: the class is moved there
    (with its question's number of choices) when it shows another step or sentence."""
    if c is None or not c.leads or (c.state.step, c.state.text) == (step, text):
        return
    q = questions.question(step)
    _control(c, lambda t: store().set_step(t, step, len(q.choices) if q else 0, text))


def lead_reveal(c: Class | None, step: int, shown: bool,
                right: Callable[[], int | None]) -> None:
    """The teacher revealed `step`'s answer: the class's answers close and every screen shows
    them, beside `right()` (the step's right choice, measured when the question needs it)."""
    if c is None or not c.leads or not shown or step in c.state.revealed:
        return
    if not lesson.STEPS[step - 1].predict or c.state.step != step:
        return
    _control(c, lambda t: store().reveal(t, right()))


def join_url(code: str) -> str:
    """The join link: this page's address with the class code only."""
    base = st.context.url or ""
    return f"{base}?{PARAM}={code}"


def qr_png(text: str) -> bytes:
    """A QR code of `text` as PNG (segno; error correction M, a 4-module quiet zone)."""
    import segno

    buf = io.BytesIO()
    segno.make(text, error="m", micro=False).save(buf, kind="png", scale=12, border=4)
    return buf.getvalue()


def _join_dialog(code: str) -> None:
    st.markdown(_("Open this link on your phone, or scan the code:"))
    st.markdown(f"# {code}")  # letters, digits and a hyphen: no Markdown in it
    st.image(qr_png(join_url(code)), width=QR_PIXELS)
    st.code(join_url(code), language=None)


def show_code(code: str) -> None:
    """The join code and a QR code of the join link, large (a dialog over the page)."""
    st.dialog(_("Join the class"), width="large")(_join_dialog)(code)


def leave() -> None:
    for key in (TEACHER, nav.CLASS_LIMIT, nav.FOLLOW, STUDENT):
        st.session_state.pop(key, None)
    st.query_params.pop(PARAM, None)


def bar(c: Class, step: int, where=st, compact: bool = False) -> None:
    """The class's line above the step: the code and how many answered (teacher), or what
    the class shows and the way back to it (student). `compact` (presentation mode, at the
    top of the step's text column): one line without a frame, the code large on the button
    that shows the join dialog again; the teacher's other buttons are then in the page's
    settings (`tools`)."""
    box = where.container(key="class_bar", border=not compact)
    if c.leads:
        if st.session_state.pop(DIALOG, False):
            show_code(c.code)
        if compact:
            line = box.container(horizontal=True, vertical_alignment="center")
            _code_button(c, line, _("Class **{code}**").format(code=c.code), "tertiary")
            c.slot, c.compact = line.empty(), True  # the count of answers (watch)
            return
        line = box.container(horizontal=True, vertical_alignment="center")  # wraps when
        c.slot = line.empty()  # narrow; each button as wide as its label
        _code_button(c, line, _("Show the code"), "secondary")
        tools(c, line, width="content")
    else:
        c.slot = box.empty()
        _student_line(c, step, c.slot.container())


def _student_line(c: Class, step: int, where) -> None:
    """Where the class is: "you follow the teacher", or the student's step, the class's and
    the way back (one tap)."""
    if st.session_state.get(nav.FOLLOW, True):
        where.caption(_("Class **{code}**: you follow the teacher (step {n}).").format(
            code=c.code, n=c.state.step))
        return
    cols = where.columns([3, 2], vertical_alignment="center")
    cols[0].caption(_("You are on step {mine}; the class is on step {n}.").format(
        mine=step, n=c.state.step))
    cols[1].button(_("Return to the class"), icon=":material/groups:", key="class_return",
                   type="primary", width="stretch",
                   on_click=st.session_state.__setitem__, args=(nav.FOLLOW, True))


def watch(c: Class | None, step: int) -> None:
    """The page's last call in class mode (the module's docstring says why last): the
    teacher's count of answers, re-read every COUNT_S s into the class's line; a student's
    check of the class every POLL_S s, which reruns the page when the class moved."""
    if c is None:
        return
    if c.leads:
        if c.slot is not None:
            _counts(c.teacher, c.code, step, c.slot, named=not c.compact)
        return
    _watch(c.code, (c.state.step, c.state.shown, c.state.text), c.slot)


def _code_button(c: Class, where, label: str, kind: str) -> None:
    where.button(label, icon=":material/qr_code_2:", key="class_code", type=kind,
                 on_click=st.session_state.__setitem__, args=(DIALOG, True),
                 help=_("Show the code"), width="content")


def tools(c: Class, where, width: str = "stretch") -> None:
    """The teacher's download of the class's answers (CSV) and the end of class mode: in
    the class's line (one row, `width` "content") or in the page's settings."""
    where.download_button(
        _("Answers (CSV)"), data=store().csv(c.teacher, labels),
        file_name=f"attnviz_class_{c.code}.csv", mime="text/csv", key="class_csv",
        icon=":material/download:", on_click="ignore", width=width,
        help=_("The class's answers to every question so far: how many chose each "
               "choice, and the right one; never who."))
    where.button(_("End class mode"), key="class_leave", on_click=leave, width=width)


@st.fragment(run_every=COUNT_S)
def _counts(teacher: Teacher, code: str, step: int, slot, named: bool = True) -> None:
    """How many students answered the step shown, never who (re-read every COUNT_S s), in
    `slot` (the class's line); after the class's code when `named`."""
    use_session_language()
    try:
        answered, joined = store().counts(teacher, step)
    except ClassError as e:
        slot.warning(_(e.message))
        return
    q = questions.question(step)
    line = (_("{a} of {n} answered").format(a=answered, n=joined) if q else
            _("{n} students joined").format(n=joined))
    slot.markdown(_("Class **{code}**").format(code=code) + " · " + line if named else line)


@st.fragment(run_every=POLL_S)
def _watch(code: str, drawn: tuple[int, bool, str], slot) -> None:
    """A student's check of the class (it draws nothing): the page reruns when the class
    moved, revealed or changed its sentence (the class's line says where it is), and once
    the class can be read again after a refusal, which takes the line's place in `slot`."""
    use_session_language()
    try:
        s = shared_state(code)
    except ClassError as e:
        (slot or st).warning(_(e.message))
        st.session_state[UNREAD] = True
        return
    if (s.step, s.shown, s.text) != drawn or st.session_state.pop(UNREAD, False):
        st.rerun()


# ------------------------------------------------------------------ the question
def labels(step: int) -> list[str]:
    q = questions.question(step)
    return [_(x) for x in q.choices] if q else []


def question(c: Class | None, step: int, where, big: bool = False) -> None:
    """Under the step's question: the student's choices (until the reveal); at the reveal
    the room's answers beside the right one on every screen, the student's own marked
    (`big`, presentation mode: the chart alone says how many answered and which is right)."""
    q = questions.question(step)
    if c is None or q is None:
        return
    names = labels(step)
    if step in c.state.revealed:
        _room(c, step, names, where, big)
    elif c.leads:
        where.markdown("  \n".join(f"**{chr(65 + k)}.** {n}" for k, n in enumerate(names)))
    elif step == c.state.step:
        with where:
            _choose(c.code, c.student, step, names)
    else:
        where.caption(_("The class has not answered this question yet."))


def _room(c: Class, step: int, names: list[str], where, big: bool) -> None:
    try:
        counts = store().histogram(c.code, step)
        mine = None if c.leads else store().my_answer(c.code, c.student, step)
    except ClassError as e:
        where.warning(_(e.message))
        return
    right = c.state.revealed.get(step)
    right = right if right is not None and 0 <= right < len(names) else None
    fig = cached_figure(("class_histogram", tuple(names), tuple(counts), right, mine, big),
                        lambda: answers_histogram(names, counts, right, mine, big))
    render(fig, where=where, key="class_histogram", summary=False)
    said = []
    if not big:  # presenting, the chart's title counts the answers and marks the right one
        said.append(_("{n} answered.").format(n=sum(counts)))
        if right is not None:
            said.append(_("Right: **{label}**.").format(label=names[right]))
    if mine is not None:
        said.append(_("Your answer: **{label}**.").format(label=names[mine]))
    elif not c.leads:
        said.append(_("You did not answer."))
    if said:
        where.markdown(" ".join(said))


def _choose(code: str, student: str, step: int, names: list[str]) -> None:
    """The student's answer, changeable until the reveal. A tap reruns the page (a page's run
    sends the class's check last, `watch`; a fragment's run of its own could end just as the
    check asks for a rerun, and its last elements would be lost: ui.classroom's docstring)."""
    key = f"class_choice_{code}_{step}"
    if key not in st.session_state:
        try:
            st.session_state[key] = store().my_answer(code, student, step)
        except ClassError:
            st.session_state[key] = None
    st.radio(_("Your answer"), list(range(len(names))), key=key,
             format_func=lambda k: f"{chr(65 + k)}. {names[k]}", on_change=_send,
             args=(code, student, step, key))
    note = st.session_state.get(f"{key}_note")
    if note:
        st.warning(note)
    elif st.session_state.get(key) is not None:
        st.caption(_("Your answer is in. You may change it until the teacher reveals."))


def _send(code: str, student: str, step: int, key: str) -> None:
    choice = st.session_state.get(key)
    if choice is None:
        return
    try:
        store().answer(code, student, step, int(choice))
        st.session_state.pop(f"{key}_note", None)
    except ClassError as e:
        st.session_state[f"{key}_note"] = _(e.message)
