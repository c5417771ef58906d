"""Giving memory back to the system: glibc malloc settings for a long-running server whose
sessions run on many threads.

By default glibc gives each busy thread its own arena (up to 8 per core) and raises its mmap
threshold to the largest block freed so far (up to 32 MB). Arrays of a few MB (a long trace's
queries, one layer's scores) then live in arenas that rarely shrink: after a class pastes long
paragraphs, freed memory stays resident for good. `tune()` (once per process, from the router)
caps the arenas at ARENA_MAX, fixes the mmap threshold at MMAP_THRESHOLD (bigger blocks are
mapped and unmapped, so they go back on free) and trims heap tops past TRIM_THRESHOLD;
`trim()` returns the free pages inside the arenas (malloc_trim), called when the heavy-work line
falls idle. Settings given in the environment (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_,
MALLOC_TRIM_THRESHOLD_) win; ATTNVIZ_MALLOC_TUNE=0 leaves malloc as it is. Elsewhere than
glibc (macOS, musl) both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading

ARENA_MAX = 2
MMAP_THRESHOLD = 1 << 20  # bytes
TRIM_THRESHOLD = 32 << 20  # bytes
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
_lock = threading.Lock()
_tuned = False


def _libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 - glibc only
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def tune() -> bool:
    """Apply the settings once per process; True when glibc took them."""
    global _tuned
    with _lock:
        if _tuned or _LIBC is None or os.environ.get("ATTNVIZ_MALLOC_TUNE") == "0":
            return _tuned
        _tuned = True
        for env, param, value in (("MALLOC_ARENA_MAX", _M_ARENA_MAX, ARENA_MAX),
                                  ("MALLOC_MMAP_THRESHOLD_", _M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                                  ("MALLOC_TRIM_THRESHOLD_", _M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
            if env not in os.environ:
                _LIBC.mallopt(param, value)
        return True


def trim() -> None:
    """Return free memory inside malloc's arenas to the system (glibc malloc_trim(0))."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
