"""Figures of chapter 4 (aiinfra.book.figures.ch04): pure functions returning (Figure, readouts)."""

import pytest
from matplotlib.figure import Figure

from aiinfra import decode, predict, units
from aiinfra.book.figures import ch04
from aiinfra.book.interactive import interactive_figure
from aiinfra.catalog import hardware
from aiinfra.deployment import Deployment


def test_throughput_latency_readouts_follow_the_library():
    fig, r = ch04.throughput_latency(4096, "bf16")
    assert isinstance(fig, Figure)
    # 72 GB after the 10 % reserve, minus 16.38 GB of weights, over 576 MiB of KV per request
    weights, kv = 2 * 8_190_735_360, 36 * 2 * 8 * 128 * 2 * 4096
    bmax = int((72e9 - weights) // kv)
    assert r["largest batch that fits"] == f"{bmax:,}" == "92"
    # batch 1 is memory-bound: the weights read (15.14 GB) plus one cache over 3.35 TB/s
    assert r["per-user speed, B = 1"] == f"{3.35e12 / (15_136_819_200 + kv):,.0f} tok/s"
    full = Deployment("Qwen3-8B", "H100 SXM").step(bmax, 4096)
    assert r["aggregate, B max"] == f"{full.tokens_per_s:,.0f} tok/s"
    # the dashed curve: the calibrated prediction at the same batch, below the bound
    predicted = bmax / predict.calibrated_step_s(Deployment("Qwen3-8B", "H100 SXM"), bmax, 4096)
    assert r["aggregate, B max (prediction)"] == f"{predicted:,.0f} tok/s" and predicted < full.tokens_per_s
    labels = [line.get_label() for line in fig.axes[0].lines]
    assert "bound (100% of peak)" in labels and "calibrated prediction" in labels


def test_longer_context_means_smaller_batch_and_quantization_faster_single_stream():
    b = {
        c: int(ch04.throughput_latency(c, "bf16")[1]["largest batch that fits"].replace(",", ""))
        for c in ch04.CONTEXT_VALUES
    }
    assert [b[c] for c in ch04.CONTEXT_VALUES] == sorted(b.values(), reverse=True)
    speed = [
        float(ch04.throughput_latency(1024, p)[1]["per-user speed, B = 1"].split()[0].replace(",", ""))
        for p in ch04.PRECISION_VALUES
    ]
    assert speed[0] < speed[1] < speed[2]


def test_full_memory_per_user_speed_is_about_capacity_over_bandwidth():
    # once the caches fill the card, a step reads ~ all of the used memory, whatever the context
    g = hardware.gpu("H100 SXM")
    used = 0.9 * g.memory_bytes  # the deployment's default 10 % reserve
    for c in ch04.CONTEXT_VALUES:
        per_user = float(ch04.throughput_latency(c, "bf16")[1]["per-user speed, B max"].split()[0])
        assert per_user == pytest.approx(g.memory_bandwidth_bytes_per_s / used, rel=0.15)


def test_does_not_fit():
    fig, r = ch04.throughput_latency(
        32768, "bf16", model="DeepSeek-R1-Distill-Llama-70B", gpu="H100 SXM", n_gpus=2
    )
    # 2 x 80 GB keep 144 GB after the workspace; 141 GB of weights leave ~3 GB, less than one 10.7 GB cache
    assert r["largest batch that fits"] == "0"
    _, r = ch04.throughput_latency(
        1024, "bf16", model="DeepSeek-R1-Distill-Llama-70B", gpu="H100 SXM", n_gpus=1
    )
    assert r["largest batch that fits"] == "0"  # the weights alone do not fit


def test_latency_timeline():
    fig, r = ch04.latency_timeline(0.02, 0.08, 0.0105, 12)
    assert isinstance(fig, Figure)
    assert r["end to end"] == units.fmt_time(decode.end_to_end_latency_s(0.08, 0.0105, 12))
    assert r["TTFT"] == "80.00 ms"


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: ch04.throughput_latency(0, "bf16"), "context_tokens"),
        (lambda: ch04.throughput_latency(1024, "fp64"), "precision"),
        (lambda: ch04.throughput_latency(1024, "bf16", n_gpus=0), "n_gpus"),
        (lambda: ch04.latency_timeline(0.1, 0.08, 0.01), "queue_s"),
        (lambda: ch04.latency_timeline(0.0, 0.0, 0.01), "ttft_s"),
        (lambda: ch04.latency_timeline(0.0, 0.1, -0.01), "tpot_s"),
        (lambda: ch04.latency_timeline(0.0, 0.1, 0.01, 1), "output_tokens"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_static_figure_fits_the_budget():
    fig = interactive_figure(ch04.throughput_latency, ch04.throughput_latency_sliders(), mode="static")
    assert len(fig.frames) == len(ch04.CONTEXT_VALUES) * len(ch04.PRECISION_VALUES)
    assert fig.payload_bytes <= 400_000
