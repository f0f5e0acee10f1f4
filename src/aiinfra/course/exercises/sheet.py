"""The sheet the grader hands a graded kernel, built from the exercise definitions.

Runs in the grader's process (the definitions are hidden inside the sandbox).
For one student and one assignment it holds, per exercise, the part letters,
the parameter namespace that ``params()`` returns at home for the same id and
variants setting, and the statement that ``prompt()`` shows; never a reference.
:mod:`aiinfra.course.exercises.record` reads it back inside the kernel.
"""

from __future__ import annotations

import json

from aiinfra.course.exercises import registry, render
from aiinfra.course.exercises.record import SHEET_VERSION, encode_value
from aiinfra.course.exercises.variants import namespace, params_for


def build(chapter: str, student: str | None, variants: bool, key: bytes | None = None) -> dict:
    """The sheet of ``chapter`` for ``student`` (variants on or off; on needs the instructor's ``key``)."""
    exercises = {}
    for ex in registry.chapter(chapter):
        ns = namespace(ex, params_for(ex, student, variants, key))
        exercises[ex.id] = {
            "parts": [p.part for p in ex.parts],
            "params": {k: encode_value(v) for k, v in ns.items()},
            "prompt": render.plain(
                render.statement_markdown(ex, ns, heading=f"### Exercise {render.title_text(ex)}")
            ),
        }
    return {"version": SHEET_VERSION, "chapter": chapter, "variants": variants, "exercises": exercises}


def dumps(sheet: dict) -> bytes:
    return json.dumps(sheet, sort_keys=True, allow_nan=False).encode("utf-8")
