"""Chapter 1 figures (aiinfra.book.figures.ch01): pure functions params -> (Figure, readouts)."""

import pytest
from matplotlib.figure import Figure

from aiinfra import decode, memory, predict, units
from aiinfra.book.figures import ch01
from aiinfra.book.interactive import Slider, interactive_figure
from aiinfra.catalog import hardware, models
from aiinfra.deployment import Deployment


def _texts(fig):
    out = []
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts]
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        leg = ax.get_legend()
        if leg is not None:
            out += [t.get_text() for t in leg.get_texts()]
    if fig._suptitle is not None:
        out.append(fig._suptitle.get_text())
    return out


def test_six_layers_lists_every_layer_top_to_bottom():
    fig, readouts = ch01.six_layers()
    assert isinstance(fig, Figure)
    assert list(readouts) == [layer[0] for layer in ch01.SIX_LAYERS]
    assert len(ch01.SIX_LAYERS) == 6
    texts = _texts(fig)
    for name, _, number, _ in ch01.SIX_LAYERS:
        assert name in texts and number in texts


def test_request_path_marks_prefill_and_decode_as_accelerator_work():
    fig, readouts = ch01.request_path()
    assert isinstance(fig, Figure)
    assert readouts["stages"] == "8"
    assert "prefill" in readouts["on the accelerator"] and "decode" in readouts["on the accelerator"]
    assert "tokenizer" not in readouts["on the accelerator"]


def test_read_vs_compute_example_1_1_ratio():
    fig, readouts = ch01.read_vs_compute(70e9 / 3.35e12, 140e9 / 989.4e12)
    assert readouts["read / compute"] == "148x"
    with pytest.raises(ValueError, match="compute_time_s"):
        ch01.read_vs_compute(1.0, 0.0)


def test_latency_ladder_spans_the_2009_table():
    from aiinfra.catalog import reference

    rows = reference.table("latency_2009")
    fig, readouts = ch01.latency_ladder(
        [r.operation for r in rows], [reference.latency_s(r.operation) for r in rows]
    )
    # 0.5 ns to 150 ms: 8.5 orders of magnitude
    assert readouts["span"] == "8.5 orders of magnitude"
    with pytest.raises(ValueError, match="seconds"):
        ch01.latency_ladder(["a", "b"], [1.0])
    with pytest.raises(ValueError, match="seconds"):
        ch01.latency_ladder(["a"], [-1.0])


def test_batch_explorer_reproduces_example_1_1():
    fig, r = ch01.batch_explorer(batch=1, gpu="H100 SXM")
    assert r["step time (bound)"] == "20.90 ms"
    assert r["speed one user sees"] == "47.9 tok/s"
    assert r["B* on this GPU"] == "147.7"
    assert r["bound"] == "memory-bound"
    fig, r = ch01.batch_explorer(batch=8, gpu="H100 SXM")
    assert r["time per output token"] == "2.61 ms"
    assert r["throughput, all requests"] == "383 tok/s"
    # the KV readout: 8 requests x 2.68 GB against 80 - 73.73 - 2.15 GB free
    assert r["KV of B requests at 8,192 tokens"] == "21.5 GB vs 4.1 GB free"


def test_batch_explorer_compute_bound_beyond_b_star():
    _, r = ch01.batch_explorer(batch=256, gpu="H100 SXM")
    assert r["bound"] == "compute-bound"
    step = float(r["step time (bound)"].split()[0])
    assert step == pytest.approx(256 * 140e9 / 989.4e12 * 1e3, rel=1e-3)


def test_batch_explorer_b_star_tracks_the_gpu():
    for name in ch01.EXPLORER_GPUS:
        g = hardware.gpu(name)
        _, r = ch01.batch_explorer(batch=1, gpu=name)
        assert float(r["B* on this GPU"]) == pytest.approx(
            decode.critical_batch_size(1.0, g.bf16_dense_flops_per_s, g.memory_bandwidth_bytes_per_s),
            abs=0.05,
        )


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(batch=0), "batch"),
        (dict(batch=2.5), "batch"),
        (dict(gpu="H999"), "must be one of"),
        (dict(n_params=-1), "n_params"),
        (dict(weight_precision="int3"), "precision"),
        (dict(gpu="V100 SXM2 32GB"), "no tensor-core peak"),
    ],
)
def test_batch_explorer_rejects_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        ch01.batch_explorer(**kw)


def test_capacity_explorer_matches_the_storage_page():
    _, r = ch01.capacity_explorer("H100 SXM", 1)
    assert r["BF16"].startswith("over by")
    assert r["8-bit, groups of 128"] == "fits; room for 1 request"  # 78.56 GB of 80
    _, r = ch01.capacity_explorer("H100 SXM", 2)
    assert r["BF16"].startswith("fits")
    _, r = ch01.capacity_explorer("RTX 4090", 3)
    assert r["8-bit, groups of 128"].startswith("over by")  # 72 GB < 73.73 GB
    assert r["cards of this kind needed for 8-bit weights alone"] == "4"


def test_capacity_explorer_room_matches_the_kv_budget():
    m = models.load("DeepSeek-R1-Distill-Llama-70B")
    g = hardware.gpu("H200 SXM")
    kv = memory.kv_bytes_per_request(m, 8192)
    w = memory.grouped_quant_weight_bytes(m, bits=4)
    n = 2
    free_total = n * (g.memory_bytes - 2 * units.GiB) - w
    expected = decode.max_batch_from_kv_budget(free_total, kv)
    _, r = ch01.capacity_explorer("H200 SXM", n)
    assert r["4-bit, groups of 128"] == f"fits; room for {expected} requests"


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(n_cards=0), "n_cards"),
        (dict(context_tokens=0), "context_tokens"),
        (dict(workspace_bytes_per_card=-1), "workspace_bytes_per_card"),
        (dict(gpu="nope"), "must be one of"),
    ],
)
def test_capacity_explorer_rejects_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        ch01.capacity_explorer(**kw)


def test_measurement_check_labels_only_two_measured_points():
    fig, r = ch01.measurement_check()
    d = Deployment("Qwen3-8B", "RTX PRO 6000 Blackwell Workstation")
    assert r == {
        "B=1 bound": "8.62 ms",
        "B=1 prediction": units.fmt_time(predict.calibrated_step_s(d, 1, 2048, graph_capture=False)),
        "B=1 measured": "26.50 ms",
        "B=64 bound": "19.23 ms",
        "B=64 prediction": units.fmt_time(predict.calibrated_step_s(d, 64, 2048, graph_capture=False)),
        "B=64 measured": "40.50 ms",
    }
    ax1, ax2 = fig.axes
    measured = [line for line in ax1.lines if line.get_label() == "measured TPOT"]
    assert len(measured) == 1 and len(measured[0].get_xdata()) == 2
    labels = [line.get_label() for line in ax1.lines]
    assert "bound (100% of peak)" in labels and "calibrated prediction" in labels
    bound, pred = (next(line for line in ax1.lines if line.get_label() == lab) for lab in labels[:2])
    assert min(pred.get_ydata()) > min(bound.get_ydata())  # the prediction never beats the bound
    with pytest.raises(ValueError, match="max_batch"):
        ch01.measurement_check(max_batch=1)


def test_sliders_cover_the_issue_ranges():
    b, g = ch01.batch_explorer_sliders()
    assert isinstance(b, Slider) and min(b.values) == 1 and max(b.values) == 256
    assert set(g.values) <= {x.name for x in hardware.catalog()}
    c, n = ch01.capacity_explorer_sliders()
    assert set(c.values) <= {x.name for x in hardware.catalog()}
    assert 3 in n.values  # three RTX 4090s are the interesting near-miss


@pytest.mark.slow
def test_static_figures_fit_the_page_budget():
    for fn, sliders in [
        (ch01.batch_explorer, ch01.batch_explorer_sliders()),
        (ch01.capacity_explorer, ch01.capacity_explorer_sliders()),
    ]:
        f = interactive_figure(fn, sliders, mode="static")
        assert f.payload_bytes <= 400_000
        assert not f.live_only
        assert len(f.frames) >= 10
        readouts = {fr.readout_html for fr in f.frames}
        assert len(readouts) == len(f.frames)  # every frame says something different
