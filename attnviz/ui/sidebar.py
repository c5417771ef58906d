"""The shared sidebar (language, sentence, second sentence, model folder, device), drawn by
app.py's router on every rerun so it is the same on every page. The language and the sentence
live in the URL (`bind="query-params"`: `?lang=zh&text=...`), so a link reproduces what the
class sees; pages read the sentence through `context()`, the language through attnviz.i18n."""

from __future__ import annotations

import streamlit as st

from attnviz import i18n
from attnviz.i18n import _

from .context import DEFAULT_TEXT, Context, context
from .model_picker import model_picker
from .text import literal

MAX_CHARS = 20_000  # more text than 512 tokens can hold; longer input is cut with a warning
LANG_KEY = "lang"
LANGUAGE_LABEL = "Language · 语言"  # in both languages on purpose: found whatever is shown


def session_language() -> str:
    """The session's language: the switch's value once drawn, else the URL's `lang`
    (a first visit from a shared link), else English. Anything unknown is English."""
    if LANG_KEY in st.session_state:
        return i18n.normalise(st.session_state[LANG_KEY])
    return i18n.normalise(st.query_params.get(LANG_KEY, i18n.DEFAULT))


def use_session_language() -> str:
    """Look strings up in this session's language for the rest of this run (per thread,
    so other sessions keep theirs). A `lang` the URL mistyped is set back to the default."""
    lang = session_language()
    if st.session_state.get(LANG_KEY) != lang:
        st.session_state[LANG_KEY] = lang  # the switch starts from it (it has no default)
    return i18n.set_language(lang)


def language_switch() -> None:
    """English / 中文, kept in the URL as `lang` (English, the default, leaves it out)."""
    st.segmented_control(
        LANGUAGE_LABEL, list(i18n.LANGUAGES), key=LANG_KEY,
        format_func=i18n.LANGUAGES.get, bind="query-params", required=True,
        label_visibility="collapsed")


def sidebar() -> Context:
    """Draw the shared sidebar (language, sentence, second sentence, model folder, device)."""
    with st.sidebar:
        language_switch()
        st.text_area(
            _("Sentence"), value=DEFAULT_TEXT, key="text", bind="query-params", height=80,
            max_chars=MAX_CHARS,
            help=_("Any text; long inputs are cut at the model's 512 tokens."),
        )
        st.text_input(
            _("Second sentence (optional)"), value="", key="pair", bind="query-params",
            max_chars=MAX_CHARS, help=_(
                "BERT-like encoders read [CLS] A [SEP] B [SEP]; BART takes it as the decoder's "
                "target; GPT-2 and ViT leave it out (the page says so)."),
        )
        with st.expander(_("Model and device")):
            st.text_input(
                _("Checkpoint folder or Hub id"), value="", key="model_dir",
                placeholder=_("empty = bundled all-MiniLM-L6-v2"),
                help=_("BERT, RoBERTa, DistilBERT, GPT-2, ViT or BART: a folder with "
                       "config.json, weights and tokenizer, or a Hub id found in your local "
                       "Hugging Face cache (e.g. gpt2). Read offline: nothing is downloaded."),
            )
            model_picker()
            devices = ["auto", "cpu"] + (["cuda"] if _cuda() else [])
            st.selectbox(_("Device"), devices, key="device")
    ctx = context()
    if ctx.model is not None:
        st.sidebar.caption(_(
            "{name}: {layers} layers x {heads} heads, hidden {hidden}, on **{device}**").format(
            name=literal(ctx.model.name), layers=ctx.model.n_layers, heads=ctx.model.n_heads,
            hidden=ctx.model.hidden, device=ctx.model.device.type.upper()))
    if ctx.error:
        st.sidebar.error(ctx.error)
    return ctx


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
