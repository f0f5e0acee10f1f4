"""Units, conversions and the formatters that turn SI floats into prose.

Everything inside :mod:`aiinfra` is SI: bytes, bits, seconds, FLOPs, bytes per
second. This module holds the only place where the decimal prefixes (KB = 1e3
bytes, GB = 1e9 bytes) and the binary ones (KiB = 2**10 bytes, GiB = 2**30
bytes) are defined, so a chapter never types ``1e9`` or ``1024**3`` by hand.

Two conventions the book keeps apart everywhere:

* **decimal vs binary**: ``GB`` is 1,000,000,000 bytes and ``GiB`` is
  1,073,741,824 bytes; 141.11 GB and 131.42 GiB are the same weights.
* **bits vs bytes**: network line rates come in bit/s (``Gbit/s``), memories
  and files in bytes. :data:`BITS_PER_BYTE` is the only bridge.

The ``fmt_*`` helpers return strings for prose and tables (chapter 1 onward);
they never round the underlying value.
"""

from __future__ import annotations

from aiinfra.formula import check, choice, formula

# --- decimal (SI) byte multiples -------------------------------------------
KB: float = 1e3
MB: float = 1e6
GB: float = 1e9
TB: float = 1e12
PB: float = 1e15

# --- binary (IEC) byte multiples -------------------------------------------
KiB: int = 2**10
MiB: int = 2**20
GiB: int = 2**30
TiB: int = 2**40

BITS_PER_BYTE: int = 8

# --- dimensionless SI prefixes (counts of FLOPs, parameters, tokens) ---------
KILO: float = 1e3
MEGA: float = 1e6
GIGA: float = 1e9
TERA: float = 1e12
PETA: float = 1e15
EXA: float = 1e18

# --- time -------------------------------------------------------------------
ns: float = 1e-9
us: float = 1e-6
ms: float = 1e-3
hour: float = 3600.0

# --- length and area (chapter 2's wafers and dies; SI metres and square metres) ----
mm: float = 1e-3
mm2: float = 1e-6
cm2: float = 1e-4

#: FLOPs in one multiply-accumulate (a multiply and an add). Chip papers that count MACs
#: (the TPU's "MAC operations per weight byte") give half the FLOP figure.
FLOPS_PER_MAC: int = 2

#: Storage bytes per parameter for each supported number format. The 4-bit
#: formats pack two values per byte; block scales are *not* included here
#: (see :func:`aiinfra.memory.grouped_quant_weight_bytes` for those).
PRECISION_BYTES: dict[str, float] = {
    "fp64": 8.0,
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}

_DECIMAL_BYTE_UNITS = {"B": 1.0, "KB": KB, "MB": MB, "GB": GB, "TB": TB, "PB": PB}
_BINARY_BYTE_UNITS = {"KiB": float(KiB), "MiB": float(MiB), "GiB": float(GiB), "TiB": float(TiB)}
_BYTE_UNITS = {**_DECIMAL_BYTE_UNITS, **_BINARY_BYTE_UNITS}

#: Decimal giga, for line rates in bits per second (1 Gbit/s = 1e9 bit/s).
Gbit: float = 1e9


@formula(bits="n_bits >=0")
def bytes_from_bits(bits):
    """Bytes in ``bits`` bits: ``bits / 8``; bits per second to bytes per second alike. Accepts arrays.

    The one bridge between bits and bytes: 400 Gbit/s (one ConnectX-7 port)
    is 5e10 B/s.
    """
    return bits / BITS_PER_BYTE


@formula(n_bytes="n_B >=0")
def _bits_from_bytes(n_bytes):
    """Bits in ``n_bytes`` bytes: ``8 * n_bytes``. Accepts arrays."""
    return n_bytes * BITS_PER_BYTE


@formula(gbit_per_s="r_Gbit >=0")
def bytes_per_s_from_gbit_per_s(gbit_per_s):
    """Convert a line rate in Gbit/s (decimal giga, bits) to bytes per second.

    ``400`` Gbit/s (one ConnectX-7 port) gives ``5e10`` B/s, i.e. 50 GB/s.
    The result is the *nominal* line rate; protocol overhead is not removed.
    """
    return bytes_from_bits(gbit_per_s * Gbit)


@formula(bytes_per_s="beta >=0")
def gbit_per_s_from_bytes_per_s(bytes_per_s):
    """Convert bytes per second to Gbit/s (decimal giga, bits): ``8 * x / 1e9``."""
    return _bits_from_bytes(bytes_per_s) / Gbit


@formula(gib="g >=0")
def gb_from_gib(gib):
    """Decimal gigabytes in ``gib`` binary gibibytes (1 GiB = 1.073741824 GB)."""
    return gib * GiB / GB


def bytes_per_param(precision: str) -> float:
    """Bytes that one parameter occupies in ``precision``.

    Known names (case-insensitive): fp64, fp32, tf32, bf16, fp16, fp8, int8,
    int4, fp4. The 4-bit formats return 0.5. Per-block scale factors are not
    included; :mod:`aiinfra.memory` adds them where a scheme needs them.
    """
    if not isinstance(precision, str) or precision.strip().lower() not in PRECISION_BYTES:
        raise ValueError(f"precision must be one of {sorted(PRECISION_BYTES)}, got {precision!r}")
    return PRECISION_BYTES[precision.strip().lower()]


# --- formatters --------------------------------------------------------------


def _digits(digits) -> int:
    return check("digits", digits, "int>=0", scalar=True)


def _scalar(name: str, value) -> float:
    return check(name, value, ">=0", scalar=True)


def _auto_prefix(value: float, ladder: list[tuple[str, float]]) -> tuple[str, float]:
    """Largest prefix whose scale is <= value (the smallest one for tiny values)."""
    chosen = ladder[0]
    for prefix, scale in ladder:
        if value >= scale:
            chosen = (prefix, scale)
    return chosen


#: How the book writes "micro": the micro sign (U+00B5), so a duration reads "16.52 µs".
MICRO_SIGN = "\u00b5"
_TIME_LADDER = [("ns", ns), ("us", us), ("ms", ms), ("s", 1.0)]
_SI_LADDER = [("", 1.0), ("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12), ("P", 1e15), ("E", 1e18)]


def fmt_time(seconds, digits=2, unit: str | None = None) -> str:
    """Format a duration: ``fmt_time(0.0209) == "20.90 ms"``.

    The unit is chosen automatically among ns, µs, ms and s (the largest one
    that keeps the number >= 1; durations over a minute stay in seconds), or
    forced with ``unit=`` (``"us"`` is accepted for µs). ``digits`` is the
    number of decimals. Microseconds are always written ``µs``.
    """
    s = _scalar("seconds", seconds)
    d = _digits(digits)
    scales = dict(_TIME_LADDER)
    if unit is None:
        name, scale = ("s", 1.0) if s == 0 else _auto_prefix(s, _TIME_LADDER)
    else:
        unit = "us" if unit == MICRO_SIGN + "s" else unit
        choice("unit", unit, set(scales))
        name, scale = unit, scales[unit]
    return f"{s / scale:.{d}f} {MICRO_SIGN + 's' if name == 'us' else name}"


def fmt_bytes(n_bytes, unit: str | None = None, digits=2) -> str:
    """Format a byte count: ``fmt_bytes(141.107e9) == "141.11 GB"``.

    ``unit`` is one of B, KB, MB, GB, TB, PB (decimal) or KiB, MiB, GiB, TiB
    (binary); by default the largest *decimal* unit that keeps the number
    >= 1 is used. Binary units are only used when asked for.
    """
    n = _scalar("n_bytes", n_bytes)
    d = _digits(digits)
    if unit is None:
        ladder = list(_DECIMAL_BYTE_UNITS.items())
        name, scale = ("B", 1.0) if n == 0 else _auto_prefix(n, ladder)
    else:
        choice("unit", unit, set(_BYTE_UNITS))
        name, scale = unit, _BYTE_UNITS[unit]
    return f"{n / scale:.{d}f} {name}"


def fmt_rate_bytes(bytes_per_s, unit: str | None = None, digits=2) -> str:
    """Format a bandwidth: ``fmt_rate_bytes(3.35e12) == "3.35 TB/s"``.

    Same units as :func:`fmt_bytes`, followed by ``/s``.
    """
    rate = _scalar("bytes_per_s", bytes_per_s)
    if unit is not None:
        choice("unit", unit, set(_BYTE_UNITS))
    return fmt_bytes(rate, unit=unit, digits=digits) + "/s"


def _fmt_si(value: float, digits: int, suffix: str) -> str:
    prefix, scale = ("", 1.0) if value == 0 else _auto_prefix(value, _SI_LADDER)
    return f"{value / scale:.{digits}f} {prefix}{suffix}"


def fmt_flops(flops, digits=2) -> str:
    """Format an amount of work: ``fmt_flops(16.34e9) == "16.34 GFLOPs"``.

    "FLOPs" (plural, no slash) is a count of floating-point operations; the
    rate is written "FLOP/s" by :func:`fmt_flops_rate`.
    """
    return _fmt_si(_scalar("flops", flops), _digits(digits), "FLOPs")


def fmt_flops_rate(flops_per_s, digits=1) -> str:
    """Format a compute rate: ``fmt_flops_rate(989.4e12) == "989.4 TFLOP/s"``.

    One decimal by default, the precision vendors print their peaks with.
    """
    return _fmt_si(_scalar("flops_per_s", flops_per_s), _digits(digits), "FLOP/s")


def fmt_power(watts, digits=1) -> str:
    """Format a power: ``fmt_power(45.9e6) == "45.9 MW"`` (W, kW or MW; whole watts below 1 kW)."""
    w = _scalar("watts", watts)
    d = _digits(digits)
    if w >= 1e6:
        return f"{w / 1e6:.{d}f} MW"
    if w >= 1e3:
        return f"{w / 1e3:.{d}f} kW"
    return f"{w:.0f} W"


__all__ = [
    "KB",
    "MB",
    "GB",
    "TB",
    "PB",
    "KiB",
    "MiB",
    "GiB",
    "TiB",
    "Gbit",
    "KILO",
    "MEGA",
    "GIGA",
    "TERA",
    "PETA",
    "EXA",
    "ns",
    "us",
    "ms",
    "hour",
    "mm",
    "mm2",
    "cm2",
    "FLOPS_PER_MAC",
    "BITS_PER_BYTE",
    "PRECISION_BYTES",
    "bytes_from_bits",
    "bytes_per_s_from_gbit_per_s",
    "gbit_per_s_from_bytes_per_s",
    "gb_from_gib",
    "bytes_per_param",
    "fmt_time",
    "fmt_bytes",
    "fmt_rate_bytes",
    "fmt_flops",
    "fmt_flops_rate",
    "fmt_power",
]
