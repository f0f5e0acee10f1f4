import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra import memory
from aiinfra.catalog import hardware, models
from aiinfra.units import GB, GiB, KiB, MiB

# --- weights ----------------------------------------------------------------------------


def test_r1_70b_bf16_weights(r1_70b):
    w = memory.weight_bytes(r1_70b)
    assert w == 141_107_412_992
    assert round(w / GB, 2) == 141.11
    assert round(w / GiB, 2) == 131.42
    assert memory.weight_bytes(r1_70b, "int4") == 70_553_706_496 / 2
    assert memory.weight_bytes(r1_70b, "FP32") == 4 * 70_553_706_496


def test_r1_70b_grouped_8bit(r1_70b):
    q = memory.grouped_quant_weight_bytes(r1_70b, bits=8, group_size=128, scale_bytes=2)
    block = 68_451_041_280
    other = 70_553_706_496 - block
    assert q == block + block // 128 * 2 + other * 2 == 73_725_919_232
    assert round(q / GB, 2) == 73.73
    # the closed-form twin agrees when 128 divides every row
    assert memory._grouped_quant_bytes_formula(block, other, 8, 128, 2, 2) == q


def test_grouped_quant_options(r1_70b):
    base = memory.grouped_quant_weight_bytes(r1_70b)
    keep_attention = memory.grouped_quant_weight_bytes(r1_70b, keep_bf16=("attention",))
    attention = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024)
    assert keep_attention - base == pytest.approx(attention * 2 - (attention + attention / 128 * 2))
    four_bit = memory.grouped_quant_weight_bytes(r1_70b, bits=4, group_size=64, scale_bytes=2)
    assert four_bit < base
    no_scales = memory.grouped_quant_weight_bytes(r1_70b, scale_bytes=0)
    assert base - no_scales == 68_451_041_280 / 128 * 2


def test_grouped_quant_counts_a_short_last_group():
    m = models.load(
        {
            "model_type": "llama",
            "hidden_size": 100,
            "intermediate_size": 60,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "num_hidden_layers": 1,
            "vocab_size": 10,
        }
    )
    got = memory.grouped_quant_weight_bytes(m, bits=8, group_size=64, scale_bytes=2)
    # rows of 100 inputs need 2 groups, rows of 60 inputs (down_proj) need 1
    groups = 100 * 2 * 4 + 60 * 2 * 2 + 100 * 1
    block = models._block_linear_params(m)
    assert got == block + groups * 2 + (models.total_params(m) - block) * 2


def test_router_kept_in_bf16(mixtral):
    base = memory.grouped_quant_weight_bytes(mixtral)
    kept = memory.grouped_quant_weight_bytes(mixtral, keep_bf16="router")
    router = 32 * 8 * 4096
    assert kept - base == pytest.approx(router * 2 - router - router / 128 * 2)


# --- KV cache ---------------------------------------------------------------------------


def test_r1_70b_kv(r1_70b):
    assert memory.kv_bytes_per_token(r1_70b) == 327_680 == 320 * KiB
    assert memory.kv_bytes_per_request(r1_70b, 8192) == 2.5 * GiB
    assert round(memory.kv_bytes_per_request(r1_70b, 8192) / GB, 2) == 2.68


def test_full_mha_at_d_8192_is_8x_larger(r1_70b):
    per_token = memory.kv_bytes_per_token_formula(80, 64, 128, 2)
    assert per_token == 2_621_440
    mha = models._with_kv_heads(r1_70b, 64)
    assert memory.kv_bytes_per_token(mha) == per_token == 8 * memory.kv_bytes_per_token(r1_70b)
    assert round(memory.kv_bytes_per_request(mha, 8192) / GB, 2) == 21.47
    assert memory.kv_bytes_per_token_formula(80, 64, 128, 2) * 8192 == memory.kv_bytes_per_request(mha, 8192)


def test_qwen3_8b_kv(qwen3_8b):
    assert memory.kv_bytes_per_token(qwen3_8b) == 147_456 == 144 * KiB
    assert memory.kv_bytes_per_request(qwen3_8b, 2048) == 288 * MiB
    assert memory.kv_bytes_per_token(qwen3_8b, bytes_per_element=1) == 73_728


def test_qwen3_8b_weights_and_decode_read(qwen3_8b):
    assert round(memory.weight_bytes(qwen3_8b) / GB, 2) == 16.38
    read = memory.weight_bytes_formula(models.decode_read_params(qwen3_8b), 2)
    assert read == 15_136_819_200
    assert round(read / GB, 2) == 15.14


def test_mla_caches_the_latent(deepseek_v3):
    assert memory.kv_bytes_per_token(deepseek_v3) == (512 + 64) * 61 * 2 == 70_272
    assert memory.mla_kv_bytes_per_token_formula(61, 512, 64, 2) == 70_272


def test_sliding_window_caps_the_request():
    m = models.load("Mistral-7B-v0.1")
    per_token = memory.kv_bytes_per_token(m)
    assert per_token == 2 * 32 * 8 * 128 * 2
    assert memory.kv_bytes_per_request(m, 1000) == 1000 * per_token
    assert memory.kv_bytes_per_request(m, 32_768) == 4096 * per_token
    cfg = dict(
        models.shipped_config("Mistral-7B-v0.1"),
        sliding_window=1024,
        layer_types=["sliding_attention", "full_attention"] * 16,
    )
    mixed = models.load(cfg)
    assert mixed.sliding_window_layers == tuple(range(0, 32, 2))
    assert memory.kv_bytes_per_request(mixed, 4096) == (16 * 4096 + 16 * 1024) * per_token / 32


def test_a_stale_copy_is_refused(r1_70b):
    # the per-layer attention must follow the heads: dataclasses.replace re-checks it
    with pytest.raises(ValueError, match="elements per token"):
        dataclasses.replace(r1_70b, n_kv_heads=64)


def test_kv_sweeps_arrays(qwen3_8b):
    ctx = np.array([0, 1024, 2048])
    out = memory.kv_bytes_per_request(qwen3_8b, ctx)
    np.testing.assert_array_equal(out, ctx * 147_456)
    both = memory.kv_bytes_per_request(qwen3_8b, ctx[:, None], bytes_per_element=np.array([1, 2]))
    assert both.shape == (3, 2)
    assert both[2, 0] == 2048 * 73_728
    np.testing.assert_array_equal(memory.kv_bytes_per_token(qwen3_8b, np.array([1, 2])), [73_728, 147_456])


# --- fitting and splitting --------------------------------------------------------------


def test_fit_checks_from_the_source_texts(r1_70b):
    h100 = hardware.gpu("H100 SXM").memory_bytes
    bf16 = memory.weight_bytes(r1_70b)
    q8 = memory.grouped_quant_weight_bytes(r1_70b)
    assert not memory.fits(bf16, 0, 0, h100)
    half = memory.split_even(bf16, 2)
    assert round(half / GB, 2) == 70.55
    assert round(memory.free_bytes(half, 0, 0, h100) / GB, 2) == 9.45
    assert round(memory.free_bytes(q8, 0, 0, h100) / GB, 2) == 6.27
    kv = memory.kv_bytes_per_request(r1_70b, 8192)
    workspace = 2 * GiB
    total = q8 + kv + workspace
    assert round(q8 / GB, 2) + round(kv / GB, 2) + round(workspace / GB, 2) == pytest.approx(78.56)
    assert round(total / GB, 2) == 78.56
    assert memory.fits(q8, kv, workspace, h100) is True
    assert memory.fits(q8, kv, workspace + 2 * GB, h100) is False


def test_four_4090s_for_the_8bit_70b(r1_70b):
    q8 = memory.grouped_quant_weight_bytes(r1_70b)
    assert memory.min_cards(q8, hardware.gpu("RTX 4090").memory_bytes) == 4
    assert memory.min_cards(q8, 24 * GB, reserve_bytes_per_card=6 * GB) == 5
    assert memory.min_cards(160 * GB, 80 * GB) == 2
    assert memory.min_cards(0, 80 * GB) == 0


def test_any_positive_size_needs_a_card():
    # 5e-324 / 80e9 rounds to 0.0 in floating point; a card is still needed
    assert memory.min_cards(5e-324, 80 * GB) == 1
    assert memory.min_cards(1.0, 80 * GB) == 1
    np.testing.assert_array_equal(
        memory.min_cards(np.array([0.0, 5e-324, 80 * GB, 80 * GB + 1]), 80 * GB), [0, 1, 1, 2]
    )


def test_split_by_capacity_mixed_cards():
    caps = [48 * GB, 80 * GB]
    s = memory.split_by_capacity(100 * GB, caps)
    assert s.shares_bytes == pytest.approx((37.5 * GB, 62.5 * GB))
    assert s.all_fit and s.fits_each == (True, True)
    assert sum(s.free_bytes) == pytest.approx(28 * GB)
    tight = memory.split_by_capacity(141.1 * GB, caps, reserve_bytes_per_card=8 * GB)
    assert not tight.all_fit and tight.fits_each == (False, False)
    assert tight.shares_bytes[0] / tight.shares_bytes[1] == pytest.approx(40 / 72)


def test_a_card_filled_exactly_fits():
    # an RTX 4090 (24 GB) and an RTX PRO 6000 (96 GB), 2.5 GB kept back on each: 21.5 + 93.5 = 115 GB usable.
    # 115 GB fills both exactly; the division leaves the 96 GB card -1.5e-5 bytes over, which is not a miss.
    s = memory.split_by_capacity(115 * GB, [24 * GB, 96 * GB], reserve_bytes_per_card=2.5 * GB)
    assert s.fits_each == (True, True) and s.all_fit
    assert s.free_bytes == (0.0, 0.0)
    # one byte more does not fit
    assert not memory.split_by_capacity(
        115 * GB + 1, [24 * GB, 96 * GB], reserve_bytes_per_card=2.5 * GB
    ).all_fit


def test_fits_and_free_take_arrays():
    ctx_bytes = np.array([1, 5, 10]) * GB
    np.testing.assert_array_equal(memory.fits(70 * GB, ctx_bytes, 0, 80 * GB), [True, True, True])
    np.testing.assert_array_equal(memory.fits(75 * GB, ctx_bytes, 0, 80 * GB), [True, True, False])
    np.testing.assert_allclose(memory.free_bytes(75 * GB, ctx_bytes, 0, 80 * GB), [4 * GB, 0, -5 * GB])


@settings(max_examples=60, deadline=None)
@given(total=st.floats(0, 1e13), caps=st.lists(st.floats(1e9, 2e11), min_size=1, max_size=8))
def test_capacity_split_conserves_bytes_and_fills_evenly(total, caps):
    s = memory.split_by_capacity(total, caps)
    assert sum(s.shares_bytes) == pytest.approx(total, rel=1e-9, abs=1e-3)
    fractions = [share / cap for share, cap in zip(s.shares_bytes, caps)]
    assert max(fractions) - min(fractions) <= 1e-9 * max(1.0, max(fractions))
    assert s.all_fit == (total <= sum(caps) * (1 + 1e-12))


@settings(max_examples=60, deadline=None)
@given(total=st.floats(0, 1e13), cap=st.floats(1e9, 2e11), reserve_frac=st.floats(0, 0.9))
def test_min_cards_is_enough_and_minimal(total, cap, reserve_frac):
    reserve = cap * reserve_frac
    n = memory.min_cards(total, cap, reserve)
    usable = cap - reserve
    assert n * usable >= total * (1 - 1e-12)
    if n > 0:
        assert (n - 1) * usable < total


# --- refusals ---------------------------------------------------------------------------

BAD = [-1, float("nan"), float("inf"), True, "5", None]


@pytest.mark.parametrize("bad", BAD)
def test_kv_rejects_bad_numbers(bad, qwen3_8b):
    with pytest.raises(ValueError, match="context_tokens"):
        memory.kv_bytes_per_request(qwen3_8b, bad)
    with pytest.raises(ValueError, match="bytes_per_element"):
        memory.kv_bytes_per_token(qwen3_8b, bad)
    with pytest.raises(ValueError, match="bytes_per_element"):
        memory.kv_bytes_per_request(qwen3_8b, 10, bytes_per_element=bad)


@pytest.mark.parametrize(
    "args,name",
    [
        ((0, 8, 128, 2), "n_layers"),
        ((80, -8, 128, 2), "n_kv_heads"),
        ((80, 8, float("nan"), 2), "head_dim"),
        ((80, 8, 128, 0), "bytes_per_element"),
        ((80, 8, 128, True), "bytes_per_element"),
    ],
)
def test_kv_formula_rejections(args, name):
    with pytest.raises(ValueError, match=name):
        memory.kv_bytes_per_token_formula(*args)


@pytest.mark.parametrize(
    "args,name",
    [
        ((0, 512, 64, 2), "n_layers"),
        ((61, 0, 64, 2), "kv_lora_rank"),
        ((61, 512, -1, 2), "qk_rope_head_dim"),
        ((61, 512, 64, float("inf")), "bytes_per_element"),
    ],
)
def test_mla_formula_rejections(args, name):
    with pytest.raises(ValueError, match=name):
        memory.mla_kv_bytes_per_token_formula(*args)


def test_request_kv_rejects_negative_context(r1_70b):
    with pytest.raises(ValueError, match="context_tokens"):
        memory.kv_bytes_per_request(r1_70b, -1)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"bits": 0}, "bits"),
        ({"bits": 17}, "bits"),
        ({"bits": 4.5}, "bits"),
        ({"bits": True}, "bits"),
        ({"group_size": 0}, "group_size"),
        ({"group_size": "128"}, "group_size"),
        ({"scale_bytes": -2}, "scale_bytes"),
        ({"scale_bytes": float("nan")}, "scale_bytes"),
        ({"keep_bf16": ("embedding",)}, "keep_bf16"),
    ],
)
def test_grouped_quant_rejections(kwargs, name, r1_70b):
    with pytest.raises(ValueError, match=name):
        memory.grouped_quant_weight_bytes(r1_70b, **kwargs)


@pytest.mark.parametrize(
    "args,name",
    [
        ((-1, 0, 8, 128, 2, 2), "n_quant_params"),
        ((1, -1, 8, 128, 2, 2), "n_other_params"),
        ((1, 1, 0, 128, 2, 2), "bits"),
        ((1, 1, 8, 0, 2, 2), "group_size"),
        ((1, 1, 8, 128, -2, 2), "scale_bytes"),
        ((1, 1, 8, 128, 2, 0), "other_bytes_per_param"),
    ],
)
def test_grouped_formula_rejections(args, name):
    with pytest.raises(ValueError, match=name):
        memory._grouped_quant_bytes_formula(*args)


def test_weight_rejections(r1_70b):
    with pytest.raises(ValueError, match="precision"):
        memory.weight_bytes(r1_70b, "bf17")
    with pytest.raises(ValueError, match="n_params"):
        memory.weight_bytes_formula(-1, 2)
    with pytest.raises(ValueError, match="bytes_per_param"):
        memory.weight_bytes_formula(1, 0)
    with pytest.raises(ValueError, match="model 'unknown-model'"):
        memory.weight_bytes("unknown-model")


@pytest.mark.parametrize(
    "position,name",
    [
        (0, "weights_bytes"),
        (1, "state_bytes"),
        (2, "workspace_bytes"),
        (3, "capacity_bytes"),
    ],
)
@pytest.mark.parametrize("bad", BAD)
def test_fits_and_free_rejections(position, name, bad):
    args = [1.0, 1.0, 1.0, 10.0]
    args[position] = bad
    with pytest.raises(ValueError, match=name):
        memory.free_bytes(*args)
    with pytest.raises(ValueError, match=name):
        memory.fits(*args)


def test_capacity_zero_is_refused():
    with pytest.raises(ValueError, match="capacity_bytes"):
        memory.fits(1, 0, 0, 0)


@pytest.mark.parametrize(
    "args,name",
    [
        ((-1, 2), "total_bytes"),
        ((1, 0), "n_cards"),
        ((1, 1.5), "n_cards"),
        ((1, True), "n_cards"),
        ((float("nan"), 2), "total_bytes"),
    ],
)
def test_split_even_rejections(args, name):
    with pytest.raises(ValueError, match=name):
        memory.split_even(*args)


@pytest.mark.parametrize(
    "args,kwargs,name",
    [
        ((-1, [1.0]), {}, "total_bytes"),
        ((1, []), {}, "capacities_bytes"),
        ((1, 5.0), {}, "capacities_bytes"),
        ((1, [1.0, -2.0]), {}, "capacities_bytes"),
        ((1, [1.0, float("nan")]), {}, "capacities_bytes"),
        ((1, "80"), {}, "capacities_bytes"),
        ((1, [10.0, 20.0]), {"reserve_bytes_per_card": 10.0}, "reserve"),
        ((1, [10.0]), {"reserve_bytes_per_card": -1}, "reserve"),
    ],
)
def test_split_by_capacity_rejections(args, kwargs, name):
    with pytest.raises(ValueError, match=name):
        memory.split_by_capacity(*args, **kwargs)


@pytest.mark.parametrize(
    "args,name",
    [
        ((-1, 10), "total_bytes"),
        ((1, 0), "capacity_bytes_per_card"),
        ((1, float("inf")), "capacity_bytes_per_card"),
        ((1, 10, 10), "reserve_bytes_per_card"),
        ((1, 10, -1), "reserve_bytes_per_card"),
        ((True, 10), "total_bytes"),
    ],
)
def test_min_cards_rejections(args, name):
    with pytest.raises(ValueError, match=name):
        memory.min_cards(*args)
