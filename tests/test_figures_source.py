"""The five figures rebuilt from the source texts: pure functions, worked numbers, static budget."""

from __future__ import annotations

import importlib

import pytest
from matplotlib.figure import Figure

from aiinfra.book import interactive
from aiinfra.book.figures import (
    SOURCE_FIGURES,
    batching_kv,
    cluster_scale,
    new_figure,
    roofline_plot,
    run_inference,
    tokens_per_s,
)
from aiinfra.catalog import hardware
from aiinfra.deployment import Deployment, RoundModel

H100_BW = hardware.gpu("H100 SXM").memory_bandwidth_bytes_per_s


def _num(text: str) -> float:
    return float(text.split()[0].replace(",", "").rstrip("%"))


# ----- shared -----------------------------------------------------------------


def test_new_figure_fixed_margins_and_validation():
    fig, ax = new_figure(5, 3)
    assert isinstance(fig, Figure) and not fig.get_constrained_layout()
    assert tuple(fig.get_size_inches()) == (5.0, 3.0)
    fig, axes = new_figure(ncols=2)
    assert len(axes) == 2
    for kwargs, match in [
        ({"width_in": 0}, "width_in"),
        ({"ncols": 0}, "ncols"),
        ({"left": 0.9, "right": 0.5}, "left"),
        ({"bottom": 0.95, "top": 0.9}, "bottom"),
        ({"top": 1.5}, "top"),
    ]:
        with pytest.raises(ValueError, match=match):
            new_figure(**kwargs)


@pytest.mark.parametrize("name", SOURCE_FIGURES)
def test_every_slider_value_draws(name):
    """Each figure draws at every value of its (static) slider grid and returns its readouts."""
    mod = importlib.import_module(f"aiinfra.book.figures.{name}")
    sliders = mod.sliders()
    keys = None
    first = sliders[0]
    for v in first.static_values():
        fig, readouts = mod.draw(**{first.name: v})
        assert isinstance(fig, Figure)
        assert readouts and all(isinstance(t, str) and t for t in readouts.values())
        if name != "roofline_plot":  # roofline labels the decode row with its batch
            keys = keys or list(readouts)
            assert list(readouts) == keys


@pytest.mark.slow
@pytest.mark.parametrize("name", SOURCE_FIGURES)
def test_static_figure_fits_page_budget(name):
    """Built as in the book, each figure embeds at most 400 KB of widget state."""
    mod = importlib.import_module(f"aiinfra.book.figures.{name}")
    f = mod.show(mode="static")
    exact = interactive.embedded_state_bytes(f)
    assert exact <= interactive.DEFAULT_MAX_BYTES, f"{name}: {exact:,} B"
    assert len(f.frames) >= 8, f"{name}: only {len(f.frames)} frames"
    assert len({fr.png for fr in f.frames}) == len(f.frames), f"{name}: identical frames"
    assert len({fr.readout_html for fr in f.frames}) == len(f.frames), f"{name}: identical readouts"


# ----- tokens/s calculator ------------------------------------------------------


@pytest.mark.parametrize(
    "n_params, bits, expected",
    [
        (7e9, 16, 239.3),
        (7e9, 8, 478.6),
        (7e9, 4, 957.1),
        (70e9, 16, 23.9),
        (70e9, 8, 47.9),
        (70e9, 4, 95.7),
        (175e9, 16, 9.6),
        (175e9, 8, 19.1),
        (175e9, 4, 38.3),
    ],
)
def test_tokens_per_s_source_table(n_params, bits, expected):
    _, r = tokens_per_s.draw(n_params, bits)
    assert _num(r["decode tokens/s"]) == pytest.approx(expected, abs=0.05)


def test_tokens_per_s_reply_time_and_bytes():
    _, r = tokens_per_s.draw(70e9, 16)
    assert r["time for a 1,000-token reply"] == "41.8 s"
    assert r["bytes streamed per token"] == "140.0 GB"
    _, r4 = tokens_per_s.draw(70e9, 4)
    assert r4["bytes streamed per token"] == "35.0 GB"
    _, half = tokens_per_s.draw(70e9, 16, efficiency=0.5)
    assert _num(half["decode tokens/s"]) == pytest.approx(3.35e12 / 140e9 / 2, abs=0.05)
    assert H100_BW == 3.35e12


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"bits_per_param": 6}, "bits_per_param"),
        ({"n_params": 0}, "n_params"),
        ({"reply_tokens": 0}, "reply_tokens"),
        ({"efficiency": 1.5}, "efficiency"),
        ({"bandwidth_bytes_per_s": -1}, "bandwidth_bytes_per_s"),
    ],
)
def test_tokens_per_s_rejects(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tokens_per_s.draw(**kwargs)


def test_tokens_per_s_checks_capacity_first():
    # H100 SXM: 80 GB of HBM, 72 GB usable after the book's 10 % reserve. 7B at 16 bits (14 GB) fits;
    # 70B at 16 bits (140 GB) needs ceil(140/72) = 2 GPUs; 405B at 16 bits (810 GB) needs
    # ceil(810/72) = ceil(11.25) = 12, as chapter 4's text says; 70B at 8 bits (70 GB) fits in 72 GB.
    _, r = tokens_per_s.draw(7e9, 16)
    assert r["weights in one H100 SXM"] == "fit (14.0 GB of 72.0 GB usable)"
    _, r = tokens_per_s.draw(70e9, 16)
    assert r["weights in one H100 SXM"] == "do not fit: 140.0 GB > 72.0 GB usable; at least 2 GPUs"
    assert r["decode tokens/s"].endswith("(the bound, if it fit)")
    _, r = tokens_per_s.draw(405e9, 16)
    assert r["weights in one H100 SXM"].endswith("at least 12 GPUs")
    assert Deployment(RoundModel(405e9, 0), "H100 SXM").min_gpus == 12
    _, r = tokens_per_s.draw(70e9, 8)
    assert r["weights in one H100 SXM"].startswith("fit")
    assert list(r)[0] == "weights in one H100 SXM"  # the capacity check comes first


def test_tokens_per_s_grid_is_fully_static():
    assert [len(s.static_values()) for s in tokens_per_s.sliders()] == [6, 3]


# ----- cluster scale --------------------------------------------------------------


def test_cluster_scale_source_numbers():
    _, r = cluster_scale.draw(32768)
    assert r["peak compute"] == "32.77 EFLOP/s"
    assert r["efficiency (MFU)"] == "32.0%"
    assert r["realized compute"] == "10.49 EFLOP/s"
    assert r["power draw (all-in)"] == "45.9 MW"
    _, r1 = cluster_scale.draw(1)
    assert r1["efficiency (MFU)"] == "62.0%" and r1["power draw (all-in)"] == "1.4 kW"


def test_cluster_scale_models_agree_at_ends_and_power_convention():
    for g in (1, 32768):
        assert cluster_scale.mfu(g, "log2") == pytest.approx(cluster_scale.mfu(g, "comm-fraction"))
    assert cluster_scale.mfu(64, "comm-fraction") < cluster_scale.mfu(64, "log2")
    _, chip = cluster_scale.draw(1024, watts_per_gpu=700, pue=1.3, convention="chip-only")
    assert _num(chip["power draw (chip-only)"]) == pytest.approx(1024 * 700 * 1.3 / 1e3, abs=0.05)
    with pytest.raises(ValueError, match="pue"):
        cluster_scale.draw(8, pue=1.3)  # all-in watts times PUE would count cooling twice
    with pytest.raises(ValueError, match="n_gpus"):
        cluster_scale.draw(65536)
    with pytest.raises(ValueError, match="mfu_model"):
        cluster_scale.draw(8, mfu_model="linear")


def test_cluster_scale_realized_lags_peak():
    vals = [cluster_scale.draw(g)[1] for g in (1, 64, 4096)]
    ratios = [_num(v["efficiency (MFU)"]) for v in vals]
    assert ratios == sorted(ratios, reverse=True)
    assert len(cluster_scale.sliders()[0].static_values()) == 16


# ----- run inference --------------------------------------------------------------


def test_pass_counts_follow_prefill_then_decode():
    # the prefill emits answer token 1; each of the G - 1 decode steps emits one more: G passes in all
    g = len(run_inference.ANSWER)
    assert run_inference._total_passes(g) == g
    c0 = run_inference._pass_count(0, g)
    assert (c0.prefill, c0.decode, c0.total, c0.answer_tokens) == (0, 0, 0, 0)
    c1 = run_inference._pass_count(1, g)
    assert (c1.prefill, c1.decode, c1.answer_tokens) == (1, 0, 1)
    last = run_inference._pass_count(g, g)
    assert (last.prefill, last.decode, last.total, last.answer_tokens) == (1, g - 1, g, g)
    with pytest.raises(ValueError, match="step"):
        run_inference._pass_count(g + 1, g)
    with pytest.raises(ValueError, match="step"):
        run_inference._pass_count(-1, g)
    with pytest.raises(ValueError, match="answer_tokens"):
        run_inference._total_passes(0)


def test_run_inference_readouts_and_flops():
    g, p = len(run_inference.ANSWER), len(run_inference.PROMPT)
    fig, r = run_inference.draw(g)
    assert (r["prefill passes"], r["decode passes"]) == ("1", str(g - 1))
    assert r["answer tokens"] == f"{g} of {g}"
    flops_key = next(k for k in r if k.startswith("FLOPs"))
    # 2N per token through the model: the P prompt tokens once, then the G - 1 tokens fed back; N = 70e9
    assert _num(r[flops_key]) * 1e12 == pytest.approx(2 * 70e9 * (p + g - 1), rel=1e-3)
    assert run_inference.draw(0)[1][flops_key] == "0"
    assert [s.text(v) for s in run_inference.sliders() for v in (0, 1, 2)] == [
        "not started",
        "prefill: token 1",
        "decode 1: token 2",
    ]
    assert len(run_inference.sliders()[0].values) == g + 1
    with pytest.raises(ValueError, match="prompt"):
        run_inference.draw(0, prompt=())


# ----- batching vs KV budget --------------------------------------------------------


def test_batching_kv_source_numbers_and_erratum():
    mha = batching_kv.node(kv_layout="mha")
    gqa = batching_kv.node()
    assert mha.kv_bytes_per_token == 2_621_440  # 2.62 MB per token, full MHA
    assert mha.kv_bytes(8192) == pytest.approx(21.47e9, rel=1e-3)
    assert gqa.kv_bytes_per_token == 327_680  # 320 KiB per token, GQA
    assert mha.max_batch(8192) == 23  # the source's 23 requests
    assert gqa.max_batch(8192) > 140  # the real model fits the whole slider
    assert gqa.free_bytes == pytest.approx(640e9 - 2 * 70_553_706_496)  # no reserve on the source's node
    # the naive claim multiplies one GPU's single-stream rate by B: 23 x 3.35 TB/s / 141 GB = 546 tok/s ...
    naive = 23 * H100_BW / (2 * 70_553_706_496)
    # ... which is not the consistent bound once the KV reads are counted
    _, r = batching_kv.draw(23, "mha")
    assert _num(r["aggregate throughput"]) != pytest.approx(naive, rel=0.05)


def test_batching_kv_readouts_track_budget():
    _, fit = batching_kv.draw(23, "mha")
    _, over = batching_kv.draw(24, "mha")
    assert "does not fit" not in fit["aggregate throughput"]
    assert "does not fit" in over["aggregate throughput"] and "max batch 23" in over["per-user tok/s"]
    users = [_num(batching_kv.draw(b)[1]["per-user tok/s"]) for b in (1, 16, 64, 140)]
    aggs = [_num(batching_kv.draw(b)[1]["aggregate throughput"]) for b in (1, 16, 64, 140)]
    assert users == sorted(users, reverse=True) and aggs == sorted(aggs)
    assert batching_kv.draw(140)[1]["KV cache used"].startswith("375.8 GB")
    with pytest.raises(ValueError, match="batch"):
        batching_kv.draw(0)
    with pytest.raises(ValueError, match="batch"):
        batching_kv.draw(batching_kv.BATCHES[-1] + 1)
    with pytest.raises(ValueError, match="kv_layout"):
        batching_kv.draw(1, "mqa")


def test_batching_kv_static_grid_brackets_both_limits():
    b, kv = batching_kv.sliders()
    assert {23, 24, 185, 186} <= set(b.static_values())  # the full-MHA limit and the real one
    assert batching_kv.node().max_batch(8192) == 185 and b.values[-1] > 185  # the reader sees memory fill up
    f = batching_kv.show(mode="static")
    assert len(f.frames) == len(b.static_values()) * len(kv.static_values()) and not f.live_only
    assert f.payload_bytes <= 400_000


# ----- roofline --------------------------------------------------------------------


def test_roofline_ridge_and_bounds():
    _, r = roofline_plot.draw("H100 SXM", 1)
    assert r["ridge point"] == "295 FLOP/B"
    assert r["decode step, batch 1"] == "memory-bound"
    assert r["prefill"] == "compute-bound"
    decode, attn, prefill = roofline_plot.operations()
    assert decode.intensity_flops_per_byte == pytest.approx(1.0, rel=0.1)  # ~2 FLOPs per 2-byte weight
    for g in hardware.catalog():
        ridge = g.dense_flops_per_s("fp16") / g.memory_bandwidth_bytes_per_s  # BF16, FP16 on the V100
        assert decode.intensity_flops_per_byte < ridge < prefill.intensity_flops_per_byte, g.name
    big = roofline_plot.operations(batch=512)[0]
    assert big.intensity_flops_per_byte > decode.intensity_flops_per_byte
    assert roofline_plot.operations(batch=512)[1] == attn  # attention does not gain from batching


def test_roofline_sliders_and_rejects():
    gpu_slider, batch_slider = roofline_plot.sliders()
    assert set(gpu_slider.values) == {g.name for g in hardware.catalog()}
    assert (
        set(gpu_slider.static_values()) == set(roofline_plot.STATIC_GPUS)
        and "H100 SXM" in roofline_plot.STATIC_GPUS
    )
    assert batch_slider.static_values() == roofline_plot.DECODE_BATCHES
    with pytest.raises(ValueError, match="name must be one of .*got 'Z9000'"):
        roofline_plot.draw("Z9000")
    with pytest.raises(ValueError, match="batch"):
        roofline_plot.draw("H100 SXM", 0)


def test_roofline_static_precomputes_the_decode_batch():
    f = roofline_plot.show(mode="static")
    assert f.live_only == []
    assert len(f.frames) == len(roofline_plot.STATIC_GPUS) * len(roofline_plot.DECODE_BATCHES)
    h100 = [fr for fr in f.frames if fr.params["gpu_name"] == "H100 SXM"]
    assert [fr.params["batch"] for fr in h100] == list(roofline_plot.DECODE_BATCHES)
    assert (
        "decode step, batch 1<" in h100[0].readout_html and "decode step, batch 512<" in h100[-1].readout_html
    )
    assert len({fr.png for fr in h100}) == len(h100)  # batching moves the decode dot
