"""What a notebook calls: ``configure``, ``set_student``, ``params``, ``prompt``, ``answer``, ``check``.

Two modes, one API:

* **At home** (Colab, JupyterLab, the book) everything is computed here from
  the exercise definitions: ``params()`` and ``prompt()`` for this student,
  and ``check()`` recomputes the references with :mod:`aiinfra` and prints a
  verdict per part (never the expected value).
* **While graded** (``aiinfra-grade`` sets ``$AIINFRA_SHEET``), the
  definitions and references are out of reach (hidden by the sandbox):
  ``params()`` and ``prompt()`` read the grader's sheet, ``answer()`` validates
  the ids against it and records, and ``check()`` only says that the grader
  scores the answers. See :mod:`aiinfra.course.exercises.record`.

State lives in this module, inside the kernel. ``answer()`` keeps a plain-JSON
record per part and, in a graded run, sends it to the grader as one JSON line.
The scores are computed in the grader.
"""

from __future__ import annotations

import os
from typing import Any

from aiinfra.course.exercises import feedback, record
from aiinfra.course.exercises.record import ENV_STUDENT, ENV_VARIANTS, Markdown, student_id

__all__ = [
    "ENV_STUDENT",
    "ENV_VARIANTS",
    "answer",
    "check",
    "configure",
    "current_student",
    "params",
    "prompt",
    "recorded",
    "reset",
    "set_student",
    "show",
]

_state: dict[str, Any] = {"student": None, "variants": {}, "params": {}, "answers": {}}


def reset() -> None:
    """Forget the student id, the configuration and every recorded answer."""
    _state.update(student=None, variants={}, params={}, answers={})


def configure(chapter: str, variants: bool = False, params: dict | None = None) -> None:
    """Say which chapter this notebook is, whether per-student variants are on and, with them,
    this student's parameters (``{exercise id: {name: value}}``).

    Per-student parameters are drawn with the instructor's secret key, which never leaves the
    instructor: the personal notebook (``python -m aiinfra_build.build_exercises --variants --key FILE --roster
    FILE``) passes them here, for ``params()``, ``prompt()`` and ``check()`` at home. The grader
    ignores all of this and uses the instructor's settings and key instead.
    """
    from aiinfra.course.exercises import registry

    if record.sheet() is None:
        registry.chapter(chapter)
    else:
        registry._chapter_id(chapter)
    if not isinstance(variants, bool):
        raise ValueError(f"variants must be True or False, got {variants!r}")
    if params is not None and (not variants or type(params) is not dict):
        raise ValueError(
            f"params must be a dict of per-exercise parameters, with variants=True; got {params!r}"[:200]
        )
    _state["variants"][chapter] = variants
    if params is not None:
        _state["params"][chapter] = {
            ex_id: {k: record.decode_value(v) for k, v in values.items()} for ex_id, values in params.items()
        }


def set_student(sid: str) -> None:
    """Record the student id that picks this notebook's parameters.

    An empty string means "not set here": the id then comes from the
    ``AIINFRA_STUDENT_ID`` environment variable.
    """
    if isinstance(sid, str) and type(sid) is str and sid.strip() == "":
        _state["student"] = None
        return
    _state["student"] = student_id(sid)
    record.emit({"student": _state["student"]})


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


def _home_params(ex) -> dict[str, Any]:
    """Defaults, or with variants on the student's own parameters, as their notebook carries them."""
    from aiinfra.course.exercises.variants import params_for

    if not _variants_for(ex):
        return params_for(ex, None, False)
    _student_for(ex)
    mine = _state["params"].get(ex.chapter, {}).get(ex.id)
    if mine is None:
        raise ValueError(
            f"this notebook uses per-student variants but carries no parameters for exercise {ex.id}: "
            "work in the personal notebook your instructor made for you (its first cell holds your parameters)"
        )
    if set(mine) != set(ex.params):
        raise ValueError(f"params of exercise {ex.id} must name {sorted(ex.params)}, got {sorted(mine)}")
    return dict(mine)


def _home_namespace(exercise_id: str):
    from aiinfra.course.exercises import registry
    from aiinfra.course.exercises.variants import namespace

    ex = registry.get(exercise_id)
    return ex, namespace(ex, _home_params(ex))


def params(exercise_id: str) -> dict[str, Any]:
    """This student's parameters for one exercise, with the values the statement derives from them."""
    sheet = record.sheet()
    if sheet is not None:
        entry = record.sheet_exercise(sheet, exercise_id)
        return {k: record.decode_value(v) for k, v in entry["params"].items()}
    return _home_namespace(exercise_id)[1]


def prompt(exercise_id: str) -> Markdown:
    """The statement of one exercise with this student's parameters (plain Markdown)."""
    sheet = record.sheet()
    if sheet is not None:
        return Markdown(record.sheet_exercise(sheet, exercise_id)["prompt"])
    from aiinfra.course.exercises import render

    ex, ns = _home_namespace(exercise_id)
    return Markdown(
        render.plain(render.statement_markdown(ex, ns, heading=f"### Exercise {render.title_text(ex)}"))
    )


_NOT_ANSWERED = Ellipsis


def _part_key(exercise_id, part) -> tuple[str, str]:
    """(exercise id, part letter) after validation against the sheet or the definitions."""
    sheet = record.sheet()
    if sheet is None:
        from aiinfra.course.exercises import registry

        ex = registry.get(exercise_id)
        return ex.id, ex.part(part).part
    parts = record.sheet_exercise(sheet, exercise_id)["parts"]
    if not isinstance(part, str) or part not in parts:
        raise ValueError(f"exercise {exercise_id} has no part {part!r}; its parts are {parts}")
    return exercise_id, part


def answer(exercise_id: str, part: str, value) -> None:
    """Record the answer to one part, e.g. ``answer("1-2", "a", 141.1)``.

    ``...`` (Ellipsis) means "not answered yet" and records nothing. Values
    must be plain Python numbers, strings, True/False or lists of numbers; a
    NaN, an infinity, a numpy scalar or any other object is recorded as
    rejected, with the reason printed now.
    """
    ex_id, letter = _part_key(exercise_id, part)
    if value is _NOT_ANSWERED:
        return
    rec = {"exercise": ex_id, "part": letter, **feedback.encode_answer(value)}
    _state["answers"][(ex_id, letter)] = rec
    record.emit(rec)
    if "rejected" in rec:
        print(f"{ex_id}({letter}) not accepted: {rec['rejected']}")


def recorded() -> dict[tuple[str, str], dict]:
    """A copy of the records kept so far, keyed by (exercise id, part)."""
    return {k: dict(v) for k, v in _state["answers"].items()}


_MARK = {"correct": "✅", "manual": "📝", "missing": "⬜", "partial": "🟨"}

GRADING_NOTE = (
    "check() gives no verdicts while the notebook is being graded: the grader scores the "
    "recorded answers itself."
)


class CheckReport(Markdown):
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
    parameters, exactly as the grader does; they are never printed. While
    graded, there are no references here and the report says so.
    """
    if record.sheet() is not None:
        return CheckReport([], GRADING_NOTE + "\n")
    from aiinfra.course.exercises import registry
    from aiinfra.course.exercises.variants import namespace, references, resolved_slips

    results = []
    lines = []
    for ex in registry.resolve(target):
        ns = namespace(ex, _home_params(ex))
        refs, slips = references(ex, ns), resolved_slips(ex, ns)
        lines.append(f"**Exercise {ex.id}**")
        for p in ex.parts:
            r = feedback.score_part(
                ex.id, p, _state["answers"].get((ex.id, p.part)), refs.get(p.part), slips.get(p.part), ns
            )
            results.append(r)
            mark = _MARK.get(r.status, "❌")
            pts = f"{r.points:g}/{r.max_points:g}" if r.status != "manual" else f"?/{r.max_points:g}"
            lines.append(f"- {mark} ({p.part}) {pts}: {r.reason}")
    return CheckReport(results, "\n".join(lines) + "\n")


ENV_BOOK_BUILD = "AIINFRA_BOOK_BUILD"


def show(target: str, solutions: bool = True):
    """The exercises of a chapter (``"ch01"``) or one exercise (``"1-2"``), with their solutions.

    In a chapter page: a cell tagged ``remove-input`` holding ``show("ch01")``.
    While the book builds (``$AIINFRA_BOOK_BUILD`` is ``1``) this returns MyST
    exercise blocks with solutions in dropdowns; in a live kernel (Colab,
    JupyterLab) it returns plain Markdown with each solution folded in
    ``<details>``. ``solutions=False`` leaves the solutions out.
    """
    from aiinfra.course.exercises import registry, render

    if not isinstance(solutions, bool):
        raise ValueError(f"solutions must be True or False, got {solutions!r}")
    exercises = registry.resolve(target)
    if os.environ.get(ENV_BOOK_BUILD, "") == "1":
        return render.MystBlocks(render.book_markdown(exercises, solutions=solutions))
    return Markdown(render.notebook_markdown(exercises, solutions=solutions))
