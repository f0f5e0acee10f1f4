"""Imports run one way: the graph of ``aiinfra``'s modules, read from the source with ``ast``.

``Deployment`` composes formulas (memory, compute, decode, roofline, the catalog and the
cluster's link formulas); ``serving`` and ``predict`` use it, never the reverse. The graph is
derived from every ``import`` statement under ``src/aiinfra``, those inside functions included
(an import deferred into a function is still a dependency, only a hidden one).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted((SRC / "aiinfra").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The module ``name`` loads (``aiinfra.units.GB`` -> ``aiinfra.units``), or None outside aiinfra."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported_names(node: ast.AST, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parent = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join(parent + ([base] if base else []))
        return [f"{base}.{a.name}" for a in node.names]
    return []


def _top_level(tree: ast.Module):
    """The statements that run on import: the module body, descending into if/try/with, not into defs."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        yield node
        todo.extend(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt))


def import_graph(*, deferred: bool) -> dict[str, set[str]]:
    """Module -> the aiinfra modules it imports (``deferred``: those inside functions too)."""
    graph = {}
    for mod, path in MODULES.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = ast.walk(tree) if deferred else _top_level(tree)
        targets = {_resolve(n) for node in nodes for n in _imported_names(node, package)}
        graph[mod] = {t for t in targets if t and t not in (mod, "aiinfra")}
    return graph


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for dep in graph[todo.pop()] - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


def test_the_graph_reads_real_imports():
    # guards the parser: deployment imports the formulas at the top of its module
    graph = import_graph(deferred=False)
    assert {"aiinfra.memory", "aiinfra.decode", "aiinfra.formula"} <= graph["aiinfra.deployment"]
    assert "aiinfra.deployment" in graph["aiinfra.predict"]
    assert "aiinfra.decode" in graph["aiinfra.serving.capacity"]
    # a deferred import (inside a function) counts only in the deferred graph
    assert "aiinfra.calibration" in import_graph(deferred=True)["aiinfra.predict"] - graph["aiinfra.predict"]


def test_no_cycle_among_the_imports_that_run_on_import():
    graphlib.TopologicalSorter(import_graph(deferred=False)).prepare()  # raises CycleError


def test_deployment_imports_nothing_from_serving():
    graph = import_graph(deferred=True)
    upper = ("aiinfra.serving", "aiinfra.predict", "aiinfra.calibration", "aiinfra.book", "aiinfra.course")
    assert not {m for m in graph["aiinfra.deployment"] if m.startswith(upper)}


def test_nothing_deployment_rests_on_imports_it_back():
    graph = import_graph(deferred=True)
    below = _closure(graph, "aiinfra.deployment")
    assert "aiinfra.deployment" not in below
    # and what it rests on is acyclic even counting the imports deferred into functions
    graphlib.TopologicalSorter({m: graph[m] for m in below | {"aiinfra.deployment"}}).prepare()


@pytest.mark.parametrize("layer", ["aiinfra.cluster.network", "aiinfra.cluster.parallelism"])
def test_the_cluster_formulas_deployment_uses_do_not_import_it(layer):
    assert "aiinfra.deployment" not in _closure(import_graph(deferred=True), layer)
