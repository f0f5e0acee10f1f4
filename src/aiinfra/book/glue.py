"""Publish a page's numbers in one call: named values, formatted through :mod:`aiinfra.units`.

A chapter computes its numbers with the library and hands them to
:func:`glue` at once; the prose cites them with ``{glue:text}`NAME```::

    from aiinfra.book.glue import glue
    glue("ch04_p1",
         bw=(h100.memory_bandwidth_bytes_per_s, "B/s"),   # -> ch04_p1_bw = "3.35 TB/s"
         read70=(d70.weight_bytes_read, "B"),             # -> "139.01 GB"
         n70=(n70, ","),                                  # -> "70,553,706,496"
         share=(step.kv_share, ".0%"),                    # -> "24%"
         steps=step_count)                                # glued as is; the prose may format it

Each keyword becomes the glue name ``PREFIX_KEY``. A value is glued as is,
or given as ``(value, spec)`` where ``spec`` is

* a unit of :mod:`aiinfra.units`: ``"B"`` (:func:`~aiinfra.units.fmt_bytes`),
  ``"B/s"``, ``"s"``, ``"FLOPs"``, ``"FLOP/s"``, ``"W"`` or ``"$"`` (dollars, 2
  decimals), optionally followed
  by a unit to force and/or a number of decimals: ``"B GiB"``, ``"s 1"``,
  ``"B/s TB 3"``, ``"s ms 0"``;
* or a Python format spec (``","``, ``".1f"``, ``".0%"``, ``",.0f"``).

Glued values are never displayed where they are computed (``display=False``).

:func:`formula_md` shows a library formula's symbolic twin typeset, with its
left-hand side and a label, in the book's notation (:data:`aiinfra.formula.NOTATION`).
"""

from __future__ import annotations

from aiinfra import units

__all__ = ["glue", "fmt", "formula_md", "equation_md"]

_FORMATTERS = {
    "B": lambda x, unit, digits: units.fmt_bytes(x, unit=unit, **digits),
    "B/s": lambda x, unit, digits: units.fmt_rate_bytes(x, unit=unit, **digits),
    "s": lambda x, unit, digits: units.fmt_time(x, unit=unit, **digits),
    "FLOPs": lambda x, unit, digits: units.fmt_flops(x, **digits),
    "FLOP/s": lambda x, unit, digits: units.fmt_flops_rate(x, **digits),
    "W": lambda x, unit, digits: units.fmt_power(x, **digits),
    "$": lambda x, unit, digits: f"${x:,.{digits.get('digits', 2)}f}",
}


def fmt(value, spec: str) -> str:
    """``value`` as text following ``spec`` (a unit of :mod:`aiinfra.units`, or a Python format spec)."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(
            f"spec must be a unit such as 'B' or 'B/s TB 1', or a format spec such as '.1f', got {spec!r}"
        )
    head, *rest = spec.split()
    if head not in _FORMATTERS:
        if rest:
            raise ValueError(
                f"spec must be a unit of aiinfra.units ({sorted(_FORMATTERS)}) or a format spec, got {spec!r}"
            )
        return format(value, spec)
    unit, digits = None, {}
    for token in rest:
        if token.isdigit():
            digits = {"digits": int(token)}
        else:
            unit = token
    if unit is not None and head in ("FLOPs", "FLOP/s", "W", "$"):
        raise ValueError(f"spec {spec!r}: {head} picks its own prefix; give only a number of decimals")
    return _FORMATTERS[head](value, unit, digits)


def glue(prefix: str, **values) -> None:
    """Glue every keyword as ``PREFIX_KEY`` (see the module docstring)."""
    from myst_nb import glue as myst_glue

    if not isinstance(prefix, str) or not prefix.isidentifier():
        raise ValueError(f"prefix must be an identifier such as 'ch04_p1', got {prefix!r}")
    for key, value in values.items():
        if isinstance(value, tuple):
            if len(value) != 2:
                raise ValueError(f"{key} must be a value or a (value, spec) pair, got {value!r}")
            value = fmt(*value)
        name = f"{prefix}_{key}"
        myst_glue(name, value, display=False)


def formula_md(fn, lhs: str, what: str, names: dict | None = None, where: str = ""):
    """A library formula shown labelled: "The library's formula for WHAT (`module.name`): $$LHS = twin$$".

    ``fn`` is a formula (it has ``.sym``); ``lhs`` the left-hand side in LaTeX;
    ``what`` the quantity in words. Symbols are printed in the book's notation
    (:data:`aiinfra.formula.NOTATION`); ``names`` maps the twin's other symbol
    names to LaTeX (``{"k_tok": "k"}``). ``where`` is appended after the
    equation (a sentence naming the symbols). Returns an IPython ``Markdown``
    object for a cell to display.
    """
    import sympy as sp
    from IPython.display import Markdown

    from aiinfra.formula import NOTATION

    if not hasattr(fn, "sym") or not isinstance(lhs, str) or not lhs or not isinstance(what, str) or not what:
        raise ValueError(
            "formula_md needs a library formula (with .sym), a LaTeX left-hand side and a description"
        )
    latex = {**{k: v.latex for k, v in NOTATION.items()}, **(names or {})}
    expr = fn.sym
    symbols = {sym: latex[sym.name] for sym in expr.free_symbols if sym.name in latex}
    body = sp.latex(expr, symbol_names=symbols)
    label = f"{fn.__module__}.{fn.__name__}"
    text = f"The library's formula for {what} (`{label}`):\n\n$$\n{lhs} = {body}\n$$"
    return Markdown(text + (f"\n\n{where}" if where else ""))


def equation_md(expr, lhs: str, names: dict | None = None):
    """A sympy expression derived in a page, typeset as ``$$LHS = expr$$`` in the book's notation.

    For a derivation built from the twins (a difference, a ratio): symbols
    named in :data:`aiinfra.formula.NOTATION` print as the notation page
    writes them, ``names`` maps any other symbol name to LaTeX
    (``{"N_lin": r"N_{\\mathrm{lin}}"}``). Returns an IPython ``Markdown`` object.
    """
    import sympy as sp
    from IPython.display import Markdown

    from aiinfra.formula import NOTATION

    if not isinstance(expr, sp.Basic) or not isinstance(lhs, str) or not lhs:
        raise ValueError("equation_md needs a sympy expression and a LaTeX left-hand side")
    latex = {**{k: v.latex for k, v in NOTATION.items()}, **(names or {})}
    symbols = {sym: latex[sym.name] for sym in expr.free_symbols if sym.name in latex}
    return Markdown(f"$$\n{lhs} = {sp.latex(expr, symbol_names=symbols)}\n$$")
