"""Turn exercises into text: MyST blocks for the book, plain Markdown for notebooks.

Numbers in prompts and solutions come from the exercise namespace (parameters
plus ``given``, computed by :mod:`aiinfra`) and from the references; the
templates only say where and in which format they go.

Exercise texts are written in the book's MyST: ``$...$`` is mathematics and a
literal dollar (a price) is written ``\\$``. :func:`plain` turns such a text
into Markdown that Jupyter and Colab show as the book does: the escaped
dollar becomes an HTML entity that no client pairs into mathematics.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from aiinfra.course.exercises._format import DEFAULT_REL_TOL, Exercise
from aiinfra.course.exercises.record import Markdown, MystBlocks  # noqa: F401  (re-exported)
from aiinfra.course.exercises.variants import namespace, params_for, references

#: A dollar sign that no notebook client takes for a math delimiter (as tools/aiinfra_build/doctree_markdown.py writes it).
DOLLAR = '<span class="tex2jax_ignore mathjax_ignore">&#36;</span>'
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


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
            return number_text(v)
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


def plain(myst: str) -> str:
    """An exercise text as plain Markdown for a notebook client: ``\\$`` becomes :data:`DOLLAR`.

    Mathematics (``$2N$``) stays for the client to typeset; fenced code is left alone.
    """
    out, fence = [], None
    for line in myst.split("\n"):
        m = _FENCE.match(line)
        if m and (fence is None or m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence)):
            fence = m.group(1) if fence is None else None
        elif fence is None:
            line = line.replace("\\$", DOLLAR)
        out.append(line)
    return "\n".join(out)


def number_text(v, fmt: str = ".4g") -> str:
    """A number for a solution: four significant digits below 10^4, whole numbers with separators up to 10^15.

    From 10^4 on the number is rounded to a whole one, not to four digits, so
    that a solution's answer and its worked text (``{a:,.0f}``) print the same
    digits: 61,838 tok/s, never 61,840 beside 61,838.
    """
    if fmt != ".4g":
        return format(v, fmt)
    x = float(v)
    if x == 0:
        return "0"
    if abs(x) >= 1e4 and abs(x) < 1e15:
        return f"{x:,.0f}"
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return format(x, ".4g")


def _with_unit(text: str, unit: str) -> str:
    if unit == "$":
        return f"\\${text}"
    if unit in ("%", "x"):
        return f"{text}{unit}"
    return f"{text} {unit}".rstrip()


def answer_text(part, ref) -> str:
    """A reference answer as the solution shows it: ``141.1 GB``, ``114,500 tokens``, ``True``."""
    if part.kind == "choice":
        return str(ref)
    if type(ref) is list:
        return _with_unit(", ".join(number_text(x, part.fmt) for x in ref), part.unit)
    return _with_unit(number_text(ref, part.fmt), part.unit)


def _percent(x: float) -> str:
    return f"{100 * x:.4g}%"


def tolerance_text(part) -> str:
    """How close a numeric answer must be, in words, when it differs from the notebook's default."""
    if part.rel_tol == 0 and part.abs_tol == 0.5:
        return "whole number"
    bits = []
    if part.rel_tol and part.rel_tol != DEFAULT_REL_TOL:
        bits.append(f"within {_percent(part.rel_tol)}")
    if part.abs_tol:
        bits.append(f"within ±{part.abs_tol:g}")
    if part.rel_tol == DEFAULT_REL_TOL and bits:
        bits.insert(0, f"within {_percent(part.rel_tol)}")
    return " or ".join(bits)


def _unit_words(unit: str) -> str:
    return {"$": "US dollars"}.get(unit, unit)


def answer_format(part, is_list: bool = False) -> str:
    """What a part expects, for the prompt: ``(number, in GB)``, ``(number, in GB; within 0.2%)``.

    ``is_list``: the part's reference is a list (``(list of numbers, in ms)``).
    """
    if part.kind == "free":
        return "(free response, graded by hand)"
    if part.kind == "choice":
        if all(type(o) is bool for o in part.options):
            return "(True or False)"
        return "(one of " + ", ".join(f"`{o!r}`" for o in part.options) + ")"
    tol = tolerance_text(part)
    if tol == "whole number":
        return f"(whole number of {part.unit})" if part.unit else "(whole number)"
    number = "list of numbers" if is_list else "number"
    if part.unit == "":
        what = f"{number}, {'fractions' if is_list else 'a fraction'} from 0 to 1"
    elif part.unit == "x":
        what = f"{number}, a factor: 2.5 for 2.5x"
    else:
        what = f"{number}, in {_unit_words(part.unit)}"
    return f"({what}; {tol})" if tol else f"({what})"


GRADING_NOTE = (
    "A numeric answer counts as correct when it lies within {tol} of the reference, unless its part states "
    "another tolerance; a part marked *whole number* must be exact. Give each number in the unit its part "
    "names. A miss gets the part's hint; the check names a typical slip (a unit prefix, GiB for GB, bits for "
    "bytes, one direction of a link for both, one GPU for a whole node, and the slips a part declares) only "
    "when the answer matches that slip far more closely than the tolerance."
)


def grading_note() -> str:
    """The tolerance rule, stated once at the top of each notebook and exercise page."""
    return GRADING_NOTE.format(tol=_percent(DEFAULT_REL_TOL))


def list_parts(ex: Exercise, ns: Mapping[str, Any]) -> set[str]:
    """Letters of the parts whose answer is a list of numbers."""
    return {k for k, v in references(ex, ns).items() if type(v) is list}


def _resolved(ex: Exercise, sid: str | None, variants: bool):
    ns = namespace(ex, params_for(ex, sid, variants))
    return ns, references(ex, ns)


def statement_markdown(
    ex: Exercise, ns: Mapping[str, Any], heading: str = "", refs: Mapping[str, Any] | None = None
) -> str:
    """The statement and the parts, as MyST without directives (:func:`plain` makes it Markdown).

    ``refs`` (the references for ``ns``, when the caller has them) saves computing them again.
    """
    lines = [heading] if heading else []
    lines.append(fill(ex.intro, ns).strip())
    lists = list_parts(ex, ns) if refs is None else {k for k, v in refs.items() if type(v) is list}
    for p in ex.parts:
        lines.append(f"**({p.part})** {fill(p.prompt, ns).strip()} {answer_format(p, p.part in lists)}")
    return "\n\n".join(lines) + "\n"


def solution_markdown(
    ex: Exercise, ns: Mapping[str, Any], refs: Mapping[str, Any], working: bool = True
) -> str:
    """Reference answers, the discussion and the working (the code the grader runs)."""
    from aiinfra.course.exercises.working import exercise_code

    full = {**ns, **refs}
    lines = []
    for p in ex.parts:
        if p.kind == "free":
            lines.append(f"**({p.part})** {fill(p.sample, full).strip()}")
            if p.rubric:
                lines.append(rubric_markdown(p, full))
        else:
            lines.append(f"**({p.part})** {answer_text(p, refs[p.part])}")
    if ex.discussion:
        lines.append(fill(ex.discussion, full).strip())
    code = exercise_code(ex) if working else ""
    if code:
        lines.append(
            "**Working.** The code below computes every answer above with the library, exactly as the "
            "grader does; `p` holds the exercise's parameters and the values its statement gives."
        )
        lines.append(f"```python\n{code}\n```")
    return "\n\n".join(lines) + "\n"


def _points_text(points: float) -> str:
    return f"{points:g} point" + ("" if points == 1 else "s")


def rubric_markdown(part, full: Mapping[str, Any]) -> str:
    """A free part's rubric as a Markdown list: what the hand grader awards, criterion by criterion.

    ``full`` is the namespace with the references (the criteria may quote them, as the sample does).
    """
    items = [f"- {_points_text(pts)}: {fill(text, full).strip()}" for pts, text in part.rubric]
    return f"*Rubric for ({part.part}), {_points_text(part.points)}:*\n\n" + "\n".join(items)


def title_text(ex: Exercise) -> str:
    return f"{ex.id} [{ex.level.capitalize()}]: {ex.title}"


def _graded_text(ex: Exercise) -> str:
    """Which parts the self-check grades and which a person grades (against the rubric)."""
    auto = [p.part for p in ex.parts if p.kind != "free"]
    hand = [p.part for p in ex.parts if p.kind == "free"]
    rubric = " (rubric)" if any(p.rubric for p in ex.parts if p.kind == "free") else ""
    if not hand:
        return "automatically"
    if not auto:
        return f"by hand{rubric}"
    return f"{', '.join(auto)} automatically; {', '.join(hand)} by hand{rubric}"


def overview_markdown(target_exercises, link: bool = True) -> str:
    """A chapter's exercises as one table, from their definitions: id, title, level, grading, what varies.

    ``link`` makes each id a ``{ref}`` to its block (the book); without it the id is plain text
    (a notebook). So a chapter's exercises page never types a range or a list of exercises.
    """
    from aiinfra.book.tables import markdown_table

    rows = []
    for ex in target_exercises:
        varies = ", ".join(f"`{name}`" for name, prm in ex.params.items() if prm.choices) or "nothing"
        ident = f"{{ref}}`{ex.id} <{ex.label}>`" if link else ex.id
        rows.append([ident, ex.title, ex.level, _graded_text(ex), varies])
    return markdown_table(
        ["exercise", "title", "level", "graded", "per-student variants"], rows, align="lllll"
    )


def _note_for(target_exercises) -> bool:
    """A chapter's blocks open with the grading note; a single exercise's do not."""
    return len(target_exercises) > 1


def book_markdown(target_exercises, solutions: bool = True) -> str:
    """MyST for the book: one ``exercise`` block per exercise, its solution in a dropdown.

    Uses the defaults (variants off). Each block is labelled ``ex-<id>`` and
    each solution ``sol-<id>``, so prose can write ``{ref}`ex-1-2```.
    """
    blocks = []
    if _note_for(target_exercises):
        blocks = [
            overview_markdown(target_exercises) + "\n",
            f"**How answers are checked.** {grading_note()}\n",
        ]
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


def notebook_markdown(target_exercises, solutions: bool = True) -> str:
    """Plain Markdown for a live kernel (Colab, JupyterLab): headings, statements, solutions folded.

    Each solution sits in a ``<details>`` element, closed until the reader opens it.
    """
    blocks = []
    if _note_for(target_exercises):
        blocks = [
            overview_markdown(target_exercises, link=False) + "\n",
            f"**How answers are checked.** {grading_note()}\n",
        ]
    for ex in target_exercises:
        ns, refs = _resolved(ex, None, False)
        blocks.append(statement_markdown(ex, ns, heading=f"### Exercise {title_text(ex)}"))
        if solutions:
            blocks.append(
                f"<details>\n<summary>Solution to exercise {ex.id}</summary>\n\n"
                f"{solution_markdown(ex, ns, refs)}\n</details>\n"
            )
    return plain("\n".join(blocks))
