"""The lesson: "I saw a saw" (the lecture's own example), from a per-word classifier through
windows of growing width to attention with positions.

Numbers: analysis.taggers (seven taggers trained once per settings, their held-out scores,
parameters and the overfitting sweep, through ui.lesson), analysis.corpus (the deciding-word
distances), analysis.lesson (the steps and the sentences that state the measured claims) and
cached Traces of the sentence with and without positions; each step's view:
ui.lesson_steps; figures: plotting.lesson and plotting.heatmaps."""

import streamlit as st

from attnviz import ui
from attnviz.analysis import lesson, taggers
from attnviz.analysis.corpus import max_words
from attnviz.i18n import N_, _
from attnviz.ui import lesson as nav
from attnviz.ui import lesson_steps as views
from attnviz.ui.context import shown_name
from attnviz.ui.text import literal

SIDEBAR = "(the sidebar's sentence)"  # the option's value (in URLs); shown translated
SIDEBAR_LABEL = N_("(the sidebar's sentence)")
NEEDS_TAGGERS = ("per_word", "window", "far", "cost", "no_positions", "positions", "next")


def controls(ctx: ui.Context, present: bool) -> tuple[str, taggers.Settings, bool]:
    """Sentence, training settings and the presentation switch (in a popover when presenting)."""
    if st.session_state.get("lesson_seen_text", ctx.text) != ctx.text:
        st.session_state["lesson_sentence"] = SIDEBAR  # typing in the sidebar brings it here
    st.session_state["lesson_seen_text"] = ctx.text
    if present:
        box = st.popover(_("Settings"), icon=":material/tune:", width="stretch")
        cols = (box, box, box)
    else:
        cols = st.columns([3, 3, 2], vertical_alignment="bottom")
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
    return (ctx.text if choice == SIDEBAR else choice), settings, big


def main() -> None:
    ctx = ui.context()
    if ctx.model is None:
        st.error(ctx.error or _("No model is loaded."))
        return
    present = bool(st.session_state.get("lesson_present",
                                        st.query_params.get("lesson_present") == "true"))
    nav.presentation(present)
    step = nav.current_step()
    s = lesson.STEPS[step - 1]
    if not present:
        st.title(_("I saw a saw: why self-attention needs positions"))
    top = st.columns([8, 2, 2, 2] if present else [6, 1, 1], vertical_alignment="center")
    with top[0].container(key="lesson_top"):
        if present:
            st.markdown(f"## {step}/{nav.N} · {_(s.title)}")
        else:
            st.progress(step / nav.N, text=_("Step {step} of {n}: {title}").format(
                step=step, n=nav.N, title=_(s.title)))
    nav.nav_buttons(step, present, top[1:3])
    with top[3] if present else st.container():
        text, settings, big = controls(ctx, present)
    if big != present:
        st.rerun()  # the URL asked for the other mode: lay the page out again
    if not present:
        nav.step_slider()
    ws = lesson.lesson_words(text)[: taggers.MAX_WORDS]
    if not ws:
        st.info(_("Type a sentence in the sidebar (or pick an example), e.g. *I saw a saw*."))
        return
    if len(lesson.lesson_words(text)) > taggers.MAX_WORDS:
        st.warning(_("The lesson uses the first {n} words of this sentence.").format(
            n=taggers.MAX_WORDS))
    show_step(ctx, s, settings, ws, present)


def chinese_notes(ctx: ui.Context, s: lesson.Step, ws: list[str]) -> None:
    """For a sentence with Chinese characters: which ones the model's vocabulary lacks
    (read as [UNK]), and that the taggers, trained on English, cannot read any of them."""
    if not lesson.is_chinese(ws):
        return
    unknown = views.unknown_words(ctx, ws)
    if unknown:
        st.warning(_("{model}'s vocabulary has no entry for {chars}: each is read as {unk}, "
                     "one shared vector, so the model cannot tell them apart by their "
                     "meaning.").format(model=literal(shown_name(ctx.model)),
                                        chars="、".join(literal(w) for w in unknown),
                                        unk=literal(ctx.model.tokenizer.unk_token)))
    if s.key in NEEDS_TAGGERS:
        st.info(_("The taggers learned from English sentences: every Chinese character is an "
                  "unknown word to them, so their tags here say nothing. The steps with the real "
                  "model (self-attention, a real pretrained model) read the Chinese."))


def show_step(ctx: ui.Context, s: lesson.Step, settings: taggers.Settings, ws: list[str],
              big: bool) -> None:
    word = lesson.repeated_word(ws)
    word_md = literal(word) if word else None
    gold = lesson.gold_tags(" ".join(ws))
    trained = nav.trained_taggers(settings) if s.key in NEEDS_TAGGERS or gold is None else None
    num = nav.numbers(settings) if trained else None
    body, main = st.columns([5, 6], gap="medium") if big else (st.container(),) * 2
    body, main = body.container(key="lesson_body"), main.container(key="lesson_main")
    shown = s.predict is None or nav.revealed(s.key)
    name = literal(shown_name(ctx.model))  # a folder's name: shown as typed
    fields = {"model": lesson.model_description(ctx.model.name, ctx.model.n_layers,
                                                ctx.model.n_heads, shown=name),
              "model_name": name, "longest": max_words(),
              "full": taggers.FULL_WIDTH, "dim": settings.dim,
              "fly_distance": views.fly_distance(),
              "fly_width": lesson.covering_width(views.fly_distance()),
              **({"n_train": num.n_train, "n_test": num.n_test} if num else {})}
    with body:
        if not big:
            st.header(_(s.title))
        st.markdown(lesson.fill(_(s.text), word_md, **fields))
        if word is None and s.key not in ("far", "cost", "next"):
            st.info(_("This sentence has no ambiguous word that occurs twice. Pick an example "
                      "such as *They can can the can* or *我上山，山上有花。*, or type a "
                      "sentence that repeats one of: {words}.").format(
                words=", ".join(literal(w) for w in lesson.AMBIGUOUS)))
        chinese_notes(ctx, s, ws)
        if s.predict:
            st.container(border=True, key="lesson_question").markdown(
                ":material/help: " + _("**Predict first:**") + " "
                + lesson.fill(_(s.predict), word_md, **fields)
                + ("" if shown else " " + _("*(Answer ▶ reveals it.)*")))
        if shown and s.reveal:
            st.container(key="lesson_answer").markdown(
                lesson.fill(_(s.reveal), word_md, **fields))
    v = views.View(ctx, s, trained, num, ws, word, big, body,
                   body.container(key="lesson_notes"), main)
    tags = views.tags_of(v)
    if s.key in ("task", "per_word", "window", "no_positions", "positions", "next"):
        views.tag_table(v, tags, shown)
    if shown:
        views.VIEWS[s.key](v)
    views.download(v, tags)


main()
