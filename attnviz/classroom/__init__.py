"""Class mode: a class follows its teacher through the lesson, every student answers each
question on their own phone, and the room's answers appear at the reveal. No Streamlit here:
the store (`store.ClassStore`) over SQLite (`sqlite`) or Redis (`redis_store`), the join codes
(`codes`) and the lesson's questions as choices (`questions`); attnviz.ui.classroom draws it."""

from __future__ import annotations

import time
from collections.abc import Callable

from .codes import new_code, parse_code
from .store import (
    BadChoice,
    ClassError,
    ClassExpired,
    ClassFull,
    ClassState,
    ClassStore,
    NotNow,
    NotRevealed,
    NotTeacher,
    Replayed,
    StoreUnavailable,
    Teacher,
    UnknownClass,
)

__all__ = ["BadChoice", "ClassError", "ClassExpired", "ClassFull", "ClassState", "ClassStore",
           "NotNow", "NotRevealed", "NotTeacher", "Replayed", "StoreUnavailable", "Teacher",
           "UnknownClass", "new_code", "open_store", "parse_code"]


def open_store(clock: Callable[[], float] = time.time) -> ClassStore:
    """The store the settings name: Redis at ATTNVIZ_REDIS_URL, else SQLite in WAL mode in the
    app's cache folder (classroom.sqlite3). (Here, above both backends, which build on
    `store`.)"""
    from ..settings import settings

    s = settings()
    if s.redis_url:
        from .redis_store import RedisBackend

        return ClassStore(RedisBackend(s.redis_url), clock)
    from .sqlite import SQLiteBackend

    return ClassStore(SQLiteBackend(s.cache_path / "classroom.sqlite3"), clock)
