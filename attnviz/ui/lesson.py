"""Streamlit glue for the lesson page: the four taggers, trained once per settings per server.

`st.cache_resource` cannot update a progress bar created outside the cached function (the
cache replays elements), so a cache_resource-held SharedCache keyed on `Settings` (a frozen,
hashable dataclass of plain values) stores the trained taggers; two sessions that open the
lesson at once train only once.
"""

from __future__ import annotations

import streamlit as st

from attnviz.analysis import taggers as T

from .trace_cache import SharedCache

MAX_SETTINGS = 4  # trained tagger sets kept per server (a few MB each)


@st.cache_resource(show_spinner=False)
def _registry() -> SharedCache:
    return SharedCache(max_size=MAX_SETTINGS)


def trained_taggers(settings: T.Settings) -> T.Trained:
    """The trained taggers for `settings`; trains them (with a progress bar) on first use."""
    def train() -> T.Trained:
        bar = st.progress(0.0, text="Training four taggers on the CPU (once per settings)...")
        trained = T.train_all(settings, lambda f, m: bar.progress(min(f, 1.0), m))
        bar.empty()
        return trained

    return _registry().get(settings, train, waiting=lambda: st.spinner(
        "Another session is training these taggers; they are shared when done..."))


@st.cache_resource(show_spinner=False, max_entries=MAX_SETTINGS)
def held_out_scores(settings: T.Settings) -> tuple[dict[str, T.Scores], dict]:
    """({tagger name: held-out Scores}, majority baselines) for `settings`, computed once per
    server: they depend on the trained taggers only, not on the sentence or the session.
    Call after trained_taggers(settings) (the training, with its progress bar, is there)."""
    tr = trained_taggers(settings)
    return ({T.NAMES[k]: T.evaluate(m, tr.corpus) for k, m in tr.models.items()},
            T.majority_baseline(tr.corpus))
