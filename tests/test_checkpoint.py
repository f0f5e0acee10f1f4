"""aiinfra.catalog.checkpoint against safetensors folders written here: headers only, data as sparse zeros."""

import json
import struct
from math import prod

import pytest

from aiinfra.catalog import checkpoint as C
from aiinfra.catalog import models

TINY_QWEN3 = {  # a small qwen3-shaped config: q/k norms, GQA, untied head
    "model_type": "qwen3",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_hidden_layers": 3,
    "vocab_size": 50,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def write_safetensors(path, tensors, header_pad=True):
    """A valid safetensors file: the header of ``{name: (dtype, shape)}`` and zeroed data (sparse)."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        nbytes = prod(shape) * C.DTYPE_BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    if header_pad:
        raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        fh.truncate(8 + len(raw) + offset)


def model_folder(tmp_path, config, tensors=None, name="model"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    if tensors is None:
        tensors = predicted(config)
    write_safetensors(folder / "model.safetensors", tensors)
    return folder


def predicted(config):
    """The tensors the config predicts, in its own dtype (F32 when it names none)."""
    arch = models.load(config)
    return {e.name: (e.dtype or "F32", e.shape) for e in C._expected_storage(arch, config).values()}


# --- exact match and its differences ----------------------------------------------------


def test_exact_match(tmp_path):
    report = C.compare(model_folder(tmp_path, TINY_QWEN3))
    assert report.exact and report.differences == ()
    assert report.stored_params == report.predicted_params == models.total_params(models.load(TINY_QWEN3))
    assert report.predicted_bytes == report.stored_bytes == {"BF16": 2 * report.predicted_params}
    assert report.summary().startswith("model: exact match")


def test_a_missing_tensor_group_is_named(tmp_path):
    tensors = {k: v for k, v in predicted(TINY_QWEN3).items() if "_norm" not in k.rsplit(".", 2)[-2]}
    report = C.compare(model_folder(tmp_path, TINY_QWEN3, tensors))
    assert not report.exact
    (diff,) = report.differences
    assert diff.group == "qk_norm" and len(diff.missing) == 2 * 3 and diff.stored_params == 0
    assert diff.predicted_params == 2 * 3 * 16
    assert "qk_norm: predicted 96 parameters, stored 0; 6 missing" in report.summary()


def test_a_dtype_mismatch_is_named(tmp_path):
    tensors = {
        k: ("F32" if "layernorm" in k or k.endswith("norm.weight") else dt, s)
        for k, (dt, s) in predicted(TINY_QWEN3).items()
    }
    report = C.compare(model_folder(tmp_path, TINY_QWEN3, tensors))
    assert not report.exact
    groups = {d.group: d for d in report.differences}
    assert set(groups) == {"norm", "qk_norm"}
    assert all(want == "BF16" and got == "F32" for _, want, got in groups["norm"].dtype_mismatches)
    assert report.stored_bytes["F32"] == 4 * (
        models.params_by_group(models.load(TINY_QWEN3))["norm"]
        + models.params_by_group(models.load(TINY_QWEN3))["qk_norm"]
    )
    assert "F32 stored, BF16 predicted" in report.summary()


def test_a_dtype_override_turns_the_mismatch_into_a_match(tmp_path):
    tensors = {k: ("F32", shape) for k, (_, shape) in predicted(TINY_QWEN3).items()}
    folder = model_folder(tmp_path, TINY_QWEN3, tensors)  # config says bfloat16, the file holds F32
    assert not C.compare(folder).exact
    assert C.compare(folder, dtype="float32").exact
    with pytest.raises(ValueError, match="dtype"):
        C.compare(folder, dtype="fp7")


def test_a_transposed_conv1d_is_a_shape_mismatch(tmp_path):
    cfg = {
        "model_type": "gpt2",
        "n_embd": 16,
        "n_layer": 2,
        "n_head": 2,
        "n_positions": 32,
        "vocab_size": 40,
        "torch_dtype": "float32",
    }
    tensors = predicted(cfg)
    tensors["transformer.h.1.attn.c_attn.weight"] = ("F32", (48, 16))  # nn.Linear layout instead of Conv1D
    report = C.compare(model_folder(tmp_path, cfg, tensors))
    (diff,) = report.differences
    assert diff.group == "attention" and diff.shape_mismatches[0][1:] == ((16, 48), (48, 16))
    assert diff.stored_params == diff.predicted_params  # same count, wrong layout: still not a match
    assert not report.exact


def test_unexpected_tensors_and_buffers(tmp_path):
    cfg = {
        "model_type": "gpt2",
        "n_embd": 16,
        "n_layer": 2,
        "n_head": 2,
        "n_positions": 32,
        "vocab_size": 40,
        "torch_dtype": "float32",
    }
    # the released gpt2 file has no "transformer." prefix and stores a causal mask per layer
    tensors = {k.removeprefix("transformer."): v for k, v in predicted(cfg).items()}
    tensors.update({f"h.{i}.attn.bias": ("F32", (1, 1, 32, 32)) for i in range(2)})
    report = C.compare(model_folder(tmp_path, cfg, tensors))
    assert report.exact
    assert report.extras == {"buffer (attention mask or RoPE table)": (2, 2 * 32 * 32 * 4)}
    tensors["h.0.adapter.weight"] = ("F32", (4, 4))
    (tmp_path / "model" / "model.safetensors").unlink()
    write_safetensors(tmp_path / "model" / "model.safetensors", tensors)
    report = C.compare(tmp_path / "model")
    assert not report.exact and report.differences[0].unexpected == ("h.0.adapter.weight",)


def test_gpt2_at_full_size_reproduces_the_published_element_count(tmp_path):
    """safetensors docs, "Metadata Parsing": gpt2's model.safetensors holds {'F32': 137,022,720} elements."""
    cfg = models.shipped_config("gpt2")
    tensors = {k.removeprefix("transformer."): ("F32", s) for k, (_, s) in predicted(cfg).items()}
    tensors.update({f"h.{i}.attn.bias": ("F32", (1, 1, 1024, 1024)) for i in range(12)})
    report = C.compare(model_folder(tmp_path, cfg, tensors), dtype="F32")
    assert report.exact and report.stored_params == 124_439_808
    assert report.stored_bytes == {"F32": 4 * 137_022_720}


def test_multimodal_wrapper_reports_the_vision_tower_apart(tmp_path):
    text = {
        "model_type": "gemma3_text",
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 6,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "vocab_size": 64,
        "sliding_window": 8,
    }
    cfg = {"model_type": "gemma3", "text_config": text, "torch_dtype": "bfloat16"}
    tensors = {"language_model." + k: v for k, v in predicted(cfg).items()}
    tensors["vision_tower.vision_model.post_layernorm.weight"] = ("BF16", (8,))
    tensors["multi_modal_projector.mm_input_projection_weight"] = ("BF16", (8, 32))
    report = C.compare(model_folder(tmp_path, cfg, tensors))
    assert report.exact
    assert report.extras == {"vision tower / projector (not counted)": (2, 2 * (8 + 8 * 32))}
    assert "language model" in report.summary()


def test_fp8_blocks_and_mtp_layers(tmp_path):
    cfg = {
        "model_type": "deepseek_v3",
        "hidden_size": 256,
        "intermediate_size": 320,
        "moe_intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "vocab_size": 100,
        "q_lora_rank": 96,
        "kv_lora_rank": 64,
        "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 16,
        "v_head_dim": 32,
        "n_routed_experts": 4,
        "num_experts_per_tok": 2,
        "n_shared_experts": 1,
        "first_k_dense_replace": 1,
        "topk_method": "noaux_tc",
        "num_nextn_predict_layers": 1,
        "torch_dtype": "bfloat16",
        "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
    }
    tensors = predicted(cfg)
    # a 320 x 256 dense MLP matrix keeps one F32 scale per 128 x 128 block: ceil(320/128) x 2
    assert tensors["model.layers.0.mlp.gate_proj.weight"] == ("F8_E4M3", (320, 256))
    assert tensors["model.layers.0.mlp.gate_proj.weight_scale_inv"] == ("F32", (3, 2))
    assert tensors["model.layers.1.mlp.gate.weight"] == ("BF16", (4, 256))  # the router stays BF16
    # modeling_deepseek creates the score-correction bias in float32 whatever the torch_dtype
    assert tensors["model.layers.1.mlp.gate.e_score_correction_bias"] == ("F32", (4,))
    tensors["model.layers.2.eh_proj.weight"] = ("BF16", (256, 512))  # the MTP layer after the last one
    report = C.compare(model_folder(tmp_path, cfg, tensors))
    assert report.exact
    assert report.extras == {"multi-token-prediction layer": (1, 2 * 256 * 512)}


# --- the index: sharded folders and folders without their weights ----------------------


def gpt_oss_20b_weight_map():
    """The tensor names of openai/gpt-oss-20b's model.safetensors.index.json (459 of them)."""
    per_layer = ["input_layernorm.weight", "post_attention_layernorm.weight", "self_attn.sinks"]
    per_layer += [f"self_attn.{p}_proj.{w}" for p in "qkvo" for w in ("weight", "bias")]
    per_layer += ["mlp.router.weight", "mlp.router.bias"]
    per_layer += [
        f"mlp.experts.{p}_{s}" for p in ("gate_up_proj", "down_proj") for s in ("blocks", "scales", "bias")
    ]
    names = [f"model.layers.{i}.{n}" for i in range(24) for n in per_layer]
    names += ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    return {n: "model-00000-of-00002.safetensors" for n in names}


def write_index(folder, weight_map, total_size):
    (folder / C.INDEX_FILE).write_text(
        json.dumps({"metadata": {"total_size": total_size}, "weight_map": weight_map})
    )


def test_gpt_oss_index_matches_its_published_total_size(tmp_path):
    """openai/gpt-oss-20b model.safetensors.index.json: metadata.total_size = 13,761,264,768 bytes (MXFP4
    experts: 4.25 bits a weight; everything else BF16)."""
    folder = tmp_path / "gpt-oss-20b"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(models.shipped_config("gpt-oss-20b")))
    weight_map = gpt_oss_20b_weight_map()
    assert len(weight_map) == 459
    write_index(folder, weight_map, 13_761_264_768)
    # the released config names no torch_dtype: without one the BF16 bytes cannot be predicted
    report = C.compare(folder)
    assert not report.exact and any("no torch_dtype" in n for n in report.notes)
    report = C.compare(folder, dtype="bfloat16")
    assert report.source == "index" and report.exact, report.summary()
    assert sum(report.predicted_bytes.values()) == 13_761_264_768
    expert_weights = 24 * 32 * (2880 * 5760 + 2880 * 2880)
    assert report.predicted_bytes["U8"] == expert_weights // 2 + expert_weights // 32
    write_index(folder, weight_map, 13_761_264_768 + 2)
    report = C.compare(folder, dtype="BF16")
    assert not report.exact and "(+2)" in report.summary()


def test_qwen25_index_total_size(tmp_path):
    """Qwen/Qwen2.5-7B-Instruct model.safetensors.index.json: total_size 15,231,233,024 bytes of BF16."""
    folder = tmp_path / "qwen"
    folder.mkdir()
    cfg = models.shipped_config("Qwen2.5-7B-Instruct")
    (folder / "config.json").write_text(json.dumps(cfg))
    names = C._expected_storage(models.load(cfg), cfg)
    write_index(folder, {e.name: "model-00001-of-00004.safetensors" for e in names.values()}, 15_231_233_024)
    assert C.compare(folder).exact
    weight_map = {
        e.name: "model-00001-of-00004.safetensors"
        for e in names.values()
        if not e.name.endswith("q_proj.bias")
    }
    write_index(folder, weight_map, 15_231_233_024 - 28 * 3584 * 2)
    report = C.compare(folder)
    (diff,) = report.differences
    assert diff.group == "attention_bias" and len(diff.missing) == 28 and diff.stored_params is None


def test_sharded_folder_reads_every_header(tmp_path):
    folder = tmp_path / "sharded"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY_QWEN3))
    tensors = predicted(TINY_QWEN3)
    names = sorted(tensors)
    half = {n: tensors[n] for n in names[: len(names) // 2]}
    rest = {n: tensors[n] for n in names[len(names) // 2 :]}
    write_safetensors(folder / "model-00001-of-00002.safetensors", half)
    write_safetensors(folder / "model-00002-of-00002.safetensors", rest)
    weight_map = {n: "model-00001-of-00002.safetensors" for n in half}
    weight_map.update({n: "model-00002-of-00002.safetensors" for n in rest})
    write_index(folder, weight_map, 2 * models.total_params(models.load(TINY_QWEN3)))
    report = C.compare(folder)
    assert report.exact and report.source == "safetensors headers"
    (folder / "model-00002-of-00002.safetensors").unlink()  # a half-finished download
    report = C.compare(folder)
    assert (
        report.exact
        and report.source == "index"
        and any("1 of the 2 weight files" in n for n in report.notes)
    )


def test_an_index_that_disagrees_with_the_headers_is_refused(tmp_path):
    folder = model_folder(tmp_path, TINY_QWEN3)
    write_index(folder, {"model.embed_tokens.weight": "model.safetensors"}, 10)
    with pytest.raises(ValueError, match="inconsistent"):
        C.compare(folder)


def test_a_tensor_stored_twice_is_refused(tmp_path):
    folder = tmp_path / "twice"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY_QWEN3))
    write_safetensors(folder / "model-1.safetensors", {"model.norm.weight": ("BF16", (64,))})
    write_safetensors(folder / "model-2.safetensors", {"model.norm.weight": ("BF16", (64,))})
    with pytest.raises(ValueError, match="stored twice"):
        C.compare(folder)


@pytest.mark.parametrize(
    "index",
    [
        {"weight_map": {"a": "../outside.safetensors"}},
        {"weight_map": ["a"]},
        {"metadata": {"total_size": -5}, "weight_map": {"a": "m.safetensors"}},
    ],
)
def test_a_bad_index_is_refused(tmp_path, index):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(TINY_QWEN3))
    (folder / C.INDEX_FILE).write_text(json.dumps(index))
    with pytest.raises(ValueError, match="weight_map|total_size"):
        C.compare(folder)


def test_folders_without_weights_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not a directory"):
        C.compare(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text(json.dumps(TINY_QWEN3))
    with pytest.raises(ValueError, match="no model.safetensors.index.json"):
        C.compare(tmp_path / "empty")
    with pytest.raises(ValueError, match="folder"):
        C.compare(42)


# --- headers that must not be trusted ---------------------------------------------------


def raw_file(path, header_len, body=b""):
    path.write_bytes(struct.pack("<Q", header_len) + body)
    return path


def test_an_oversized_header_is_refused_before_reading(tmp_path):
    path = raw_file(tmp_path / "huge.safetensors", 2**40, b"{}")
    with pytest.raises(ValueError, match="exceeds the bound"):
        C.read_safetensors_header(path)
    small = tmp_path / "ok.safetensors"
    write_safetensors(small, {"w": ("F16", (300, 300))})
    with pytest.raises(ValueError, match="exceeds the bound of 16"):
        C.read_safetensors_header(small, max_header_bytes=16)


@pytest.mark.parametrize(
    "content,match",
    [
        (b"\x01\x02", "too short"),
        (struct.pack("<Q", 100) + b"{}", "longer than the file"),
        (struct.pack("<Q", 8) + b"{not js}", "not valid JSON"),
        (struct.pack("<Q", 2) + b"[]", "JSON object"),
        (struct.pack("<Q", 2) + b"\xff\xfe", "not valid JSON"),
    ],
)
def test_malformed_headers_are_refused(tmp_path, content, match):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        C.read_safetensors_header(path)


@pytest.mark.parametrize(
    "entry,match",
    [
        ({"dtype": "F12", "shape": [2], "data_offsets": [0, 4]}, "dtype"),
        ({"dtype": "F16", "shape": [2, -1], "data_offsets": [0, 4]}, "shape"),
        ({"dtype": "F16", "shape": "2", "data_offsets": [0, 4]}, "shape"),
        ({"dtype": "F16", "shape": [2], "data_offsets": [0, 5]}, "data_offsets"),
        ({"dtype": "F16", "shape": [2], "data_offsets": [0]}, "data_offsets"),
        ({"dtype": "F16", "shape": [4], "data_offsets": [0, 8]}, "data_offsets"),  # past the 4 data bytes
        ("F16", "must be an object"),
    ],
)
def test_bad_entries_are_refused(tmp_path, entry, match):
    raw = json.dumps({"w": entry}).encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(4))
    with pytest.raises(ValueError, match=match):
        C.read_safetensors_header(path)


@pytest.mark.parametrize("bound", [0, 1, 2.5, True, "100"])
def test_the_bound_must_be_a_whole_number(tmp_path, bound):
    path = tmp_path / "ok.safetensors"
    write_safetensors(path, {"w": ("F16", (2,))})
    with pytest.raises(ValueError, match="max_header_bytes"):
        C.read_safetensors_header(path, max_header_bytes=bound)


def test_the_header_reader_never_needs_the_data(tmp_path):
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"a": ("BF16", (3, 5)), "b": ("F8_E4M3", (7,))}, header_pad=False)
    got = C.read_safetensors_header(path)
    assert {k: (t.dtype, t.shape, t.nbytes) for k, t in got.items()} == {
        "a": ("BF16", (3, 5), 30),
        "b": ("F8_E4M3", (7,), 7),
    }


# --- a published index, shipped with the package ----------------------------------------


def test_olmo2_13b_published_index_is_an_exact_match():
    """allenai/OLMo-2-1124-13B model.safetensors.index.json: 443 tensors, total_size 54,864,793,600 bytes of F32."""
    folder = C.published_index_folder("OLMo-2-1124-13B")
    index = json.loads((folder / C.INDEX_FILE).read_text())
    assert len(index["weight_map"]) == 40 * 11 + 3 and index["metadata"]["total_size"] == 54_864_793_600
    report = C.compare(folder, config="OLMo-2-1124-13B")
    assert report.exact and report.source == "index" and report.name == "OLMo-2-1124-13B"
    assert report.predicted_bytes == {"F32": 54_864_793_600} == {"F32": 4 * report.predicted_params}
    assert report.summary().startswith("OLMo-2-1124-13B: exact match (13,716,198,400 parameters")
    # predicting BF16 storage halves the bytes: the index's total_size says otherwise
    report = C.compare(folder, config="OLMo-2-1124-13B", dtype="bfloat16")
    assert not report.exact and "(+27,432,396,800)" in report.summary()


def test_a_config_with_one_layer_more_misses_eleven_tensors():
    # the 13B index checked against a config with one layer more: 11 tensors missing, by group
    cfg = dict(models.shipped_config("OLMo-2-1124-13B"), num_hidden_layers=41)
    report = C.compare(C.published_index_folder("OLMo-2-1124-13B"), config=cfg)
    assert not report.exact
    missing = {d.group: len(d.missing) for d in report.differences}
    assert missing == {"attention": 4, "qk_norm": 2, "mlp": 3, "norm": 2}


def test_config_by_name_path_or_dict_and_a_cache_snapshot_label(tmp_path):
    snapshot = tmp_path / "models--Qwen--tiny" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    write_safetensors(snapshot / "model.safetensors", predicted(TINY_QWEN3))
    (tmp_path / "elsewhere.json").write_text(json.dumps(TINY_QWEN3))
    by_path = C.compare(snapshot, config=str(tmp_path / "elsewhere.json"))
    by_dict = C.compare(snapshot, config=TINY_QWEN3)
    assert by_path.exact and by_dict.exact and by_path.name == by_dict.name == "Qwen/tiny"
    with pytest.raises(ValueError, match="shipped model name"):
        C.compare(snapshot, config="no-such-model")
    with pytest.raises(ValueError, match="name must be one of"):
        C.published_index_folder("gpt2")
