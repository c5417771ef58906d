"""Every page's numbers as a download, made when it is clicked (never on a rerun)."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import streamlit as st


def npz_bytes(arrays: dict) -> bytes:
    """Named arrays (and token lists) as the bytes of one compressed .npz file."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def csv_text(columns: dict) -> str:
    """Equal-length columns {name: values} as CSV text with a header row (numbers in %.6g)."""
    names = list(columns)
    fmt = lambda v: f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)  # noqa: E731
    rows = zip(*(columns[n] for n in names), strict=True)
    return "\n".join([",".join(names), *(",".join(fmt(v) for v in row) for row in rows)]) + "\n"


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
    st.download_button(label, lambda: npz_bytes(make()), file_name=file_name,
                       mime="application/octet-stream", key=key, on_click="ignore")


def download_csv(label: str, columns: dict, file_name: str, key: str | None = None) -> None:
    """Offer equal-length columns as a .csv download, made when it is clicked."""
    st.download_button(label, lambda: csv_text(columns), file_name, "text/csv", key=key,
                       on_click="ignore")
