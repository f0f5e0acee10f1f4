"""Chapter 2 figures: readouts come from the library, grids are valid, frames stay small."""

import io

import pytest
from matplotlib.figure import Figure

from aiinfra.book.figures import ch02
from aiinfra.book.interactive import interactive_figure
from aiinfra.catalog import hardware


def _png_bytes(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=56)
    return len(buf.getvalue())


def test_ladder_per_direction_readouts():
    fig, r = ch02.bandwidth_ladder("per direction, bytes")
    assert isinstance(fig, Figure)
    assert r["HBM / NIC"] == f"{hardware.ratio('hbm3', 'cx7'):,.1f}x" == "67.0x"
    assert r["NVLink / NIC"] == "9.00x"
    assert r["NIC, one direction"] == "50 GB/s"
    assert _png_bytes(fig) < 100_000


def test_ladder_as_printed_shows_the_trap():
    _, honest = ch02.bandwidth_ladder(ch02.LADDER_VIEWS[0])
    _, printed = ch02.bandwidth_ladder("as printed")
    # printed: 900 GB/s against 400 Gbit/s read as GB/s
    assert printed["NVLink / NIC"] == "2.25x"
    assert float(printed["NVLink / NIC"][:-1]) < float(honest["NVLink / NIC"][:-1])
    assert ch02._printed_number(hardware.link("nvlink4")) == pytest.approx(900)
    assert ch02._printed_number(hardware.link("cx7")) == pytest.approx(400)
    assert ch02._printed_number(hardware.link("hbm3")) == pytest.approx(3350)


def test_ladder_rejects_unknown_view():
    with pytest.raises(ValueError, match="view"):
        ch02.bandwidth_ladder("sideways")


def test_explorer_default_reproduces_the_worked_request():
    fig, r = ch02.request_explorer()
    assert r["prefill, 2,000 tokens"] == "64.0 ms"  # 2 N P / (0.5 x 1 PFLOP/s), the source's number
    assert r["decode step, batch 1"] == "7.8 ms"
    assert r["decode step, batch 32"] == "12.2 ms"
    assert r["all requests"] == "2,625 tok/s"
    assert r["gain over batch 1"] == "20.4x"
    assert r["KV share of bytes read"] == "38%"
    assert _png_bytes(fig) < 120_000


def test_explorer_moves_with_its_inputs():
    _, slow = ch02.request_explorer(batch=32, bandwidth_tb_per_s=2.0)
    _, fast = ch02.request_explorer(batch=32, bandwidth_tb_per_s=8.0)
    assert float(slow["all requests"].split()[0].replace(",", "")) < float(
        fast["all requests"].split()[0].replace(",", "")
    )
    _, one = ch02.request_explorer(batch=1)
    assert one["gain over batch 1"] == "1.0x"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(batch=0), "batch"),
        (dict(bandwidth_tb_per_s=0), "bandwidth_tb_per_s"),
        (dict(eta_b=1.2), "eta_b"),
        (dict(eta_f=0), "eta_f"),
    ],
)
def test_explorer_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ch02.request_explorer(**kwargs)


def test_slider_grids_are_valid_and_static_pages_fit():
    for s in ch02.request_explorer_sliders() + ch02.bandwidth_ladder_sliders():
        assert s.default in s.values
    fig = interactive_figure(ch02.bandwidth_ladder, ch02.bandwidth_ladder_sliders(), mode="static")
    assert len(fig.frames) == len(ch02.LADDER_VIEWS)
    assert fig.payload_bytes < 400_000
