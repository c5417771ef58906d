"""Long work (training, sweeps, timings) computed once per server, with a progress bar.

The session that starts the work sees a bar; sessions asking for the same key meanwhile see
a spinner and get the same result when it is done (the cache registry computes a key once).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import streamlit as st

from .cache import cached

Progress = Callable[[float, str], None]


def with_progress(kind: str, key: Hashable, label: str, compute: Callable[[Progress], object]):
    """cached(kind, key, ...) where compute(progress) reports (fraction done, message)."""
    def run():
        bar = st.progress(0.0, text=label)
        result = compute(lambda f, msg: bar.progress(min(1.0, max(0.0, f)), text=f"{label} {msg}"))
        bar.empty()
        return result

    return cached(kind, key, run, waiting=lambda: st.spinner(
        f"{label} another session started this; it is shared when done."))
