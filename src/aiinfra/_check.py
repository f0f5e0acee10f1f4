"""Input validation shared by every formula.

Each checker returns the value as a float (scalars) or a float ndarray
(arrays), or raises ``ValueError`` naming the argument and the allowed range.
NaN and infinity are always rejected: a formula never returns a silent NaN.
"""
from __future__ import annotations

import numbers

import numpy as np


def _as_number(name: str, value):
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got a bool ({value!r})")
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a number, got text ({value!r})")
    if isinstance(value, numbers.Real):
        arr = np.asarray(float(value))
    else:
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}") from None
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return arr


def _out(arr):
    return float(arr) if arr.ndim == 0 else arr


def positive(name: str, value):
    """Require ``value > 0`` (elementwise)."""
    arr = _as_number(name, value)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return _out(arr)


def non_negative(name: str, value):
    """Require ``value >= 0`` (elementwise)."""
    arr = _as_number(name, value)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return _out(arr)


def fraction(name: str, value, *, open_low: bool = True, closed_high: bool = True):
    """Require ``0 < value <= 1`` by default (an efficiency or a share)."""
    arr = _as_number(name, value)
    low_bad = arr <= 0 if open_low else arr < 0
    high_bad = arr > 1 if closed_high else arr >= 1
    if np.any(low_bad) or np.any(high_bad):
        lo = "(0" if open_low else "[0"
        hi = "1]" if closed_high else "1)"
        raise ValueError(f"{name} must lie in {lo}, {hi}, got {value!r}")
    return _out(arr)


def at_least(name: str, value, minimum: float):
    """Require ``value >= minimum`` (elementwise)."""
    arr = _as_number(name, value)
    if np.any(arr < minimum):
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return _out(arr)


def integer(name: str, value, minimum: int = 0) -> int:
    """Require a whole number ``>= minimum`` (scalars only)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float, np.floating)):
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if not float(value).is_integer() or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def integers(name: str, value, minimum: int = 0):
    """Require whole numbers ``>= minimum``; accepts scalars and arrays."""
    arr = _as_number(name, value)
    if np.any(arr != np.round(arr)) or np.any(arr < minimum):
        raise ValueError(f"{name} must be whole numbers >= {minimum}, got {value!r}")
    return int(arr) if arr.ndim == 0 else arr


def choice(name: str, value, allowed):
    """Require ``value`` to be one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {sorted(allowed)}, got {value!r}")
    return value
