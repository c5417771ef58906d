"""The models found in the user's Hugging Face cache, offered in the sidebar (one selectbox
under the model-folder box; choosing one types its Hub id there).

Only checkpoints of a family the engine reads, and only those inside the server's allowed
folders (engine.folders.check_allowed_folder), are listed; nothing is downloaded. The list is
read once per cache state (the cache folder's modification time) and shared by every session.
"""

from __future__ import annotations

import streamlit as st

from attnviz.engine import ModelError, cached_models, check_allowed_folder, hub_cache_dir
from attnviz.engine.kinds import KINDS, MODEL_TYPES, types_of_kind
from attnviz.i18n import _

from .cache import cached
from .text import literal

BUNDLED = ""  # the option that means "the bundled model"
KIND_TYPES = {kind: types_of_kind(kind) for kind in KINDS}  # engine.kinds: no torch to list them


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
        format_func=lambda i: _("bundled all-MiniLM-L6-v2") if i == BUNDLED
        else f"{i} ({types[i]})",
        help=_("Read offline from the Hugging Face cache (HF_HOME); nothing is downloaded."),
    )
