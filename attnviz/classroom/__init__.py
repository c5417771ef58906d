"""Class mode: a class follows its teacher through the lesson, every student answers each
question on their own phone, and the room's answers appear at the reveal. No Streamlit here:
the store (`store.ClassStore`) over SQLite (`sqlite`) or Redis (`redis_store`), the join codes
(`codes`) and the lesson's questions as choices (`questions`); attnviz.ui.classroom draws it."""

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
    open_store,
)

__all__ = ["BadChoice", "ClassError", "ClassExpired", "ClassFull", "ClassState", "ClassStore",
           "NotNow", "NotRevealed", "NotTeacher", "Replayed", "StoreUnavailable", "Teacher",
           "UnknownClass", "new_code", "open_store", "parse_code"]
