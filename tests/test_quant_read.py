"""Grouped and block quantization: stored bytes with scales, and the bytes one decode step reads."""

import pytest

from aiinfra import memory
from aiinfra.catalog import models


def test_one_matrix_in_128x128_blocks_by_hand():
    # DeepSeek-V3's kv_a_proj_with_mqa: 576 x 7168 FP8 weights = 4,128,768 B; ceil(576/128) = 5 by
    # 7168/128 = 56 blocks, one 4-byte scale each: 1,120 B
    lin = ("attention", 1, 576, 7168)  # (inventory group, copies, out_features, in_features)
    scheme = memory._quant_scheme(**memory.FP8_BLOCK_128, keep_bf16=())
    assert memory._quantized_matrix_bytes(*lin, *scheme) == 576 * 7168 + 1120
    # the same matrix in rows of 128 with 2-byte scales (chapter 1's int8 convention): 576 x 56 x 2 = 64,512 B
    rows = memory._quant_scheme(8, 128, 2, (), 1)
    assert memory._quantized_matrix_bytes(*lin, *rows) == 576 * 7168 + 64_512


def test_row_groups_unchanged_by_the_block_option():
    # NOTES.md: DeepSeek-R1-Distill-Llama-70B, int8 in groups of 128 with 2-byte scales, BF16 elsewhere: 73.73 GB
    m = models.load("DeepSeek-R1-Distill-Llama-70B")
    assert memory.grouped_quant_weight_bytes(m, 8, 128, 2) / 1e9 == pytest.approx(73.73, abs=0.005)
    assert memory.grouped_quant_weight_bytes(m, 8, 128, 2, block_rows=1) == memory.grouped_quant_weight_bytes(
        m, 8, 128, 2
    )


def test_read_bytes_at_16_bits_without_scales_are_the_decode_read_params():
    # Qwen3-8B reads 15.14 GB per BF16 step (NOTES.md): the embedding table replaced by one row
    m = models.load("Qwen3-8B")
    read = memory.grouped_quant_read_bytes(m, bits=16, scale_bytes=0)
    assert read == 2 * models.decode_read_params(m)
    assert read / 1e9 == pytest.approx(15.14, abs=0.005)


def test_deepseek_v3_fp8_blocks():
    ds = models.load("DeepSeek-V3")
    stored = memory.grouped_quant_weight_bytes(ds, **memory.FP8_BLOCK_128, keep_bf16=("router",))
    n = models.total_params(ds)
    # FP8 body, BF16 embedding and LM head (2 x 129,280 x 7,168 = 1,853,358,080 parameters) and norms:
    # a little over one byte per parameter, far from two
    assert n < stored < 1.01 * n
    read = memory.grouped_quant_read_bytes(ds, **memory.FP8_BLOCK_128, keep_bf16=("router",))
    # a token reads 37.5 to 38 GB: 36.6B active parameters (DeepSeek's figure, 0.9B of them the BF16 head)
    assert 37.5e9 < read < 38e9
    # reading every expert: everything stored except the embedding table, which is read one row at a time
    everything = memory.grouped_quant_read_bytes(
        ds, **memory.FP8_BLOCK_128, keep_bf16=("router",), expert_fraction=1.0
    )
    assert everything == pytest.approx(stored - 2 * models.embedding_params(ds) + 2 * ds.hidden_size)


def test_bad_input():
    m = models.load("Qwen3-8B")
    with pytest.raises(ValueError, match="block_rows"):
        memory.grouped_quant_weight_bytes(m, block_rows=0)
    with pytest.raises(ValueError, match="expert_fraction"):
        memory.grouped_quant_read_bytes(models.load("DeepSeek-V3"), expert_fraction=1.5)
    with pytest.raises(ValueError, match="keep_bf16"):
        memory.grouped_quant_read_bytes(m, keep_bf16=("lm_head",))
    with pytest.raises(ValueError, match="bits"):
        memory.grouped_quant_read_bytes(m, bits=32)


def test_every_expert_read_includes_every_expert_bias():
    # gpt-oss-20b stores its LM head untied, so a step that reads every expert reads every parameter
    # except the embedding table, of which it needs one row: at 16 bits with no scales that is
    # 2 x (total - vocab x hidden + hidden) bytes, expert matrices and expert biases alike.
    m = models.load("gpt-oss-20b")
    assert not m.tie_word_embeddings
    everything = models.total_params(m) - m.vocab_size * m.hidden_size + m.hidden_size
    read = memory.grouped_quant_read_bytes(m, bits=16, scale_bytes=0, expert_fraction=1.0)
    assert read == 2 * everything
