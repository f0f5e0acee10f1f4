"""Every symbolic twin (``@formula`` in aiinfra.formula) must agree with its numeric function.

All aiinfra submodules are imported first so that every twin is registered. For each
entry of ``aiinfra.formula.TWINS`` the test checks that every numeric argument of the
function has a symbol (label arguments are held at their defaults), then evaluates function
and sympy expression at 50 random points drawn from ``fn.sym_domains`` and requires a
relative agreement of 1e-9.
"""

import importlib
import inspect
import math
import pkgutil
import zlib

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
    assert len(symbols.TWINS) > 100, "the @formula twins are missing"
    for own in (
        "aiinfra.memory.kv_bytes_per_token_formula",
        "aiinfra.memory.weight_bytes_formula",
        "aiinfra.memory._grouped_quant_bytes_formula",
        "aiinfra.memory.min_cards",
        "aiinfra.units.bytes_per_s_from_gbit_per_s",
    ):
        assert own in symbols.TWINS


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
