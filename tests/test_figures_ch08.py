"""Figures of chapter 8 (aiinfra.book.figures.ch08), driven with synthetic sweeps (no timing)."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from aiinfra import measure, roofline, units
from aiinfra.book.figures import ch08
from aiinfra.book.interactive import interactive_figure

BS = (1, 2, 4, 8, 16, 32, 64)
N = 2**24
PI, BETA = 20e9, 5e9


def _times(slowdown=1.25):
    c = measure.Ceilings(PI, BETA, "float32", "synthetic", "synthetic")
    return tuple(float(t) * slowdown for t in measure.predict_decode_step_s(N, np.array(BS), 4, c))


def test_readouts_follow_the_library():
    ts = _times()
    fig, r = ch08.toy_decode_roofline(
        8, batches=BS, times_s=ts, n_params=N, bytes_per_weight=4, flops_per_s=PI, bandwidth_bytes_per_s=BETA
    )
    assert isinstance(fig, Figure)
    c = measure.Ceilings(PI, BETA, "float32", "x", "x")
    pred = measure.predict_decode_step_s(N, 8, 4, c)
    assert r["predicted"] == units.fmt_time(pred, 2, "ms")
    assert r["measured"] == units.fmt_time(ts[3], 2, "ms")
    assert r["measured / predicted"] == "1.25x"
    rows, cols = measure.toy_decode_shape(N)
    assert r["prediction says"] == roofline.bound_label(
        measure.matmul_flops(rows, cols, 8), measure.matmul_min_bytes(rows, cols, 8, 4), PI, BETA
    )
    assert r["MBU"] == f"{roofline.mbu(measure.matmul_min_bytes(rows, cols, 8, 4), BETA, ts[3]):.0%}"
    knee = measure.predicted_knee_batch(4, c)
    assert r["knee: predicted / measured"] == f"{knee:.1f} / {measure.measured_knee_batch(BS, ts):.1f}"


def test_small_batch_memory_bound_large_batch_compute_bound():
    ts = _times(1.0)
    first = ch08.toy_decode_roofline(
        1, batches=BS, times_s=ts, n_params=N, flops_per_s=PI, bandwidth_bytes_per_s=BETA
    )[1]
    last = ch08.toy_decode_roofline(
        64, batches=BS, times_s=ts, n_params=N, flops_per_s=PI, bandwidth_bytes_per_s=BETA
    )[1]
    assert first["prediction says"] == roofline.MEMORY_BOUND
    assert last["prediction says"] == roofline.COMPUTE_BOUND
    # a measurement equal to the prediction runs at the ceiling that binds it
    assert first["MBU"] == "100%" and last["MFU"] == "100%"


def test_static_figure_fits_the_page_budget():
    ts = _times()
    f = interactive_figure(
        ch08.toy_decode_roofline,
        ch08.toy_decode_sliders(BS),
        mode="static",
        fixed={"batches": BS, "times_s": ts, "n_params": N},
    )
    assert len(f.frames) == len(BS)
    assert f.payload_bytes <= 400_000


def test_calls_overhead():
    ks = (1, 16, 256, 4096)
    ts = tuple(measure.step_time_with_calls_s(0.01, np.array(ks), 3e-6))
    fig, r = ch08.calls_overhead(ks, ts, 0.01, 3e-6)
    assert isinstance(fig, Figure)
    assert r["fitted cost per extra call"] == units.fmt_time(3e-6, 2)
    assert r["one tiny call, measured alone"] == "3.00 \u00b5s"
    assert r["share of the k=4,096 time spent on calls"] == f"{4096 * 3e-6 / ts[-1]:.0%}"


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: ch08.toy_decode_roofline(1, batches=BS), "times_s"),
        (lambda: ch08.toy_decode_roofline(3, batches=BS, times_s=_times()), "batch"),
        (lambda: ch08.toy_decode_roofline(1, batches=(1,), times_s=(0.1,)), "batches"),
        (lambda: ch08.toy_decode_roofline(1, batches=(2, 1), times_s=(0.1, 0.1)), "batches"),
        (lambda: ch08.toy_decode_roofline(1, batches=BS, times_s=_times()[:3]), "times_s"),
        (lambda: ch08.toy_decode_roofline(1, batches=BS, times_s=_times(), n_params=2), "n_params"),
        (
            lambda: ch08.toy_decode_roofline(1, batches=BS, times_s=_times(), bytes_per_weight=0),
            "bytes_per_weight",
        ),
        (lambda: ch08.toy_decode_roofline(1, batches=BS, times_s=_times(), flops_per_s=-1), "flops_per_s"),
        (lambda: ch08.toy_decode_sliders((1.5, 2)), "batches"),
        (lambda: ch08.calls_overhead((1, 2), (0.1, 0.2), 0, 1e-6), "base_s"),
        (lambda: ch08.calls_overhead((1, 2), (0.1, 0.2), 0.1, 0), "per_call_s"),
        (lambda: ch08.calls_overhead((1,), (0.1,), 0.1, 1e-6), "pieces"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_the_stored_sweep_draws_the_figure_with_its_own_ceilings():
    stored = measure.stored_decode_sweep()
    fixed = ch08.toy_decode_fixed(stored, "the reference machine")
    ceil = stored.machine.ceilings
    assert fixed["batches"] == stored.batches and fixed["times_s"] == stored.times_s
    assert (fixed["flops_per_s"], fixed["bandwidth_bytes_per_s"]) == (
        ceil.flops_per_s,
        ceil.bandwidth_bytes_per_s,
    )
    assert fixed["bytes_per_weight"] == 4
    _, r = ch08.toy_decode_roofline(1, **fixed)
    assert r["measured"] == units.fmt_time(stored.times_s[0], 2, "ms")
    knee = measure.predicted_knee_batch(4, ceil)
    assert r["knee: predicted / measured"].startswith(f"{knee:.1f} / ")
