"""The recording half of the notebook API: all a graded kernel may load from this package.

Inside ``aiinfra-grade``'s sandbox the exercise definitions (``chNN.py``), the
references (:mod:`~aiinfra.course.exercises.variants`), the renderer and the notebook
generator are hidden; this module, :mod:`~aiinfra.course.exercises.feedback` (answer
encoding), :mod:`~aiinfra.course.exercises._format`, :mod:`~aiinfra.course.exercises.registry`
(which then finds no chapter) and :mod:`~aiinfra.course.exercises.runtime` remain. The
grader hands the kernel a *sheet* instead: for each exercise of the assignment,
its part letters, this student's parameters and the statement text, computed in
the grader's own process (:func:`aiinfra.course.exercises.sheet.build`). No reference
value is in it.

A graded kernel reports through one channel only: ``answer()`` and
``set_student()`` write one JSON line each to the file descriptor named by
``$AIINFRA_ANSWERS_FD``, a pipe that the grader drains while the run lasts.
"""

from __future__ import annotations

import json
import os
import unicodedata
from typing import Any

ENV_STUDENT = "AIINFRA_STUDENT_ID"
ENV_VARIANTS = "AIINFRA_VARIANTS"
ENV_ANSWERS_FD = "AIINFRA_ANSWERS_FD"
ENV_SHEET = "AIINFRA_SHEET"

MAX_ID_CHARS = 128
SHEET_VERSION = 1


def student_id(value) -> str:
    """Validate a student id: a non-empty printable string of at most 128 characters, in Unicode NFC.

    The id is normalised (NFC) first, so ``José`` typed with a combining accent (NFD, as macOS
    spells file names) and with a precomposed one is one student, with one set of parameters.
    """
    if not isinstance(value, str) or type(value) is not str:
        raise ValueError(f"student_id must be a string, got {type(value).__name__}")
    sid = unicodedata.normalize("NFC", value).strip()
    if not 1 <= len(sid) <= MAX_ID_CHARS or not sid.isprintable():
        raise ValueError(f"student_id must be 1..{MAX_ID_CHARS} printable characters, got {value!r}")
    return sid


def emit(record: dict) -> None:
    """Send one record to the grader (one JSON line); nothing happens outside a graded run."""
    fd = os.environ.get(ENV_ANSWERS_FD, "")
    if not fd.isdigit():
        return
    data = (json.dumps(record, allow_nan=False) + "\n").encode("ascii")
    view = memoryview(data)
    while view:
        view = view[os.write(int(fd), view) :]


# --- the sheet ------------------------------------------------------------------------------


def encode_value(v):
    """Namespace values as JSON: tuples are tagged so that they come back as tuples."""
    if type(v) is tuple:
        return {"tuple": [encode_value(x) for x in v]}
    if type(v) is list:
        return [encode_value(x) for x in v]
    if type(v) in (bool, int, float, str):
        return v
    raise ValueError(f"a sheet holds plain values only, got {type(v).__name__}")


def decode_value(v):
    if type(v) is dict:
        return tuple(decode_value(x) for x in v["tuple"])
    if type(v) is list:
        return [decode_value(x) for x in v]
    return v


_sheet_cache: dict[str, Any] = {}


def sheet() -> dict | None:
    """The grader's sheet when this kernel is being graded (``$AIINFRA_SHEET`` is set), else None."""
    path = os.environ.get(ENV_SHEET, "")
    if not path:
        return None
    if _sheet_cache.get("path") != path:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if data.get("version") != SHEET_VERSION:
            raise ValueError(
                f"the grader's sheet has version {data.get('version')!r}, expected {SHEET_VERSION}"
            )
        _sheet_cache.update(path=path, data=data)
    return _sheet_cache["data"]


def sheet_exercise(data: dict, exercise_id) -> dict:
    """One exercise of the sheet; a ValueError like the registry's for an unknown id."""
    exercises = data["exercises"]
    if not isinstance(exercise_id, str) or exercise_id not in exercises:
        raise ValueError(f"exercise_id must be one of {sorted(exercises)}, got {exercise_id!r}")
    return exercises[exercise_id]


# --- what notebooks display ------------------------------------------------------------------


class MystBlocks:
    """What :func:`aiinfra.course.exercises.show` returns: rendered by myst-nb as MyST."""

    def __init__(self, text: str):
        self.text = text

    def _repr_markdown_(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text


class Markdown(MystBlocks):
    """Plain Markdown for notebooks (Jupyter, Colab)."""
