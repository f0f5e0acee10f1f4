"""Find the chapter modules (``ch01.py``, ``ch02.py``, ...) and the exercises they define."""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache

from aiinfra.course.exercises._format import EXERCISE_ID, Exercise

CHAPTER = re.compile(r"^ch([0-9]{2})$")


def chapters() -> list[str]:
    """Chapter ids that have an exercise module, sorted: ``["ch01", "ch02", ...]``."""
    import aiinfra.course.exercises as pkg

    names = [m.name for m in pkgutil.iter_modules(pkg.__path__) if CHAPTER.match(m.name)]
    return sorted(names)


def _chapter_id(chapter: str) -> str:
    if not isinstance(chapter, str) or not CHAPTER.match(chapter):
        raise ValueError(f"chapter must look like 'ch01', got {chapter!r}")
    return chapter


@cache
def chapter(chapter_id: str) -> tuple[Exercise, ...]:
    """The exercises of one chapter, in order. Raises ValueError for an unknown chapter."""
    chapter_id = _chapter_id(chapter_id)
    if chapter_id not in chapters():
        raise ValueError(f"chapter must be one of {chapters()}, got {chapter_id!r}")
    mod = importlib.import_module(f"aiinfra.course.exercises.{chapter_id}")
    exercises = tuple(getattr(mod, "EXERCISES", ()))
    if not exercises or not all(isinstance(e, Exercise) for e in exercises):
        raise ValueError(
            f"aiinfra.course.exercises.{chapter_id}.EXERCISES must be a non-empty sequence of Exercise"
        )
    number = int(chapter_id[2:])
    ids = [e.id for e in exercises]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate exercise ids in {chapter_id}: {ids}")
    for e in exercises:
        if int(e.id.split("-")[0]) != number:
            raise ValueError(f"exercise {e.id} is defined in {chapter_id}; its id must start with {number}-")
    return exercises


def get(exercise_id: str) -> Exercise:
    """One exercise by id, e.g. ``get("1-2")``."""
    if not isinstance(exercise_id, str) or not EXERCISE_ID.match(exercise_id):
        raise ValueError(f"exercise_id must look like '1-2', got {exercise_id!r}")
    ch = f"ch{int(exercise_id.split('-')[0]):02d}"
    if ch not in chapters():
        raise ValueError(f"no exercise module for chapter {ch}; chapters with exercises are {chapters()}")
    for e in chapter(ch):
        if e.id == exercise_id:
            return e
    raise ValueError(f"exercise_id must be one of {[e.id for e in chapter(ch)]}, got {exercise_id!r}")


def resolve(target: str) -> tuple[Exercise, ...]:
    """``"ch01"`` gives the chapter's exercises; ``"1-2"`` gives that one exercise."""
    if isinstance(target, str) and CHAPTER.match(target):
        return chapter(target)
    if isinstance(target, str) and EXERCISE_ID.match(target):
        return (get(target),)
    raise ValueError(f"target must be a chapter id like 'ch01' or an exercise id like '1-2', got {target!r}")
