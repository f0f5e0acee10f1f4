"""Tests for the chapter 6 figure functions."""

import io

import pytest
from matplotlib.figure import Figure

from aiinfra.book.figures import ch06
from aiinfra.cluster import network, parallelism, scale

LINKS = dict(
    d_model=8192,
    n_layers=80,
    nvlink_bytes_per_s=450e9,
    ib_bytes_per_s=50e9,
    nvlink_latency_s=3e-6,
    ib_latency_s=5e-6,
)


def _png_bytes(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=56)
    return len(buf.getvalue())


def test_tp_allreduce_readouts_match_library():
    fig, r = ch06.tp_allreduce(1024, 8, **LINKS)
    assert isinstance(fig, Figure)
    # by hand: 1,024 tokens x d 8,192 x 2 bytes = 16,777,216 B = 16 MiB (the chapter's unit); a ring over 8 ranks moves 2 x 7/8 of it
    # at 450 GB/s (65.24 us) and pays 2 x 7 steps of 3 us (42 us): 107.24 us; 2 per layer x 80 layers = 160
    assert r["message per all-reduce"] == "16.00 MiB"
    assert r["NVLink: one all-reduce"] == "107.24 \u00b5s"
    assert r["NVLink: 160 per forward pass"] == "17.16 ms"
    assert _png_bytes(fig) < 100_000


def test_tp_allreduce_ib_slower_for_every_slider_point():
    for tokens in ch06.TOKENS_VALUES:
        for ranks in ch06.RANKS_VALUES:
            msg = parallelism.tp_allreduce_message_bytes(tokens, 8192, 2)
            assert network.ring_allreduce_time_s(msg, ranks, 50e9, 5e-6) > network.ring_allreduce_time_s(
                msg, ranks, 450e9, 3e-6
            )
    fig, r = ch06.tp_allreduce(ch06.TOKENS_VALUES[-1], 8, **LINKS)
    assert len(r) == 5
    # a ring of 16 H100s leaves the 8-GPU NVLink domain: no NVLink time, the curve is hidden
    fig, r = ch06.tp_allreduce(ch06.TOKENS_VALUES[-1], 16, **LINKS)
    assert r["NVLink: one all-reduce"] == "no: the NVLink domain is 8 GPUs"
    assert "NVLink: 160 per forward pass" not in r and len(r) == 4
    assert not fig.axes[0].lines[0].get_visible()


def test_tp_allreduce_rejects_single_rank():
    with pytest.raises(ValueError, match="n_ranks"):
        ch06.tp_allreduce(1, 1, **LINKS)


def test_mfu_scaling_readouts():
    fig, r = ch06.mfu_scaling(32768)
    assert r["MFU, log2 model"] == f"{scale.mfu_log2_model(32768):.1%}" == "32.0%"
    assert r["MFU, comm-fraction model"] == "32.0%"
    gain = 2 * scale.mfu_log2_model(65536) / scale.mfu_log2_model(32768)
    assert r["next doubling, log2 model"] == f"{gain:.2f}x useful compute"
    assert gain < 2
    assert _png_bytes(fig) < 150_000


def test_mfu_scaling_slider_grid_is_valid():
    (s,) = ch06.mfu_scaling_sliders()
    assert s.default in s.values
    for g in (1, ch06.GPU_VALUES[-1]):
        ch06.mfu_scaling(g)
    with pytest.raises(ValueError, match="n_gpus"):
        ch06.mfu_scaling(0)


def test_sliders_defaults():
    sl = ch06.tp_allreduce_sliders()
    assert [s.name for s in sl] == ["tokens", "n_ranks"]
    assert {64, 4096} <= set(ch06.TOKENS_VALUES)  # the rows of the chapter's table
    assert 8 in ch06.RANKS_VALUES and 16 in ch06.RANKS_VALUES


def test_ep_collectives_readouts_match_the_library():
    fig, r = ch06.ep_collectives(64)
    sent = network.moe_all_to_all_bytes(64, 7168, 8, 1.0) + network.moe_all_to_all_bytes(64, 7168, 8, 2.0)
    assert sent == 64 * 8 * 7168 * 3  # 11,010,048 B: FP8 out, BF16 back
    assert r["bytes sent per GPU"] == "11.01 MB"
    # NVL72: 2 x 5.9 us + 11.01 MB / (0.68 x 900 GB/s) = 29.8 us
    assert r["GB200 NVL72, NVLink"] == "29.79 µs"
    assert float(r["across nodes, 400G RDMA"].split()[0]) > 200  # RDMA: ~10x the NVLink time


def test_ep_collectives_slider_and_bad_input():
    (s,) = ch06.ep_collectives_sliders()
    assert s.default in s.values
    ch06.ep_collectives(s.values[-1])
    with pytest.raises(ValueError, match="tokens_per_gpu"):
        ch06.ep_collectives(0)
    with pytest.raises(ValueError, match="n_gpus"):
        ch06.ep_collectives(64, n_gpus=0)
