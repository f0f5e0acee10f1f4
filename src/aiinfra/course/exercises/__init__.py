"""Exercises that grade themselves: one definition feeds the book, the notebooks and the grader.

Writing exercises for a chapter
===============================
Create ``src/aiinfra/course/exercises/chNN.py`` (copy ``ch01.py``) holding a tuple
``EXERCISES`` of :class:`Exercise`. Nothing else needs registering: the
registry, ``python -m aiinfra_build.build_exercises`` and ``aiinfra-grade`` find every
``chNN`` module. A minimal exercise::

    from aiinfra import units
    from aiinfra.course.exercises import Choice, Exercise, Free, Numeric, Param

    def ref_2_1_a(p):                      # reference = function of the namespace p
        return units.bytes_per_s_from_gbit_per_s(p["gbit"]) / units.GB

    EXERCISES = (
        Exercise(
            id="2-1", title="Line rates", level="core",           # level: core | extension
            intro="A port runs at {gbit} Gbit/s.",                 # MyST; {name} or {name:.2f}
            params={"gbit": Param(400, choices=(100, 200, 400))},  # choices => per-student variants
            given=None,            # optional: p -> dict of derived values shown in prompts
            parts=(
                Numeric("a", "In GB/s?", ref_2_1_a, unit="GB/s", rel_tol=0.01,
                        hint="a byte is 8 bits"),
                Choice("b", "Is that faster than 25 GB/s?", ref_2_1_b, options=(True, False),
                       hint="compare in one unit"),
                Free("c", "Why do vendors quote bits?", sample="Model answer for the solution.",
                     rubric=((1, "Names the line rate's unit."), (1, "Converts it."))),
            ),
            discussion="Shown after the answers; may use {a}, {b} (the references).",
        ),
    )

Rules the tests enforce: ids ``C-K`` start with the chapter number; parts are
lettered a, b, c... in order; every template field resolves; every reference
returns a plain ``float`` (or a list of floats, or one of the options) for the
defaults and for every variant; a reference calls :mod:`aiinfra` and never
holds a typed result. Numbers shown in prompts come from ``params`` or from
``given`` (computed by the library), never typed into the text.

Using them
==========
* Book page: a cell tagged ``remove-input`` with
  ``from aiinfra.course.exercises import show; show("ch01")`` (or ``show("1-2")``)
  emits, in the book build (``AIINFRA_BOOK_BUILD=1``), sphinx-exercise blocks
  labelled ``ex-1-2`` (solutions ``sol-1-2``, in dropdowns). The blocks are
  unnumbered (the id is in the title), so link them with explicit text:
  ``{ref}`Exercise 1-2 <ex-1-2>```. In a live kernel (Colab, JupyterLab) the
  same call shows plain Markdown, each solution folded in ``<details>``.
* Rubrics: a free part's ``rubric`` lists ``(points, criterion)`` pairs that add up to its
  points; the book's solutions and the reference notebooks print it under the model answer,
  the student notebooks never.
* Slow references: a helper decorated with ``functools.cache`` (keyed by plain values, not by
  ``p``) computes a capacity plan once per variant; the worked solution carries it as it is.
* Prices: write a literal dollar as ``\\$`` (``$...$`` is mathematics).
* Slips: a numeric part may declare the mistakes worth naming
  (``slips=("per-direction-vs-both", node_slip(8), Slip(...))``); the unit
  already implies prefix, GiB-vs-GB and percentage slips.
* Notebooks: ``python -m aiinfra_build.build_exercises [--variants]`` writes
  ``exercises/chNN.ipynb`` (student) and ``solutions/chNN.ipynb`` (reference).
  In them: ``set_student("id")``, ``prompt("1-2")``, ``params("1-2")``,
  ``answer("1-2", "a", 141.1)`` and ``check("1-2")``.
* Grading: ``aiinfra-grade SUBMISSIONS --assignment ch01`` (see
  :mod:`aiinfra.course.grading`).
"""

from aiinfra.course.exercises._format import Choice, Exercise, Free, Numeric, Param, Slip, node_slip
from aiinfra.course.exercises.registry import chapter, chapters, get
from aiinfra.course.exercises.runtime import (
    answer,
    check,
    configure,
    current_student,
    params,
    prompt,
    recorded,
    reset,
    set_student,
    show,
)

__all__ = [
    "Choice",
    "Exercise",
    "Free",
    "Numeric",
    "Param",
    "Slip",
    "node_slip",
    "chapter",
    "chapters",
    "get",
    "answer",
    "check",
    "configure",
    "current_student",
    "params",
    "prompt",
    "recorded",
    "reset",
    "set_student",
    "show",
]
