"""Build the student notebook and the reference-solution notebook of a chapter.

Both are plain nbformat-4.5 dictionaries with deterministic cell ids and no
outputs, so that ``python -m aiinfra_build.build_exercises --check`` can compare them byte
for byte with the committed files. The student notebook never contains a
reference value: ``check()`` recomputes them in the kernel. The solution
notebook shows the source of every reference function, so the worked
solution is the code the grader runs.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import textwrap

from aiinfra.book import colab
from aiinfra.course.exercises import registry, render
from aiinfra.course.exercises.record import encode_value
from aiinfra.course.exercises.variants import namespace, params_for, references
from aiinfra.course.exercises.working import dependencies

FORMAT_VERSION = 1


def _cell_id(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:12]


def _md(cid: str, text: str) -> dict:
    return {"cell_type": "markdown", "id": cid, "metadata": {}, "source": text.rstrip("\n")}


def _code(cid: str, text: str, tags: tuple = ()) -> dict:
    meta = {"tags": list(tags)} if tags else {}
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": cid,
        "metadata": meta,
        "outputs": [],
        "source": text.rstrip("\n"),
    }


def _notebook(cells: list, chapter: str, kind: str, variants: bool) -> dict:
    return {
        "cells": cells,
        "metadata": {
            "aiinfra": {"chapter": chapter, "kind": kind, "variants": variants, "format": FORMAT_VERSION},
            "colab": {"name": f"{chapter}-{kind}.ipynb", "provenance": []},
            **json.loads(json.dumps(colab.NOTEBOOK_METADATA)),
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def personal_params(chapter: str, student: str, key: bytes | None) -> dict:
    """One student's parameters for a chapter, as a personal notebook carries them (plain JSON values).

    A ``key`` that is not the instructor's 32 bytes (``None`` included) raises ``ValueError``
    (:func:`~aiinfra.course.exercises.variants.params_for` checks it)."""
    return {
        ex.id: {k: encode_value(v) for k, v in params_for(ex, student, True, key).items()}
        for ex in registry.chapter(chapter)
    }


def _setup_source(
    chapter: str, variants: bool, pip_source: str, extra: str = "", personal: tuple | None = None
) -> str:
    lines = colab.install_cell_lines(pip_source) + [
        "",
        "from aiinfra.course.exercises import answer, check, configure, params, prompt, set_student",
        "",
    ]
    if personal:
        sid, mine = personal
        lines += [
            "# Your own parameters, drawn for your student id by your instructor: keep them as they are.",
            f"configure({chapter!r}, variants=True, params={mine!r})",
            f"set_student({sid!r})",
        ]
        return "\n".join(lines + (["", extra] if extra else []))
    lines.append(f"configure({chapter!r}, variants={variants!r})")
    if variants:
        lines += [
            "# Your parameters depend on your student id: write it here as on the class roster,",
            '# e.g. set_student("jdoe"), or set the AIINFRA_STUDENT_ID environment variable.',
        ]
    else:
        lines += ["# Optional here (variants are off): your student id, as on the class roster."]
    lines.append('set_student("")')
    if extra:
        lines += ["", extra]
    return "\n".join(lines)


def _intro_markdown(chapter: str, kind: str, variants: bool) -> str:
    number = int(chapter[2:])
    if kind == "solution":
        return (
            f"# Chapter {number} exercises: reference solutions\n\n"
            "Each answer below is computed by the same `aiinfra` function the grader uses, shown in full: the "
            "library calls and the units they convert to. Run all cells: every `check()` should report full marks "
            "on the auto-graded parts; free-response parts show a model answer and are graded by hand.\n\n"
            f"**How answers are checked.** {render.grading_note()}"
        )
    text = (
        f"# Chapter {number} exercises\n\n"
        "Answer each part with `answer(exercise, part, value)`, replacing the `...`. Give plain numbers in the "
        "unit the part asks for (no strings, no numpy values), `True`/`False` where asked, a list of numbers "
        'where a list is due, and text for free-response parts. `check("1-2")` tells you at once whether '
        "each part is right; it never shows the expected value.\n\n"
        f"**How answers are checked.** {render.grading_note()}\n\n"
        "Cells run top to bottom; an error stops the run, but answers recorded before it still count."
    )
    text = text.replace('"1-2"', f'"{number}-1"')
    if variants:
        text += (
            "\n\n**Your parameters are personal.** Your instructor drew them for your student id with a "
            "secret key and wrote them into the first cell of your own copy of this notebook: run it "
            "before anything else; `prompt(...)` then shows your version of each exercise and "
            "`params(...)` returns its numbers. The grader draws them again from your id, so keep the "
            "first cell as it is."
        )
    return text


def student_notebook(
    chapter: str, variants: bool, pip_source: str, student: str | None = None, key: bytes | None = None
) -> dict:
    """The notebook handed to students: statements, one ``answer(...)`` cell per part, ``check`` cells.

    With variants, ``student`` and the instructor's ``key`` make it that student's personal
    notebook: its first cell carries their parameters (never the key), so ``check()`` works at home.
    """
    exercises = registry.chapter(chapter)
    if not isinstance(variants, bool):
        raise ValueError(f"variants must be True or False, got {variants!r}")
    personal = (student, personal_params(chapter, student, key)) if variants and student is not None else None
    cells = [
        _md(_cell_id(chapter, "student", "intro"), _intro_markdown(chapter, "student", variants)),
        _code(
            _cell_id(chapter, "student", "setup"),
            _setup_source(chapter, variants, pip_source, personal=personal),
        ),
    ]
    for ex in exercises:
        ids = (chapter, "student", ex.id)
        if variants:
            cells.append(
                _md(
                    _cell_id(*ids, "title"),
                    f"## Exercise {render.title_text(ex)}\n\n"
                    "Run the next cell to see your version of the statement.",
                )
            )
            cells.append(_code(_cell_id(*ids, "prompt"), f'prompt("{ex.id}")'))
        else:
            ns = namespace(ex, params_for(ex, None, False))
            cells.append(
                _md(
                    _cell_id(*ids, "statement"),
                    render.statement_markdown(ex, ns, heading=f"## Exercise {render.title_text(ex)}"),
                )
            )
        lists = render.list_parts(ex, namespace(ex, params_for(ex, None, False)))
        for p in ex.parts:
            cells.append(
                _code(
                    _cell_id(*ids, p.part),
                    f"# ({p.part}) {render.answer_format(p, p.part in lists)}\n"
                    f'answer("{ex.id}", "{p.part}", ...)',
                )
            )
        cells.append(_code(_cell_id(*ids, "check"), f'check("{ex.id}")'))
    cells.append(_md(_cell_id(chapter, "student", "end"), "## All exercises of the chapter"))
    cells.append(_code(_cell_id(chapter, "student", "check-all"), f'check("{chapter}")'))
    return _notebook(cells, chapter, "student", variants)


# --- solution notebook ------------------------------------------------------------


def solution_notebook(chapter: str, variants: bool, pip_source: str) -> dict:
    """The reference notebook: every part answered by its reference function, shown as source."""
    exercises = registry.chapter(chapter)
    if not isinstance(variants, bool):
        raise ValueError(f"variants must be True or False, got {variants!r}")
    module = importlib.import_module(f"aiinfra.course.exercises.{chapter}")
    ref_fns = [p.ref for ex in exercises for p in ex.parts if p.kind != "free"]
    imports, consts, helpers = dependencies(module, ref_fns)
    extra = "\n".join(["# What the reference functions below use."] + imports + consts)
    cells = [
        _md(_cell_id(chapter, "solution", "intro"), _intro_markdown(chapter, "solution", False)),
        _code(_cell_id(chapter, "solution", "setup"), _setup_source(chapter, variants, pip_source, extra)),
    ]
    if helpers:
        cells.append(_code(_cell_id(chapter, "solution", "helpers"), "\n\n\n".join(helpers)))
    for ex in exercises:
        key = (chapter, "solution", ex.id)
        ns = namespace(ex, params_for(ex, None, False))
        if variants:
            cells.append(_md(_cell_id(*key, "title"), f"## Exercise {render.title_text(ex)}"))
            cells.append(_code(_cell_id(*key, "prompt"), f'prompt("{ex.id}")'))
        else:
            cells.append(
                _md(
                    _cell_id(*key, "statement"),
                    render.statement_markdown(ex, ns, heading=f"## Exercise {render.title_text(ex)}"),
                )
            )
        cells.append(
            _code(
                _cell_id(*key, "params"),
                f'p = params("{ex.id}")  # this student\'s parameters and the values derived from them\np',
            )
        )
        refs = references(ex, ns)
        full = {**ns, **refs}
        for part in ex.parts:
            if part.kind == "free":
                text = render.fill(part.sample, full).strip()
                src = (
                    f"# ({part.part}) free response, graded by hand; a model answer:\n"
                    f'answer("{ex.id}", "{part.part}", {text!r})'
                )
                if part.rubric:
                    cells.append(_md(_cell_id(*key, part.part, "rubric"), render.rubric_markdown(part, full)))
            else:
                fn_src = textwrap.dedent(inspect.getsource(part.ref)).rstrip()
                is_list = type(refs[part.part]) is list
                src = (
                    f"# ({part.part}) {render.answer_format(part, is_list)}\n{fn_src}\n\n\n"
                    f'answer("{ex.id}", "{part.part}", {part.ref.__name__}(p))'
                )
                if not variants:
                    shown = render.answer_text(part, refs[part.part]).replace("\\$", "$")
                    src += f"  # {shown} with the default parameters"
            cells.append(_code(_cell_id(*key, part.part), src))
        cells.append(_code(_cell_id(*key, "check"), f'check("{ex.id}")'))
    cells.append(_code(_cell_id(chapter, "solution", "check-all"), f'check("{chapter}")'))
    return _notebook(cells, chapter, "solution", variants)
