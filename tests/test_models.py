import dataclasses
import json
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aiinfra.catalog import models
from aiinfra.catalog.architectures import _from_config

# Exact totals (and active counts for MoE) of every shipped config.
# Published figures they must round to: R1-Distill-Llama-70B 70.6B, Qwen3-8B 8.2B,
# Mixtral 8x7B 46.7B total / 12.9B active, DeepSeek-V3 671B total / 37B active,
# Llama-3.1-8B 8.03B, Llama-3.2-3B 3.21B, Mistral-7B 7.24B, Qwen3-30B-A3B 30.5B / 3.3B.
# Active counts leave out the input embedding table a token only looks up (models.active_params): an
# untied model's active count is its total less vocab x hidden; a tied table is the LM head and stays.
EXACT = {
    "DeepSeek-R1-Distill-Llama-70B": (70_553_706_496, 70_553_706_496 - 128_256 * 8192),
    "Llama-3.1-70B": (70_553_706_496, 70_553_706_496 - 128_256 * 8192),
    "Qwen3-8B": (8_190_735_360, 8_190_735_360 - 151_936 * 4096),
    "Llama-3.1-8B": (8_030_261_248, 8_030_261_248 - 128_256 * 4096),
    "Llama-3.2-3B": (3_212_749_824, 3_212_749_824),  # tied
    "Mistral-7B-v0.1": (7_241_732_096, 7_241_732_096 - 32_000 * 4096),
    "Mixtral-8x7B-v0.1": (46_702_792_704, 12_879_925_248 - 32_000 * 4096),
    "DeepSeek-V3": (671_026_419_200, 37_552_297_472 - 129_280 * 7168),
    "Qwen3-30B-A3B": (30_532_122_624, 3_353_032_704 - 151_936 * 2048),
}

# (total, active, whether the vendor's active figure counts the embedding table): Mistral and Qwen
# count it, DeepSeek does not (its README: 36.6B activated, of which 0.9B is the output head).
PUBLISHED_BILLIONS = {
    "Mixtral-8x7B-v0.1": (46.7, 12.9, True),
    "DeepSeek-V3": (671, 37, False),
    "Qwen3-30B-A3B": (30.5, 3.3, True),
}


def test_every_shipped_config_is_pinned():
    # the other shipped configs (one per newer family) are pinned in tests/test_architectures.py
    assert set(EXACT) <= set(models.shipped_names())


@pytest.mark.parametrize("name", sorted(EXACT))
def test_exact_counts(name):
    m = models.load(name)
    total, active = EXACT[name]
    assert models.total_params(m) == total
    assert models.active_params(m) == active
    assert isinstance(models.total_params(m), int)


@pytest.mark.parametrize("name", sorted(PUBLISHED_BILLIONS))
def test_moe_counts_round_to_published_figures(name):
    total_b, active_b, with_table = PUBLISHED_BILLIONS[name]
    m = models.load(name)
    digits = 0 if total_b == int(total_b) else 1
    assert round(models.total_params(m) / 1e9, digits) == total_b
    # vendors truncate active counts loosely (DeepSeek: 36.6B -> "37B", Qwen: 3.35B -> "3.3B")
    active = models.active_params(m) + (models.embedding_params(m) if with_table else 0)
    assert active / 1e9 == pytest.approx(active_b, rel=0.02)


@pytest.mark.parametrize("name", sorted(EXACT))
def test_breakdown_adds_up(name):
    m = models.load(name)
    b = models.param_breakdown(m)
    g = models.params_by_group(m)
    biases = sum(g.get(k, 0) for k in ("attention_bias", "mlp_bias", "router_bias"))
    assert b["total"] == b["block_linear"] + b["embedding"] + b["stored_lm_head"] + b["norms"] + biases
    table = g["embedding"] if "lm_head" in g else 0  # an untied input table is looked up, not multiplied
    assert b["active"] - b["block_linear_per_token"] == b["total"] - b["block_linear"] - table
    assert b["norms"] == g["norm"] + g.get("qk_norm", 0)
    assert sum(g.values()) == b["total"]
    assert all(isinstance(x, int) for x in b.values())
    if not m.is_moe:
        assert b["active"] == b["total"] - table
        assert b["block_linear_per_token"] == b["block_linear"]


def test_r1_distill_70b_pieces(r1_70b):
    m = r1_70b
    assert (
        m.n_layers,
        m.hidden_size,
        m.intermediate_size,
        m.n_heads,
        m.n_kv_heads,
        m.head_dim,
        m.vocab_size,
    ) == (80, 8192, 28672, 64, 8, 128, 128256)
    assert m.attention_kind == "gqa"
    assert models.embedding_params(m) == 1_050_673_152
    assert models.lm_head_params(m) == models._stored_lm_head_params(m) == 1_050_673_152
    assert models._norm_params(m) == 80 * 2 * 8192 + 8192
    assert models._block_linear_params(m) == 68_451_041_280
    assert models.attention_qk_width(m) == models.attention_v_width(m) == 8192


def test_qwen3_8b_qk_norm_and_decode_read(qwen3_8b):
    m = qwen3_8b
    assert not m.tie_word_embeddings and m.head_dim == 128
    assert models.params_by_group(m)["qk_norm"] == 36 * 2 * 128
    assert models._norm_params(m) == 36 * (2 * 4096 + 2 * 128) + 4096
    # one decode step reads every weight except the embedding table, plus the one row it looks up
    assert models.decode_read_params(m) == 8_190_735_360 - 151_936 * 4096 + 4096 == 7_568_409_600
    assert 2 * models.decode_read_params(m) == 15_136_819_200


def test_mixtral_experts(mixtral):
    m = mixtral
    assert m.attention_kind == "gqa" and m.is_moe
    assert (m.n_routed_experts, m.n_experts_per_token, m.n_shared_experts) == (8, 2, 0)
    assert m.moe_layers == tuple(range(32)) and m.dense_layers == ()
    expert = 3 * 4096 * 14336
    assert models.total_params(m) - models.active_params(m) == 32 * (8 - 2) * expert + 32000 * 4096
    assert models.decode_read_params(m) == 12_879_925_248 - 32000 * 4096 + 4096


def test_deepseek_v3_mla_and_moe(deepseek_v3):
    m = deepseek_v3
    assert m.attention_kind == "mla"
    assert m.dense_layers == (0, 1, 2) and len(m.moe_layers) == 58
    assert m.n_mtp_layers == 1  # recorded, not counted
    attention = {t.name.rsplit(".", 2)[-2]: t.numel for t in m.tensors if t.group == "attention"}
    assert attention == {
        "q_a_proj": 7168 * 1536,
        "q_b_proj": 1536 * 128 * 192,
        "kv_a_proj_with_mqa": 7168 * (512 + 64),
        "kv_b_proj": 512 * 128 * (128 + 128),
        "o_proj": 128 * 128 * 7168,
    }
    assert models.attention_qk_width(m) == 128 * 192
    assert models.attention_v_width(m) == 128 * 128
    # the routers' score-correction bias (noaux_tc) is one float per expert per MoE layer
    assert models.params_by_group(m)["router_bias"] == 256 * 58
    # DeepSeek's README: 36.6B activated, 0.9B of it the output head (the embedding table is not read)
    assert round(models.active_params(m) / 1e9, 1) == 36.6
    assert round(models.decode_read_params(m) / 1e9, 1) == 36.6
    assert models.decode_read_params(m) == 36_625_625_600


def test_tied_head_is_a_matmul_but_not_stored():
    m = models.load("Llama-3.2-3B")
    assert m.tie_word_embeddings
    assert models._stored_lm_head_params(m) == 0
    assert models.lm_head_params(m) == 128256 * 3072
    assert models.decode_read_params(m) == models.active_params(m) + 3072


QWEN3_4B = {  # Qwen/Qwen3-4B config.json (tied, head_dim 128 != 2560 / 32)
    "architectures": ["Qwen3ForCausalLM"],
    "attention_bias": False,
    "head_dim": 128,
    "hidden_size": 2560,
    "intermediate_size": 9728,
    "max_window_layers": 36,
    "model_type": "qwen3",
    "num_attention_heads": 32,
    "num_hidden_layers": 36,
    "num_key_value_heads": 8,
    "sliding_window": None,
    "tie_word_embeddings": True,
    "use_sliding_window": False,
    "vocab_size": 151936,
}
QWEN25_7B = {  # Qwen/Qwen2.5-7B config.json: Qwen2 always has q/k/v biases
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "max_window_layers": 28,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "use_sliding_window": False,
    "vocab_size": 152064,
}


def test_explicit_head_dim_wins_over_hidden_over_heads():
    m = models.load(QWEN3_4B)
    assert m.head_dim == 128 != 2560 // 32
    assert models.total_params(m) == 4_022_468_096
    assert models.attention_qk_width(m) == 32 * 128


def test_qwen2_biases_are_counted():
    m = models.load(QWEN25_7B)
    names = {t.name for t in m.tensors if t.group == "attention_bias"}
    assert "model.layers.{layer}.self_attn.q_proj.bias" in names and not any("o_proj" in n for n in names)
    assert models.params_by_group(m)["attention_bias"] == 28 * (3584 + 2 * 512)
    assert models.total_params(m) == 7_615_616_512
    assert m.sliding_window is None  # use_sliding_window is false


def test_qwen2_sliding_window_layers_follow_max_window_layers():
    cfg = dict(QWEN25_7B, use_sliding_window=True, sliding_window=4096, max_window_layers=20)
    m = models.load(cfg)
    assert m.sliding_window == 4096 and m.sliding_window_layers == tuple(range(20, 28))
    cfg = dict(QWEN25_7B, layer_types=["sliding_attention", "full_attention"] * 14, sliding_window=1024)
    assert models.load(cfg).sliding_window_layers == tuple(range(0, 28, 2))


def test_mistral_slides_on_every_layer():
    m = models.load("mistral-7b")
    assert m.sliding_window == 4096 and m.sliding_window_layers == tuple(range(32))


def test_llama_biases():
    assert "attention_bias" not in models.params_by_group("Llama-3.1-8B")
    cfg = {
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "num_hidden_layers": 2,
        "vocab_size": 100,
        "attention_bias": True,
        "mlp_bias": True,
    }
    m = models.load(cfg)
    plain = models.load(dict(cfg, attention_bias=False, mlp_bias=False))
    assert models.total_params(m) - models.total_params(plain) == 2 * ((64 + 2 * 32) + 64 + (2 * 128 + 64))


def test_mla_without_query_compression():
    cfg = json.loads((resources.files("aiinfra.catalog") / "configs" / "DeepSeek-V3.json").read_text())
    cfg["q_lora_rank"] = None
    m = models.load(cfg)
    names = {t.name.rsplit(".", 2)[-2] for t in m.tensors if t.group == "attention"}
    assert "q_proj" in names and "q_a_proj" not in names
    full = models.load("DeepSeek-V3")
    per_layer_change = 7168 * 128 * 192 - (7168 * 1536 + 1536 * 128 * 192) - 1536  # minus q_a_layernorm
    assert models.total_params(m) - models.total_params(full) == 61 * per_layer_change


def test_qwen3_moe_sparse_step_and_dense_layers():
    base = json.loads((resources.files("aiinfra.catalog") / "configs" / "Qwen3-30B-A3B.json").read_text())
    m = models.load(dict(base, decoder_sparse_step=2, mlp_only_layers=[1]))
    assert m.moe_layers == tuple(i for i in range(48) if (i + 1) % 2 == 0 and i != 1)
    assert 1 in m.dense_layers and 0 in m.dense_layers


# --- loading ---------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["Qwen3-8B", "qwen3-8b", "QWEN3 8B", "Qwen/Qwen3-8B", "qwen3_8b"])
def test_load_name_spellings(spelling, qwen3_8b):
    assert models.load(spelling) == qwen3_8b


def test_load_path_and_dir(tmp_path, qwen3_8b):
    cfg = json.loads((resources.files("aiinfra.catalog") / "configs" / "Qwen3-8B.json").read_text())
    d = tmp_path / "my-qwen"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(cfg))
    by_file = models.load(str(d / "config.json"))
    by_dir = models.load(d)
    assert by_file.name == by_dir.name == "my-qwen"
    assert models.total_params(by_file) == models.total_params(qwen3_8b)
    assert models.load(by_file) is by_file


def test_a_local_directory_wins_over_a_shipped_name(tmp_path, monkeypatch):
    d = tmp_path / "Qwen3-8B"
    d.mkdir()
    cfg = json.loads((resources.files("aiinfra.catalog") / "configs" / "Qwen3-8B.json").read_text())
    (d / "config.json").write_text(json.dumps(dict(cfg, num_hidden_layers=2)))
    monkeypatch.chdir(tmp_path)
    assert models.load("Qwen3-8B").n_layers == 2
    assert models.load("qwen3-8b").n_layers == 36  # no such directory: the shipped config


def test_functions_accept_names(qwen3_8b):
    assert models.total_params("qwen3-8b") == models.total_params(qwen3_8b)


def test_shipped_configs_record_their_source():
    for name in models.shipped_names():
        assert models.load(name).source.startswith("https://huggingface.co/")


# --- refusals ---------------------------------------------------------------------------


def test_unknown_model_type_names_it_and_the_supported_list():
    with pytest.raises(ValueError, match=r"'falcon'.*exact families are.*llama.*approximate=True"):
        models.load({"model_type": "falcon", "hidden_size": 8})
    with pytest.raises(ValueError, match="None"):
        models.load({"hidden_size": 8})


def test_approximate_is_an_explicit_labelled_choice():
    # a renamed model_type whose architectures names a family's class is that family, exactly
    renamed = models.load(dict(QWEN3_4B, model_type="falcon"))
    assert renamed.exact and renamed.model_type == "qwen3"
    cfg = {k: v for k, v in QWEN3_4B.items() if k != "architectures"} | {"model_type": "falcon"}
    with pytest.raises(ValueError, match="falcon"):
        models.load(cfg)
    m = models.load(cfg, approximate=True)
    assert not m.exact and m.label == "approximate" and m.assumptions
    with pytest.raises(ValueError, match="approximate"):
        models.load(cfg, approximate=1)


@pytest.mark.parametrize(
    "extra",
    [
        {"num_local_experts": 8},
        {"kv_lora_rank": 512},
        {"n_shared_experts": 2},
        {"index_head_dim": 128},
        {"mamba_num_heads": 64},
        {"linear_num_value_heads": 32},
        {"text_config": {}},
    ],
)
def test_fields_that_change_the_count_are_refused(extra):
    cfg = dict(QWEN3_4B, **extra)
    with pytest.raises(ValueError, match="qwen3"):
        models.load(cfg)


def test_deepseek_attention_bias_refused():
    cfg = json.loads((resources.files("aiinfra.catalog") / "configs" / "DeepSeek-V3.json").read_text())
    with pytest.raises(ValueError, match="deepseek_v3"):
        models.load(dict(cfg, attention_bias=True))


@pytest.mark.parametrize("bad", [None, 3, 2.5, ["Qwen3-8B"], "no-such-model", "/no/such/config.json"])
def test_load_rejects_bad_input(bad):
    with pytest.raises(ValueError, match="^model "):
        models.load(bad)


@pytest.mark.parametrize("bad", [[1, 2], "qwen3", None])
def test_from_config_needs_a_mapping_or_a_path(bad):
    with pytest.raises(ValueError, match="source|config path"):
        _from_config(bad)


def test_load_rejects_broken_json(tmp_path):
    p = tmp_path / "config.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="JSON"):
        models.load(str(p))


@pytest.mark.parametrize(
    "key,value",
    [
        ("hidden_size", -1),
        ("hidden_size", 0),
        ("hidden_size", 64.5),
        ("hidden_size", True),
        ("hidden_size", "64"),
        ("num_hidden_layers", float("nan")),
        ("vocab_size", float("inf")),
        ("num_key_value_heads", 3),
        ("tie_word_embeddings", "yes"),
        ("head_dim", 0),
    ],
)
def test_bad_config_values(key, value):
    with pytest.raises(
        ValueError, match=key.replace("num_key_value_heads", "n_kv_heads|num_key_value_heads")
    ):
        models.load(dict(QWEN3_4B, **{key: value}))


@pytest.mark.parametrize(
    "change, name",
    [
        ({"attention": ()}, "attention"),
        ({"n_heads": 7}, "n_heads"),
        ({"n_routed_experts": 4}, "n_routed_experts=4"),
        ({"n_experts_per_token": 9}, "n_experts_per_token"),
        ({"hidden_size": 0}, "hidden_size"),
        ({"name": ""}, "name"),
        ({"head_dim": 64}, "n_kv_heads x head_dim"),
        ({"n_kv_heads": 4}, "n_kv_heads x head_dim"),
        ({"vocab_size": 1.5}, "vocab_size"),
        ({"moe_layers": (40,)}, "moe_layers"),
        ({"kv_lora_rank": 8}, "the MLA latent"),  # the check names the cache width kv_lora_rank sets
    ],
)
def test_model_config_validates(change, name, mixtral, qwen3_8b):
    base = mixtral if "n_experts_per_token" in change or "moe_layers" in change else qwen3_8b
    with pytest.raises(ValueError, match=name):
        dataclasses.replace(base, **change)


@pytest.mark.parametrize(
    "fn",
    [
        models.total_params,
        models.active_params,
        models.embedding_params,
        models.lm_head_params,
        models._stored_lm_head_params,
        models._norm_params,
        models._block_linear_params,
        models.block_linear_params_per_token,
        models.attention_qk_width,
        models.attention_v_width,
        models.decode_read_params,
        models.param_breakdown,
        models.params_by_group,
        models._matrices,
        models._routed_params,
    ],
)
@pytest.mark.parametrize("bad", [None, 42, "not-a-model"])
def test_count_functions_reject_non_models(fn, bad):
    with pytest.raises(ValueError, match="^m must be a ModelConfig|^model 'not-a-model'"):
        fn(bad)


# --- a law: the dense count has a closed form -------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    layers=st.integers(1, 6),
    kv=st.integers(1, 4),
    group=st.integers(1, 4),
    head_dim=st.integers(1, 16),
    hidden=st.integers(1, 64),
    ffn=st.integers(1, 96),
    vocab=st.integers(1, 500),
    tied=st.booleans(),
)
def test_dense_llama_matches_closed_form(layers, kv, group, head_dim, hidden, ffn, vocab, tied):
    heads = kv * group
    m = models.load(
        {
            "model_type": "llama",
            "hidden_size": hidden,
            "intermediate_size": ffn,
            "num_attention_heads": heads,
            "num_key_value_heads": kv,
            "head_dim": head_dim,
            "num_hidden_layers": layers,
            "vocab_size": vocab,
            "tie_word_embeddings": tied,
        }
    )
    q, k = heads * head_dim, kv * head_dim
    per_layer = 2 * hidden * q + 2 * hidden * k + 3 * hidden * ffn + 2 * hidden
    expected = layers * per_layer + hidden + vocab * hidden * (1 if tied else 2)
    assert models.total_params(m) == expected
    assert models.decode_read_params(m) == expected - vocab * hidden * (0 if tied else 1) + hidden
