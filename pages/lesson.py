"""The lesson: "I saw a saw" (the lecture's own example), from a per-word classifier through
windows of growing width to attention with positions.

Numbers: analysis.taggers (seven taggers trained once per settings, their held-out scores,
parameters and the overfitting sweep, through ui.lesson), analysis.corpus (the deciding-word
distances), analysis.lesson (the steps and the sentences that state the measured claims) and
cached Traces of the sentence with and without positions; what each step shows:
views.lesson, drawn by ui.lesson_steps."""

import streamlit as st

from attnviz import ui
from attnviz.analysis import lesson, taggers
from attnviz.i18n import N_, _
from attnviz.ui import classroom
from attnviz.ui import lesson as nav
from attnviz.ui import lesson_steps as steps
from attnviz.ui.render import render
from attnviz.views import lesson as view

SIDEBAR = "(the sidebar's sentence)"  # the option's value (in URLs); shown translated
SIDEBAR_LABEL = N_("(the sidebar's sentence)")


def controls(ctx: ui.Context, present: bool,
             room: classroom.Class | None) -> tuple[str, taggers.Settings, bool]:
    """Sentence, training settings, the presentation switch and, outside a class, "Start a
    class" (in a popover when presenting; a class's answers (CSV) and its end there too, the
    class's line being one line then). A student's page in a class has none of them: it
    shows the class's sentence with the default training settings, and each widget fewer
    is less to draw again on every student's phone at each of the teacher's steps."""
    if st.session_state.get("lesson_seen_text", ctx.text) != ctx.text:
        st.session_state["lesson_sentence"] = SIDEBAR  # typing in the sidebar brings it here
    st.session_state["lesson_seen_text"] = ctx.text
    if present:
        box = st.popover(_("Settings"), icon=":material/tune:", width="stretch")
        cols = (box, box, box, box)
    else:
        cols = st.columns([4.5, 3.5, 4.5, 3.5][:4 if room is None else 3],
                          vertical_alignment="bottom")  # each label whole at 1280 px
    choice = cols[0].selectbox(
        _("Lesson sentence"), [SIDEBAR, *lesson.SENTENCES, *lesson.ZH_SENTENCES],
        key="lesson_sentence", bind="query-params",
        format_func=lambda o: _(SIDEBAR_LABEL) if o == SIDEBAR else o)
    with cols[1] if present else cols[1].popover(_("Training settings"),
                                                 icon=":material/tune:"):
        settings = nav.settings_widgets()
    big = cols[2].toggle(_("Presentation mode"), key="lesson_present", bind="query-params",
                         help=_("Large type, one screen per step, sidebar closed. Right, "
                                "PageDown or Space: forward; Left or PageUp: back."))
    text = ctx.text if choice == SIDEBAR else choice
    if room is None:
        classroom.start_button(text, cols[3])
    elif present:
        classroom.tools(room, box)
    return text, settings, big


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    ctx = ui.context()
    if ctx.model is None:
        render(view.no_model(ctx.error))
        return
    present = bool(st.session_state.get("lesson_present",
                                        st.query_params.get("lesson_present") == "true"))
    nav.presentation(present)
    room = classroom.begin()  # class mode: a student's step follows the teacher's
    step = nav.current_step()
    s = lesson.STEPS[step - 1]
    if not present:
        render(view.title())
    top = st.columns([8, 2, 2, 2] if present else [6, 1, 1], vertical_alignment="center")
    with top[0].container(key="lesson_top"):
        if present:
            render(view.step_banner(step, nav.N, _(s.title)))
        else:
            st.progress(step / nav.N, text=_("Step {step} of {n}: {title}").format(
                step=step, n=nav.N, title=_(s.title)))
    nav.nav_buttons(step, present, top[1:3])
    if room is not None and not room.leads:  # a student: the class's sentence (below), the
        text, settings, big = ctx.text, taggers.Settings(), present  # default training
    else:
        with top[3] if present else st.container():
            text, settings, big = controls(ctx, present, room)
    text = classroom.class_text(room, text)
    classroom.lead_step(room, step, text)  # the teacher's step and sentence, to the class
    if big != present:
        st.rerun()  # the URL asked for the other mode: lay the page out again
    nav.retrain_if_asked(settings)
    ws, notes = view.sentence_notes(text)
    if room is not None and not (present and ws):  # presenting a step: in its text column
        classroom.bar(room, step)
    if not present:
        nav.step_slider()
    render(notes)
    if ws:
        show_step(ctx, s, settings, ws, present, room)
    classroom.watch(room, step)  # last: the class's checks begin once this run has ended


def show_step(ctx: ui.Context, s: lesson.Step, settings: taggers.Settings, ws: list[str],
              big: bool, room: classroom.Class | None) -> None:
    """The step: text and figures side by side when presenting, one under the other else;
    in a class, the room's answers under the question (and, presenting, the class's line at
    the top of the text column, the step's notes folded below the columns)."""
    v = steps.step_of(ctx, s, settings, ws, big)
    body, main = st.columns([5, 6], gap="medium") if big else (st.container(),) * 2
    body, main = body.container(key="lesson_body"), main.container(key="lesson_main")
    shown = s.predict is None or nav.revealed(s.key)
    step = lesson.STEPS.index(s) + 1
    if big and room is not None:  # the class's line: one line, the figures keep their room
        classroom.bar(room, step, body, compact=True)
    classroom.lead_reveal(room, step, shown, lambda: steps.right_choice(v))
    # presenting in a class: the room's answers take the notes' place (steps.Places)
    places = steps.show(v, shown, body, main, room=room is not None)
    if s.predict:
        classroom.question(room, step, places.where("question"), big)


main()
