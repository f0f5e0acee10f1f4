"""Tests for the chapter 7 figure functions."""

import io

import pytest
from matplotlib.figure import Figure

from aiinfra import units
from aiinfra.book.figures import ch07
from aiinfra.serving import disaggregation, prefix_cache

DIS = dict(
    decode_step_time_s=0.02, prefill_time_per_token_s=5e-5, kv_bytes_per_token=327_680, link_bytes_per_s=50e9
)
PFX = dict(
    prompt_tokens=8192,
    flops_per_token=1.4e11,
    attention_flops_per_pair=4 * 80 * 64 * 128,
    flops_per_s=8 * 989e12,
    efficiency=0.5,
)


def _png_bytes(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=56)
    return len(buf.getvalue())


def test_speculative_readouts_match_library():
    fig, r = ch07.speculative(4, 0.05)
    assert isinstance(fig, Figure)
    # by hand: break-even where 1 + a + a^2 + a^3 + a^4 = 1 + 4 * 0.05, i.e. a^4 + a^3 + a^2 + a = 0.2 -> a = 0.1668;
    # at a = 0.8, E = (1 - 0.8^5) / 0.2 = 3.3616 tokens per pass, / (1 + 0.2) = 2.801x
    assert r["break-even alpha (gamma 4)"] == "0.17"
    assert r["speedup at alpha 0.8"] == "2.80x"
    assert _png_bytes(fig) < 150_000


def test_speculative_every_slider_point_draws():
    assert len(ch07.GAMMA_VALUES) * len(ch07.DRAFT_COST_VALUES) <= 24
    for g in ch07.GAMMA_VALUES:
        for c in ch07.DRAFT_COST_VALUES:
            _, r = ch07.speculative(g, c)
            assert len(r) == 4
    with pytest.raises(ValueError, match="draft_cost_ratio"):
        ch07.speculative(4, 1.0)


def test_disaggregation_readouts():
    fig, r = ch07.disaggregation(2.0, 4096, **DIS)
    u = disaggregation.prefill_busy_fraction(2.0, 4096 * 5e-5)
    assert r["prefill share of GPU time u"] == f"{u:.0%}"
    t_kv = disaggregation.kv_handoff_time_s(4096, 327_680, 50e9)
    g_star = disaggregation.breakeven_output_tokens(0.02, u, t_kv)
    assert r["disaggregation wins beyond"] == f"{g_star:,.0f} output tokens"
    assert _png_bytes(fig) < 100_000


def test_disaggregation_saturated_server():
    _, r = ch07.disaggregation(6.0, 16384, **DIS)  # u = 6 * 0.82 s > 1
    assert r["TPOT colocated / disaggregated"].startswith("unbounded")
    _, r0 = ch07.disaggregation(0.0, 1024, **DIS)
    assert r0["prefill share of GPU time u"] == "0%"
    assert "disaggregation wins beyond" not in r0


def test_prefix_cache_readouts():
    fig, r = ch07.prefix_cache(2048, **PFX)
    saved = prefix_cache.expected_ttft_saved_s(0.9, 8192, 2048, 1.4e11, 8 * 989e12, 0.5, 4 * 80 * 64 * 128)
    assert r["saved at 90% hits, 2,048-token prefix"] == f"{saved * 1e3:.2f} ms"
    assert _png_bytes(fig) < 100_000
    with pytest.raises(ValueError, match="cached_tokens"):
        ch07.prefix_cache(9000, **PFX)


CHUNK = dict(prompt_tokens=8192, decode_batch=64, context_tokens=8192, ttft_slo_s=1.0, tpot_slo_s=0.05)


def test_chunked_prefill_readouts_match_library():
    from aiinfra.deployment import SERVING_70B
    from aiinfra.serving import chunked_prefill

    fig, r = ch07.chunked_prefill(512, deployment=SERVING_70B, **CHUNK)
    bound, pred = chunked_prefill.chunk_step_times_s(SERVING_70B, 512, 64, 8192)
    assert r["TPOT bound / prediction"] == f"{units.fmt_time(bound)} / {units.fmt_time(pred)}"
    # 8,192 tokens in chunks of 512: 16 steps
    assert r["TTFT bound / prediction"].startswith(units.fmt_time(16 * bound))
    assert _png_bytes(fig) < 150_000
    for c in ch07.CHUNK_VALUES:
        assert len(ch07.chunked_prefill(c, deployment=SERVING_70B, **CHUNK)[1]) == 3
    with pytest.raises(ValueError, match="chunk_tokens"):
        ch07.chunked_prefill(300, deployment=SERVING_70B, **CHUNK)
