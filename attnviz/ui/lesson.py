"""The lesson page's Streamlit side: trained taggers and their numbers (once per settings per
server, with a progress bar), the step and reveal state, keyboard navigation and the
presentation mode.

Navigation: `lesson_step` (1..N) lives in the session and in the URL (written here each run,
read once when a session starts, so a link opens its step). "Next" reveals the step's answer
first when it asks a question, then moves on; "Back" moves back. In presentation mode the keys
a presenter's clicker sends do the same: Right, PageDown and Space go forward; Left and PageUp
go back (Streamlit's button shortcuts: keys typed into a text field are left alone).

What a URL can ask to train is limited to SEEDS x EPOCHS, so a shared server trains at most
that many settings, each once (the cache registry).
"""

from __future__ import annotations

import streamlit as st

from attnviz.analysis import lesson, taggers
from attnviz.i18n import _
from attnviz.settings import settings as app_settings
from attnviz.views.lesson import Numbers, numbers_of

from . import style
from .cache import cached
from .progress import throttled, with_progress
from .worklist import LONG_WORK, heavy_turn

SEEDS: tuple[int, ...] = (0, 1, 2)
EPOCHS: tuple[int, ...] = (3, taggers.Settings.epochs, 12)
N = len(lesson.STEPS)
STEP_KEY = "lesson_step"
CLASS_LIMIT = "lesson_class_limit"  # a student in a class: the class's step (ui.classroom)
FOLLOW = "lesson_class_follow"  # a student in a class follows the teacher's step
FORWARD_KEYS = ("PageDown", "Space")  # besides the Next button's own Right
BACK_KEYS = ("PageUp",)  # besides the Back button's own Left


# ------------------------------------------------------------------ numbers
def kept_folder():
    """Where trained taggers and sweeps are kept between runs (the app's cache folder)."""
    return app_settings().cache_path / "lesson"


def trained_taggers(settings: taggers.Settings) -> taggers.Trained:
    """The trained taggers for `settings`: read from the cache folder when a run kept them
    (same settings and code: the same weights bit for bit), else trained here with a
    progress bar and kept there; once per settings per server."""
    return with_progress("taggers", settings, _(
        "Training {n} taggers on the CPU (once per settings, shared by every visitor)..."
    ).format(n=len(taggers.NAMES)),
                         lambda progress: taggers.kept_or_trained(settings, kept_folder(),
                                                                  progress))


def retrain_live(settings: taggers.Settings) -> tuple[taggers.Trained, bool]:
    """Train the taggers again here, with a progress bar, whatever is kept: (the new
    taggers, whether every weight equals the ones the page shows, bit for bit)."""
    import torch

    shown = trained_taggers(settings)
    with heavy_turn(_("Training again"), LONG_WORK):
        bar = st.progress(0.0, text=_("Training again..."))
        again = taggers.train_all(settings, throttled(lambda f, msg: bar.progress(
            min(1.0, max(0.0, f)), text=msg)))
        bar.empty()
    same = all(torch.equal(a, b) for k in shown.models for a, b in zip(
        shown.models[k].state_dict().values(), again.models[k].state_dict().values(),
        strict=True))
    return again, same


def numbers(settings: taggers.Settings) -> Numbers:
    """Numbers for `settings` (views.lesson.numbers_of), computed once per server: they depend
    on the trained taggers only, not on the sentence or the session."""
    return cached("results", ("lesson_numbers", settings),
                  lambda: numbers_of(trained_taggers(settings)))


def sweep(settings: taggers.Settings) -> taggers.Sweeps:
    """The overfitting sweep for `settings` and each of taggers.SWEEP_SEEDS (retrained on
    smaller training sets), once per server, kept in the cache folder, with a progress bar."""
    def compute(progress) -> taggers.Sweeps:
        return taggers.kept_or_swept(settings, kept_folder(), progress,
                                     trained=trained_taggers(settings))

    return with_progress("results", ("lesson_sweeps", settings), _(
        "Retraining on smaller training sets, seeds {seeds} (once per settings)...").format(
        seeds=", ".join(map(str, taggers.SWEEP_SEEDS))), compute)


# ------------------------------------------------------------------ settings
def settings_from(seed, epochs) -> taggers.Settings:
    """Settings for a (seed, epochs) choice; anything outside SEEDS x EPOCHS is refused."""
    if seed not in SEEDS or epochs not in EPOCHS:
        raise ValueError(f"the lesson trains seeds {SEEDS} and epochs {EPOCHS} only")
    return taggers.Settings(seed=int(seed), epochs=int(epochs))


def settings_widgets() -> taggers.Settings:
    """Seed and epochs, each one of a few values (in the URL)."""
    seed = st.segmented_control(_("Seed"), SEEDS, default=0, key="lesson_seed",
                                bind="query-params", required=True)
    epochs = st.segmented_control(_("Epochs"), EPOCHS, default=taggers.Settings.epochs,
                                  key="lesson_epochs", bind="query-params", required=True)
    settings = settings_from(seed, epochs)
    st.caption(_("Trained taggers are kept on the server's disk: the same settings give the "
                 "same numbers, bit for bit. Train them again to watch it happen."))
    st.button(_("Train again now"), key="lesson_retrain", icon=":material/replay:",
              on_click=_ask_retrain)
    return settings


RETRAIN_ASKED = "lesson_retrain_asked"


def _ask_retrain() -> None:
    """The Train again button's callback: a flag that outlives any rerun of the script."""
    st.session_state[RETRAIN_ASKED] = True


def retrain_if_asked(settings: taggers.Settings) -> None:
    """After the Train again button (in the settings popover, which a rerun may close): the
    taggers trained again on the page itself, with a progress bar, then whether every weight
    equals the taggers shown."""
    if not st.session_state.pop(RETRAIN_ASKED, False):
        return
    again, same = retrain_live(settings)
    (st.success if same else st.warning)((
        _("Trained again in {s:.1f} s: every weight equals the taggers shown, bit for "
          "bit.") if same else
        _("Trained again in {s:.1f} s: some weights differ from the taggers shown."))
        .format(s=again.total_seconds))


# ------------------------------------------------------------------ steps
def _url_step() -> int:
    raw = st.query_params.get(STEP_KEY, "1")
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= N else 1


def current_step() -> int:
    """The step shown (1..N): the session's, or the URL's when a session starts; written back
    to the URL so the address always opens this step."""
    if STEP_KEY not in st.session_state:
        st.session_state[STEP_KEY] = _url_step()
    step = st.session_state[STEP_KEY]
    if not isinstance(step, int) or not 1 <= step <= N:
        step = st.session_state[STEP_KEY] = 1
    if st.query_params.get(STEP_KEY) != str(step):
        st.query_params[STEP_KEY] = str(step)
    return step


def revealed(key: str) -> bool:
    return bool(st.session_state.get(f"lesson_reveal_{key}", False))


def reveal(key: str) -> None:
    st.session_state[f"lesson_reveal_{key}"] = True


def go_to(step: int) -> None:
    """Show `step`; a student in a class goes no further than the class's step and follows
    the class again on reaching it (looking back stops following)."""
    limit = st.session_state.get(CLASS_LIMIT)
    step = max(1, min(N if limit is None else limit, step))
    st.session_state[STEP_KEY] = step
    if limit is not None:
        st.session_state[FOLLOW] = step == limit


def student() -> bool:
    """Whether this session is a student in a class (who cannot reveal)."""
    return st.session_state.get(CLASS_LIMIT) is not None


def forward() -> None:
    """Reveal this step's answer if it asks a question and has not shown it; else next step."""
    step = st.session_state.get(STEP_KEY, 1)
    s = lesson.STEPS[step - 1]
    if s.predict and not revealed(s.key) and not student():
        reveal(s.key)
    else:
        go_to(step + 1)


def back() -> None:
    go_to(st.session_state.get(STEP_KEY, 1) - 1)


def at_end(step: int) -> bool:
    s = lesson.STEPS[step - 1]
    if student():  # no further than the class
        return step >= st.session_state[CLASS_LIMIT]
    return step == N and (not s.predict or revealed(s.key))


SLIDER = "lesson_step_slider_{step}"


def step_slider() -> None:
    """A slider over the steps (outside presentation mode), drawn on the current step, its
    key naming that step."""
    step = st.session_state[STEP_KEY]
    st.slider(_("Step"), 1, N, value=step, key=SLIDER.format(step=step),
              label_visibility="collapsed", on_change=_slid, args=(step,))


def _slid(drawn: int) -> None:
    """The slider drawn on step `drawn` moved: show the step it points to, unless the page
    has left `drawn` since. A click that reaches the server before the browser has drawn the
    new step's slider (Next, then Back at once on a busy machine) carries the old slider with
    its old value, which Streamlit reports as changed: taken as a move, Next then Back would
    go back two steps."""
    if st.session_state.get(STEP_KEY) == drawn:
        go_to(st.session_state[SLIDER.format(step=drawn)])


def nav_buttons(step: int, present: bool, cols) -> None:
    """Back and Next in the two given columns; in presentation mode also the clicker's keys."""
    cols[0].button(_("◀ Back"), on_click=back, disabled=step == 1, key="lesson_back",
                   shortcut="Left" if present else None, width="stretch")
    s = lesson.STEPS[step - 1]
    label = (_("Answer ▶") if s.predict and not revealed(s.key) and not student()
             else _("Next ▶"))
    cols[1].button(label, on_click=forward, disabled=at_end(step), key="lesson_next",
                   type="primary", shortcut="Right" if present else None, width="stretch")
    if present:
        with st.container(key="lesson_hotkeys"):  # hidden: only their shortcuts matter
            for k in FORWARD_KEYS:
                st.button(_("Next ({key})").format(key=k), on_click=forward, disabled=at_end(step),
                          key=f"lesson_key_{k.lower()}", shortcut=k)
            for k in BACK_KEYS:
                st.button(_("Back ({key})").format(key=k), on_click=back, disabled=step == 1,
                          key=f"lesson_key_{k.lower()}", shortcut=k)


# ------------------------------------------------------------------ presentation
def presentation(present: bool) -> None:
    """Page style (constant CSS, no user text): the clicker's buttons hidden; in presentation
    mode larger text, less padding, and the sidebar collapsed when the mode is switched on."""
    style.apply(*(("lesson", "lesson_present") if present else ("lesson",)))
    was = st.session_state.get("lesson_present_was")
    if present and not was:
        st.set_page_config(initial_sidebar_state="collapsed")
    elif was and not present:
        st.set_page_config(initial_sidebar_state="expanded")
    st.session_state["lesson_present_was"] = present
