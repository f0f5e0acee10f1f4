"""Per-student parameters and the references computed from them.

With variants off every student gets each parameter's ``default``. With
variants on, parameter ``name`` of exercise ``ex`` for student ``sid`` is
``choices[h % len(choices)]`` where ``h`` is the first 8 bytes of
``HMAC-SHA256(key, "aiinfra-variant/" + sid + "/" + ex + "/" + name)`` and ``key`` is
the instructor's secret variant key (32 random bytes, kept in a key file outside the
hand-out: :func:`new_key`, :func:`read_key`). Without the key nobody can compute a
student's parameters, not even their own: ``python -m aiinfra_build.build_exercises --variants --key FILE
--roster FILE`` writes each student a notebook that carries their own parameters, and the
grader, given the same key, recomputes them. The grader never hands the key to a kernel.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiinfra.course.exercises._format import Exercise
from aiinfra.course.exercises.record import MAX_ID_CHARS, student_id  # noqa: F401  (re-exported)

KEY_BYTES = 32


def new_key() -> str:
    """A fresh variant key, as the text of a key file (64 hex digits and a newline)."""
    return secrets.token_hex(KEY_BYTES) + "\n"


def parse_key(text: str) -> bytes:
    """The key in a key file's text; ValueError unless it is 64 hex digits."""
    digits = text.strip() if isinstance(text, str) else ""
    if len(digits) != 2 * KEY_BYTES or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise ValueError(f"key must be {2 * KEY_BYTES} hex digits (a file made by new_key())")
    return bytes.fromhex(digits)


def read_key(path) -> bytes:
    """The variant key in the file ``path`` (see :func:`new_key`); ValueError naming the file otherwise."""
    try:
        data = Path(path).read_bytes()[: 4 * KEY_BYTES]
        return parse_key(data.decode("ascii"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"key file {str(path)!r} cannot be used: {exc}") from None


def key_id(key: bytes) -> str:
    """A public name of a key (it reveals nothing of it): which key a gradebook was graded with."""
    return hashlib.sha256(b"aiinfra-variant-key-id/" + key).hexdigest()[:16]


def _pick(key: bytes, sid: str, exercise_id: str, name: str, n: int) -> int:
    message = f"aiinfra-variant/{sid}/{exercise_id}/{name}".encode("utf-8", "surrogatepass")
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % n


def params_for(ex: Exercise, sid: str | None, variants: bool, key: bytes | None = None) -> dict[str, Any]:
    """The parameters student ``sid`` sees in exercise ``ex``.

    ``variants=False`` gives the defaults (``sid`` and ``key`` may be ``None``);
    ``variants=True`` requires a valid ``sid`` and the instructor's ``key`` (32 bytes).
    """
    if not isinstance(variants, bool):
        raise ValueError(f"variants must be True or False, got {variants!r}")
    if not variants:
        return {name: prm.default for name, prm in ex.params.items()}
    sid = student_id(sid)
    if type(key) is not bytes or len(key) != KEY_BYTES:
        raise ValueError(
            f"key must be the instructor's {KEY_BYTES}-byte variant key (read_key(FILE)); per-student "
            "parameters cannot be computed without it"
        )
    out = {}
    for name in sorted(ex.params):
        prm = ex.params[name]
        out[name] = (
            prm.choices[_pick(key, sid, ex.id, name, len(prm.choices))] if prm.choices else prm.default
        )
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
