"""The shared sidebar (language, sentence, second sentence, bundled model, model folder,
device), drawn by app.py's router on every rerun so it is the same on every page. The language,
the sentences and the bundled model live in the URL (`bind="query-params"`:
`?lang=zh&text=...&model=...`), so a link reproduces what the
class sees, as long as the sentences fit in a link that can be reloaded (ui.urlstate.URL_BUDGET):
a longer sentence is left out of the link, and the sidebar says so. The boxes hold MAX_CHARS
characters; text cut there is said to be cut. Pages read the sentences through `ui.context()`,
the language through attnviz.i18n."""

from __future__ import annotations

import streamlit as st

from attnviz import i18n
from attnviz.i18n import _
from attnviz.views.common import model_notes

from .context import DEFAULT_TEXT, Context, read_context, shown_name
from .language import (
    LANG_KEY,
    use_session_language,  # noqa: F401 - ui.recorder imports it from here
)
from .model_picker import bundled_picker, model_picker
from .text import literal
from .urlstate import URL_BUDGET, encoded_length, fits_in_link

CLASS_PARAM = "class"  # the join link's parameter (ui.classroom.PARAM)
MAX_CHARS = 20_000  # more text than 512 tokens can hold; longer input is cut with a warning
LANGUAGE_LABEL = "Language · 语言"  # in both languages on purpose: found whatever is shown


def language_name(code: str) -> str:
    """A language's own name as the switch shows it. A non-ASCII name gets a leading space
    (which the button does not show): Streamlit looks for a leading emoji in an option's
    first word unless it is ASCII, and its emoji table costs a fresh server ~0.6 s to load,
    in the time the first visitor waits for the first page (bench_first_visit)."""
    name = i18n.LANGUAGES[code]
    return name if name.isascii() else f" {name}"


def language_switch() -> None:
    """English / 中文, kept in the URL as `lang` (English, the default, leaves it out)."""
    st.segmented_control(
        LANGUAGE_LABEL, list(i18n.LANGUAGES), key=LANG_KEY,
        format_func=language_name, bind="query-params", required=True,
        label_visibility="collapsed")


def _current(key: str, default: str) -> str:
    """The value a sentence box is about to show: its state, else the URL's, else default."""
    if key in st.session_state:
        return str(st.session_state[key] or "")
    return str(st.query_params.get(key, default))


def _back_in_link(key: str, value: str, default: str, in_link: bool) -> None:
    """A sentence left out of the link (too long) goes back in once it fits again: the browser
    writes a bound box's value to the URL only when it changes while bound."""
    flag = f"_{key}_left_out"
    if not in_link:
        st.session_state[flag] = True
    elif st.session_state.pop(flag, False) and value != default and key not in st.query_params:
        st.query_params[key] = value


def sidebar(student: bool = False) -> Context:
    """Draw the shared sidebar (language, sentence, second sentence, bundled model, model
    folder, device); for a student's lesson in a class (`student`: ui.router), which shows
    the teacher's sentence on the bundled model, the language and a line saying so: each
    widget fewer is less to draw again on every phone in the room at each of the teacher's
    steps."""
    if student:
        with st.sidebar:
            language_switch()
            st.caption(_("In a class, the lesson shows the teacher's sentence."))
        return _model_lines(read_context())
    text, pair = _current("text", DEFAULT_TEXT), _current("pair", "")
    text_in_link = fits_in_link(text)
    pair_in_link = text_in_link and fits_in_link(text, pair)
    _back_in_link("text", text, DEFAULT_TEXT, text_in_link)
    _back_in_link("pair", pair, "", pair_in_link)
    with st.sidebar:
        language_switch()
        st.text_area(
            _("Sentence"), value=DEFAULT_TEXT, key="text", height=80, max_chars=MAX_CHARS,
            bind="query-params" if text_in_link else None,
            help=_("Any text; long inputs are cut at the model's 512 tokens."),
        )
        st.text_input(
            _("Second sentence (optional)"), value="", key="pair", max_chars=MAX_CHARS,
            bind="query-params" if pair_in_link else None, help=_(
                "BERT-like encoders read [CLS] A [SEP] B [SEP]; BART takes it as the decoder's "
                "target; GPT-2 and ViT leave it out (the page says so)."),
        )
        if len(text) >= MAX_CHARS:
            st.warning(_("The sentence box holds {n} characters: the text was cut there.")
                       .format(n=f"{MAX_CHARS:,}"))
        if len(pair) >= MAX_CHARS:
            st.warning(_("The second sentence box holds {n} characters: the text was cut "
                         "there.").format(n=f"{MAX_CHARS:,}"))
        if not pair_in_link:
            message = (_("This sentence is too long for the page's link ({size} bytes once "
                         "encoded; a link carries {budget}), so the link leaves it out: copy "
                         "the text itself to share it.") if not text_in_link else
                       _("The second sentence is too long for the page's link ({size} bytes "
                         "once encoded; a link carries {budget}), so the link leaves it out: "
                         "copy the text itself to share it."))
            st.info(message.format(size=f"{encoded_length(text, pair):,}",
                                   budget=f"{URL_BUDGET:,}"))
        bundled_picker()
        with st.expander(_("Model and device")):
            st.text_input(
                _("Checkpoint folder or Hub id"), value="", key="model_dir",
                max_chars=4096,  # a folder path (Linux's PATH_MAX) or a Hub id (ui.boxes)
                placeholder=_("empty: the bundled model chosen above"),
                help=_("BERT, RoBERTa, DistilBERT, GPT-2, ViT or BART: a folder with "
                       "config.json, weights and tokenizer, or a Hub id found in your local "
                       "Hugging Face cache (e.g. gpt2). Read offline: nothing is downloaded."),
            )
            model_picker()
            devices = ["auto", "cpu"] + (["cuda"] if _cuda() else [])
            st.selectbox(_("Device"), devices, key="device")
    return _model_lines(read_context())


def _model_lines(ctx: Context) -> Context:
    """The model's line (name, size, device) and its notes, under the sidebar's boxes."""
    if ctx.model is not None:
        st.sidebar.caption(_(
            "{name}: {layers} layers x {heads} heads, hidden {hidden}, on **{device}**").format(
            name=literal(shown_name(ctx.model)), layers=ctx.model.n_layers, heads=ctx.model.n_heads,
            hidden=ctx.model.hidden, device=ctx.model.device_type.upper()))
        for note in model_notes(ctx.model):
            st.sidebar.caption(note.text)
    if ctx.error:
        st.sidebar.error(ctx.error)
    return ctx


def _cuda() -> bool:
    """Whether CUDA is there (torch says)."""
    import torch

    return torch.cuda.is_available()
