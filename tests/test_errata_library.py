"""Library fixes of issue 29: the KV-counting critical batch's context limit, MLA's decode
intensity, the GB200 record, the ConnectX-8 link, and the exercise fixes (items 1, 2, 6, 14, 21).

Expected values come from the issue's independent arithmetic, the vendors' printed figures,
or hand arithmetic written out in the test; none restates the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from aiinfra import decode, measure, roofline, units
from aiinfra.book.figures import ch02, ch08
from aiinfra.catalog import hardware
from aiinfra.course.exercises import registry, render
from aiinfra.course.exercises.variants import namespace, params_for, references
from aiinfra.deployment import Deployment

# --- item 1: the context below which a critical batch counting KV reads exists -----------------


def test_critical_batch_context_limit_matches_the_issue():
    # the issue's own arithmetic: about 1,480 tokens for Llama-3.1-70B on an H100, about 350 for Qwen3-8B
    assert 1_450 < Deployment("Llama-3.1-70B", "H100 SXM").max_context_with_crossover < 1_500
    assert 340 < Deployment("Qwen3-8B", "H100 SXM").max_context_with_crossover < 360


@pytest.mark.parametrize("model", ["Llama-3.1-70B", "Qwen3-8B", "Llama-3.1-8B"])
def test_the_crossover_exists_below_the_limit_and_not_above(model):
    d = Deployment(model, "H100 SXM")
    n = d.max_context_with_crossover
    assert math.isfinite(d.crossover_batch(math.floor(n)))
    assert math.isinf(d.crossover_batch(math.ceil(n) + 1))


def test_max_context_formula_by_hand():
    # F_0 = 1e10, a = 0, k = 1e5 B/token, ridge 1e15 / 1e12 = 1000: n* = 1e10 / (1000 x 1e5) = 100
    assert decode.max_context_with_crossover_tokens(1e10, 0.0, 1e5, 1e15, 1e12) == pytest.approx(100)
    # attention alone out-computes the cache read (a >= ridge x k): a crossover at every context
    assert math.isinf(decode.max_context_with_crossover_tokens(1e10, 1e8, 1e5, 1e15, 1e12))
    with pytest.raises(ValueError, match="kv_bytes_per_context_token"):
        decode.max_context_with_crossover_tokens(1e10, 0.0, 0.0, 1e15, 1e12)
    with pytest.raises(ValueError, match="flops_fixed_per_token"):
        decode.max_context_with_crossover_tokens(-1.0, 0.0, 1e5, 1e15, 1e12)


# --- item 2: decode attention intensity, MLA against GQA ----------------------------------------


def test_mla_decode_intensity_is_near_the_h100_ridge():
    # DeepSeek-V3: 128 heads, latent 512 + RoPE 64; 2 x 128 x (576 + 512) / (576 x 2) = 241.8 FLOP/B
    got = roofline.mla_decode_attention_intensity_flops_per_byte(128, 512, 64)
    assert got == pytest.approx(2 * 128 * (576 + 512) / (576 * 2))
    assert got == pytest.approx(2 * 128, rel=0.06)  # FlashMLA's "about 2 h_q"
    h100 = hardware.gpu("H100 SXM")
    assert 0.7 < got / h100.ridge_flops_per_byte < 1.0
    with pytest.raises(ValueError, match="n_q_heads"):
        roofline.mla_decode_attention_intensity_flops_per_byte(0, 512, 64)


def test_gqa_decode_intensity_is_the_group_size_in_bf16():
    assert roofline.gqa_decode_attention_intensity_flops_per_byte(8) == 8.0  # Llama-3.1-70B: 64 / 8 heads
    assert roofline.gqa_decode_attention_intensity_flops_per_byte(8, 1, 1.0) == 16.0  # FP8 cache
    with pytest.raises(ValueError, match="group_size"):
        roofline.gqa_decode_attention_intensity_flops_per_byte(0)


# --- item 6: the GB200 is its own record ----------------------------------------------------------


def test_gb200_record_is_separate_from_the_hgx_b200():
    gb, b = hardware.gpu("GB200"), hardware.gpu("B200")
    assert gb is not b and gb.memory_bytes == 186e9 and b.memory_bytes == 180e9
    # NVIDIA's rack totals: 13.4 TB and 576 TB/s over 72 GPUs; BF16 360 PFLOP/s with sparsity -> dense / 2
    assert round(72 * gb.memory_bytes / units.TB, 1) == 13.4
    assert gb.memory_bandwidth_bytes_per_s == 576e12 / 72
    assert gb.bf16_dense_flops_per_s == 360e15 / 72 / 2
    assert gb.fp8_dense_flops_per_s == 720e15 / 72 / 2
    assert "with sparsity" in gb.sources["bf16_dense_flops_per_s"]
    assert "SemiAnalysis" in gb.sources["tdp_watts"]
    assert set(gb.sources) >= {"memory_bytes", "memory_bandwidth_bytes_per_s", "tdp_watts"}


def test_an_nvl72_of_gb200s_holds_13_4_tb():
    rack = Deployment("DeepSeek-V3", "GB200", n_gpus=hardware.GB200_NVL72.n_gpus)
    assert round(rack.capacity_bytes / units.TB, 1) == 13.4


# --- item 14: a NIC against the NVLink of its own generation -------------------------------------


def test_connectx8_and_the_same_generation_ratio():
    cx8 = hardware.link("cx8")
    assert cx8.bytes_per_s_per_direction == 800e9 / 8
    assert hardware.ratio("nvlink4", "cx7") == 9.0  # 450 / 50
    assert hardware.ratio("nvlink5", "cx8") == 9.0  # 900 / 100


# --- item 21 and 14: exercise references and solutions -------------------------------------------


def _refs(ex_id):
    ex = registry.get(ex_id)
    ns = namespace(ex, params_for(ex, None, False))
    return ex, ns, references(ex, ns)


def test_8_4_a_divides_by_the_extra_calls():
    _ex, ns, refs = _refs("8-4")
    # the one-call run pays one call, so (t_k - t_1) / (k - 1) is the per-call cost the run set up
    assert refs["a"] == pytest.approx(ns["per_call_us"], rel=1e-12)
    assert ns["t_one_ms"] == pytest.approx(ns["bound_ms"] + ns["per_call_us"] / 1000)


def test_a_solution_prints_the_digits_its_text_prints():
    ex, _ns, refs = _refs("2-4")
    # dense H100 BF16 over 2N: 989.4e12 / 1.6e10 = 61,837.5 tok/s, rounded to a whole token
    assert render.answer_text(ex.part("a"), refs["a"]) == "61,838 tok/s"
    assert render.number_text(114_500.3) == "114,500"


def test_3_4_counts_g_minus_one_decode_passes():
    ex, ns, refs = _refs("3-4")
    sample = ex.part("e").sample.format(**{**ns, **refs})
    assert f"remaining {ns['tokens'] - 1:,} sequential passes" in sample
    assert f"is {ns['tokens']:,} sequential" not in sample


# --- item 19: figures --------------------------------------------------------------------------


def _inside_figure(fig, artist) -> bool:
    fig.canvas.draw()
    box, page = artist.get_window_extent(), fig.bbox
    return box.x0 >= page.x0 - 0.5 and box.x1 <= page.x1 + 0.5 and box.y1 <= page.y1 + 0.5


@pytest.mark.parametrize("view", ch02.LADDER_VIEWS)
def test_the_ladder_title_is_not_clipped(view):
    fig, _ = ch02.bandwidth_ladder(view)
    titles = [t for t in fig.texts if t.get_text().strip()]
    assert titles and all(_inside_figure(fig, t) for t in titles), [t.get_text() for t in titles]


def test_the_marked_batch_is_whole_at_the_largest_batch():
    fig, _ = ch02.request_explorer(batch=max(ch02.BATCH_VALUES))
    ax = fig.axes[1]
    fig.canvas.draw()
    (dot,) = [line for line in ax.lines if line.get_marker() == "o" and len(line.get_xdata()) == 1]
    marker = dot.get_window_extent(fig._get_renderer())
    assert ax.bbox.x0 <= marker.x0 and marker.x1 <= ax.bbox.x1


def test_the_toy_decode_key_has_a_frame():
    batches = (1, 2, 4, 8)
    c = measure.Ceilings(20e9, 5e9, "float32", "synthetic", "synthetic")
    times = tuple(float(t) for t in measure.predict_decode_step_s(2**20, np.array(batches), 4, c))
    fig, _ = ch08.toy_decode_roofline(1, batches=batches, times_s=times, n_params=2**20)
    legend = fig.axes[0].get_legend()
    assert legend is not None and legend.get_frame_on() and legend.get_frame().get_alpha() == 1.0
