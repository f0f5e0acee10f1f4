"""Per-student parameters and the references computed from them.

With variants off every student gets each parameter's ``default``. With
variants on, parameter ``name`` of exercise ``ex`` for student ``sid`` is
``choices[h % len(choices)]`` where ``h`` is the first 8 bytes of
``sha256("aiinfra-variant/" + sid + "/" + ex + "/" + name)``. The rule uses no
secret and no random-number generator, so a notebook in Colab, the book and
the grader all derive the same parameters from the same id.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from typing import Any

from aiinfra.course.exercises._format import Exercise
from aiinfra.course.exercises.record import MAX_ID_CHARS, student_id  # noqa: F401  (re-exported)


def _pick(sid: str, exercise_id: str, name: str, n: int) -> int:
    digest = hashlib.sha256(f"aiinfra-variant/{sid}/{exercise_id}/{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def params_for(ex: Exercise, sid: str | None, variants: bool) -> dict[str, Any]:
    """The parameters student ``sid`` sees in exercise ``ex``.

    ``variants=False`` gives the defaults (``sid`` may be ``None``);
    ``variants=True`` requires a valid ``sid``.
    """
    if not isinstance(variants, bool):
        raise ValueError(f"variants must be True or False, got {variants!r}")
    if not variants:
        return {name: prm.default for name, prm in ex.params.items()}
    sid = student_id(sid)
    out = {}
    for name in sorted(ex.params):
        prm = ex.params[name]
        out[name] = prm.choices[_pick(sid, ex.id, name, len(prm.choices))] if prm.choices else prm.default
    return {name: out[name] for name in ex.params}


def namespace(ex: Exercise, params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters plus the exercise's ``given`` values: what prompts and references see."""
    ns = dict(params)
    if ex.given is not None:
        extra = dict(ex.given(dict(params)))
        clash = set(extra) & set(ns)
        if clash:
            raise ValueError(f"given() of exercise {ex.id} redefines parameters {sorted(clash)}")
        ns.update(extra)
    return ns


def _plain_reference(ex: Exercise, part, value):
    """References must be plain Python values so that solutions can pass them to answer()."""
    where = f"reference of {ex.id}({part.part})"
    if part.kind == "numeric":
        items = value if type(value) is list else [value]
        if type(value) is not list and type(value) not in (int, float):
            raise ValueError(f"{where} must be a float or a list of floats, got {type(value).__name__}")
        for v in items:
            if type(v) not in (int, float) or not math.isfinite(v):
                raise ValueError(f"{where} must hold finite plain floats, got {v!r} ({type(v).__name__})")
        return value
    if value not in part.options or type(value) not in (str, bool):
        raise ValueError(f"{where} must be one of {part.options!r}, got {value!r}")
    return value


def references(ex: Exercise, ns: Mapping[str, Any]) -> dict[str, Any]:
    """Reference answers of the auto-graded parts, keyed by part letter."""
    return {p.part: _plain_reference(ex, p, p.ref(dict(ns))) for p in ex.parts if p.kind != "free"}


def _plain_slip_value(ex: Exercise, part, slip, value):
    where = f"slip {slip.status!r} of {ex.id}({part.part})"
    items = value if type(value) is list else [value]
    if type(value) not in (int, float, list) or not all(
        type(v) in (int, float) and math.isfinite(v) for v in items
    ):
        raise ValueError(f"{where} must give a finite plain float or a list of them, got {value!r}")
    return value


def resolved_slips(ex: Exercise, ns: Mapping[str, Any]) -> dict[str, list[dict]]:
    """The slips of each numeric part that depend on the namespace, computed for ``ns``.

    Part letter -> list of ``{"status", "question", "factor"}`` or
    ``{"status", "question", "value"}`` (plain JSON), for
    :func:`aiinfra.course.exercises.feedback.score_part`.
    """
    out = {}
    for p in ex.parts:
        got = []
        for s in getattr(p, "slips", ()):
            if isinstance(s, str) or (s.factor is not None and not callable(s.factor)):
                continue
            if s.value is not None:
                got.append(
                    {
                        "status": s.status,
                        "question": s.question,
                        "value": _plain_slip_value(ex, p, s, s.value(dict(ns))),
                    }
                )
            else:
                factor = s.factor(dict(ns))
                if type(factor) not in (int, float) or not factor > 1:
                    raise ValueError(
                        f"slip {s.status!r} of {ex.id}({p.part}) must give a factor > 1, got {factor!r}"
                    )
                got.append({"status": s.status, "question": s.question, "factor": float(factor)})
        if got:
            out[p.part] = got
    return out
