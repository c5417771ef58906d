"""The sidebar's choice of model: one of the two bundled models (`bundled_picker`, kept in the
URL as `model`), or a model found in the user's Hugging Face cache (`model_picker`, one
selectbox under the model-folder box; choosing one types its Hub id there). A folder or Hub id
in that box takes precedence over the bundled choice; choosing a bundled model empties it.

Only checkpoints of a family the engine reads, and only those inside the server's allowed
folders (engine.folders.check_allowed_folder), are listed; nothing is downloaded. The list is
read once per cache state (the cache folder's modification time) and shared by every session.
"""

from __future__ import annotations

import streamlit as st

from attnviz.defaults import DEFAULT_MODEL
from attnviz.engine import ModelError, cached_models, check_allowed_folder, hub_cache_dir
from attnviz.engine.bundled import MINILM, NAMES, SMOLLM2  # noqa: F401 - ui.context reads NAMES
from attnviz.engine.kinds import KINDS, MODEL_TYPES, types_of_kind
from attnviz.i18n import N_, _

from .cache import cached
from .text import literal

BUNDLED = ""  # the option that means "the bundled model"
MODEL_KEY = "model"  # the bundled choice's widget key and URL parameter
CHOICES = {MINILM: N_("all-MiniLM-L6-v2 (BERT, default)"),
           SMOLLM2: N_("SmolLM2-135M-Instruct (Llama: RoPE, grouped key/value heads)")}
KIND_TYPES = {kind: types_of_kind(kind) for kind in KINDS}  # engine.kinds: no torch to list them


def choice_label(value: str) -> str | None:
    """The bundled choice a link names by its engine name (`?model=smollm2`, any case), as the
    selectbox shows it in this language (the text Streamlit reads from and writes to the link);
    None for any other value. ui.urlstate rewrites such a link before the selectbox reads it."""
    name = value.strip().lower()
    return _(CHOICES[name]) if name in CHOICES else None


def cached_ids(model_types: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """(Hub id, model_type) of every cached model a page may open, sorted by id."""
    hub = hub_cache_dir()
    try:
        stamp = hub.stat().st_mtime_ns
    except OSError:
        return []

    def scan() -> list[tuple[str, str]]:
        out = []
        for m in cached_models(tuple(MODEL_TYPES)):
            try:
                check_allowed_folder(m.folder)
            except ModelError:
                continue
            out.append((m.id, m.model_type))
        return out

    found = cached("results", ("hub_models", str(hub), stamp), scan)
    return [f for f in found if model_types is None or f[1] in model_types]


def bundled_choice() -> str | None:
    """The bundled model the sidebar names (engine.bundled: 'smollm2'), None for the default
    all-MiniLM-L6-v2."""
    choice = st.session_state.get(MODEL_KEY, DEFAULT_MODEL)
    return None if choice == DEFAULT_MODEL or choice not in CHOICES else choice


def _chose_bundled() -> None:
    st.session_state["model_dir"] = ""
    st.session_state["model_pick"] = BUNDLED


def bundled_picker() -> None:
    """The two bundled models, in a selectbox kept in the URL (`?model=...`)."""
    st.selectbox(
        _("Model"), list(CHOICES), key=MODEL_KEY, bind="query-params",
        on_change=_chose_bundled, format_func=lambda c: _(CHOICES[c]),
        help=_("Both come with attnviz and run offline. all-MiniLM-L6-v2 is a BERT encoder, "
               "the lecture's model. SmolLM2-135M-Instruct is a small modern decoder (Llama's "
               "architecture: rotary positions, 9 query heads sharing 3 key/value heads); its "
               "weights are dequantized from a 4-bit GGUF file, converted once on first use. A "
               "folder or Hub id typed under “Model and device” takes precedence."),
    )


def _choose() -> None:
    st.session_state["model_dir"] = st.session_state.get("model_pick") or ""


def model_picker() -> None:
    """A selectbox of the cached Hub ids; picking one sets the sidebar's model box."""
    found = cached_ids()
    if not found:
        st.caption(_("No supported model in your Hugging Face cache ({folder}). Set HF_HOME "
                     "before starting attnviz to use another cache.").format(
                         folder=literal(str(hub_cache_dir()))))
        return
    types = dict(found)
    st.selectbox(
        _("Models in your Hugging Face cache"), [BUNDLED, *types], key="model_pick",
        on_change=_choose,
        format_func=lambda i: _("the bundled model chosen above") if i == BUNDLED
        else f"{i} ({types[i]})",
        help=_("Read offline from the Hugging Face cache (HF_HOME); nothing is downloaded."),
    )
