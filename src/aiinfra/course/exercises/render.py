"""Turn exercises into text: MyST blocks for the book, Markdown for notebooks.

Numbers in prompts and solutions come from the exercise namespace (parameters
plus ``given``, computed by :mod:`aiinfra`) and from the references; the
templates only say where and in which format they go.
"""
from __future__ import annotations

import string
from typing import Any, Mapping

from aiinfra.course.exercises._format import Exercise
from aiinfra.course.exercises.record import Markdown, MystBlocks  # noqa: F401  (re-exported)
from aiinfra.course.exercises.variants import namespace, params_for, references


class _Shown:
    """Wraps a value so that ``{x:.2f}`` also works on lists and bools."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v

    def __format__(self, spec: str) -> str:
        v = self.v
        if type(v) is bool:
            return "yes" if v else "no"
        if isinstance(v, (list, tuple)):
            return ", ".join(format(_Shown(x), spec) for x in v)
        if isinstance(v, float) and not spec:
            return format(v, ".4g")
        return format(v, spec)

    def __str__(self) -> str:
        return format(self, "")

    def __getitem__(self, i):
        return _Shown(self.v[i])


class _Namespace(dict):
    def __missing__(self, key):
        raise ValueError(f"template field {{{key}}} is not a parameter, a given value or a part reference")


def fill(template: str, ns: Mapping[str, Any]) -> str:
    """``template.format`` with every value wrapped by :class:`_Shown`."""
    wrapped = _Namespace({k: _Shown(v) for k, v in ns.items()})
    return string.Formatter().vformat(template, (), wrapped)


def answer_text(part, ref) -> str:
    """A reference answer as the solution shows it: ``141.1 GB``."""
    if part.kind == "choice":
        return str(_Shown(ref)) if type(ref) is bool else str(ref)
    return f"{format(_Shown(ref), part.fmt)} {part.unit}".rstrip()


def answer_format(part) -> str:
    """What a part expects, for the prompt: ``(number, in GB)``."""
    if part.kind == "free":
        return "(free response, graded by hand)"
    if part.kind == "choice":
        if all(type(o) is bool for o in part.options):
            return "(True or False)"
        return "(one of " + ", ".join(f"`{o!r}`" for o in part.options) + ")"
    return f"(number, in {part.unit})" if part.unit else "(number)"


def _resolved(ex: Exercise, sid: str | None, variants: bool):
    ns = namespace(ex, params_for(ex, sid, variants))
    return ns, references(ex, ns)


def statement_markdown(ex: Exercise, ns: Mapping[str, Any], heading: str = "") -> str:
    """The statement and the parts, as plain Markdown (no directives)."""
    lines = [heading] if heading else []
    lines.append(fill(ex.intro, ns).strip())
    for p in ex.parts:
        lines.append(f"**({p.part})** {fill(p.prompt, ns).strip()} {answer_format(p)}")
    return "\n\n".join(lines) + "\n"


def solution_markdown(ex: Exercise, ns: Mapping[str, Any], refs: Mapping[str, Any]) -> str:
    """Reference answers and the discussion, as plain Markdown."""
    full = {**ns, **refs}
    lines = []
    for p in ex.parts:
        if p.kind == "free":
            lines.append(f"**({p.part})** {fill(p.sample, full).strip()}")
        else:
            lines.append(f"**({p.part})** {answer_text(p, refs[p.part])}")
    if ex.discussion:
        lines.append(fill(ex.discussion, full).strip())
    return "\n\n".join(lines) + "\n"


def title_text(ex: Exercise) -> str:
    return f"{ex.id} [{ex.level.capitalize()}]: {ex.title}"


def book_markdown(target_exercises, solutions: bool = True) -> str:
    """MyST for the book: one ``exercise`` block per exercise, its solution in a dropdown.

    Uses the defaults (variants off). Each block is labelled ``ex-<id>`` and
    each solution ``sol-<id>``, so prose can write ``{ref}`ex-1-2```.
    """
    blocks = []
    for ex in target_exercises:
        ns, refs = _resolved(ex, None, False)
        blocks.append(
            f"::::{{exercise}} {title_text(ex)}\n:label: {ex.label}\n:nonumber:\n\n"
            f"{statement_markdown(ex, ns)}::::\n"
        )
        if solutions:
            blocks.append(
                f"::::{{solution}} {ex.label}\n:label: sol-{ex.id}\n:class: dropdown\n\n"
                f"{solution_markdown(ex, ns, refs)}::::\n"
            )
    return "\n".join(blocks)
