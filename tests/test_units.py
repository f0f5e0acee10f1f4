import math

import numpy as np
import pytest

from aiinfra import units as u


def test_constants_keep_decimal_and_binary_apart():
    assert (u.KB, u.MB, u.GB, u.TB) == (1e3, 1e6, 1e9, 1e12)
    assert (u.KiB, u.MiB, u.GiB, u.TiB) == (1024, 1024**2, 1024**3, 1024**4)
    assert u.BITS_PER_BYTE == 8
    assert u.GiB / u.GB == pytest.approx(1.073741824)


def test_bits_and_bytes():
    assert u.bytes_from_bits(8) == 1.0
    assert u._bits_from_bytes(1) == 8.0
    np.testing.assert_allclose(u.bytes_from_bits(np.array([8, 16, 0])), [1, 2, 0])


def test_line_rate_400_gbit_is_50_gb_per_s_and_moves_1_gb_in_20_ms():
    rate = u.bytes_per_s_from_gbit_per_s(400)
    assert rate == 5e10
    assert u.GB / rate == pytest.approx(0.020)
    assert u.fmt_time(u.GB / rate) == "20.00 ms"
    assert u.gbit_per_s_from_bytes_per_s(rate) == pytest.approx(400)


def test_gb_gib_round_trip():
    assert u.gb_from_gib(1) == pytest.approx(1.073741824)


@pytest.mark.parametrize(
    "name,expected",
    [
        ("fp32", 4),
        ("bf16", 2),
        ("fp16", 2),
        ("fp8", 1),
        ("int8", 1),
        ("int4", 0.5),
        ("fp4", 0.5),
        ("BF16", 2),
    ],
)
def test_bytes_per_param(name, expected):
    assert u.bytes_per_param(name) == expected


def test_bytes_per_param_lists_known_names():
    with pytest.raises(ValueError, match="bf16"):
        u.bytes_per_param("bfloat17")
    with pytest.raises(ValueError, match="precision"):
        u.bytes_per_param(16)


def test_formatters_match_the_book_examples():
    assert u.fmt_time(0.0209) == "20.90 ms"
    assert u.fmt_time(2.5e-6) == "2.50 \u00b5s"
    assert u.fmt_time(3e-9) == "3.00 ns"
    assert u.fmt_time(12.0) == "12.00 s"
    assert u.fmt_time(0.0209, digits=1) == "20.9 ms"
    assert u.fmt_time(0.0209, unit="s") == "0.02 s"
    assert u.fmt_time(0) == "0.00 s"
    assert u.fmt_bytes(141_107_412_992) == "141.11 GB"
    assert u.fmt_bytes(141_107_412_992, unit="GiB") == "131.42 GiB"
    assert u.fmt_bytes(147_456, unit="KiB", digits=0) == "144 KiB"
    assert u.fmt_bytes(512) == "512.00 B"
    assert u.fmt_rate_bytes(3.35e12) == "3.35 TB/s"
    assert u.fmt_rate_bytes(5e10, unit="GB") == "50.00 GB/s"
    assert u.fmt_flops(16.34e9) == "16.34 GFLOPs"
    assert u.fmt_flops(29.69e12) == "29.69 TFLOPs"
    assert u.fmt_flops_rate(989.4e12) == "989.4 TFLOP/s"
    assert u.fmt_flops_rate(2.25e15, digits=2) == "2.25 PFLOP/s"


BAD_NUMBERS = [-1, float("nan"), float("inf"), True, "3", None]


@pytest.mark.parametrize("bad", BAD_NUMBERS)
@pytest.mark.parametrize(
    "fn, name",
    [
        (u.bytes_from_bits, "bits"),
        (u._bits_from_bytes, "n_bytes"),
        (u.bytes_per_s_from_gbit_per_s, "gbit_per_s"),
        (u.gbit_per_s_from_bytes_per_s, "bytes_per_s"),
        (u.gb_from_gib, "gib"),
    ],
)
def test_conversions_reject_bad_input(fn, name, bad):
    with pytest.raises(ValueError, match=f"^{name} must"):
        fn(bad)


@pytest.mark.parametrize("bad", BAD_NUMBERS + [np.array([1.0, 2.0])])
@pytest.mark.parametrize(
    "fn, name",
    [
        (u.fmt_time, "seconds"),
        (u.fmt_bytes, "n_bytes"),
        (u.fmt_rate_bytes, "bytes_per_s"),
        (u.fmt_flops, "flops"),
        (u.fmt_flops_rate, "flops_per_s"),
    ],
)
def test_formatters_reject_bad_values(fn, name, bad):
    with pytest.raises(ValueError, match=f"^{name} must"):
        fn(bad)


@pytest.mark.parametrize("fn", [u.fmt_time, u.fmt_bytes, u.fmt_rate_bytes, u.fmt_flops, u.fmt_flops_rate])
@pytest.mark.parametrize("digits", [-1, 1.5, True])
def test_formatters_reject_bad_digits(fn, digits):
    with pytest.raises(ValueError, match="digits"):
        fn(1.0, digits=digits)


@pytest.mark.parametrize("fn,unit", [(u.fmt_time, "min"), (u.fmt_bytes, "gb"), (u.fmt_rate_bytes, "Gbit")])
def test_formatters_reject_unknown_units(fn, unit):
    with pytest.raises(ValueError, match="unit"):
        fn(1.0, unit=unit)


def test_error_names_the_argument():
    with pytest.raises(ValueError, match="gbit_per_s"):
        u.bytes_per_s_from_gbit_per_s(-400)
    assert math.isfinite(u.bytes_per_s_from_gbit_per_s(0))
