"""Answer validation and feedback, shared by the notebook self-check and the grader.

The data path is one-way:

1. :func:`encode_answer` runs in the student's kernel and turns the object
   passed to ``answer()`` into a record that holds only plain JSON values,
   or a rejection reason;
2. :func:`decode_record` runs in the grader on the parsed JSON and checks the
   types again (the kernel side may have been patched);
3. :func:`score_part` compares a decoded value with the reference the grader
   computed itself, and explains a miss (off by 8x, 1.0737x, 2x, 1000x, or
   wrong with the part's hint).

``check()`` in the notebook runs exactly steps 1 to 3 on the same code, so a
student sees the verdict the grader will give.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from aiinfra import units

MAX_TEXT_CHARS = 20_000
MAX_LIST_ITEMS = 64
MAX_ABS_INT = 10**300

#: (factor, status, question) of the slips the feedback recognises; the
#: comparison tries each factor in both directions, in this order.
SLIPS: tuple[tuple[float, str, str], ...] = (
    (float(units.BITS_PER_BYTE), "bits-vs-bytes", "bits vs bytes? (1 byte = 8 bits)"),
    (units.GiB / units.GB, "gib-vs-gb", "GiB vs GB? (1 GiB = 2**30 B = 1.0737 GB)"),
    (2.0, "per-direction-vs-both", "per direction vs both directions added?"),
    (1000.0, "unit-prefix", "a unit prefix? (ms vs s, MB vs GB, k vs M)"),
)

STATUSES = ("correct", "partial", "wrong", "missing", "rejected", "manual") + tuple(s for _, s, _ in SLIPS)


def _describe_type(obj) -> str:
    cls = type(obj)
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", "?")
    if not isinstance(module, str) or not isinstance(name, str):
        return "an unknown type"
    return name if module == "builtins" else f"{module}.{name}"


def _plain_number_reason(v) -> str | None:
    """Why ``v`` is not a plain finite number, or None when it is one."""
    t = type(v)
    if t is bool:
        return "True/False where a number is due"
    if t is int:
        return None if abs(v) < MAX_ABS_INT else "an integer too large to grade"
    if t is float:
        if math.isnan(v):
            return "NaN is not a number that can be graded"
        if math.isinf(v):
            return "infinity is not a number that can be graded"
        return None
    if t is str:
        return "a string where a number is due; pass the number itself, not its text"
    desc = _describe_type(v)
    if desc.startswith("numpy."):
        return f"{desc} is a numpy type; pass a plain Python number, e.g. float(x)"
    if isinstance(v, (int, float)):
        return f"{desc} is a subclass of int/float; pass a plain Python number, e.g. float(x)"
    return f"an object of type {desc} cannot be graded; answers are plain numbers, strings or lists of numbers"


def encode_answer(obj) -> dict[str, Any]:
    """Kernel side: ``{"value": v}`` with ``v`` plain JSON, or ``{"rejected": reason}``.

    Only exact built-in types pass: ``int``, ``float`` (finite), ``bool``,
    ``str`` (up to 20,000 characters) and ``list``/``tuple`` of plain numbers
    (up to 64 items). The object's own methods are never called, so an object
    with a custom ``__eq__`` cannot pretend to be a number.
    """
    t = type(obj)
    if t is bool:
        return {"value": obj}
    if t is str:
        if len(obj) > MAX_TEXT_CHARS:
            return {"rejected": f"text longer than {MAX_TEXT_CHARS} characters"}
        return {"value": obj}
    if t in (list, tuple):
        if len(obj) > MAX_LIST_ITEMS:
            return {"rejected": f"a list longer than {MAX_LIST_ITEMS} items"}
        for i, v in enumerate(obj):
            why = _plain_number_reason(v)
            if why:
                return {"rejected": f"item {i} of the list: {why}"}
        return {"value": [v for v in obj]}
    why = _plain_number_reason(obj)
    if why:
        return {"rejected": why}
    return {"value": obj}


@dataclass(frozen=True)
class Decoded:
    """A value read back from a record, or the reason it cannot be graded."""

    value: Any = None
    rejected: str | None = None


def decode_record(record) -> Decoded:
    """Grader side: re-check a record parsed from JSON (never trusting the kernel)."""
    if type(record) is not dict:
        return Decoded(rejected="the answer record is not a JSON object")
    if "rejected" in record:
        why = record["rejected"]
        why = why[:300] if type(why) is str else "rejected in the notebook"
        return Decoded(rejected=why)
    if "value" not in record:
        return Decoded(rejected="the answer record holds no value")
    v = record["value"]
    if type(v) is list:
        if len(v) > MAX_LIST_ITEMS:
            return Decoded(rejected=f"a list longer than {MAX_LIST_ITEMS} items")
        for i, item in enumerate(v):
            why = _plain_number_reason(item)
            if why:
                return Decoded(rejected=f"item {i} of the list: {why}")
        return Decoded(value=v)
    if type(v) is str:
        return Decoded(value=v) if len(v) <= MAX_TEXT_CHARS else Decoded(rejected="text too long")
    if type(v) is bool:
        return Decoded(value=v)
    why = _plain_number_reason(v)
    return Decoded(rejected=why) if why else Decoded(value=v)


def _close(x: float, ref: float, rel_tol: float, abs_tol: float) -> bool:
    return abs(x - ref) <= max(rel_tol * abs(ref), abs_tol)


def diagnose(x: float, ref: float, rel_tol: float, abs_tol: float = 0.0) -> tuple[str, str]:
    """``(status, message)`` for a plain number ``x`` against the reference ``ref``.

    The message never contains the reference value.
    """
    if _close(x, ref, rel_tol, abs_tol):
        return "correct", "correct"
    if ref != 0 and x != 0:
        for factor, status, question in SLIPS:
            for f, word in ((factor, "large"), (1.0 / factor, "small")):
                if _close(x, ref * f, rel_tol, abs_tol * factor):
                    shown = f"{factor:.4g}"
                    return status, f"{shown}x too {word}: {question}"
    return "wrong", "not within the tolerance"


@dataclass(frozen=True)
class PartResult:
    """The verdict on one part: what the gradebook stores and check() prints."""

    exercise: str
    part: str
    kind: str
    points: float
    max_points: float
    status: str
    reason: str
    answer: Any = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tolerance_text(part) -> str:
    tol = f"{part.rel_tol:.2%}".rstrip("0").rstrip(".") if part.rel_tol else ""
    return f"within {tol}" if tol else f"within {part.abs_tol:g} {part.unit}".rstrip()


def score_part(ex_id: str, part, record, ref) -> PartResult:
    """Score one part. ``record`` is the raw record (or None), ``ref`` the grader's reference."""
    base = dict(exercise=ex_id, part=part.part, kind=part.kind, max_points=float(part.points))
    if record is None:
        return PartResult(points=0.0, status="missing", reason="no answer recorded", **base)
    dec = decode_record(record)
    if dec.rejected:
        return PartResult(points=0.0, status="rejected", reason=f"rejected: {dec.rejected}", **base)
    v = dec.value
    if part.kind == "free":
        if type(v) is not str or not v.strip():
            return PartResult(points=0.0, status="rejected", reason="rejected: a free-response answer is text", answer=v, **base)
        return PartResult(points=0.0, status="manual", reason="needs manual grading", answer=v, **base)
    if part.kind == "choice":
        options = ", ".join(repr(o) for o in part.options)
        if not any(type(v) is type(o) and v == o for o in part.options):
            return PartResult(points=0.0, status="rejected", reason=f"rejected: the answer must be one of {options}", answer=v, **base)
        if v == ref and type(v) is type(ref):
            return PartResult(points=float(part.points), status="correct", reason="correct", answer=v, **base)
        return PartResult(points=0.0, status="wrong", reason=f"wrong. Hint: {part.hint}", answer=v, **base)
    # numeric
    if type(ref) is list:
        if type(v) is not list:
            return PartResult(points=0.0, status="rejected", reason=f"rejected: a list of {len(ref)} numbers is due", answer=v, **base)
        if len(v) != len(ref):
            return PartResult(points=0.0, status="rejected",
                              reason=f"rejected: a list of {len(ref)} numbers is due, got {len(v)}", answer=v, **base)
        verdicts = [diagnose(float(x), float(r), part.rel_tol, part.abs_tol) for x, r in zip(v, ref)]
        n_ok = sum(1 for s, _ in verdicts if s == "correct")
        statuses = {s for s, _ in verdicts}
        if n_ok == len(ref):
            return PartResult(points=float(part.points), status="correct", reason="correct", answer=v, **base)
        if len(statuses) == 1:
            status, msg = verdicts[0]
            why = f"every item {msg}" if status != "wrong" else f"no item {_tolerance_text(part)}. Hint: {part.hint}"
            return PartResult(points=0.0, status=status, reason=why, answer=v, **base)
        items = "; ".join(f"item {i + 1}: {m}" for i, (_, m) in enumerate(verdicts))
        pts = float(part.points) * n_ok / len(ref)
        return PartResult(points=pts, status="partial", reason=f"{n_ok} of {len(ref)} items correct ({items}). Hint: {part.hint}",
                          answer=v, **base)
    if type(v) is list:
        return PartResult(points=0.0, status="rejected", reason="rejected: one number is due, not a list", answer=v, **base)
    if type(v) in (bool, str):
        what = "True/False" if type(v) is bool else "a string"
        return PartResult(points=0.0, status="rejected", reason=f"rejected: {what} where a number is due", answer=v, **base)
    status, msg = diagnose(float(v), float(ref), part.rel_tol, part.abs_tol)
    if status == "correct":
        return PartResult(points=float(part.points), status="correct", reason="correct", answer=v, **base)
    if status == "wrong":
        msg = f"wrong: not {_tolerance_text(part)} of the reference. Hint: {part.hint}"
    else:
        msg = f"wrong, {msg}"
    return PartResult(points=0.0, status=status, reason=msg, answer=v, **base)
