"""The shared sidebar (sentence, second sentence, model folder, device), drawn by app.py's
router on every rerun so it is the same on every page. The sentence lives in the URL
(`bind="query-params"`), so a link reproduces what the class sees; pages read it through
`context()`."""

from __future__ import annotations

import streamlit as st

from .context import DEFAULT_TEXT, Context, context
from .model_picker import model_picker
from .text import literal

MAX_CHARS = 20_000  # more text than 512 tokens can hold; longer input is cut with a warning


def sidebar() -> Context:
    """Draw the shared sidebar (sentence, second sentence, model folder, device)."""
    with st.sidebar:
        st.text_area(
            "Sentence", value=DEFAULT_TEXT, key="text", bind="query-params", height=80,
            max_chars=MAX_CHARS, help="Any text; long inputs are cut at the model's 512 tokens.",
        )
        st.text_input(
            "Second sentence (optional)", value="", key="pair", bind="query-params",
            max_chars=MAX_CHARS, help="BERT-like encoders read [CLS] A [SEP] B [SEP]; BART "
            "takes it as the decoder's target; GPT-2 and ViT leave it out (the page says so).",
        )
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
