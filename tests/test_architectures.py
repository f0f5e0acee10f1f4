"""Exact counts for every family in aiinfra.catalog.architectures, window-aware KV, and the refusals.

Every fixture count below cites where it was published. "Hub" means the
parameter count the Hugging Face Hub computes from a repository's safetensors
headers (model info ``safetensors.total``; the model page shows it rounded as
"Model size"). KV values are derived by hand in the tests, not by the code
under test.
"""

import json
import math
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra import memory
from aiinfra.catalog import architectures as A
from aiinfra.catalog import checkpoint, models
from aiinfra.catalog.models import ContextLengthWarning


def arch(name):
    return models.load(name)


def non_embedding(a):
    g = models.params_by_group(a)
    return (
        models.total_params(a) - g.get("embedding", 0) - g.get("lm_head", 0) - g.get("position_embedding", 0)
    )


# name -> (model_type, exact total, source of the count)
FIXTURES = {
    # safetensors documentation, "Metadata Parsing" example output: gpt2's model.safetensors holds
    # {'F32': 137,022,720} elements, of which 12 causal-mask buffers h.N.attn.bias (1 x 1 x 1024 x 1024)
    # are not parameters: 137,022,720 - 12 * 1,048,576 = 124,439,808 (test_gpt2_published_elements).
    "gpt2": ("gpt2", 124_439_808),
    # EleutherAI/pythia README, model table: Pythia-160M has 85,056,000 non-embedding parameters; its
    # untied embed_in and embed_out hold 50,304 x 768 each (test_pythia_non_embedding_count).
    "pythia-160m": ("gpt_neox", 162_322_944),
    # Hub: microsoft/Phi-3-mini-4k-instruct safetensors total 3,821,079,552 ("3.8B" in the model card).
    "Phi-3-mini-4k-instruct": ("phi3", 3_821_079_552),
    # Gemma report (arXiv 2403.08295) Table 2: 2B has 1,981,884,416 non-embedding parameters; the released
    # table has 256,000 rows of 2,048 (test_gemma_reports_non_embedding_counts).
    "gemma-2b": ("gemma", 2_506_172_416),
    # Gemma 2 report (arXiv 2408.00118) Table 2: 2B has 2,024,517,888 non-embedding parameters;
    # Hub: google/gemma-2-2b-it safetensors total 2,614,341,888.
    "gemma-2-2b-it": ("gemma2", 2_614_341_888),
    # Hub: google/gemma-3-1b-it safetensors total 999,885,952 (Gemma 3 report Table 1: 302M + 698M).
    "gemma-3-1b-it": ("gemma3_text", 999_885_952),
    # Hub: google/gemma-3-4b-it safetensors total 4,300,079,472 counts the SigLIP tower and the projector
    # too; the language model is what is left (test_gemma3_wrapper_counts_the_language_model).
    "gemma-3-4b-it": ("gemma3_text", 3_880_263_168),
    # Hub: openai/gpt-oss-20b 20,914,757,184, also the GGUF general.parameter_count Ollama shows for
    # gpt-oss:20b; OpenAI's gpt-oss model card Table 1: 20.91B total, 3.61B active.
    "gpt-oss-20b": ("gpt_oss", 20_914_757_184),
    # Hub: deepseek-ai/DeepSeek-V2-Lite safetensors total 15,706,484,224 (model card: 15.7B total).
    "DeepSeek-V2-Lite": ("deepseek_v2", 15_706_484_224),
    # Hub: deepseek-ai/DeepSeek-V2 safetensors total 235,741,434,880 (paper: 236B total, 21B activated).
    "DeepSeek-V2": ("deepseek_v2", 235_741_434_880),
    # allenai/OLMo-2-1124-13B model.safetensors.index.json (shipped in catalog/checkpoints): total_size
    # 54,864,793,600 bytes, every tensor F32 (test_olmo2_index_total_size).
    "OLMo-2-1124-13B": ("olmo2", 54_864_793_600 // 4),
    # Hub: ibm-granite/granite-3.3-2b-instruct safetensors total 2,533,539,840.
    "granite-3.3-2b-instruct": ("granite", 2_533_539_840),
    # No exact published integer found; derived by hand in test_starcoder2_by_hand and checked against
    # the Hub's "3.03B params" for bigcode/starcoder2-3b.
    "starcoder2-3b": ("starcoder2", 3_030_371_328),
    # Qwen/Qwen2.5-7B-Instruct model.safetensors.index.json: total_size 15,231,233,024 bytes, all BF16.
    "Qwen2.5-7B-Instruct": ("qwen2", 15_231_233_024 // 2),
    # Llama 2 paper (arXiv 2307.09288) sizes 7B and 70B; Hub safetensors totals 6,738,415,616 and 68,976,648,192.
    "Llama-2-7b-hf": ("llama", 6_738_415_616),
    "Llama-2-70b-hf": ("llama", 68_976_648_192),
    # Hub: meta-llama/Llama-3.1-405B safetensors total 405,853,388,800 (model card: 405B).
    "Llama-3.1-405B": ("llama", 405_853_388_800),
    # The 2026 families below: the exact total is the oracle's (transformers on the meta device,
    # oracle.json), held against the vendor's published figure in PUBLISHED.
    "Kimi-K2-Instruct": ("kimi_k2", 1_026_408_232_448),
    "SmolLM3-3B": ("smollm3", 3_075_098_624),
    "Llama-4-Scout-17B-16E": ("llama4_text", 107_769_861_120),
    "Qwen3-Next-80B-A3B-Instruct": ("qwen3_next", 79_674_391_296),
    "Qwen3.5-27B": ("qwen3_5_text", 26_895_998_464),
    "Qwen3.5-35B-A3B": ("qwen3_5_moe_text", 34_660_610_688),
    "GLM-4.5-Air": ("glm4_moe", 106_852_251_264),
    "GLM-5": ("glm_moe_dsa", 743_911_218_432),
    "DeepSeek-V3.2": ("deepseek_v32", 671_877_944_064),
    "MiniMax-M2": ("minimax_m2", 228_689_764_864),
    "EXAONE-4.0-32B": ("exaone4", 32_003_216_384),
    "Nemotron-H-8B-Base-8K": ("nemotron_h", 8_100_852_736),
    "c4ai-command-r-v01": ("cohere", 34_980_831_232),
    "gemma-4-26b-a4b-it-4bit": ("gemma4_text", 25_233_141_790),
    "gemma-4-31B-it": ("gemma4_text", 30_697_345_340),
}

# name -> (published total, how far the count may lie from it, published active or None, how far), in
# billions, each from the model card or report named; vendors round or truncate, and "active" leaves the
# input embedding table out as the library does unless the comment says it counts it.
PUBLISHED = {
    # Kimi K2 model card: "1 trillion total parameters", "32 billion activated parameters".
    "Kimi-K2-Instruct": (1000, 50, 32, 0.5),
    # SmolLM3 model card: 3.08B parameters.
    "SmolLM3-3B": (3.08, 0.005, None, None),
    # Llama 4 model card: Scout, 17B active (the table counted), 109B total with the ~1.2B vision encoder.
    "Llama-4-Scout-17B-16E": (109 - 1.2, 0.5, 17 - 1.03, 0.5),
    # Qwen3-Next model card: "80B total parameters and 3B activated" (the A3B of the name).
    "Qwen3-Next-80B-A3B-Instruct": (80, 0.5, 3, 0.6),
    # Qwen3.5 model card: 27B parameters in the language model.
    "Qwen3.5-27B": (27, 0.5, None, None),
    # Qwen3.5 model card: Qwen3.5-35B-A3B, 35B total and 3B activated in the language model (the A3B of the name).
    "Qwen3.5-35B-A3B": (35, 0.5, 3, 0.1),
    # GLM-4.5 report: GLM-4.5-Air, 106B total, 12B active (truncated).
    "GLM-4.5-Air": (106, 1, 12, 1),
    # GLM-5 model card: 744B parameters, 40B active.
    "GLM-5": (744, 0.5, 40, 1),
    # DeepSeek-V3 README: 685B on the Hub, of which 671B main model and 14B MTP module (not counted), 37B
    # activated; V3.2 adds its indexer (DeepSeek-V3.2-Exp model card: the V3.1-Terminus shape plus DSA).
    "DeepSeek-V3.2": (685 - 14, 1.5, 37, 0.6),
    # MiniMax-M2 model card: 230 billion total, 10 billion active (the MTP modules not counted).
    "MiniMax-M2": (230, 2, 10, 0.5),
    # EXAONE 4.0 model card: 32B parameters.
    "EXAONE-4.0-32B": (32, 0.5, None, None),
    # Nemotron-H report and model card: the 8B hybrid.
    "Nemotron-H-8B-Base-8K": (8, 0.5, None, None),
    # Command R model card: 35 billion parameters.
    "c4ai-command-r-v01": (35, 0.5, None, None),
    # Gemma 4 26B A4B: 25.2B total, 3.8B active (Google's model card as quoted by vast.ai/model/gemma-4-26b-a4b-it
    # and llmradar.eu); the active count includes the embedding table, which is tied to the head.
    "gemma-4-26b-a4b-it-4bit": (25.2, 0.05, 3.8, 0.05),
    # Gemma 4 31B: "30.7B dense + ~550M vision encoder" (llmradar.eu/models/gemma-4-31b-it; Google's 30.7B).
    "gemma-4-31B-it": (30.7, 0.05, None, None),
}

#: the shipped configs pinned in tests/test_models.py
EARLIER = {
    "DeepSeek-R1-Distill-Llama-70B",
    "Llama-3.1-70B",
    "Qwen3-8B",
    "Llama-3.1-8B",
    "Llama-3.2-3B",
    "Mistral-7B-v0.1",
    "Mixtral-8x7B-v0.1",
    "DeepSeek-V3",
    "Qwen3-30B-A3B",
}


def test_every_shipped_config_has_a_fixture():
    # the family records list every shipped config; each one is pinned here or in tests/test_models.py
    assert set(FIXTURES) | EARLIER == set(models.shipped_names()) and not set(FIXTURES) & EARLIER
    assert set(models.SHIPPED) == {s.name for f in A.FAMILIES.values() for s in f.shipped}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_exact_total(name):
    a = arch(name)
    model_type, total = FIXTURES[name]
    assert a.model_type == model_type and a.exact and a.label == "exact"
    assert models.total_params(a) == total
    assert isinstance(models.total_params(a), int)
    assert sum(models.params_by_group(a).values()) == total
    assert set(models.params_by_group(a)) <= set(A.GROUPS)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_new_families_agree_with_their_published_figures(name):
    total_b, total_off, active_b, active_off = PUBLISHED[name]
    a = arch(name)
    assert abs(models.total_params(a) / 1e9 - total_b) <= total_off
    if active_b is not None:
        assert abs(models.active_params(a) / 1e9 - active_b) <= active_off


def test_every_family_record_is_exact_and_pinned():
    pinned = {FIXTURES[n][0] for n in FIXTURES} | {
        "llama",
        "mistral",
        "mixtral",
        "qwen3",
        "qwen3_moe",
        "deepseek_v3",
    }
    assert pinned == set(A.EXACT_FAMILIES) == set(A.FAMILY_NOTES) and len(pinned) >= 29
    for family in A.FAMILIES.values():
        assert {models.FAMILY_OF[s.name] for s in family.shipped} == {family.model_type}
        assert family.notes and family.shipped


def test_released_configs_record_their_source():
    for filename, url in models.SHIPPED.values():
        assert url.startswith("https://huggingface.co/") and url.endswith("/config.json")
        assert (resources.files("aiinfra.catalog") / "configs" / filename).is_file()
    # copied verbatim from published copies; the rest are labelled as reconstructed
    assert set(FIXTURES) - models.RECONSTRUCTED == {
        "Phi-3-mini-4k-instruct",
        "gpt-oss-20b",
        "gemma-2-2b-it",
        "gemma-3-4b-it",
        "OLMo-2-1124-13B",
        "gemma-4-26b-a4b-it-4bit",
    }
    assert set(FIXTURES) > models.RECONSTRUCTED


def test_agrees_with_models_on_qwen2():
    assert models.total_params(arch("Qwen2.5-7B-Instruct")) == 7_615_616_512


# --- what makes each family's count differ ---------------------------------------------


def shapes(a):
    return {name: shape for name, (_, shape) in checkpoint._expected_tensors(a).items()}


def test_gpt2_published_elements():
    a = arch("gpt2")
    masks = 12 * 1024 * 1024
    assert models.total_params(a) + masks == 137_022_720
    s = shapes(a)
    # Conv1D stores (in, out): the fused qkv is 768 x 2,304, not 2,304 x 768
    assert s["transformer.h.0.attn.c_attn.weight"] == (768, 2304)
    assert s["transformer.h.0.mlp.c_proj.weight"] == (3072, 768)
    assert s["transformer.wpe.weight"] == (1024, 768)
    assert "lm_head.weight" not in s and a.tie_word_embeddings
    g = models.params_by_group(a)
    assert g["attention_bias"] == 12 * (3 * 768 + 768) and g["mlp_bias"] == 12 * (3072 + 768)
    assert g["norm"] == 12 * 4 * 768 + 2 * 768  # LayerNorm weight and bias, twice per layer, and ln_f


def test_pythia_non_embedding_count():
    a = arch("pythia-160m")
    assert non_embedding(a) == 85_056_000
    s = shapes(a)
    assert s["embed_out.weight"] == s["gpt_neox.embed_in.weight"] == (50_304, 768)
    assert s["gpt_neox.layers.0.attention.query_key_value.bias"] == (2304,)
    assert s["gpt_neox.final_layer_norm.bias"] == (768,)
    assert any("partial rotary" in n for n in a.notes)


def test_phi3_fused_projections():
    s = shapes(arch("Phi-3-mini-4k-instruct"))
    assert s["model.layers.0.self_attn.qkv_proj.weight"] == ((32 + 2 * 32) * 96, 3072)
    assert s["model.layers.0.mlp.gate_up_proj.weight"] == (2 * 8192, 3072)
    assert "model.layers.0.self_attn.q_proj.weight" not in s


def test_gemma_reports_non_embedding_counts():
    # The reports count a 256,128-row table; the released checkpoints hold 256,000 rows.
    assert 256_128 * 2048 == 524_550_144 and 256_128 * 2304 == 590_118_912
    assert non_embedding(arch("gemma-2b")) == 1_981_884_416
    assert non_embedding(arch("gemma-2-2b-it")) == 2_024_517_888
    assert models.total_params(arch("gemma-2-2b-it")) == 2_024_517_888 + 256_000 * 2304


def test_gemma_head_dim_and_norms():
    a = arch("gemma-2-2b-it")
    s = shapes(a)
    assert s["model.layers.0.self_attn.q_proj.weight"] == (8 * 256, 2304)  # 2,048 != hidden 2,304
    norms = [n for n in s if n.startswith("model.layers.0.") and n.endswith("layernorm.weight")]
    assert len(norms) == 4
    assert a.tie_word_embeddings and "tie_word_embeddings=True" in a.defaults_used
    g3 = shapes(arch("gemma-3-1b-it"))
    assert (
        g3["model.layers.0.self_attn.q_norm.weight"] == g3["model.layers.0.self_attn.k_norm.weight"] == (256,)
    )
    assert g3["model.layers.0.self_attn.q_proj.weight"] == (4 * 256, 1152)


def test_gemma4_full_layers_have_their_own_heads_and_reuse_keys_as_values():
    a = arch("gemma-4-26b-a4b-it-4bit")
    s = shapes(a)
    hidden = 2816
    # sliding layer 0: 16 query heads and 8 KV heads of 256; full layer 5: 16 of 512 and 2 KV heads, no v_proj
    assert s["model.layers.0.self_attn.q_proj.weight"] == (16 * 256, hidden)
    assert s["model.layers.0.self_attn.v_proj.weight"] == (8 * 256, hidden)
    assert s["model.layers.5.self_attn.q_proj.weight"] == (16 * 512, hidden)
    assert s["model.layers.5.self_attn.k_proj.weight"] == (2 * 512, hidden)
    assert "model.layers.5.self_attn.v_proj.weight" not in s
    assert s["model.layers.5.self_attn.k_norm.weight"] == (512,)
    # every layer runs the dense MLP and the 128 fused experts (experts, out, in) side by side
    assert s["model.layers.0.mlp.gate_proj.weight"] == (2112, hidden)
    assert s["model.layers.0.experts.gate_up_proj"] == (128, 2 * 704, hidden)
    assert s["model.layers.0.experts.down_proj"] == (128, hidden, 704)
    assert s["model.layers.29.layer_scalar"] == (1,)
    assert a.moe_layers == tuple(range(30)) and a.n_experts_per_token == 8
    # by hand: 25 sliding layers of 2 x 8 x 256 and 5 full ones of 2 x 2 x 512 elements a token
    assert [x.index for x in a.attention if x.kind == "full"] == [5, 11, 17, 23, 29]
    assert memory.kv_bytes_per_request(a, 1000) == (25 * 2 * 8 * 256 + 5 * 2 * 2 * 512) * 1000 * 2
    assert memory.kv_bytes_per_request(a, 4000) == (25 * 2 * 8 * 256 * 1024 + 5 * 2 * 2 * 512 * 4000) * 2
    dense = arch(
        "gemma-4-31B-it"
    )  # the dense 31B: 32 query heads, 16 KV heads of 256, 4 of 512 in full layers
    s = shapes(dense)
    assert s["model.layers.5.self_attn.k_proj.weight"] == (4 * 512, 5376)
    assert "model.layers.5.self_attn.v_proj.weight" not in s and "model.layers.0.experts.down_proj" not in s
    assert models.active_params(dense) == models.total_params(dense) and not dense.is_moe


@pytest.mark.parametrize(
    "change, match",
    [
        ({"hidden_size_per_layer_input": 256}, "hidden_size_per_layer_input"),
        ({"num_kv_shared_layers": 4}, "num_kv_shared_layers"),
        ({"use_bidirectional_attention": "all"}, "use_bidirectional_attention"),
        ({"num_global_key_value_heads": 3}, "num_global_key_value_heads"),
    ],
)
def test_gemma4_variants_it_does_not_count_are_refused(change, match):
    cfg = models.shipped_config("gemma-4-26b-a4b-it-4bit")
    cfg["text_config"].update(change)
    with pytest.raises(ValueError, match=match):
        models.load(cfg)


def test_gemma3_wrapper_counts_the_language_model():
    a = arch("gemma-3-4b-it")
    assert a.wrapper_model_type == "gemma3" and any("language model" in n for n in a.notes)
    # SigLIP So400m tower of the vision_config, by hand: patch conv (3*14*14 weights + bias per channel),
    # 64 x 64 positions, 27 layers (2 LayerNorms, 4 biased 1152 x 1152 projections, a biased MLP), post-norm.
    d, f, layers = 1152, 4304, 27
    per_layer = 2 * 2 * d + 4 * (d * d + d) + (d * f + f) + (f * d + d)
    vision = (3 * 14 * 14 * d + d) + (896 // 14) ** 2 * d + layers * per_layer + 2 * d
    projector = d + d * 2560  # soft-embedding norm and the input projection
    assert vision == 416_866_032
    assert models.total_params(a) + vision + projector == 4_300_079_472
    # Gemma 3 report Table 1: 3,209M non-embedding parameters for 4B
    assert round(non_embedding(a) / 1e6) == 3209
    assert {"vocab_size=262208", "num_key_value_heads=4", "head_dim=256"} <= set(a.defaults_used)


def test_gpt_oss_sinks_biases_and_experts():
    a = arch("gpt-oss-20b")
    s = shapes(a)
    assert s["model.layers.0.self_attn.sinks"] == (64,)
    assert s["model.layers.0.self_attn.q_proj.bias"] == (64 * 64,)
    assert s["model.layers.0.mlp.router.bias"] == (32,)
    assert s["model.layers.0.mlp.experts.gate_up_proj"] == (32, 2880, 2 * 2880)
    assert s["model.layers.0.mlp.experts.down_proj_bias"] == (32, 2880)
    g = models.params_by_group(a)
    # OpenAI's model card: 20.91B total, 3.61B active (the card, like the library, leaves the embedding
    # table a token only looks up out of "active")
    assert round(models.total_params(a) / 1e9, 2) == 20.91
    assert round(models.active_params(a) / 1e9, 2) == 3.61
    # active = total - 28/32 of every routed expert weight and bias - the untied embedding table
    skipped = (g["expert"] + g["expert_bias"]) * 28 // 32
    assert models.total_params(a) - models.active_params(a) == skipped + 201_088 * 2880


def test_deepseek_v2_latent_attention_with_and_without_query_compression():
    lite, full = arch("DeepSeek-V2-Lite"), arch("DeepSeek-V2")
    s = shapes(lite)
    assert s["model.layers.0.self_attn.q_proj.weight"] == (16 * 192, 2048)
    assert "model.layers.0.self_attn.q_a_proj.weight" not in s
    assert s["model.layers.0.self_attn.kv_a_proj_with_mqa.weight"] == (512 + 64, 2048)
    # first_k_dense_replace = 1: layer 0 has a dense MLP, layers 1.. have 64 experts + 2 shared
    assert s["model.layers.0.mlp.gate_proj.weight"] == (10944, 2048)
    assert "model.layers.0.mlp.experts.0.gate_proj.weight" not in s
    assert s["model.layers.1.mlp.shared_experts.gate_proj.weight"] == (2 * 1408, 2048)
    assert s["model.layers.26.mlp.experts.63.down_proj.weight"] == (2048, 1408)
    f = shapes(full)
    assert f["model.layers.0.self_attn.q_a_proj.weight"] == (1536, 5120)
    assert f["model.layers.0.self_attn.q_a_layernorm.weight"] == (1536,)
    assert "model.layers.0.self_attn.q_proj.weight" not in f
    # DeepSeek-V2 paper: 236B total, 21B activated per token
    assert round(models.total_params(full) / 1e9) == 236 and round(models.active_params(full) / 1e9) == 21
    # the V2-Lite card's "2.4B activated" leaves the embedding table out and truncates 2.45B
    g = models.params_by_group(lite)
    assert math.floor(models.active_params(lite) / 1e8) / 10 == 2.4
    assert "router_bias" not in g  # greedy routing: no score-correction bias (V3's noaux_tc has one)


def test_matmul_weights_a_token_multiplies():
    a = arch("gpt-oss-20b")
    g = models.params_by_group(a)
    # attention, router and 4 of 32 experts; biases, sinks, norms and tables are not matmuls
    assert models.block_linear_params_per_token(a) == g["attention"] + g["router"] + g["expert"] // 8
    assert models.lm_head_params(a) == 201_088 * 2880
    g2 = arch("gpt2")
    assert models.block_linear_params_per_token(g2) == 12 * (768 * 2304 + 768 * 768 + 2 * 768 * 3072)
    mla = arch("DeepSeek-V2")
    assert {(x.qk_width, x.v_width) for x in mla.attention} == {(128 * 192, 128 * 128)}


def test_qwen3_5_moe_fused_experts_and_fixed_state():
    a = arch("Qwen3.5-35B-A3B")
    g = models.params_by_group(a)
    # 40 layers of 256 experts of width 512 on a 2,048 model, stored as one gate_up and one down tensor
    assert g["expert"] == 40 * 256 * 3 * 512 * 2048 and "mlp" not in g
    assert g["shared_expert"] == 40 * 3 * 512 * 2048 and g["router"] == 40 * (256 + 1) * 2048
    experts = [t for t in a.tensors if t.group == "expert"]
    assert sorted(t.shape for t in experts) == [(256, 1024, 2048), (256, 2048, 512)]
    assert {t.layout for t in experts} == {"experts_out_in"}
    # 30 Gated DeltaNet layers: conv (2 x 16 x 128 + 32 x 128) x 4 taps in BF16, 32 x 128 x 128 in FP32
    assert memory.state_bytes_per_request(a) == 30 * ((2 * 16 * 128 + 32 * 128) * 4 * 2 + 32 * 128 * 128 * 4)
    # 10 full-attention layers of 2 KV heads of 256 in BF16
    assert memory.kv_bytes_per_request(a, 1000) == 1000 * 10 * 2 * 2 * 256 * 2


# A field a config leaves out takes the family's transformers class default (configuration_*.py), as
# transformers itself does: (config, field removed, the oracle's total of the config without it). Each default
# here equals the release's own value, so the total is the shipped one's, which the oracle also counts.
ABSENT_FIELDS = [
    ("Mistral-7B-v0.1", "num_key_value_heads", 7_241_732_096),  # MistralConfig: 8
    ("Mixtral-8x7B-v0.1", "num_key_value_heads", 46_702_792_704),  # MixtralConfig: 8
    ("Qwen3-30B-A3B", "num_key_value_heads", 30_532_122_624),  # Qwen3MoeConfig: 4
    ("starcoder2-3b", "num_key_value_heads", 3_030_371_328),  # Starcoder2Config: 2
    ("SmolLM3-3B", "num_key_value_heads", 3_075_098_624),  # SmolLM3Config: 4
    ("gemma-2-2b-it", "num_key_value_heads", 2_614_341_888),  # Gemma2Config: 4
    ("GLM-4.5-Air", "num_key_value_heads", 106_852_251_264),  # Glm4MoeConfig: 8
    ("GLM-4.5-Air", "first_k_dense_replace", 106_852_251_264),  # Glm4MoeConfig: 1
    ("GLM-4.5-Air", "n_shared_experts", 106_852_251_264),  # Glm4MoeConfig: 1
    ("MiniMax-M2", "num_key_value_heads", 228_689_764_864),  # MiniMaxM2Config: 8
    ("MiniMax-M2", "head_dim", 228_689_764_864),  # MiniMaxM2Config: 128
    ("Llama-4-Scout-17B-16E", "num_key_value_heads", 107_769_861_120),  # Llama4TextConfig: 8
    ("DeepSeek-V2-Lite", "n_shared_experts", 15_706_484_224),  # DeepseekV2Config: 2
    ("Qwen3-Next-80B-A3B-Instruct", "num_key_value_heads", 79_674_391_296),  # Qwen3NextConfig: 2
]


def _without(name, *fields):
    cfg = models.shipped_config(name)
    if isinstance(cfg.get("text_config"), dict):
        return dict(cfg, text_config={k: v for k, v in cfg["text_config"].items() if k not in fields})
    return {k: v for k, v in cfg.items() if k not in fields}


@pytest.mark.parametrize("name, field, total", ABSENT_FIELDS)
def test_an_absent_field_takes_the_class_default(name, field, total):
    a = models.load(_without(name, field))
    assert models.total_params(a) == total and any(d.startswith(f"{field}=") for d in a.defaults_used)
    assert memory.kv_bytes_per_request(a, 5000) == memory.kv_bytes_per_request(arch(name), 5000)


def test_absent_windows_take_the_class_default():
    # MistralConfig.sliding_window = 4096: every layer slides (the oracle's cache holds 4,095 tokens a layer)
    assert models.load(_without("Mistral-7B-v0.1", "sliding_window")).layer_summary() == "32 sliding (4,096)"
    # Exaone4Config: sliding_window 4096, sliding_window_pattern 4 (three local layers, then a global one)
    a = models.load(_without("EXAONE-4.0-32B", "sliding_window", "sliding_window_pattern", "layer_types"))
    assert a.layer_summary() == "16 full + 48 sliding (4,096)"
    # an explicit null means no window at all
    assert models.load(
        dict(_without("EXAONE-4.0-32B", "layer_types"), sliding_window=None)
    ).layer_summary() == ("64 full")


def test_an_explicit_null_is_derived_as_transformers_derives_it():
    # num_key_value_heads: null -> num_attention_heads (MistralConfig.__post_init__), not the class default 8
    a = models.load(dict(models.shipped_config("Mistral-7B-v0.1"), num_key_value_heads=None))
    assert a.n_kv_heads == a.n_heads == 32


@pytest.mark.parametrize("name", ["Qwen2.5-7B-Instruct", "EXAONE-4.0-32B", "gemma-2b"])
def test_a_class_default_that_does_not_fit_is_refused(name):
    # Qwen2Config and Exaone4Config default to 32 KV heads, GemmaConfig to 16: they divide none of these models'
    # query heads (28, 40, 8), and transformers' own forward pass fails on the model it builds
    with pytest.raises(ValueError, match="num_key_value_heads"):
        models.load(_without(name, "num_key_value_heads"))


def test_olmo2_norms_over_the_whole_projection():
    s = shapes(arch("OLMo-2-1124-13B"))
    assert s["model.layers.0.self_attn.q_norm.weight"] == (40 * 128,)
    assert s["model.layers.0.self_attn.k_norm.weight"] == (40 * 128,)
    assert "model.layers.0.input_layernorm.weight" not in s
    assert "model.layers.0.post_feedforward_layernorm.weight" in s


def test_starcoder2_by_hand():
    h, f, layers, vocab, kv_width = 3072, 12288, 30, 49152, 2 * 128
    attention = 2 * (h * h + h) + 2 * (h * kv_width + kv_width)
    mlp = (h * f + f) + (f * h + h)
    norms = 2 * 2 * h
    expected = vocab * h + layers * (attention + mlp + norms) + 2 * h  # tied head, biased final LayerNorm
    a = arch("starcoder2-3b")
    assert models.total_params(a) == expected == 3_030_371_328
    assert round(expected / 1e9, 2) == 3.03  # Hub model page: "3.03B params"


def test_granite_is_llama_shaped_and_tied():
    a = arch("granite-3.3-2b-instruct")
    assert a.tie_word_embeddings and "lm_head" not in models.params_by_group(a)
    assert shapes(a)["model.layers.0.self_attn.k_proj.weight"] == (8 * 64, 2048)


# --- window-aware KV, derived by hand ----------------------------------------------------


def test_gemma2_alternates_sliding_and_global():
    a = arch("gemma-2-2b-it")
    assert a.sliding_window_layers == tuple(range(0, 26, 2))
    per_layer_token = 2 * 4 * 256 * 2  # K and V, 4 KV heads of 256, BF16
    assert memory.kv_bytes_per_token(a) == 26 * per_layer_token
    # 8,192 tokens: 13 sliding layers keep 4,096, 13 global layers keep 8,192
    assert memory.kv_bytes_per_request(a, 8192) == per_layer_token * (13 * 4096 + 13 * 8192) == 654_311_424
    # below the window every layer keeps everything
    assert memory.kv_bytes_per_request(a, 1000) == 26 * per_layer_token * 1000


def test_gemma3_keeps_one_global_layer_in_six():
    a = arch("gemma-3-1b-it")
    full = [i for i in range(26) if i not in a.sliding_window_layers]
    assert full == [5, 11, 17, 23]
    per_layer_token = 2 * 1 * 256 * 2
    assert memory.kv_bytes_per_request(a, 32768) == per_layer_token * (22 * 512 + 4 * 32768) == 145_752_064
    wrapped = arch("gemma-3-4b-it")  # sliding_window 1024 from text_config, pattern 6 by default
    assert [i for i in range(34) if i not in wrapped.sliding_window_layers] == [5, 11, 17, 23, 29]
    assert memory.kv_bytes_per_request(wrapped, 2048) == 2 * 4 * 256 * 2 * (29 * 1024 + 5 * 2048)


def test_gpt_oss_alternates_a_128_token_window():
    a = arch("gpt-oss-20b")
    assert a.sliding_window_layers == tuple(range(0, 24, 2))
    per_layer_token = 2 * 8 * 64 * 2
    assert (
        memory.kv_bytes_per_request(a, 131072) == per_layer_token * (12 * 128 + 12 * 131072) == 3_224_371_200
    )


def test_mla_stores_the_latent_and_the_rope_key():
    a = arch("DeepSeek-V2-Lite")
    assert {x.kv_elements_per_token for x in a.attention} == {512 + 64}
    assert memory.kv_bytes_per_token(a) == (512 + 64) * 27 * 2 == 31_104
    assert memory.kv_bytes_per_request(a, 4096) == 31_104 * 4096


def test_every_layer_slides_when_the_config_says_so():
    phi = arch("Phi-3-mini-4k-instruct")
    assert len(phi.sliding_window_layers) == 32 and {x.window for x in phi.attention} == {2047}
    assert memory.kv_bytes_per_request(phi, 4096) == 2 * 32 * 96 * 2 * 32 * 2047
    star = arch("starcoder2-3b")
    assert memory.kv_bytes_per_request(star, 16384) == 2 * 2 * 128 * 2 * 30 * 4096
    assert arch("Qwen2.5-7B-Instruct").sliding_window_layers == ()  # use_sliding_window is false


def test_kv_accepts_arrays_and_fp8():
    a = arch("gemma-2-2b-it")
    ctx = np.array([0, 4096, 8192])
    out = memory.kv_bytes_per_request(a, ctx, 1)
    assert out.tolist() == [0, 26 * 2048 * 4096, 2048 * (13 * 4096 + 13 * 8192)]
    assert memory.kv_bytes_per_request(a, 8192, 1) * 2 == memory.kv_bytes_per_request(a, 8192, 2)
    assert isinstance(memory.kv_bytes_per_request(a, 8192), float)


def test_kv_matches_its_sympy_form():
    n, b = sp.symbols("n b", positive=True)
    a = arch("gemma-3-1b-it")
    expr = sum(
        x.kv_elements_per_token * (n if x.window is None else sp.Min(n, x.window)) * b for x in a.attention
    )
    for ctx in (1, 511, 512, 513, 4096, 32768):
        for bytes_per in (1, 2):
            assert memory.kv_bytes_per_request(a, ctx, bytes_per) == float(expr.subs({n: ctx, b: bytes_per}))


def test_context_beyond_max_position_embeddings_warns():
    with pytest.warns(ContextLengthWarning, match="8,192"):
        memory.kv_bytes_per_request(arch("gemma-2-2b-it"), 10_000)
    with pytest.warns(ContextLengthWarning, match="1,024"):
        memory.kv_bytes_per_request(arch("gpt2"), 2048)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory.kv_bytes_per_request(arch("gemma-2-2b-it"), 8192)  # exactly the limit: no warning


@settings(max_examples=60, deadline=None, derandomize=True)
@given(ctx=st.integers(0, 200_000), more=st.integers(0, 5000))
def test_kv_grows_with_context_and_never_beats_full_attention(ctx, more):
    a = arch("gpt-oss-20b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ContextLengthWarning)
        now, later = memory.kv_bytes_per_request(a, ctx), memory.kv_bytes_per_request(a, ctx + more)
    assert now <= later <= now + memory.kv_bytes_per_token(a) * more
    assert now <= memory.kv_bytes_per_token(a) * ctx


# --- the labelled estimate and the refusals ----------------------------------------------

UNKNOWN = {
    "model_type": "mamba_like",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 100,
    "intermediate_size": 96,
}


def test_unknown_family_is_refused_without_approximate():
    with pytest.raises(ValueError, match=r"'mamba_like'.*approximate=True"):
        models.load(UNKNOWN)


def test_approximate_is_labelled_and_lists_assumptions():
    a = models.load(UNKNOWN, approximate=True)
    assert not a.exact and a.label == "approximate"
    assert any("gated" in x for x in a.assumptions) and any("untied" in x for x in a.assumptions)
    per_layer = 4 * 64 * 64 + 3 * 64 * 96 + 2 * 64
    assert models.total_params(a) == 2 * per_layer + 64 + 2 * 100 * 64


def test_approximate_reads_other_spellings_and_experts():
    cfg = {
        "model_type": "x",
        "n_embd": 32,
        "n_layer": 3,
        "n_head": 4,
        "vocab_size": 10,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "tie_word_embeddings": True,
    }
    a = models.load(cfg, approximate=True)
    assert a.n_routed_experts == 4 and any("4 * hidden_size" in x for x in a.assumptions)
    expert = 3 * 32 * 128
    assert models.total_params(a) - models.active_params(a) == 3 * 2 * expert


def test_a_field_the_family_lacks_is_refused_or_estimated():
    cfg = dict(models.shipped_config("granite-3.3-2b-instruct"), num_local_experts=8, num_experts_per_tok=2)
    with pytest.raises(ValueError, match="num_local_experts"):
        models.load(cfg)
    a = models.load(cfg, approximate=True)
    assert not a.exact and any("num_local_experts" in x for x in a.assumptions)


@pytest.mark.parametrize(
    "cfg,match",
    [
        ({"model_type": "mamba_like", "hidden_size": 8}, "num_hidden_layers"),
        (dict(UNKNOWN, num_local_experts=4), "num_experts_per_tok"),
    ],
)
def test_approximate_still_needs_its_fields(cfg, match):
    with pytest.raises(ValueError, match=match):
        models.load(cfg, approximate=True)


@pytest.mark.parametrize(
    "change,match",
    [
        ({"hidden_size": -1}, "hidden_size"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"hidden_size": "2048"}, "hidden_size"),
        ({"hidden_size": 2048.5}, "hidden_size"),
        ({"hidden_size": True}, "hidden_size"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
        ({"head_dim": 0}, "head_dim"),
        ({"layer_types": ["full_attention"] * 3}, "layer_types"),
        ({"layer_types": ["sliding_attention"] * 40}, "sliding_window"),
    ],
)
def test_bad_fields_are_refused_even_when_approximating(change, match):
    cfg = dict(models.shipped_config("granite-3.3-2b-instruct"), **change)
    for approximate in (False, True):
        with pytest.raises(ValueError, match=match):
            models.load(cfg, approximate=approximate)


@pytest.mark.parametrize(
    "name,change,match",
    [
        ("gpt-oss-20b", {"num_experts_per_tok": 40}, "num_experts_per_tok"),
        ("gpt-oss-20b", {"layer_types": ["chunked_attention"] * 24}, "chunked_attention"),
        ("gemma-2b", {"attention_bias": True}, "attention_bias"),
        ("DeepSeek-V2", {"attention_bias": True}, "attention_bias"),
        ("DeepSeek-V2", {"kv_lora_rank": None}, "kv_lora_rank"),
        ("gpt2", {"n_embd": 770}, "n_head"),
        ("Qwen2.5-7B-Instruct", {"hidden_size": None}, "hidden_size"),
    ],
)
def test_family_specific_refusals(name, change, match):
    with pytest.raises(ValueError, match=match):
        models.load(dict(models.shipped_config(name), **change))


def test_wrapper_text_config_must_say_what_it_wraps():
    cfg = {"model_type": "some_vlm", "text_config": {"hidden_size": 8}}
    with pytest.raises(ValueError, match="some_vlm"):
        models.load(cfg)


@pytest.mark.parametrize("bad", [None, 3, ["x"]])
def test_architecture_needs_a_dict_or_a_path(bad):
    with pytest.raises(ValueError, match="a path to config.json, a dict"):
        models.load(bad)
    with pytest.raises(ValueError, match="source must be a dict or a path"):
        A._from_config(bad)


def test_approximate_must_be_a_bool():
    with pytest.raises(ValueError, match="approximate"):
        models.load(UNKNOWN, approximate="yes")


def test_load_config_from_paths(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(models.shipped_config("gpt2")))
    assert models.total_params(models.load(tmp_path)) == 124_439_808
    assert models.load(str(tmp_path / "config.json")).name == models.load(tmp_path).name == tmp_path.name
    with pytest.raises(ValueError, match="does not exist"):
        A._read_config(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        A._read_config(tmp_path / "bad.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        A._read_config(tmp_path / "list.json")
    with pytest.raises(ValueError, match="name must be one of"):
        models.shipped_config("gpt-5")


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"context_tokens": -1}, "context_tokens"),
        ({"context_tokens": float("nan")}, "context_tokens"),
        ({"context_tokens": "8k"}, "context_tokens"),
        ({"context_tokens": 8, "bytes_per_element": 0}, "bytes_per_element"),
    ],
)
def test_kv_inputs_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        memory.kv_bytes_per_request(arch("gemma-2b"), **kwargs)


@pytest.mark.parametrize(
    "fn",
    [
        models.total_params,
        models.active_params,
        models.params_by_group,
        models.decode_read_params,
        models.block_linear_params_per_token,
        models.lm_head_params,
        memory.kv_bytes_per_token,
    ],
)
@pytest.mark.parametrize("bad", [None, 42, {"model_type": "llama"}])
def test_functions_need_a_model(fn, bad):
    # the argument (m) for a non-config, the missing field for a dict that is not a whole config
    with pytest.raises(ValueError, match="^m must be a ModelConfig|^config field 'hidden_size'"):
        fn(bad)


# --- a law: any Llama-shaped config has a closed form, and models.py agrees -------------


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    layers=st.integers(1, 6),
    kv=st.integers(1, 4),
    group=st.integers(1, 4),
    head_dim=st.integers(1, 16),
    hidden=st.integers(1, 64),
    ffn=st.integers(1, 96),
    vocab=st.integers(1, 500),
    tied=st.booleans(),
    family=st.sampled_from(["llama", "granite", "mistral"]),
)
def test_llama_shaped_closed_form(layers, kv, group, head_dim, hidden, ffn, vocab, tied, family):
    heads = kv * group
    cfg = {
        "model_type": family,
        "hidden_size": hidden,
        "intermediate_size": ffn,
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "num_hidden_layers": layers,
        "vocab_size": vocab,
        "tie_word_embeddings": tied,
    }
    q, k = heads * head_dim, kv * head_dim
    expected = layers * (2 * hidden * q + 2 * hidden * k + 3 * hidden * ffn + 2 * hidden) + hidden
    expected += vocab * hidden * (1 if tied else 2)
    assert models.total_params(models.load(cfg)) == expected


def test_an_estimate_says_how_it_read_a_window():
    cfg = dict(UNKNOWN, sliding_window=16)
    m = models.load(cfg, approximate=True)  # as Mistral: a window without a pattern windows every layer
    assert m.sliding_window_layers == (0, 1) and any(
        "every layer is taken to slide" in a for a in m.assumptions
    )
    m = models.load(dict(cfg, use_sliding_window=False), approximate=True)
    assert m.sliding_window is None
    m = models.load(dict(cfg, cache_implementation="hybrid"), approximate=True)  # Gemma 2's alternation
    assert m.sliding_window_layers == (0,) and any("alternate" in a for a in m.assumptions)
    m = models.load(dict(cfg, layer_types=["sliding_attention", "full_attention"]), approximate=True)
    assert m.sliding_window_layers == (0,) and m.sliding_window == 16


def test_the_readme_names_every_exact_family_and_their_number():
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    assert f"for the {len(A.EXACT_FAMILIES)} `model_type` families" in readme
    assert [f for f in A.EXACT_FAMILIES if f"`{f}`" not in readme] == []
