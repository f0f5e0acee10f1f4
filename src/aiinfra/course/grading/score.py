"""Pure scoring: extracted answers + exercise definitions + student id -> part scores with reasons.

Runs in the grader process with the grader's own copy of :mod:`aiinfra`; the
references are recomputed here for the student's parameters. Nothing a
submission defines reaches this module except the plain-JSON answer records.
The per-part verdicts come from :func:`aiinfra.course.exercises.feedback.score_part`,
the same function the notebook's ``check()`` uses.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import dataclass, field
from functools import lru_cache

from ..exercises import feedback, registry, sheet
from ..exercises.variants import KEY_BYTES, key_id, namespace, params_for, references, resolved_slips

GRADER_VERSION = "3"


@dataclass(frozen=True)
class Assignment:
    """What the instructor assigned: a chapter's exercises, variants on or off (on: with the variant key)."""

    chapter: str
    variants: bool = False
    key: bytes | None = field(default=None, repr=False)

    def __post_init__(self):
        registry.chapter(self.chapter)
        if not isinstance(self.variants, bool):
            raise ValueError(f"variants must be True or False, got {self.variants!r}")
        if self.variants and (type(self.key) is not bytes or len(self.key) != KEY_BYTES):
            raise ValueError(
                f"key must be the instructor's {KEY_BYTES}-byte variant key when variants are on "
                "(aiinfra-grade --variant-key FILE)"
            )

    @property
    def exercises(self):
        return registry.chapter(self.chapter)

    def fingerprint(self) -> str:
        """Changes whenever a definition, a reference function or the grader changes (forces a re-grade)."""
        import importlib

        module = importlib.import_module(f"{registry.__name__.rsplit('.', 1)[0]}.{self.chapter}")
        h = hashlib.sha256()
        h.update(
            json.dumps(
                [
                    GRADER_VERSION,
                    self.chapter,
                    self.variants,
                    key_id(self.key) if self.variants and self.key is not None else None,
                ]
            ).encode()
        )
        h.update(inspect.getsource(module).encode())
        h.update(inspect.getsource(feedback).encode())
        return h.hexdigest()

    def _who(self, student: str) -> str | None:
        """Whose parameters: with variants off every student has the defaults (computed once)."""
        return student if self.variants else None

    def references(self, student: str) -> dict:
        """Exercise id -> part -> reference, for this student's parameters."""
        return _references(self, self._who(student))

    def sheet(self, student: str) -> dict:
        """What the student's graded kernel is handed (:mod:`aiinfra.course.exercises.sheet`)."""
        return _sheet(self, self._who(student))


@lru_cache(maxsize=256)
def _references(assignment: Assignment, who: str | None) -> dict:
    return {
        ex.id: references(ex, namespace(ex, params_for(ex, who, assignment.variants, assignment.key)))
        for ex in assignment.exercises
    }


@lru_cache(maxsize=256)
def _slips(assignment: Assignment, who: str | None) -> dict:
    return {
        ex.id: resolved_slips(ex, namespace(ex, params_for(ex, who, assignment.variants, assignment.key)))
        for ex in assignment.exercises
    }


@lru_cache(maxsize=256)
def _sheet(assignment: Assignment, who: str | None) -> dict:
    return sheet.build(assignment.chapter, who, assignment.variants, assignment.key)


@dataclass
class SubmissionScore:
    student: str
    status: str
    reason: str
    parts: list = field(default_factory=list)

    @property
    def auto_score(self) -> float:
        return float(sum(p.points for p in self.parts if p.kind != "free"))

    @property
    def auto_max(self) -> float:
        return float(sum(p.max_points for p in self.parts if p.kind != "free"))

    @property
    def manual_max(self) -> float:
        return float(sum(p.max_points for p in self.parts if p.kind == "free"))


_SUMMARY = {
    "ok": "ran to the end",
    "error": "stopped by an error",
    "timeout": "stopped by a time limit",
    "dead": "the kernel died",
    "invalid": "could not be run",
}


def score_submission(extracted: dict, assignment: Assignment, student: str) -> SubmissionScore:
    """Score one extraction result (see :mod:`aiinfra.course.grading.extract`) for ``student``."""
    records = {}
    for rec in extracted.get("answers", []):
        if type(rec) is dict and type(rec.get("exercise")) is str and type(rec.get("part")) is str:
            records[(rec["exercise"], rec["part"])] = rec
    status = extracted.get("status", "error")
    errors = [e for e in extracted.get("errors", []) if isinstance(e, str)]
    stop_note = errors[0] if status != "ok" and errors else ""
    parts = []
    all_refs = assignment.references(student)
    all_slips = _slips(assignment, assignment._who(student))
    for ex in assignment.exercises:
        refs = all_refs[ex.id]
        for p in ex.parts:
            r = feedback.score_part(
                ex.id, p, records.get((ex.id, p.part)), refs.get(p.part), all_slips[ex.id].get(p.part)
            )
            if r.status == "missing" and stop_note:
                r = feedback.PartResult(
                    **{**r.as_dict(), "reason": "no answer recorded before the run stopped"}
                )
            parts.append(r)
    answered = sum(1 for r in parts if r.status != "missing")
    reason = [f"{_SUMMARY.get(status, status)}; {answered} of {len(parts)} parts answered"]
    reason += errors
    reported = extracted.get("reported_student")
    if assignment.variants and isinstance(reported, str) and reported != student:
        reason.append(f"the notebook set student id {reported!r}; graded with the parameters of {student!r}")
    return SubmissionScore(student=student, status=status, reason="; ".join(reason), parts=parts)
