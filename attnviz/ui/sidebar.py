"""The shared sidebar (sentence, second sentence, model folder, device), drawn by app.py's
router on every rerun so it is the same on every page. The sentences live in the URL
(`bind="query-params"`), so a link reproduces what the class sees, as long as they fit in a
link that can be reloaded (ui.urlstate.URL_BUDGET): a longer sentence is left out of the link,
and the sidebar says so. The boxes hold MAX_CHARS characters; text cut there is said to be cut.
Pages read the sentences through `context()`."""

from __future__ import annotations

import streamlit as st

from .context import DEFAULT_TEXT, Context, context
from .model_picker import model_picker
from .text import literal
from .urlstate import URL_BUDGET, encoded_length, fits_in_link

MAX_CHARS = 20_000  # more text than 512 tokens can hold; longer input is cut with a warning


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


def sidebar() -> Context:
    """Draw the shared sidebar (sentence, second sentence, model folder, device)."""
    text, pair = _current("text", DEFAULT_TEXT), _current("pair", "")
    text_in_link = fits_in_link(text)
    pair_in_link = text_in_link and fits_in_link(text, pair)
    _back_in_link("text", text, DEFAULT_TEXT, text_in_link)
    _back_in_link("pair", pair, "", pair_in_link)
    with st.sidebar:
        st.text_area(
            "Sentence", value=DEFAULT_TEXT, key="text", height=80, max_chars=MAX_CHARS,
            bind="query-params" if text_in_link else None,
            help="Any text; long inputs are cut at the model's 512 tokens.",
        )
        st.text_input(
            "Second sentence (optional)", value="", key="pair", max_chars=MAX_CHARS,
            bind="query-params" if pair_in_link else None,
            help="BERT-like encoders read [CLS] A [SEP] B [SEP]; BART takes it as the "
            "decoder's target; GPT-2 and ViT leave it out (the page says so).",
        )
        for name, value in (("sentence", text), ("second sentence", pair)):
            if len(value) >= MAX_CHARS:
                st.warning(f"The {name} box holds {MAX_CHARS:,} characters: the text was cut "
                           "there.")
        if not pair_in_link:
            which = "This sentence is" if not text_in_link else "The second sentence is"
            st.info(f"{which} too long for the page's link ({encoded_length(text, pair):,} "
                    f"bytes once encoded; a link carries {URL_BUDGET:,}), so the link leaves "
                    "it out: copy the text itself to share it.")
        with st.expander("Model and device"):
            st.text_input(
                "Checkpoint folder or Hub id", value="", key="model_dir",
                placeholder="empty = bundled all-MiniLM-L6-v2",
                help="BERT, RoBERTa, DistilBERT, GPT-2, ViT or BART: a folder with config.json, "
                     "weights and tokenizer, or a Hub id found in your local Hugging Face cache "
                     "(e.g. gpt2). Read offline: nothing is downloaded.",
            )
            model_picker()
            devices = ["auto", "cpu"] + (["cuda"] if _cuda() else [])
            st.selectbox("Device", devices, key="device")
    ctx = context()
    if ctx.model is not None:
        st.sidebar.caption(
            f"{literal(ctx.model.name)}: {ctx.model.n_layers} layers x {ctx.model.n_heads} heads, "
            f"hidden {ctx.model.hidden}, on **{ctx.model.device.type.upper()}**"
        )
    if ctx.error:
        st.sidebar.error(ctx.error)
    return ctx


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()
