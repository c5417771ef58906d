"""Every page's numbers as a download, made when it is clicked (never on a rerun)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from ..export.html import csv_text, npz_bytes
from .recorder import note_numbers


def _unpinned(value, max_copy: int = 16 * 2**20):
    """A small slice of a big array (one head of a cached trace) is copied, so the session's
    download does not keep the whole trace alive after the cache lets it go. Pass a function
    to download_arrays for big slices (it can fetch the trace again when clicked)."""
    if isinstance(value, np.ndarray) and value.base is not None and value.nbytes <= max_copy:
        return value.copy()
    return value


def download_arrays(label: str, arrays: dict | Callable[[], dict], file_name: str,
                    key: str | None = None) -> None:
    """Offer named arrays (and token lists) as one .npz download, made when it is clicked.

    `arrays` may be a function returning the dict, for numbers a page does not otherwise
    compute or for big slices of a cached trace (fetch it in the function).
    """
    if callable(arrays):
        make = arrays
    else:
        kept = {k: _unpinned(v) for k, v in arrays.items()}
        make = lambda: kept  # noqa: E731
    note_numbers(label, make, file_name, "npz")  # also in the page's HTML view
    st.download_button(label, lambda: npz_bytes(make()), file_name=file_name,
                       mime="application/octet-stream", key=key, on_click="ignore")


def download_csv(label: str, columns: dict, file_name: str, key: str | None = None) -> None:
    """Offer equal-length columns as a .csv download, made when it is clicked."""
    note_numbers(label, lambda: columns, file_name, "csv")  # also in the page's HTML view
    st.download_button(label, lambda: csv_text(columns), file_name, "text/csv", key=key,
                       on_click="ignore")
