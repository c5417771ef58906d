"""A class that follows its teacher: the state every worker process reads (peer instruction,
Mazur: each student commits to an answer, then sees how the room split).

One `ClassStore` API over two backends that several processes share: SQLite in WAL mode
(`classroom.sqlite.SQLiteBackend`, a file in the app's cache folder: the processes of one
machine) and Redis (`classroom.redis_store.RedisBackend`, when ATTNVIZ_REDIS_URL names one: the
pods of a deployment). `open_store()` picks the one the settings name.

A class: its join code (codes.new_code), the digest of the teacher's control secret, the
step shown and whether its answer is revealed, the choices each asked step offers, the right
choice of each revealed step, the lesson's sentence, and the students' answers (one per
student per step, changeable until the reveal). What each caller may do:

- the teacher (who holds the secret) moves the class (`set_step`), reveals (`reveal`), reads
  how many answered (`counts`: "23 of 31", never who) and downloads the counts (`csv`);
  every control message carries the next sequence number, so a replayed (older) message is
  refused (`Replayed`), and a wrong secret is refused (`NotTeacher`);
- a student (a session's random id, or its browser's) joins, answers the step shown while it
  is not revealed (`answer`), reads the state (`state`), its own answer (`my_answer`) and,
  once the step is revealed, the histogram (`histogram`);
- the teacher's browser (the digest of a token only that browser holds) may take control
  again after a reload (`reclaim`): a new secret, the old one refused from then on.

A class ends CLASS_HOURS after it starts (`ClassExpired`; its rows are removed a day later);
at most `max_students` students join one class (`ClassFull`), so its answers are at most
max_students per step. Every refusal is a ClassError whose `message` is a translatable
sentence.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..i18n import N_
from . import codes

MAX_STUDENTS = 500  # students per class (and so answers per step)
MAX_CHOICES = 8  # choices a question offers at most
MAX_STEPS = 64  # steps a class may show
GRACE_S = 24 * 3600.0  # an expired class is still recognised as expired this long
STUDENT_ID_CHARS = 64
NO_RIGHT = -1  # a revealed step whose right choice the page could not measure


# ------------------------------------------------------------------ refusals
class ClassError(Exception):
    """A refused request; `message` is an English sentence marked for translation."""

    message = N_("This class cannot do that.")

    def __init__(self, detail: str = "") -> None:
        super().__init__(detail or self.message)


class UnknownClass(ClassError):
    message = N_("No class has this code. Check the code on the teacher's screen.")


class ClassExpired(ClassError):
    message = N_("This class has ended (classes last a few hours). Ask the teacher for a "
                 "new code.")


class NotTeacher(ClassError):
    message = N_("Only the teacher's page can lead this class.")


class Replayed(ClassError):
    message = N_("This message is older than the class's last move and was ignored.")


class ClassFull(ClassError):
    message = N_("This class is full: no more students can join it.")


class NotNow(ClassError):
    message = N_("The class has moved on: this question takes no more answers.")


class NotRevealed(ClassError):
    message = N_("The room's answers are shown after the teacher reveals the answer.")


class BadChoice(ClassError):
    message = N_("That is not one of this question's choices.")


class StoreUnavailable(ClassError):
    message = N_("The class's store cannot be reached right now; try again in a moment.")


STATUS_ERRORS: dict[str, type[ClassError]] = {
    "unknown": UnknownClass, "expired": ClassExpired, "moved": NotNow, "revealed": NotNow,
    "choice": BadChoice, "full": ClassFull}


# ------------------------------------------------------------------ records
@dataclass(frozen=True)
class Teacher:
    """What the teacher's session keeps: the code, the control secret and the sequence
    number its next control message carries (any number above the last one accepted)."""

    code: str
    secret: str
    seq: int = 0


@dataclass(frozen=True)
class ClassState:
    """What anyone in the class may read: the step shown, whether its answer is revealed, the
    choices it offers (0: no question), the right choice once revealed, the sentence, when
    the teacher moved (store clock, seconds) and when the class ends."""

    code: str
    step: int
    shown: bool
    choices: int
    right: int | None
    text: str
    moved_at: float
    expires: float
    revealed: dict[int, int] = field(default_factory=dict)  # step -> right choice


class Backend(Protocol):
    """What a store keeps: class records (dicts of plain values) and answers, each change
    atomic across processes."""

    def insert(self, rec: dict) -> bool: ...
    def load(self, code: str) -> dict | None: ...
    def change(self, code: str, fn: Callable[[dict], dict]) -> dict: ...
    def join(self, code: str, student: str, cap: int, now: float) -> str: ...
    def answer(self, code: str, student: str, step: int, choice: int, cap: int,
               now: float) -> str: ...
    def students(self, code: str) -> int: ...
    def answers(self, code: str, step: int) -> dict[str, int]: ...
    def steps(self, code: str) -> list[int]: ...
    def purge(self, now: float) -> None: ...


def new_record(code: str, secret: str, browser: str | None, text: str, now: float,
               ttl_s: float) -> dict:
    return {"code": code, "teacher": codes.digest(secret),
            "browser": codes.digest(browser) if browser else "", "created": now,
            "expires": now + ttl_s, "step": 1, "seq": 0, "shown": 0, "choices": 0,
            "asked": {}, "revealed": {}, "text": text, "moved_at": now}


def encode(rec: dict) -> dict[str, str]:
    """A record as text fields (a Redis hash, SQLite columns)."""
    return {k: json.dumps(v) if isinstance(v, dict) else str(v) for k, v in rec.items()}


def decode(raw: dict[str, str]) -> dict:
    """A record read back from text fields."""
    ints = ("step", "seq", "shown", "choices")
    floats = ("created", "expires", "moved_at")
    out: dict = {}
    for k, v in raw.items():
        if k in ints:
            out[k] = int(v)
        elif k in floats:
            out[k] = float(v)
        elif k in ("asked", "revealed"):
            out[k] = {int(s): int(c) for s, c in json.loads(v).items()}
        else:
            out[k] = v
    return out


# ------------------------------------------------------------------ the store
def _right(kept: int | None) -> int | None:
    return None if kept is None or kept == NO_RIGHT else kept


def _student(student: object) -> str:
    if not isinstance(student, str) or not 0 < len(student) <= STUDENT_ID_CHARS:
        raise ClassError("bad student id")
    return student


class ClassStore:
    """The class API over a Backend; `clock` gives the time (seconds), `ttl_s` a class's
    life, `max_students` the students one class takes."""

    def __init__(self, backend: Backend, clock: Callable[[], float] = time.time,
                 ttl_s: float = codes.CLASS_HOURS * 3600, max_students: int = MAX_STUDENTS):
        self.backend, self.clock = backend, clock
        self.ttl_s, self.max_students = ttl_s, max_students

    # --- reading
    def _live(self, code: object) -> dict:
        parsed = codes.parse_code(code)
        rec = self.backend.load(parsed) if parsed else None
        if rec is None:
            raise UnknownClass()
        if self.clock() >= rec["expires"]:
            raise ClassExpired()
        return rec

    def state(self, code: str) -> ClassState:
        """The class as every student may see it (UnknownClass, ClassExpired)."""
        rec = self._live(code)
        return ClassState(rec["code"], rec["step"], bool(rec["shown"]), rec["choices"],
                          _right(rec["revealed"].get(rec["step"])) if rec["shown"] else None,
                          rec["text"], rec["moved_at"], rec["expires"], dict(rec["revealed"]))

    # --- the teacher
    def create(self, text: str = "", browser: str | None = None) -> Teacher:
        """A new class on step 1 with a fresh code; `browser`: a token only the teacher's
        browser holds, which may take control again after a reload (`reclaim`)."""
        now = self.clock()
        self.backend.purge(now)
        for _ in range(8):
            code, secret = codes.new_code(), codes.new_secret()
            if self.backend.insert(new_record(code, secret, browser, str(text)[:2000], now,
                                              self.ttl_s)):
                return Teacher(code, secret, 1)
        raise ClassError("no free join code")  # 8 collisions in 8.5e11 codes: never

    def reclaim(self, code: str, browser: str | None) -> Teacher:
        """Control of the class again for the browser that started it (a new secret; the
        old one is refused from now on); NotTeacher for any other browser."""
        self._live(code)
        secret = codes.new_secret()

        def fn(rec: dict) -> dict:
            if not codes.same(browser, rec["browser"]):
                raise NotTeacher()
            return {**rec, "teacher": codes.digest(secret)}

        rec = self.backend.change(codes.parse_code(code), fn)
        return Teacher(rec["code"], secret, rec["seq"] + 1)

    def _control(self, teacher: Teacher, fn: Callable[[dict], dict]) -> ClassState:
        self._live(teacher.code)

        def checked(rec: dict) -> dict:
            if not codes.same(teacher.secret, rec["teacher"]):
                raise NotTeacher()
            if not isinstance(teacher.seq, int) or teacher.seq <= rec["seq"]:
                raise Replayed()
            return {**fn(rec), "seq": teacher.seq}

        self.backend.change(codes.parse_code(teacher.code), checked)
        return self.state(teacher.code)

    def set_step(self, teacher: Teacher, step: int, choices: int = 0,
                 text: str | None = None) -> ClassState:
        """Show `step` (1..MAX_STEPS) to the class; `choices`: how many choices its question
        offers (0: none); `text`: the lesson's sentence, when it changed. A step revealed
        before stays revealed."""
        if not isinstance(step, int) or not 1 <= step <= MAX_STEPS:
            raise ClassError("bad step")
        if not isinstance(choices, int) or not 0 <= choices <= MAX_CHOICES:
            raise ClassError("bad choices")
        now = self.clock()

        def fn(rec: dict) -> dict:
            asked = dict(rec["asked"])
            if choices:
                asked[step] = choices
            return {**rec, "step": step, "choices": choices, "asked": asked,
                    "shown": int(step in rec["revealed"]), "moved_at": now,
                    "text": rec["text"] if text is None else str(text)[:2000]}

        return self._control(teacher, fn)

    def reveal(self, teacher: Teacher, right: int | None) -> ClassState:
        """Reveal the current step's answer: `right` is its right choice (None: a step
        without choices, or one whose right choice the page could not measure for this
        sentence); answers close."""
        def fn(rec: dict) -> dict:
            if right is not None and (not isinstance(right, int)
                                      or not 0 <= right < rec["choices"]):
                raise BadChoice()
            kept = NO_RIGHT if right is None else right
            return {**rec, "shown": 1, "revealed": {**rec["revealed"], rec["step"]: kept},
                    "moved_at": self.clock()}

        return self._control(teacher, fn)

    def _teacher_only(self, teacher: Teacher) -> dict:
        rec = self._live(teacher.code)
        if not codes.same(teacher.secret, rec["teacher"]):
            raise NotTeacher()
        return rec

    def counts(self, teacher: Teacher, step: int | None = None) -> tuple[int, int]:
        """(students who answered `step` (default: the step shown), students joined)."""
        rec = self._teacher_only(teacher)
        return (len(self.backend.answers(rec["code"], step or rec["step"])),
                self.backend.students(rec["code"]))

    def csv(self, teacher: Teacher, labels: Callable[[int], Sequence[str]] = lambda s: ()) -> str:
        """The class's answers per step as CSV: one row per step and choice with its count
        and whether it is the right one (empty before the reveal); never who answered.
        `labels(step)`: the choices' texts."""
        rec = self._teacher_only(teacher)
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["step", "choice", "label", "answers", "right"])
        for step in sorted(rec["asked"]):
            counts = self._histogram(rec, step)
            names = list(labels(step))
            right = _right(rec["revealed"].get(step))
            for k, n in enumerate(counts):
                w.writerow([step, k + 1, names[k] if k < len(names) else "", n,
                            "" if right is None else int(k == right)])
        return out.getvalue()

    # --- a student
    def join(self, code: str, student: str) -> ClassState:
        """A student's seat in the class (ClassFull past max_students); the state."""
        status = self.backend.join(codes.parse_code(code) or "", _student(student),
                                   self.max_students, self.clock())
        if status != "ok":
            raise STATUS_ERRORS[status]()
        return self.state(code)

    def answer(self, code: str, student: str, step: int, choice: int) -> None:
        """The student's answer to `step` (the step shown, before its reveal); a second
        answer replaces the first, so one student counts once."""
        if not isinstance(step, int) or not isinstance(choice, int) or choice < 0:
            raise BadChoice()
        status = self.backend.answer(codes.parse_code(code) or "", _student(student), step,
                                     choice, self.max_students, self.clock())
        if status != "ok":
            raise STATUS_ERRORS[status]()

    def my_answer(self, code: str, student: str, step: int) -> int | None:
        rec = self._live(code)
        return self.backend.answers(rec["code"], step).get(_student(student))

    def _histogram(self, rec: dict, step: int) -> list[int]:
        counts = [0] * rec["asked"].get(step, 0)
        for choice in self.backend.answers(rec["code"], step).values():
            if 0 <= choice < len(counts):
                counts[choice] += 1
        return counts

    def histogram(self, code: str, step: int) -> list[int]:
        """How many chose each choice of `step`: once it is revealed (NotRevealed before)."""
        rec = self._live(code)
        if step not in rec["revealed"]:
            raise NotRevealed()
        return self._histogram(rec, step)

