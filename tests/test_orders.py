"""The 2009 latency table as data, and the seek example."""
import pytest

from aiinfra import orders


def test_table_has_twelve_rows_in_increasing_order():
    rows = orders.LATENCY_NUMBERS_2009
    assert len(rows) == 12
    secs = [r.seconds for r in rows]
    assert secs == sorted(secs)
    assert "LADIS 2009" in orders.LATENCY_NUMBERS_SOURCE


def test_lookups_in_seconds():
    assert orders.latency_s("Main memory reference") == pytest.approx(100e-9)
    assert orders.latency_s("disk seek") == pytest.approx(10e-3)
    assert orders.latency_s("Round trip within same datacenter") == pytest.approx(0.5e-3)
    assert orders.latency_ratio("Disk seek", "Main memory reference") == pytest.approx(1e5)


def test_table_rows_units():
    rows = dict(orders.latency_table_rows("ns"))
    assert rows["L1 cache reference"] == pytest.approx(0.5)
    assert dict(orders.latency_table_rows("ms"))["Disk seek"] == pytest.approx(10.0)


def test_seeks():
    assert orders.sequential_seeks_time_s(20, 10e-3, 1e-3) == pytest.approx(0.201)
    assert orders.sequential_seeks_time_s(0, compute_time_s=2.0) == 2.0


@pytest.mark.parametrize("call, name", [
    (lambda: orders.latency_s("Flux capacitor"), "operation"),
    (lambda: orders.latency_s(3), "operation"),
    (lambda: orders.latency_table_rows("hours"), "unit"),
    (lambda: orders.latency_ratio("Disk seek", "Tape rewind"), "operation"),
    (lambda: orders.sequential_seeks_time_s(2.5), "n_seeks"),
    (lambda: orders.sequential_seeks_time_s(-1), "n_seeks"),
    (lambda: orders.sequential_seeks_time_s(1, seek_time_s=0), "seek_time_s"),
    (lambda: orders.sequential_seeks_time_s(1, compute_time_s=-1), "compute_time_s"),
])
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
