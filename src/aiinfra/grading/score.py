"""Pure scoring: extracted answers + exercise definitions + student id -> part scores with reasons.

Runs in the grader process with the grader's own copy of :mod:`aiinfra`; the
references are recomputed here for the student's parameters. Nothing a
submission defines reaches this module except the plain-JSON answer records.
The per-part verdicts come from :func:`aiinfra.exercises.feedback.score_part`,
the same function the notebook's ``check()`` uses.
"""
from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import dataclass, field

from aiinfra.exercises import feedback, registry
from aiinfra.exercises.variants import namespace, params_for, references

GRADER_VERSION = "1"


@dataclass(frozen=True)
class Assignment:
    """What the instructor assigned: a chapter's exercises, variants on or off."""

    chapter: str
    variants: bool = False

    def __post_init__(self):
        registry.chapter(self.chapter)
        if not isinstance(self.variants, bool):
            raise ValueError(f"variants must be True or False, got {self.variants!r}")

    @property
    def exercises(self):
        return registry.chapter(self.chapter)

    def fingerprint(self) -> str:
        """Changes whenever a definition, a reference function or the grader changes (forces a re-grade)."""
        import importlib

        module = importlib.import_module(f"aiinfra.exercises.{self.chapter}")
        h = hashlib.sha256()
        h.update(json.dumps([GRADER_VERSION, self.chapter, self.variants]).encode())
        h.update(inspect.getsource(module).encode())
        h.update(inspect.getsource(feedback).encode())
        return h.hexdigest()


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


_SUMMARY = {"ok": "ran to the end", "error": "stopped by an error", "timeout": "stopped by a time limit",
            "dead": "the kernel died", "invalid": "could not be run"}


def score_submission(extracted: dict, assignment: Assignment, student: str) -> SubmissionScore:
    """Score one extraction result (see :mod:`aiinfra.grading.extract`) for ``student``."""
    records = {}
    for rec in extracted.get("answers", []):
        if type(rec) is dict and type(rec.get("exercise")) is str and type(rec.get("part")) is str:
            records[(rec["exercise"], rec["part"])] = rec
    status = extracted.get("status", "error")
    errors = [e for e in extracted.get("errors", []) if isinstance(e, str)]
    stop_note = errors[0] if status != "ok" and errors else ""
    parts = []
    for ex in assignment.exercises:
        ns = namespace(ex, params_for(ex, student, assignment.variants))
        refs = references(ex, ns)
        for p in ex.parts:
            r = feedback.score_part(ex.id, p, records.get((ex.id, p.part)), refs.get(p.part))
            if r.status == "missing" and stop_note:
                r = feedback.PartResult(**{**r.as_dict(), "reason": "no answer recorded before the run stopped"})
            parts.append(r)
    answered = sum(1 for r in parts if r.status != "missing")
    reason = [f"{_SUMMARY.get(status, status)}; {answered} of {len(parts)} parts answered"]
    reason += errors
    reported = extracted.get("reported_student")
    if assignment.variants and isinstance(reported, str) and reported != student:
        reason.append(f"the notebook set student id {reported!r}; graded with the parameters of {student!r}")
    return SubmissionScore(student=student, status=status, reason="; ".join(reason), parts=parts)
