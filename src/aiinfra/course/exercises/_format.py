"""The data types of the exercise format: :class:`Exercise`, its parts and :class:`Param`.

Everything else (the book blocks, the student and solution notebooks, the
self-check and the grader) is generated from instances of these classes, so an
exercise is written once, in a chapter module such as ``ch01.py``.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiinfra.formula import check, choice

EXERCISE_ID = re.compile(r"^([1-9][0-9]?)-([1-9][0-9]?)$")
PART_ID = re.compile(r"^[a-z]$")
SLIP_STATUS = re.compile(r"^[a-z][a-z0-9-]{2,40}$")
#: Slips a part can declare by name; the feedback module knows their factor and question.
NAMED_SLIPS = ("bits-vs-bytes", "per-direction-vs-both")
#: The tolerance of a numeric part unless it sets its own (stated once at the top of each notebook).
DEFAULT_REL_TOL = 0.01
LEVELS = ("core", "extension")
_FIELD = string.Formatter()


def _template_fields(template: str) -> set[str]:
    """Names used as ``{name}`` or ``{name:spec}`` in a template."""
    names = set()
    for _, name, _, _ in _FIELD.parse(template):
        if name:
            names.add(re.split(r"[.\[]", name, maxsplit=1)[0])
    return names


def _plain_value(name: str, value):
    """Parameters are plain JSON-like values so that they can be hashed, shown and stored."""
    if isinstance(value, bool) or isinstance(value, (str, int, float)) and type(value) in (str, int, float):
        return value
    if isinstance(value, tuple) and all(type(v) in (int, float) for v in value):
        return value
    raise ValueError(f"{name} must be a plain bool, int, float, str or a tuple of numbers, got {value!r}")


@dataclass(frozen=True)
class Param:
    """One input of an exercise.

    ``default`` is what the book and the variants-off notebooks show. With
    variants on, each student gets one of ``choices`` (drawn from a seed
    derived from the student id); a parameter without ``choices`` never varies.
    """

    default: Any
    choices: tuple = ()

    def __post_init__(self):
        _plain_value("Param.default", self.default)
        if not isinstance(self.choices, tuple):
            raise ValueError(f"Param.choices must be a tuple, got {type(self.choices).__name__}")
        for c in self.choices:
            _plain_value("Param.choices item", c)
        if self.choices and self.default not in self.choices:
            raise ValueError(f"Param.default {self.default!r} must be one of Param.choices {self.choices!r}")


@dataclass(frozen=True)
class Slip:
    """A mistake that a part's answer can plausibly carry, recognised by the number it produces.

    The self-check and the grader name a slip only when the answer matches it
    far more tightly than the part's tolerance. Give either

    * ``factor``: the slip multiplies or divides the reference by it (a number,
      or a function of the exercise namespace ``p``), e.g. the node's GPU count
      for "one GPU's bandwidth used for the whole node"; or
    * ``value``: a function of ``p`` returning the answer the slip produces
      (a float, or a list for a list part), e.g. the weight bytes with the
      embedding table counted in full.

    ``question`` is what the feedback asks the student; it must not contain
    the reference value.
    """

    status: str
    question: str
    factor: float | Callable[[Mapping[str, Any]], float] | None = None
    value: Callable[[Mapping[str, Any]], Any] | None = None

    def __post_init__(self):
        if not isinstance(self.status, str) or not SLIP_STATUS.match(self.status):
            raise ValueError(
                f"Slip.status must be 3-41 lower-case letters, digits or '-', got {self.status!r}"
            )
        if not isinstance(self.question, str) or not self.question.strip():
            raise ValueError("Slip.question must be a non-empty string")
        if (self.factor is None) == (self.value is None):
            raise ValueError(f"Slip {self.status!r} needs exactly one of factor and value")
        if self.value is not None and not callable(self.value):
            raise ValueError(f"Slip.value of {self.status!r} must be a function of the namespace")
        if self.factor is not None and not callable(self.factor):
            check("Slip.factor", self.factor, ">1", scalar=True)


def node_slip(n_gpus) -> Slip:
    """One GPU's figure used for a whole ``n_gpus``-GPU node, or the reverse (a factor of ``n_gpus``).

    ``n_gpus`` is a number or the name of a namespace entry (e.g. ``"n_gpus"``).
    """
    factor = (lambda p: float(p[n_gpus])) if isinstance(n_gpus, str) else float(n_gpus)
    return Slip(
        "one-gpu-vs-node",
        "one GPU's figure used for the whole node, or the node's for one GPU?",
        factor=factor,
    )


@dataclass(frozen=True)
class Numeric:
    """An auto-graded part whose answer is a number (or a list of numbers).

    ``ref(p)`` returns the reference answer, in ``unit``, from the exercise's
    namespace ``p`` (its parameters plus its ``given`` values); it must call
    :mod:`aiinfra` and return a plain ``float`` or a list of them. An answer
    is correct when ``|x - ref| <= max(rel_tol * |ref|, abs_tol)``.

    ``slips`` lists the mistakes worth naming beyond those the unit implies
    (a prefix slip for every unit with prefixes, GiB vs GB for bytes, bits vs
    bytes for bit units, a fraction for a percentage): the names in
    :data:`NAMED_SLIPS` (``"bits-vs-bytes"`` where a bit rate is converted,
    ``"per-direction-vs-both"`` for link bandwidths) or :class:`Slip` objects.
    """

    part: str
    prompt: str
    ref: Callable[[Mapping[str, Any]], Any]
    unit: str
    points: float = 1.0
    rel_tol: float = DEFAULT_REL_TOL
    abs_tol: float = 0.0
    hint: str = ""
    fmt: str = ".4g"
    slips: tuple = ()

    kind = "numeric"

    def __post_init__(self):
        _check_part_common(self)
        check("rel_tol", self.rel_tol, "[0,1)")
        check("abs_tol", self.abs_tol, ">=0")
        if not isinstance(self.slips, tuple) or not all(
            isinstance(s, Slip) or s in NAMED_SLIPS for s in self.slips
        ):
            raise ValueError(
                f"slips of part {self.part!r} must be a tuple of Slip objects or names in "
                f"{NAMED_SLIPS}, got {self.slips!r}"
            )
        if not self.hint:
            raise ValueError(f"Numeric part {self.part!r} needs a hint for wrong answers")
        if not isinstance(self.unit, str):
            raise ValueError(f"unit must be a string, got {self.unit!r}")


@dataclass(frozen=True)
class Choice:
    """An auto-graded part whose answer is one of ``options`` (strings, or ``True``/``False``).

    ``ref(p)`` returns the correct option, computed with :mod:`aiinfra`.
    """

    part: str
    prompt: str
    ref: Callable[[Mapping[str, Any]], Any]
    options: tuple
    points: float = 1.0
    hint: str = ""

    kind = "choice"
    unit = ""

    def __post_init__(self):
        _check_part_common(self)
        if not isinstance(self.options, tuple) or len(self.options) < 2:
            raise ValueError(f"options must be a tuple of at least 2 values, got {self.options!r}")
        if not all(type(o) in (str, bool) for o in self.options):
            raise ValueError(f"options must be strings or bools, got {self.options!r}")
        if not self.hint:
            raise ValueError(f"Choice part {self.part!r} needs a hint for wrong answers")


@dataclass(frozen=True)
class Free:
    """A free-response part, graded by hand.

    The grader records the student's text and marks the part "needs manual
    grading". ``sample`` is the model answer shown in the book's solution and
    written into the reference notebook; it may use ``{name}`` fields of the
    exercise namespace and of the numeric references (``{a}``, ``{b}``, ...).
    ``rubric`` is what the hand grader awards: ``(points, criterion)`` pairs
    whose points add up to the part's ``points`` (criteria may use the same
    fields); the solutions print it under the model answer.
    """

    part: str
    prompt: str
    sample: str
    points: float = 2.0
    rubric: tuple = ()

    kind = "free"
    unit = ""
    ref = None

    def __post_init__(self):
        _check_part_common(self)
        if not self.sample.strip():
            raise ValueError(f"Free part {self.part!r} needs a sample answer")
        if not isinstance(self.rubric, tuple) or not all(
            isinstance(c, tuple)
            and len(c) == 2
            and type(c[0]) in (int, float)
            and c[0] > 0
            and isinstance(c[1], str)
            and c[1].strip()
            for c in self.rubric
        ):
            raise ValueError(
                f"rubric of part {self.part!r} must be a tuple of (points > 0, criterion text) pairs, "
                f"got {self.rubric!r}"[:300]
            )
        if self.rubric and abs(sum(c[0] for c in self.rubric) - self.points) > 1e-9:
            raise ValueError(
                f"rubric of part {self.part!r} must award the part's {self.points:g} points, "
                f"its criteria add up to {sum(c[0] for c in self.rubric):g}"
            )


Part = Numeric | Choice | Free


def _check_part_common(part) -> None:
    if not isinstance(part.part, str) or not PART_ID.match(part.part):
        raise ValueError(f"part must be one lower-case letter 'a'..'z', got {part.part!r}")
    if not isinstance(part.prompt, str) or not part.prompt.strip():
        raise ValueError(f"prompt of part {part.part!r} must be a non-empty string")
    check("points", part.points, ">0")
    if part.ref is not None and not callable(part.ref):
        raise ValueError(f"ref of part {part.part!r} must be callable, got {part.ref!r}")


@dataclass(frozen=True)
class Exercise:
    """One exercise: an id such as ``"1-2"``, a statement and its parts.

    * ``intro`` is MyST Markdown with ``{name}`` fields filled from the
      namespace (parameters plus ``given``); write ``{name:.2f}`` for a format.
    * ``given(params)`` returns derived quantities the statement shows
      (a GPU's capacity, a model's size), computed by :mod:`aiinfra`.
    * ``discussion`` closes the solution; it may also use ``{a}``, ``{b}``...,
      the references of the auto-graded parts.
    """

    id: str
    title: str
    level: str
    intro: str
    parts: tuple
    params: Mapping[str, Param] = field(default_factory=dict)
    given: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    discussion: str = ""

    def __post_init__(self):
        if not isinstance(self.id, str) or not EXERCISE_ID.match(self.id):
            raise ValueError(f"id must look like '1-2' (chapter-number), got {self.id!r}")
        choice("level", self.level, LEVELS)
        if not self.parts:
            raise ValueError(f"exercise {self.id} needs at least one part")
        letters = [p.part for p in self.parts]
        expected = list(string.ascii_lowercase[: len(letters)])
        if letters != expected:
            raise ValueError(f"parts of exercise {self.id} must be lettered {expected}, got {letters}")
        for name, prm in self.params.items():
            if not isinstance(prm, Param) or not name.isidentifier():
                raise ValueError(f"params of exercise {self.id} must map identifiers to Param, got {name!r}")
        clash = set(self.params) & set(letters)
        if clash:
            raise ValueError(f"parameter names {sorted(clash)} of exercise {self.id} clash with part letters")

    @property
    def chapter(self) -> str:
        return f"ch{int(self.id.split('-')[0]):02d}"

    @property
    def label(self) -> str:
        """The Sphinx label of the exercise block, e.g. ``ex-1-2``."""
        return f"ex-{self.id}"

    @property
    def varies(self) -> bool:
        """True when at least one parameter has choices (so variants can differ)."""
        return any(p.choices for p in self.params.values())

    def part(self, letter: str):
        for p in self.parts:
            if p.part == letter:
                return p
        raise ValueError(
            f"exercise {self.id} has no part {letter!r}; parts are {[p.part for p in self.parts]}"
        )

    @property
    def max_points(self) -> float:
        return float(sum(p.points for p in self.parts))

    @property
    def auto_points(self) -> float:
        return float(sum(p.points for p in self.parts if p.kind != "free"))

    def template_fields(self) -> set[str]:
        names = _template_fields(self.intro) | _template_fields(self.discussion)
        for p in self.parts:
            names |= _template_fields(p.prompt)
            if p.kind == "free":
                names |= _template_fields(p.sample)
                for _, criterion in p.rubric:
                    names |= _template_fields(criterion)
        return names
