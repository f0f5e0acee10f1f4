"""The worked solution of an exercise: the source of its reference functions and what they need.

The book's solution blocks and the reference notebooks show the code the
grader runs (the library calls, with the units they divide by) rather than
bare numbers. This module finds that code: each part's reference function,
the helper functions of the chapter module it calls, and the modules and
constants they use.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
import types


def _code_objects(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_objects(const)


def _cached_function(obj) -> bool:
    """A function of the chapter module wrapped by ``functools.cache`` (a helper that memoises a slow plan)."""
    return (
        callable(obj) and inspect.isfunction(getattr(obj, "__wrapped__", None)) and hasattr(obj, "cache_info")
    )


def _global_names(fn) -> set[str]:
    names = set()
    for code in _code_objects(inspect.unwrap(fn).__code__):
        names.update(code.co_names)
    return names


def _is_literal(obj) -> bool:
    """Plain constants (numbers, strings, and tuples/lists/dicts of them) can be written as source."""
    try:
        return ast.literal_eval(repr(obj)) == obj and not isinstance(obj, type)
    except (ValueError, SyntaxError, TypeError, RecursionError):
        return False


def dependencies(module, fns) -> tuple[list[str], list[str], list[str]]:
    """(aiinfra modules, constant assignments, helper function sources) the functions need."""
    mods, consts, helpers = set(), {}, {}
    todo = list(fns)
    seen = set()
    while todo:
        fn = todo.pop()
        if fn.__name__ in seen:
            continue
        seen.add(fn.__name__)
        for name in sorted(_global_names(fn)):
            if not hasattr(module, name):
                continue
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType):
                mods.add((name, obj.__name__))
            elif (inspect.isfunction(obj) or _cached_function(obj)) and obj.__module__ == module.__name__:
                if obj not in fns:
                    helpers[name] = obj
                    todo.append(obj)
                if _cached_function(obj):
                    mods.add(("functools", "functools"))
            elif _is_literal(obj):
                consts[name] = obj
    imports: list = []
    grouped: dict = {}
    for alias, full in sorted(mods):
        pkg, _, leaf = full.rpartition(".")
        if leaf == alias:
            grouped.setdefault(pkg, []).append(leaf)
        else:
            imports.append(f"from {pkg} import {leaf} as {alias}")
    top = [f"import {', '.join(grouped.pop(''))}"] if "" in grouped else []
    imports = (
        top + [f"from {pkg} import {', '.join(names)}" for pkg, names in sorted(grouped.items())] + imports
    )
    const_lines = [f"{k} = {v!r}" for k, v in sorted(consts.items())]
    helper_src = [textwrap.dedent(inspect.getsource(helpers[k])).rstrip() for k in sorted(helpers)]
    return imports, const_lines, helper_src


def source(fn) -> str:
    """A function's source, dedented."""
    return textwrap.dedent(inspect.getsource(fn)).rstrip()


def exercise_code(ex) -> str:
    """One Python listing of an exercise's working: imports, constants, helpers, then each part's reference.

    ``p`` in the listing is the exercise's namespace: the parameters and the
    given values of the statement.
    """
    module = importlib.import_module(f"{__package__}.{ex.chapter}")
    refs = [p.ref for p in ex.parts if p.kind != "free"]
    if not refs:
        return ""
    imports, consts, helpers = dependencies(module, refs)
    head = "\n".join(imports + ([""] if imports and consts else []) + consts)
    return "\n\n\n".join(([head] if head else []) + helpers + [source(f) for f in refs])
