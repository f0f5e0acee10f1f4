"""What a notebook calls: ``configure``, ``set_student``, ``params``, ``prompt``, ``answer``, ``check``.

State lives in this module, inside the kernel. ``answer()`` keeps a plain-JSON
record per part and, when the grader has set ``AIINFRA_ANSWERS_FILE``, also
appends it to that file as one JSON line. That file is the only thing the
grader reads back from a kernel; the scores are computed in the grader.
"""
from __future__ import annotations

import json
import os
from typing import Any

from aiinfra.exercises import feedback, registry, render
from aiinfra.exercises.variants import namespace, params_for, references, student_id

ENV_STUDENT = "AIINFRA_STUDENT_ID"
ENV_ANSWERS = "AIINFRA_ANSWERS_FILE"
ENV_VARIANTS = "AIINFRA_VARIANTS"

_state: dict[str, Any] = {"student": None, "variants": {}, "answers": {}}


def reset() -> None:
    """Forget the student id, the configuration and every recorded answer."""
    _state.update(student=None, variants={}, answers={})


def _emit(record: dict) -> None:
    path = os.environ.get(ENV_ANSWERS)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, allow_nan=False) + "\n")


def configure(chapter: str, variants: bool = False) -> None:
    """Say which chapter this notebook is and whether per-student variants are on.

    The generated notebooks call this in their first cell; the grader ignores
    it and uses the instructor's assignment settings instead.
    """
    registry.chapter(chapter)
    if not isinstance(variants, bool):
        raise ValueError(f"variants must be True or False, got {variants!r}")
    _state["variants"][chapter] = variants


def set_student(sid: str) -> None:
    """Record the student id that picks this notebook's parameters.

    An empty string means "not set here": the id then comes from the
    ``AIINFRA_STUDENT_ID`` environment variable.
    """
    if isinstance(sid, str) and type(sid) is str and sid.strip() == "":
        _state["student"] = None
        return
    _state["student"] = student_id(sid)
    _emit({"student": _state["student"]})


def current_student() -> str | None:
    """The id set with :func:`set_student`, else ``$AIINFRA_STUDENT_ID``, else None."""
    if _state["student"]:
        return _state["student"]
    env = os.environ.get(ENV_STUDENT, "").strip()
    return student_id(env) if env else None


def _variants_for(ex) -> bool:
    """The grader's setting (``AIINFRA_VARIANTS`` = 1 or 0) wins over the notebook's configure()."""
    env = os.environ.get(ENV_VARIANTS, "").strip()
    if env in ("0", "1"):
        return env == "1"
    return _state["variants"].get(ex.chapter, False)


def _student_for(ex) -> str | None:
    sid = current_student()
    if _variants_for(ex) and sid is None:
        raise ValueError(
            "this notebook uses per-student variants: call set_student('your id') "
            f"or set {ENV_STUDENT} before asking for exercise {ex.id}"
        )
    return sid


def params(exercise_id: str) -> dict[str, Any]:
    """This student's parameters for one exercise, with the values the statement derives from them."""
    ex = registry.get(exercise_id)
    return namespace(ex, params_for(ex, _student_for(ex), _variants_for(ex)))


def prompt(exercise_id: str) -> render.Markdown:
    """The statement of one exercise with this student's parameters (plain Markdown)."""
    ex = registry.get(exercise_id)
    ns = params(exercise_id)
    return render.Markdown(render.statement_markdown(ex, ns, heading=f"### Exercise {render.title_text(ex)}"))


_NOT_ANSWERED = Ellipsis


def answer(exercise_id: str, part: str, value) -> None:
    """Record the answer to one part, e.g. ``answer("1-2", "a", 141.1)``.

    ``...`` (Ellipsis) means "not answered yet" and records nothing. Values
    must be plain Python numbers, strings, True/False or lists of numbers; a
    NaN, an infinity, a numpy scalar or any other object is recorded as
    rejected, with the reason printed now.
    """
    ex = registry.get(exercise_id)
    prt = ex.part(part)
    if value is _NOT_ANSWERED:
        return
    record = {"exercise": ex.id, "part": prt.part, **feedback.encode_answer(value)}
    _state["answers"][(ex.id, prt.part)] = record
    _emit(record)
    if "rejected" in record:
        print(f"{ex.id}({prt.part}) not accepted: {record['rejected']}")


def recorded() -> dict[tuple[str, str], dict]:
    """A copy of the records kept so far, keyed by (exercise id, part)."""
    return {k: dict(v) for k, v in _state["answers"].items()}


_MARK = {"correct": "✅", "manual": "📝", "missing": "⬜", "partial": "🟨"}


class CheckReport(render.Markdown):
    """The verdicts of :func:`check`; shown as a Markdown list in a notebook."""

    def __init__(self, results: list[feedback.PartResult], text: str):
        super().__init__(text)
        self.results = results

    @property
    def score(self) -> float:
        return sum(r.points for r in self.results)


def check(target: str) -> CheckReport:
    """Immediate feedback on the recorded answers of one exercise (``"1-2"``) or a chapter (``"ch01"``).

    The references are recomputed here with :mod:`aiinfra` for this student's
    parameters, exactly as the grader does; they are never printed.
    """
    results = []
    lines = []
    for ex in registry.resolve(target):
        ns = namespace(ex, params_for(ex, _student_for(ex), _variants_for(ex)))
        refs = references(ex, ns)
        lines.append(f"**Exercise {ex.id}**")
        for p in ex.parts:
            r = feedback.score_part(ex.id, p, _state["answers"].get((ex.id, p.part)), refs.get(p.part))
            results.append(r)
            mark = _MARK.get(r.status, "❌")
            pts = f"{r.points:g}/{r.max_points:g}" if r.status != "manual" else f"?/{r.max_points:g}"
            lines.append(f"- {mark} ({p.part}) {pts}: {r.reason}")
    return CheckReport(results, "\n".join(lines) + "\n")


def show(target: str, solutions: bool = True) -> render.MystBlocks:
    """The book's exercise blocks (MyST) for a chapter (``"ch01"``) or one exercise (``"1-2"``).

    In a chapter page: a cell tagged ``remove-input`` holding
    ``show("ch01")``. Solutions sit in dropdowns unless ``solutions=False``.
    """
    if not isinstance(solutions, bool):
        raise ValueError(f"solutions must be True or False, got {solutions!r}")
    return render.MystBlocks(render.book_markdown(registry.resolve(target), solutions=solutions))
