"""Per-request state of hybrid models: KV that grows with the context plus a fixed state (chapter 5).

Every expected value is derived by hand from the shipped config's fields, not from the code under test.
"""

import pytest

from aiinfra import memory
from aiinfra.catalog import models
from aiinfra.deployment import Deployment


def test_qwen3_next_gated_deltanet_state_by_hand():
    m = models.load("Qwen3-Next-80B-A3B-Instruct")
    # 48 layers, one full-attention layer in every 4 (full_attention_interval): 36 Gated DeltaNet layers
    assert len(m.state_layers) == 36 and m.layer_summary() == "12 full + 36 linear"
    conv = (2 * 16 * 128 + 32 * 128) * 4  # (2 key + value channels) x conv kernel
    recurrent = 32 * 128 * 128  # value heads x key dim x value dim
    assert memory.state_bytes_per_request(m) == 36 * (conv * 2 + recurrent * 4) == 77_856_768
    assert memory.state_bytes_per_request(m, 2, 2) == 36 * (conv + recurrent) * 2
    # only the 12 attention layers cache tokens: 2 KV heads of 256
    assert memory.kv_bytes_per_token(m) == 12 * 2 * 2 * 256 * 2
    assert memory.request_state_bytes(m, 1000) == 1000 * 12 * 2 * 2 * 256 * 2 + 77_856_768


def test_nemotron_h_mamba2_state_by_hand():
    m = models.load("Nemotron-H-8B-Base-8K")
    pattern = models.shipped_config("Nemotron-H-8B-Base-8K")["hybrid_override_pattern"]
    assert len(m.state_layers) == pattern.count("M") + pattern.count("-") == 52 - 4
    conv = (128 * 64 + 2 * 8 * 128) * 4  # (heads x head_dim + 2 x groups x state) x kernel
    recurrent = 128 * 64 * 128  # heads x head_dim x ssm_state_size
    assert memory.state_bytes_per_request(m) == pattern.count("M") * (conv * 2 + recurrent * 4) == 102_629_376
    assert memory.kv_bytes_per_token(m) == pattern.count("*") * 2 * 8 * 128 * 2


def test_the_sparse_attention_indexer_caches_one_key_per_token():
    m = models.load("GLM-5")
    # MLA latent 512 + RoPE key 64, plus the indexer's 128-wide key, in each of 78 layers
    assert memory.kv_bytes_per_token(m) == (512 + 64 + 128) * 78 * 2
    assert memory.state_bytes_per_request(m) == 0.0


def test_chunked_attention_keeps_one_chunk():
    m = models.load("Llama-4-Scout-17B-16E")
    assert m.layer_summary() == "12 full + 36 chunked (8,192)"
    per_layer_token = 2 * 8 * 128 * 2
    n = 131_072
    assert memory.kv_bytes_per_request(m, n) == (12 * n + 36 * 8192) * per_layer_token


def test_attention_only_models_keep_no_state():
    assert memory.state_bytes_per_request(models.load("Qwen3-8B")) == 0.0
    assert memory.request_state_bytes("Qwen3-8B", 2048) == memory.kv_bytes_per_request("Qwen3-8B", 2048)


@pytest.mark.parametrize("arg", ["bytes_per_element", "state_bytes_per_element"])
@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_state_bytes_refuse_bad_sizes(arg, bad):
    with pytest.raises(ValueError, match=arg):
        memory.state_bytes_per_request("Qwen3-Next-80B-A3B-Instruct", **{arg: bad})


def test_deployment_counts_the_state_in_every_request():
    d = Deployment("Qwen3-Next-80B-A3B-Instruct", "H200 SXM", n_gpus=2)
    assert d.state_bytes_per_request == 36 * ((2 * 16 * 128 + 32 * 128) * 4 * 2 + 32 * 128 * 128 * 4)
    n = 8192
    assert d.request_bytes(n) == d.kv_bytes(n) + d.state_bytes_per_request
    assert d.free_bytes > 0 and d.max_batch(n) == int(d.free_bytes // d.request_bytes(n))
    assert Deployment("Qwen3-8B", "H200 SXM").state_bytes_per_request == 0.0


def test_pretraining_tp_changes_no_shape():
    cfg = models.shipped_config("SmolLM3-3B")
    assert cfg["pretraining_tp"] == 2
    assert models.total_params(models.load(cfg)) == models.total_params(
        models.load(dict(cfg, pretraining_tp=1))
    )


def test_kimi_k2_and_other_deepseek_v3_checkpoints_dispatch_by_architectures():
    cfg = models.shipped_config("Kimi-K2-Instruct")
    assert cfg["architectures"] == ["DeepseekV3ForCausalLM"]
    renamed = models.load(dict(cfg, model_type="kimi_k2_custom"))
    assert renamed.exact and renamed.model_type == "deepseek_v3"
    assert models.total_params(renamed) == models.total_params(models.load("Kimi-K2-Instruct"))
