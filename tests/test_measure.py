"""aiinfra.measure: timing rules, work counts, predictions, and real (small) reference.

No test asserts a machine-specific speed: measured values are checked to be
positive and finite and consistent with each other (two bandwidth methods
within a sane factor); the prediction code is checked against the roofline
and decode functions it must call.
"""

import ast
import datetime
import importlib
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from aiinfra import decode, measure, roofline
from aiinfra.measure import Ceilings, Measurement, Timing, kernels, record

MEASURE_DIR = Path(measure.__file__).parent


class FakeClock:
    """A clock that advances by ``step`` seconds every time it is read."""

    def __init__(self, step=0.01):
        self.t = 0.0
        self.step = step

    def __call__(self):
        self.t += self.step
        return self.t


# --------------------------------------------------------------------- timing


def test_time_call_warmup_repeats_and_budget_with_a_fake_clock():
    calls = []
    clock = FakeClock(0.01)
    t = measure.time_call(
        lambda: calls.append(1), budget_s=0.1, warmup=2, min_repeats=3, max_repeats=100, clock=clock
    )
    # each sample reads the clock twice (0.01 s apart); the budget check reads it once more per round
    assert all(s == pytest.approx(0.01) for s in t.samples_s)
    assert t.warmup == 2 and t.first_s == pytest.approx(0.01)
    assert len(calls) == 2 + t.repeats
    assert 3 <= t.repeats < 100
    assert t.median_s == pytest.approx(0.01) and t.spread == pytest.approx(0.0)


def test_time_call_min_repeats_when_one_call_exceeds_the_budget():
    t = measure.time_call(lambda: None, budget_s=1e-6, min_repeats=5, clock=FakeClock(1.0))
    assert t.repeats == 5


def test_time_call_max_repeats_caps_the_loop():
    t = measure.time_call(lambda: None, budget_s=1e9, min_repeats=1, max_repeats=7, clock=FakeClock(1e-3))
    assert t.repeats == 7


def test_time_call_inner_divides_and_sync_runs_per_sample():
    syncs = []
    t = measure.time_call(
        lambda: None,
        budget_s=1e-9,
        min_repeats=3,
        inner=10,
        sync=lambda: syncs.append(1),
        clock=FakeClock(0.5),
    )
    assert t.inner == 10
    assert all(s == pytest.approx(0.05) for s in t.samples_s)  # one 0.5 s clock step spread over 10 calls
    assert len(syncs) == 1 + t.repeats  # the warm-up sample and every timed sample


def test_timing_statistics():
    t = Timing(samples_s=(0.3, 0.1, 0.2, 0.4, 0.2), warmup=1, first_s=1.0)
    assert t.median_s == 0.2 and t.min_s == 0.1 and t.max_s == 0.4
    assert t.spread == pytest.approx((0.4 - 0.1) / 0.2)
    assert t.repeats == 5


def test_time_interleaved_runs_variants_in_rounds():
    order = []
    fns = [lambda i=i: order.append(i) for i in range(3)]
    ts = measure.time_interleaved(fns, budget_s=1e-9, warmup=1, min_repeats=2, clock=FakeClock(0.001))
    assert [t.repeats for t in ts] == [2, 2, 2]
    # warm-up round, then two timed rounds: always 0, 1, 2 in turn
    assert order == [0, 1, 2] * 3


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"budget_s": 0}, "budget_s"),
        ({"warmup": 0}, "warmup"),
        ({"min_repeats": 0}, "min_repeats"),
        ({"min_repeats": 5, "max_repeats": 2}, "max_repeats"),
        ({"inner": 0}, "inner"),
        ({"sync": 3}, "sync"),
    ],
)
def test_time_call_rejections(kwargs, name):
    with pytest.raises(ValueError, match=name):
        measure.time_call(lambda: None, **kwargs)


def test_time_interleaved_rejections():
    with pytest.raises(ValueError, match="fns"):
        measure.time_interleaved([], budget_s=1)
    with pytest.raises(ValueError, match="fns"):
        measure.time_interleaved([1, 2], budget_s=1)
    with pytest.raises(ValueError, match="fn"):
        measure.time_call("not callable")


# ---------------------------------------------------------------- work counts


def test_matmul_counts():
    assert measure.matmul_flops(4096, 4096, 1) == 2 * 4096 * 4096
    assert measure.matmul_min_bytes(3, 5, 7, 4) == (15 + 35 + 21) * 4
    np.testing.assert_allclose(measure.matmul_flops(10, 10, np.array([1, 2, 4])), [200, 400, 800])
    for call, name in [
        (lambda: measure.matmul_flops(0, 1, 1), "m"),
        (lambda: measure.matmul_flops(1, 1.5, 1), "k"),
        (lambda: measure.matmul_min_bytes(1, 1, 1, 0), "bytes_per_element"),
    ]:
        with pytest.raises(ValueError, match=name):
            call()


@pytest.mark.parametrize("n", [4, 1000, 2**24, 123_457])
def test_toy_decode_shape_holds_about_n_weights(n):
    rows, cols = measure.toy_decode_shape(n)
    assert abs(rows * cols - n) <= cols
    with pytest.raises(ValueError, match="n_params"):
        measure.toy_decode_shape(3)


def test_cache_and_stream_sizes():
    llc = kernels._last_level_cache_bytes()
    assert llc is None or llc > 0
    size = measure.default_stream_bytes(measure.get_backend("numpy"))
    assert size >= measure.MIN_STREAM_BYTES
    if llc:
        assert size >= 2 * llc


# ---------------------------------------------------------------- predictions

CEIL = Ceilings(
    flops_per_s=50e9, bandwidth_bytes_per_s=10e9, dtype="float32", backend="test", source="made up"
)


def test_predictions_call_the_roofline():
    assert CEIL.ridge_flops_per_byte == roofline.ridge_point_flops_per_byte(50e9, 10e9) == 5.0
    assert measure.predict_time_s(1e9, 4e9, CEIL) == roofline.step_time_overlapped_s(1e9, 4e9, 50e9, 10e9)
    n = 2**24
    rows, cols = measure.toy_decode_shape(n)
    for b in (1, 8, 64):
        expect = roofline.step_time_overlapped_s(
            2.0 * rows * cols * b, (rows * cols + (rows + cols) * b) * 4, 50e9, 10e9
        )
        assert measure.predict_decode_step_s(n, b, 4, CEIL) == pytest.approx(expect, rel=1e-12)
    sweep = measure.predict_decode_step_s(n, np.array([1, 8, 64]), 4, CEIL)
    assert sweep.shape == (3,) and np.all(np.diff(sweep) >= 0)


def test_predicted_knee_is_the_critical_batch_and_balances_the_two_times():
    knee = measure.predicted_knee_batch(4, CEIL)
    assert knee == decode.critical_batch_size(4, 50e9, 10e9) == pytest.approx(10.0)
    n = 10**8
    compute = roofline.compute_time_s(2 * n * knee, CEIL.flops_per_s)
    weights = roofline.memory_time_s(4 * n, CEIL.bandwidth_bytes_per_s)
    assert compute == pytest.approx(weights)


def test_measured_knee_recovers_a_two_regime_sweep():
    a, c = 0.02, 0.001  # knee at a / c = 20
    bs = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    ts = np.maximum(a, c * bs)
    assert measure.measured_knee_batch(bs, ts) == pytest.approx(20.0)
    gain = measure.throughput_gain(bs, ts)
    assert gain[0] == 1 and gain[-1] == pytest.approx(20.0)
    # a sweep that never leaves the flat part gives its own largest batch, not more
    assert measure.measured_knee_batch([1, 2, 4], [a, a, a]) == pytest.approx(4.0)
    # never below the first batch
    assert measure.measured_knee_batch([1, 2], [1.0, 10.0]) == 1.0


@pytest.mark.parametrize(
    "bs, ts, name",
    [
        ([1], [1.0], "batches"),
        ([1, 2], [1.0], "batches"),
        ([2, 1], [1.0, 1.0], "batches"),
        ([1, 2], [1.0, 0.0], "times_s"),
        ([0, 2], [1.0, 1.0], "batches"),
    ],
)
def test_sweep_rejections(bs, ts, name):
    with pytest.raises(ValueError, match=name):
        measure.measured_knee_batch(bs, ts)


def test_step_time_with_calls_and_fit():
    assert measure.step_time_with_calls_s(0.01, 300, 5e-6) == pytest.approx(0.0115)
    ks = np.array([1, 16, 256, 4096])
    ts = measure.step_time_with_calls_s(0.01, ks, 2e-6)
    assert measure.fit_per_call_s(ks, ts) == pytest.approx(2e-6)
    assert measure.fit_per_call_s([1, 2, 3], [3.0, 2.0, 1.0]) == 0.0  # a falling sweep is noise, not a gain
    for call, name in [
        (lambda: measure.step_time_with_calls_s(-1, 1, 1), "bound_s"),
        (lambda: measure.step_time_with_calls_s(1, 1.5, 1), "n_calls"),
        (lambda: measure.step_time_with_calls_s(1, 1, -1), "per_call_s"),
    ]:
        with pytest.raises(ValueError, match=name):
            call()


def _meas(kind, flops, nbytes, seconds):
    return Measurement(kind, "test", flops, nbytes, Timing((seconds,), 1, seconds))


def test_utilisation_against_measured_ceilings():
    m = _meas("decode", 2e8, 4e8, 0.08)  # 5 GB/s, 2.5 GFLOP/s
    assert measure.mbu_against(m, CEIL) == pytest.approx(roofline.mbu(4e8, 10e9, 0.08)) == pytest.approx(0.5)
    assert measure.mfu_against(m, CEIL) == pytest.approx(roofline.mfu(2e8, 50e9, 0.08)) == pytest.approx(0.05)
    fast = _meas("decode", 1e9, 4e9, 0.2)  # 20 GB/s: beats the 10 GB/s ceiling, which is then raised
    assert measure.mbu_against(fast, CEIL) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="ceilings"):
        measure.mbu_against(m, "fast")
    with pytest.raises(ValueError, match="m must"):
        measure.mfu_against(0.1, CEIL)


def test_ceilings_validation_and_from_measurements():
    with pytest.raises(ValueError, match="flops_per_s"):
        Ceilings(0, 1, "float32", "x", "y")
    with pytest.raises(ValueError, match="bandwidth_bytes_per_s"):
        Ceilings(1, float("nan"), "float32", "x", "y")
    g = Measurement("gemm", "test", 2e9, 1e7, Timing((0.1,), 1, 0.1), {"n": 1000, "dtype": "float32"})
    c = Ceilings.from_measurements(g, _meas("copy", 0, 2e9, 0.5), _meas("read", 0, 1e9, 0.2))
    assert c.flops_per_s == pytest.approx(2e10) and c.bandwidth_bytes_per_s == pytest.approx(5e9)
    assert "read" in c.source
    with pytest.raises(ValueError, match="gemm"):
        Ceilings.from_measurements(_meas("copy", 0, 1, 1), _meas("copy", 0, 1, 1))
    with pytest.raises(ValueError, match="bandwidth"):
        Ceilings.from_measurements(g)


# ------------------------------------------------------------------- backends


def test_backends():
    be = measure.get_backend("numpy")
    assert isinstance(be, measure.NumpyBackend) and "CPU" in be.description
    with pytest.raises(ValueError, match="prefer"):
        measure.get_backend("tpu")
    if importlib.util.find_spec("torch") is None:
        with pytest.raises(ValueError, match="prefer='torch'"):
            measure.get_backend("torch")
        assert isinstance(measure.get_backend(), measure.NumpyBackend)
    else:  # torch installed: either a GPU is there, or asking for it fails loudly
        try:
            assert measure.get_backend("torch").device == "cuda"
        except ValueError as err:
            assert "prefer='torch'" in str(err)
    with pytest.raises(ValueError, match="dtype"):
        be.check_dtype("int8")
    with pytest.raises(ValueError, match="backend"):
        measure.measure_gemm(64, backend="numpy")


# ------------------------------------------------------- real, small measurements

NP = measure.get_backend("numpy")


def _finite_positive(*xs):
    return all(math.isfinite(x) and x > 0 for x in xs)


def test_bandwidth_two_methods_agree_within_a_sane_factor():
    copy = measure.measure_copy_bandwidth(dtype="float32", budget_s=0.1, backend=NP)
    read = measure.measure_read_bandwidth(dtype="float32", budget_s=0.1, backend=NP)
    assert copy.bytes_moved == 2 * copy.params["n_bytes"] and read.bytes_moved == read.params["n_bytes"]
    assert _finite_positive(copy.seconds, copy.bytes_per_s, read.seconds, read.bytes_per_s)
    ratio = copy.bytes_per_s / read.bytes_per_s
    assert 1 / 8 < ratio < 8, f"copy and read bandwidth disagree by {ratio:.2f}x"
    # a memory bandwidth, not a cache or a clock artefact: between 0.1 GB/s and 100 TB/s
    for m in (copy, read):
        assert 1e8 < m.bytes_per_s < 1e14


def test_gemm_and_decode_measurements_are_positive_and_consistent():
    g = measure.measure_gemm(128, budget_s=0.05, backend=NP)
    assert g.flops == 2 * 128**3 and _finite_positive(g.seconds, g.flops_per_s)
    assert g.timing.repeats >= 3 and g.timing.first_s > 0
    d = measure.measure_decode_step(2**16, batch=1, budget_s=0.05, backend=NP)
    assert d.params["batch"] == 1 and d.flops == 2 * d.params["n_params"]
    assert _finite_positive(d.seconds, d.bytes_per_s)
    d16 = measure.measure_decode_step(2**12, batch=2, dtype="float16", budget_s=0.02, backend=NP)
    assert d16.params["bytes_per_weight"] == 2 and _finite_positive(d16.seconds)


def test_decode_sweep_shares_one_matrix():
    sweep = kernels._measure_decode_sweep([1, 4, 16], 2**16, budget_s=0.1, backend=NP)
    assert [m.params["batch"] for m in sweep] == [1, 4, 16]
    assert len({m.params["n_params"] for m in sweep}) == 1
    assert all(_finite_positive(m.seconds) for m in sweep)
    assert [m.flops for m in sweep] == [2 * sweep[0].params["n_params"] * b for b in (1, 4, 16)]


def test_call_overhead_and_ceilings():
    o = measure.measure_call_overhead(size=4, calls=200, budget_s=0.02, backend=NP)
    assert o.timing.inner == 200 and _finite_positive(o.seconds) and o.params["op"] == "sum"
    om = measure.measure_call_overhead(size=4, calls=100, op="matmul", budget_s=0.02, backend=NP)
    assert om.flops == 2 * 4 * 4 and _finite_positive(om.seconds)
    assert o.seconds < 0.01  # a tiny call is far below 10 ms on any machine that runs Python
    c, ms = measure.measure_ceilings(budget_s=0.2, backend=NP)
    assert [m.kind for m in ms] == ["copy", "read", "gemm"]
    assert c.bandwidth_bytes_per_s == max(ms[0].bytes_per_s, ms[1].bytes_per_s)
    assert c.flops_per_s == ms[2].flops_per_s and _finite_positive(c.ridge_flops_per_byte)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: measure.measure_copy_bandwidth(100, backend=NP), "n_bytes"),
        (lambda: measure.measure_copy_bandwidth(dtype="int8", backend=NP), "dtype"),
        (lambda: measure.measure_read_bandwidth(2**20, budget_s=0, backend=NP), "budget_s"),
        (lambda: measure.measure_gemm(1, backend=NP), "n"),
        (lambda: measure.measure_decode_step(2**10, batch=0, backend=NP), "batch"),
        (lambda: measure.measure_decode_step(2, backend=NP), "n_params"),
        (lambda: kernels._measure_decode_sweep([], 2**10, backend=NP), "batches"),
        (lambda: kernels._measure_decode_sweep([1, 0], 2**10, backend=NP), "batches"),
        (lambda: measure.measure_call_overhead(size=0, backend=NP), "size"),
        (lambda: measure.measure_call_overhead(calls=0, backend=NP), "calls"),
        (lambda: measure.measure_call_overhead(op="fft", backend=NP), "op"),
        (lambda: measure.predict_decode_step_s(2**10, 0, 4, CEIL), "batch"),
        (lambda: measure.predict_decode_step_s(2**10, 1, 0, CEIL), "bytes_per_weight"),
        (lambda: measure.predicted_knee_batch(4, None), "ceilings"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_datasheet_ceilings_of_a_cpu():
    assert roofline.cpu_flops_per_cycle(2, 256, 32) == 32  # two AVX2 FMA units, float32
    assert roofline.cpu_flops_per_cycle(2, 512, 64) == 32  # two AVX-512 FMA units, float64
    assert roofline.cpu_peak_flops_per_s(8, 3e9, 2, 256, 32) == pytest.approx(768e9)
    np.testing.assert_allclose(roofline.cpu_peak_flops_per_s(np.array([1, 2]), 1e9, 1, 128, 32), [8e9, 16e9])
    assert measure.achieved_rate_per_s(16e9, 0.005) == pytest.approx(3.2e12)
    for call, name in [
        (lambda: roofline.cpu_flops_per_cycle(0, 256, 32), "fma_units"),
        (lambda: roofline.cpu_flops_per_cycle(2, 256.5, 32), "simd_bits"),
        (lambda: roofline.cpu_flops_per_cycle(2, 256, 0), "bits_per_element"),
        (lambda: roofline.cpu_peak_flops_per_s(0, 1e9, 2, 256, 32), "cores"),
        (lambda: roofline.cpu_peak_flops_per_s(1, 0, 2, 256, 32), "clock_hz"),
        (lambda: measure.achieved_rate_per_s(-1, 1), "amount"),
        (lambda: measure.achieved_rate_per_s(1, 0), "elapsed_s"),
    ]:
        with pytest.raises(ValueError, match=name):
            call()


def test_split_read_keeps_the_bytes_and_changes_only_the_calls():
    split = measure.measure_split_read([1, 8, 512], 2**20, budget_s=0.05, backend=NP)
    assert [m.params["pieces"] for m in split] == [1, 8, 512]
    assert len({m.bytes_moved for m in split}) == 1 and split[0].bytes_moved == 2**20
    assert all(_finite_positive(m.seconds) for m in split)
    for call, name in [
        (lambda: measure.measure_split_read([], 2**20, backend=NP), "pieces"),
        (lambda: measure.measure_split_read([0], 2**20, backend=NP), "pieces"),
        (lambda: measure.measure_split_read([10**9], 2**12, backend=NP), "pieces"),
        (lambda: measure.measure_split_read([1], 2**20, budget_s=-1, backend=NP), "budget_s"),
    ]:
        with pytest.raises(ValueError, match=name):
            call()


# --------------------------------------------------------------------- the build's record


def test_scale_env_multiplies_every_measured_time(monkeypatch):
    clock = FakeClock(0.01)
    monkeypatch.setenv(measure.SCALE_ENV, "3")
    t = measure.time_call(lambda: None, budget_s=0.1, warmup=1, clock=clock)
    assert t.first_s == pytest.approx(0.03) and t.median_s == pytest.approx(0.03)


@pytest.mark.parametrize("text", ["0", "-2", "nan", "inf", "fast"])
def test_scale_env_rejects_what_is_not_a_positive_factor(monkeypatch, text):
    monkeypatch.setenv(measure.SCALE_ENV, text)
    with pytest.raises(ValueError, match=measure.SCALE_ENV):
        measure.time_call(lambda: None, budget_s=0.01)


def test_machine_record_is_measured_once_and_read_back_equal(monkeypatch, tmp_path):
    path = tmp_path / "cache" / "machine-record.json"
    monkeypatch.setenv(measure.RECORD_ENV, str(path))
    first = measure.machine_record()
    assert path.is_file()
    assert [g.params["n"] for g in first.gemms] == [256, 512, 1024]
    assert first.tiny_call.params == {"size": 8, "calls": 2000, "op": "sum"}
    assert first.ceilings.bandwidth_bytes_per_s == max(first.copy.bytes_per_s, first.read.bytes_per_s)
    assert first.ceilings.flops_per_s == max(g.flops_per_s for g in first.gemms)

    def measuring_again(**kwargs):
        raise AssertionError("a second page measured again")

    monkeypatch.setattr(record, "_measure_machine", measuring_again)
    assert measure.machine_record() == first


# --------------------------------------------------------------------- the package and its modules


def _public_names(module) -> set[str]:
    """The public names a module defines at its top level, read from its source (not from an import)."""
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return {n for n in names if not n.startswith("_")}


def test_the_package_offers_exactly_the_public_names_of_its_modules():
    modules = [importlib.import_module(f"aiinfra.measure.{p.stem}") for p in MEASURE_DIR.glob("[!_]*.py")]
    assert {m.__name__.rsplit(".", 1)[1] for m in modules} == {
        "backends",
        "harness",
        "kernels",
        "predictions",
        "record",
    }
    offered = {n for n in vars(measure) if not n.startswith("_")} - {
        m.__name__.rsplit(".", 1)[1] for m in modules
    }
    defined = {n: m for m in modules for n in _public_names(m)}
    assert offered == set(defined)
    for name, module in defined.items():
        assert getattr(measure, name) is getattr(module, name), name


def test_the_cpu_peak_lives_with_the_other_peak_formulas():
    assert not hasattr(measure, "cpu_peak_flops_per_s")
    assert roofline.cpu_peak_flops_per_s.sym is not None


# --------------------------------------------------------------------- the stored toy decode sweep


STORED = MEASURE_DIR.parent / "catalog" / "data" / measure.STORED_SWEEP


def test_the_stored_sweep_is_a_canonical_record_of_one_cpu_run():
    s = measure.stored_decode_sweep()
    assert STORED.read_text(encoding="utf-8") == s.to_json()  # the file is what the record writes
    assert measure.DecodeSweep.from_json(s.to_json()) == s
    assert s.batches == measure.SWEEP_BATCHES[s.machine.device] == (1, 2, 4, 8, 16, 32, 64)
    assert {m.kind for m in s.sweep} == {"decode"}
    rows, cols = s.sweep[0].params["rows"], s.sweep[0].params["cols"]
    assert {m.params["n_params"] for m in s.sweep} == {rows * cols}
    assert (rows, cols) == measure.toy_decode_shape(rows * cols)
    assert {m.backend for m in s.sweep} == {s.machine.backend}
    assert all(math.isfinite(t) and t > 0 for t in s.times_s)
    assert datetime.date.fromisoformat(s.measured_on).year >= 2026
    assert s.source.startswith("tools/record_toy_decode.py")


def test_a_fresh_sweep_record_carries_its_machine_and_the_batches_of_its_device(monkeypatch):
    stored = measure.stored_decode_sweep()
    monkeypatch.setattr(record, "machine_record", lambda be: stored.machine)
    monkeypatch.setattr(record, "default_stream_bytes", lambda be: 4 * 2**14)
    mine = measure.measure_decode_sweep_record(budget_s=0.05, source="a test", backend=NP)
    assert mine.machine is stored.machine and mine.source == "a test"
    assert mine.batches == (1, 2, 4, 8, 16, 32, 64)
    assert mine.sweep[0].params["n_params"] == 128 * 128
    assert mine.measured_on == datetime.date.today().isoformat()
