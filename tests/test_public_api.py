"""Every public function of the library is used by a chapter, a figure, an exercise, the grader or the CLI.

A public function (a module-level function or formula whose name does not start
with ``_``) of any module outside the course packages must be named somewhere a
reader meets it: a code cell or a backticked name in ``book/**/*.md``, the
exercise definitions (``src/aiinfra/course/exercises``), the grader
(``src/aiinfra/course/grading``), the book package (figures, tables, glue) or the CLI.
A use inside the function's own module does not count, and tests do not count.
A function nobody uses is deleted, or renamed with a leading underscore when
the library needs it internally.
"""

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import aiinfra
from aiinfra.formula import Formula

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "aiinfra"
COURSE = ("aiinfra.course.exercises", "aiinfra.course.grading", "aiinfra.book.colab", "aiinfra.__main__")
TICKED = re.compile(r"`([^`\n]+)`")
WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)


def _ticked(text: str) -> set[str]:
    return {w for span in TICKED.findall(text) for w in WORD.findall(span)}


def _names_in_code(code: str) -> set[str]:
    code = "\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!", ":")))
    out = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.name.split(".")[-1])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out |= _ticked(node.value)  # exercise prompts and hints name functions in backticks
    return out


def _uses() -> dict[Path, set[str]]:
    """File -> the names it uses."""
    uses = {}
    for md in ROOT.glob("book/**/*.md"):
        text = md.read_text()
        names = _ticked(re.sub(r"```.*?```", "", text, flags=re.S))
        for cell in CELL.findall(text):
            names |= _names_in_code(cell)
        uses[md] = names
    consumers = [*SRC.glob("course/**/*.py"), *SRC.glob("book/**/*.py"), SRC / "cli.py"]
    for py in consumers:
        uses[py] = _names_in_code(py.read_text())
    return uses


def _public_functions():
    for info in pkgutil.walk_packages(aiinfra.__path__, "aiinfra."):
        if info.name.startswith(COURSE):
            continue
        mod = importlib.import_module(info.name)
        for name, obj in vars(mod).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            if isinstance(obj, Formula) or inspect.isfunction(obj):
                yield mod, name


def test_every_public_function_is_used_by_the_book_exercises_grader_or_cli():
    uses = _uses()
    unused = []
    for mod, name in _public_functions():
        own = Path(mod.__file__).resolve()
        if not any(name in names for path, names in uses.items() if path.resolve() != own):
            unused.append(f"{mod.__name__}.{name}")
    assert not unused, f"public but used by no chapter, figure, exercise, grader or CLI: {unused}"


def test_the_scan_sees_chapters_exercises_and_cli():
    uses = _uses()
    assert "Deployment" in uses[ROOT / "book" / "ch04" / "01-decode-roofline.md"]
    assert "compare_policies" in uses[SRC / "course" / "exercises" / "ch05.py"]
    assert "plan" in uses[SRC / "cli.py"]


def test_every_all_is_what_its_module_defines():
    """No hand-kept ``__all__`` drifts: each names only what its module has, and every public function or
    formula the module defines (what the scan above counts) is in it."""
    stale, missing = [], []
    for info in pkgutil.walk_packages(aiinfra.__path__, "aiinfra."):
        mod = None if info.name == "aiinfra.__main__" else importlib.import_module(info.name)
        if mod is None or not hasattr(mod, "__all__"):
            continue
        defined = {
            name
            for name, obj in vars(mod).items()
            if not name.startswith("_")
            and getattr(obj, "__module__", None) == mod.__name__
            and (isinstance(obj, Formula) or inspect.isfunction(obj))
        }
        stale += [f"{mod.__name__}.{n}" for n in mod.__all__ if not hasattr(mod, n)]
        missing += [f"{mod.__name__}.{n}" for n in sorted(defined - set(mod.__all__))]
    assert not stale, f"__all__ names what its module does not have: {stale}"
    assert not missing, f"public functions missing from their module's __all__: {missing}"
