"""Answer validation and feedback, shared by the notebook self-check and the grader.

The data path is one-way:

1. :func:`encode_answer` runs in the student's kernel and turns the object
   passed to ``answer()`` into a record that holds only plain JSON values,
   or a rejection reason;
2. :func:`decode_record` runs in the grader on the parsed JSON and checks the
   types again (the kernel side may have been patched);
3. :func:`score_part` compares a decoded value with the reference the grader
   computed itself, and explains a miss: a slip the part's quantity can
   have (a unit prefix, GiB vs GB for bytes and for the times and rates
   derived from bytes, bits vs bytes where bits are in play, a fraction for a
   percentage, and the slips the part declares: one
   direction of a link, one GPU for a node, a model-specific one), named
   only when the answer matches it far more tightly than the tolerance;
   otherwise "wrong" with the part's hint.

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

#: A slip is named only when the answer matches it this many times more tightly than the
#: part's tolerance (and never more loosely than 0.2 %): 16.38 against 15.14 is 8 % high, close
#: to 1.0737 (GiB vs GB) within 0.8 %, which is no evidence of that slip.
SLIP_TIGHTNESS = 5.0
SLIP_MAX_REL = 0.002

BITS = ("bits-vs-bytes", "bits vs bytes? (1 byte = 8 bits)", float(units.BITS_PER_BYTE))
DIRECTION = ("per-direction-vs-both", "per direction vs both directions added?", 2.0)
_NAMED = {BITS[0]: BITS, DIRECTION[0]: DIRECTION}

#: Units that come with prefixes, by quantity. A number given in a sibling unit is a prefix slip.
UNIT_FAMILIES: dict[str, dict[str, float]] = {
    "bytes": {
        "B": 1.0,
        "KB": units.KB,
        "MB": units.MB,
        "GB": units.GB,
        "TB": units.TB,
        "PB": units.PB,
        "KiB": float(units.KiB),
        "MiB": float(units.MiB),
        "GiB": float(units.GiB),
        "TiB": float(units.TiB),
    },
    "bits": {"bits": 1.0, "kbit": units.KILO, "Mbit": units.MEGA, "Gbit": units.GIGA, "Tbit": units.TERA},
    "time": {"s": 1.0, "ms": units.ms, "µs": units.us, "ns": units.ns},
    "flops": {
        "FLOPs": 1.0,
        "MFLOPs": units.MEGA,
        "GFLOPs": units.GIGA,
        "TFLOPs": units.TERA,
        "PFLOPs": units.PETA,
    },
    "flop-rate": {"FLOP/s": 1.0, "GFLOP/s": units.GIGA, "TFLOP/s": units.TERA, "PFLOP/s": units.PETA},
    "power": {"W": 1.0, "kW": units.KILO, "MW": units.MEGA, "GW": units.GIGA},
}
UNIT_FAMILIES["byte-rate"] = {f"{k}/s": v for k, v in UNIT_FAMILIES["bytes"].items()}
UNIT_FAMILIES["bit-rate"] = {
    ("bit/s" if k == "bits" else f"{k}/s"): v for k, v in UNIT_FAMILIES["bits"].items()
}
_ALIASES = {"us": "µs", "bit": "bits", "FLOP": "FLOPs", "Gb/s": "Gbit/s"}
_WORDS = {
    "": 1.0,
    "thousand": units.KILO,
    "million": units.MEGA,
    "billion": units.GIGA,
    "trillion": units.TERA,
}
_SPELLED = {"B": "bytes", "B/s": "bytes per second", "s": "seconds", "W": "watts"}


def unit_family(unit: str) -> tuple[str, dict[str, float]]:
    """``(quantity, {unit: scale})`` for a unit with prefixes, else ``("", {})``.

    ``"GB"`` gives the byte units, ``"ms"`` the times, ``"million GPU-hours"``
    the counts of GPU-hours with a word prefix (thousand ... trillion).
    """
    u = _ALIASES.get(unit, unit)
    for kind, family in UNIT_FAMILIES.items():
        if u in family:
            return kind, family
    word, _, noun = u.partition(" ")
    if word in _WORDS and noun:
        return "count", {(f"{w} {noun}" if w else noun): v for w, v in _WORDS.items()}
    return "", {}


def _factor_text(f: float) -> str:
    return f"{f:,.0f}" if f >= 100 and abs(f - round(f)) < 1e-6 * f else f"{f:.5g}"


def _mult_message(mult: float, question: str) -> str:
    word, f = ("large", mult) if mult > 1 else ("small", 1.0 / mult)
    return f"{_factor_text(f)}x too {word}: {question}"


def _binary_pair(a: str, b: str) -> tuple[str, str] | None:
    """(binary, decimal) when the two units differ only in 'i' (GiB and GB, MiB/s and MB/s)."""
    for x, y in ((a, b), (b, a)):
        if "i" in x and x.replace("i", "", 1) == y:
            return x, y
    return None


def unit_candidates(unit: str) -> list[tuple[str, str, float]]:
    """``(status, message, x / ref)`` of the slips the part's unit implies."""
    u = _ALIASES.get(unit, unit)
    out = []
    if u == "%":
        out.append(
            (
                "fraction-for-percent",
                "100x too small: you gave a fraction; the part asks for a percentage",
                0.01,
            )
        )
    elif u == "":
        out.append(
            (
                "percent-for-fraction",
                "100x too large: you gave a percentage; the part asks for a fraction (0 to 1)",
                100.0,
            )
        )
    kind, family = unit_family(u)
    if not family:
        return out + derived_unit_candidates(u)
    u = _ALIASES.get(u, u)
    for other, scale in family.items():
        if other == u:
            continue
        mult = family[u] / scale
        pair = _binary_pair(u, other) if kind in ("bytes", "byte-rate") else None
        if pair:
            binary, decimal = pair
            ratio = family[binary] / family[decimal]
            question = f"{binary} vs {decimal}? (1 {binary} = {ratio:.5g} {decimal})"
            out.append(("gib-vs-gb", _mult_message(mult, question), mult))
        elif not 1 / 1.2 < mult < 1.2:
            spelled = _SPELLED.get(other, other)
            out.append(
                ("unit-prefix", _mult_message(mult, f"did you give {spelled}? The part asks for {u}."), mult)
            )
    if kind in ("bits", "bit-rate"):
        out += _two_way(BITS)
    return out + derived_unit_candidates(u)


#: Binary prefixes against their decimal twins: a GiB-for-GB slip in a byte count or a bandwidth
#: carries through a division into a time (bytes / bandwidth) or a rate (bandwidth / bytes).
_BINARY_PREFIXES = (("KiB", "KB"), ("MiB", "MB"), ("GiB", "GB"), ("TiB", "TB"))


def derived_unit_candidates(unit: str) -> list[tuple[str, str, float]]:
    """``(status, message, x / ref)`` of the GiB-vs-GB slips a time or a rate inherits from bytes.

    A time (``"ms"``) or a rate that is not itself bytes, bits or FLOPs per
    second (``"tok/s"``, ``"requests/s"``) is derived by dividing bytes by a
    bandwidth or the reverse, so a binary prefix read as decimal in either
    input scales it by ``1024^k / 1000^k``, up or down: 1.0737 for GiB.
    """
    u = _ALIASES.get(unit, unit)
    kind, _ = unit_family(u)
    rate = u.endswith("/s") and kind not in ("byte-rate", "bit-rate", "flop-rate")
    if kind != "time" and not rate:
        return []
    out = []
    for binary, decimal in _BINARY_PREFIXES:
        ratio = UNIT_FAMILIES["bytes"][binary] / UNIT_FAMILIES["bytes"][decimal]
        question = (
            f"{binary} vs {decimal} in the bytes or bandwidth this {'time' if kind == 'time' else 'rate'} "
            f"derives from? (1 {binary} = {ratio:.5g} {decimal})"
        )
        out += [("gib-vs-gb", _mult_message(f, question), f) for f in (ratio, 1.0 / ratio)]
    return out


def _two_way(slip: tuple[str, str, float]) -> list[tuple[str, str, float]]:
    status, question, f = slip
    return [(status, _mult_message(f, question), f), (status, _mult_message(1 / f, question), 1 / f)]


def part_candidates(part, resolved=None) -> list[tuple]:
    """Every slip worth naming for ``part``: ``(status, message, "mult" | "value", number)``.

    ``resolved`` holds the part's slips that depend on the exercise namespace,
    as :func:`aiinfra.course.exercises.variants.resolved_slips` computes them;
    without it only the slips that need no namespace are tried.
    """
    out = []
    for s in resolved or ():
        if "value" in s:
            out.append((s["status"], s["question"], "value", s["value"]))
        else:
            out += [(st, m, "mult", f) for st, m, f in _two_way((s["status"], s["question"], s["factor"]))]
    for s in getattr(part, "slips", ()):
        if isinstance(s, str):
            if not (s == BITS[0] and unit_family(part.unit)[0] in ("bits", "bit-rate")):
                out += [(st, m, "mult", f) for st, m, f in _two_way(_NAMED[s])]
        elif s.factor is not None and not callable(s.factor):
            out += [(st, m, "mult", f) for st, m, f in _two_way((s.status, s.question, float(s.factor)))]
    out += [(st, m, "mult", f) for st, m, f in unit_candidates(part.unit)]
    return out


STATUSES = (
    "correct",
    "partial",
    "wrong",
    "missing",
    "rejected",
    "manual",
    BITS[0],
    DIRECTION[0],
    "gib-vs-gb",
    "unit-prefix",
    "fraction-for-percent",
    "percent-for-fraction",
    "one-gpu-vs-node",
)


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
    return (
        f"an object of type {desc} cannot be graded; answers are plain numbers, strings or lists of numbers"
    )


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


def _slip_close(x: float, target: float, scale: float, rel_tol: float, abs_tol: float) -> bool:
    rel = min(min(rel_tol, 0.01) / SLIP_TIGHTNESS, SLIP_MAX_REL)
    return abs(x - target) <= max(rel * abs(target), abs_tol * scale / SLIP_TIGHTNESS)


def diagnose(x: float, ref: float, rel_tol: float, abs_tol: float = 0.0, candidates=()) -> tuple[str, str]:
    """``(status, message)`` for a plain number ``x`` against the reference ``ref``.

    ``candidates`` are the slips worth naming for this part (see
    :func:`part_candidates`); one is named only when ``x`` matches it
    :data:`SLIP_TIGHTNESS` times more tightly than the tolerance. When
    several match equally (8x: bits, or one GPU for an 8-GPU node), the
    message asks about each. The message never contains the reference value.
    """
    if _close(x, ref, rel_tol, abs_tol):
        return "correct", "correct"
    if ref == 0 or x == 0:
        return "wrong", "not within the tolerance"
    hits = []
    for status, message, how, number in candidates:
        target = ref * number if how == "mult" else number
        scale = abs(number) if how == "mult" else abs(target / ref)
        if type(target) in (int, float) and target != 0 and _slip_close(x, target, scale, rel_tol, abs_tol):
            hits.append((abs(x - target) / abs(target), target, status, message))
    if not hits:
        return "wrong", "not within the tolerance"
    hits.sort(key=lambda h: h[0])
    best = [h for h in hits if abs(h[1] - hits[0][1]) <= 1e-9 * abs(hits[0][1])]
    messages = list(dict.fromkeys(h[3] for h in best))
    if len(messages) == 1:
        return best[0][2], messages[0]
    head, _, first = messages[0].partition(": ")
    rest = [m.partition(": ")[2] or m for m in messages[1:]]
    return best[0][2], f"{head}: " + " Or ".join([first] + rest) if first else " Or ".join(messages)


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
    if part.rel_tol:
        return "within " + f"{100 * part.rel_tol:.4g}%"
    return f"within {part.abs_tol:g} {part.unit}".rstrip()


def _item_candidates(candidates, i: int | None):
    """The candidates of one list item: value slips given as lists give their item ``i``."""
    out = []
    for status, message, how, number in candidates:
        if how == "value" and type(number) is list:
            if i is None or i >= len(number):
                continue
            number = number[i]
        elif how == "value" and i is not None:
            continue
        out.append((status, message, how, number))
    return out


def rubric_reason(part, ns) -> str:
    """What a self-check says of a free answer: it waits for a person, who awards the rubric's criteria.

    ``ns`` is the student's namespace (parameters and given values, never the
    references), which the criteria may quote. A part without a rubric only
    says that it needs manual grading.
    """
    from aiinfra.course.exercises.render import fill  # render imports this module's importers

    if not part.rubric:
        return "needs manual grading"
    items = "; ".join(
        f"{pts:g} point{'' if pts == 1 else 's'}: {fill(text, ns).strip()}" for pts, text in part.rubric
    )
    return f"needs manual grading. Rubric: {items}"


def score_part(ex_id: str, part, record, ref, slips=None, rubric_ns=None) -> PartResult:
    """Score one part. ``record`` is the raw record (or None), ``ref`` the grader's reference.

    ``slips`` are the part's namespace-dependent slips, resolved by
    :func:`aiinfra.course.exercises.variants.resolved_slips` (optional).
    ``rubric_ns`` (the student's namespace, for the self-check) makes a free
    answer's reason quote its rubric (:func:`rubric_reason`); the grader
    leaves it out.
    """
    base = dict(exercise=ex_id, part=part.part, kind=part.kind, max_points=float(part.points))
    if record is None:
        return PartResult(points=0.0, status="missing", reason="no answer recorded", **base)
    dec = decode_record(record)
    if dec.rejected:
        return PartResult(points=0.0, status="rejected", reason=f"rejected: {dec.rejected}", **base)
    v = dec.value
    if part.kind == "free":
        if type(v) is not str or not v.strip():
            return PartResult(
                points=0.0,
                status="rejected",
                reason="rejected: a free-response answer is text",
                answer=v,
                **base,
            )
        reason = "needs manual grading" if rubric_ns is None else rubric_reason(part, rubric_ns)
        return PartResult(points=0.0, status="manual", reason=reason, answer=v, **base)
    if part.kind == "choice":
        options = ", ".join(repr(o) for o in part.options)
        if not any(type(v) is type(o) and v == o for o in part.options):
            return PartResult(
                points=0.0,
                status="rejected",
                reason=f"rejected: the answer must be one of {options}",
                answer=v,
                **base,
            )
        if v == ref and type(v) is type(ref):
            return PartResult(points=float(part.points), status="correct", reason="correct", answer=v, **base)
        return PartResult(points=0.0, status="wrong", reason=f"wrong. Hint: {part.hint}", answer=v, **base)
    # numeric
    if type(ref) is list:
        if type(v) is not list:
            return PartResult(
                points=0.0,
                status="rejected",
                reason=f"rejected: a list of {len(ref)} numbers is due",
                answer=v,
                **base,
            )
        if len(v) != len(ref):
            return PartResult(
                points=0.0,
                status="rejected",
                reason=f"rejected: a list of {len(ref)} numbers is due, got {len(v)}",
                answer=v,
                **base,
            )
        cands = part_candidates(part, slips)
        verdicts = [
            diagnose(float(x), float(r), part.rel_tol, part.abs_tol, _item_candidates(cands, i))
            for i, (x, r) in enumerate(zip(v, ref))
        ]
        n_ok = sum(1 for s, _ in verdicts if s == "correct")
        statuses = {s for s, _ in verdicts}
        if n_ok == len(ref):
            return PartResult(points=float(part.points), status="correct", reason="correct", answer=v, **base)
        if len(statuses) == 1:
            status, msg = verdicts[0]
            why = (
                f"every item {msg}"
                if status != "wrong"
                else f"no item {_tolerance_text(part)}. Hint: {part.hint}"
            )
            return PartResult(points=0.0, status=status, reason=why, answer=v, **base)
        items = "; ".join(f"item {i + 1}: {m}" for i, (_, m) in enumerate(verdicts))
        pts = float(part.points) * n_ok / len(ref)
        return PartResult(
            points=pts,
            status="partial",
            reason=f"{n_ok} of {len(ref)} items correct ({items}). Hint: {part.hint}",
            answer=v,
            **base,
        )
    if type(v) is list:
        return PartResult(
            points=0.0, status="rejected", reason="rejected: one number is due, not a list", answer=v, **base
        )
    if type(v) in (bool, str):
        what = "True/False" if type(v) is bool else "a string"
        return PartResult(
            points=0.0, status="rejected", reason=f"rejected: {what} where a number is due", answer=v, **base
        )
    status, msg = diagnose(
        float(v), float(ref), part.rel_tol, part.abs_tol, _item_candidates(part_candidates(part, slips), None)
    )
    if status == "correct":
        return PartResult(points=float(part.points), status="correct", reason="correct", answer=v, **base)
    if status == "wrong":
        msg = f"wrong: not {_tolerance_text(part)} of the reference. Hint: {part.hint}"
    else:
        msg = f"wrong, {msg}"
    return PartResult(points=0.0, status=status, reason=msg, answer=v, **base)
