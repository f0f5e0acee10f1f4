"""Every symbolic twin (``@formula`` in aiinfra.formula) must agree with its numeric function.

All aiinfra submodules are imported first so that every twin is registered; a twin exists only
where a page typesets the formula or derives from it, and a test checks that a page does. For each
entry of ``aiinfra.formula.TWINS`` the test checks that every numeric argument of the
function has a symbol (label arguments are held at their defaults), then evaluates function
and sympy expression at 50 random points drawn from ``fn.sym_domains`` and requires a
relative agreement of 1e-9.
"""

import importlib
import inspect
import math
import pkgutil
import re
import zlib
from pathlib import Path

import mpmath
import numpy as np
import pytest
import sympy as sp

import aiinfra
from aiinfra import formula as symbols

DEFAULT_DOMAIN = symbols.DEFAULT_SAMPLE
N_POINTS = 50


def _import_every_submodule() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(aiinfra.__path__, prefix="aiinfra."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # running it is the CLI, not a library import
        importlib.import_module(info.name)
        names.append(info.name)
    return names


MODULES = _import_every_submodule()
TWINS = sorted(symbols.TWINS.items())


def test_every_submodule_imports_and_the_registry_is_filled():
    assert "aiinfra.memory" in MODULES and "aiinfra.units" in MODULES
    for own in (
        "aiinfra.memory.kv_bytes_per_token_formula",
        "aiinfra.decode.batched_decode_step_time_s",
        "aiinfra.cluster.network.ring_allreduce_time_s",
    ):
        assert own in symbols.TWINS
    # a formula without a twin is validated and names its symbols, but is not registered
    assert "aiinfra.memory.weight_bytes_formula" not in symbols.TWINS
    from aiinfra import memory

    assert set(memory.weight_bytes_formula.sym_args) == {"n_params", "bytes_per_param"}


# The rule (CONTRIBUTING, "Library conventions"): a formula has a twin only where a page typesets
# it (``formula_md``) or derives from it (``.sym``). A page that does either names the formula.
PAGES = sorted((Path(__file__).resolve().parents[1] / "book").rglob("*.md"))
SYMBOLIC_PAGES = {p: p.read_text(encoding="utf-8") for p in PAGES}
SYMBOLIC_PAGES = {p: t for p, t in SYMBOLIC_PAGES.items() if "formula_md(" in t or ".sym" in t}


@pytest.mark.parametrize("qualname", [q for q, _ in TWINS])
def test_every_twin_is_typeset_or_derived_from_by_a_page(qualname):
    name = re.compile(rf"\b{re.escape(qualname.rsplit('.', 1)[1])}\b")
    users = [p.name for p, text in SYMBOLIC_PAGES.items() if name.search(text)]
    assert users, f"{qualname} has a twin no page typesets or derives from: drop the twin (CONTRIBUTING)"


def _draw(rng, domain):
    lo, hi, kind = domain
    if kind == "int":
        return int(rng.integers(int(math.ceil(lo)), int(math.floor(hi)) + 1))
    if kind == "float":
        return float(rng.uniform(lo, hi))
    if kind == "bool":
        return bool(rng.integers(0, 2))
    raise AssertionError(f"domain kind must be 'int' or 'float', got {kind!r}")


@pytest.mark.parametrize("qualname,fn", TWINS, ids=[name for name, _ in TWINS])
def test_twin_agrees_with_function(qualname, fn):
    labels = getattr(fn, "sym_labels", {})
    params = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in labels
    ]
    names = [p.name for p in params]
    missing = [n for n in names if n not in fn.sym_args]
    assert not missing, f"{qualname}: arguments {missing} have no symbol in sym_args"
    extra = sorted(set(fn.sym_args) - set(names))
    assert not extra, f"{qualname}: sym_args names {extra}, which are not arguments"
    unbound = fn.sym.free_symbols - set(fn.sym_args.values())
    assert not unbound, f"{qualname}: the twin uses {unbound}, which no argument feeds"
    unknown_domains = sorted(set(fn.sym_domains) - set(names))
    assert not unknown_domains, f"{qualname}: sym_domains for non-arguments {unknown_domains}"
    assert len(set(fn.sym_args.values())) == len(fn.sym_args), f"{qualname}: two arguments share a symbol"

    # the twin, compiled once and evaluated with 30 significant digits
    twin_fn = sp.lambdify([fn.sym_args[n] for n in names], fn.sym, modules="mpmath")
    rng = np.random.default_rng(zlib.crc32(qualname.encode()))
    for _ in range(N_POINTS):
        kwargs = {n: _draw(rng, fn.sym_domains.get(n, DEFAULT_DOMAIN)) for n in names}
        got = fn(**kwargs, **labels)
        assert np.ndim(got) == 0, f"{qualname} returned an array for scalar input"
        got = float(got)
        with mpmath.workdps(30):
            want = float(twin_fn(*[mpmath.mpf(kwargs[n]) for n in names]))
        assert math.isfinite(got), f"{qualname}{kwargs} returned {got}"
        assert math.isclose(got, want, rel_tol=1e-9, abs_tol=0.0) or got == want, (
            f"{qualname}{kwargs}: function {got!r} != twin {want!r}"
        )


def _fake(expr, fn, **args):
    fn.sym, fn.sym_args, fn.sym_domains = expr, args, {}
    return fn


def test_the_check_catches_a_wrong_twin():
    x, y = sp.symbols("x y", positive=True)
    wrong = _fake(x * y + 1, lambda a, b: a * b, a=x, b=y)
    with pytest.raises(AssertionError, match="twin"):
        test_twin_agrees_with_function("fake.wrong", wrong)
    right = _fake(x * y, lambda a, b: a * b, a=x, b=y)
    test_twin_agrees_with_function("fake.right", right)


def test_the_check_catches_an_argument_without_symbol():
    x = sp.Symbol("x", positive=True)
    partial = _fake(2 * x, lambda a, mode="fast": 2 * a, a=x)
    with pytest.raises(AssertionError, match="mode"):
        test_twin_agrees_with_function("fake.partial", partial)
