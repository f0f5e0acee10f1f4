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
"""
from __future__ import annotations

from aiinfra import units

__all__ = ["glue", "fmt"]

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
        raise ValueError(f"spec must be a unit such as 'B' or 'B/s TB 1', or a format spec such as '.1f', got {spec!r}")
    head, *rest = spec.split()
    if head not in _FORMATTERS:
        if rest:
            raise ValueError(f"spec must be a unit of aiinfra.units ({sorted(_FORMATTERS)}) or a format spec, got {spec!r}")
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
