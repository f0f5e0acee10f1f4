"""The aiinfra calculator: tables, --json, a config.json that is not shipped, clean errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aiinfra import calibration, cli, compute, deployment, memory, predict
from aiinfra.catalog import hardware, models

# A small Llama-shaped model that is not shipped with the package.
TINY_CONFIG = {
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
    "tie_word_embeddings": False,
}


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _write_config(folder, config):
    path = folder / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def tiny_config(tmp_path):
    return _write_config(tmp_path / "tiny-llama", TINY_CONFIG)


def test_params_json_on_an_unshipped_config(capsys, tiny_config):
    code, out, err = run(capsys, "params", "--config", str(tiny_config), "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    # hand count: per layer q 256x256, k,v 256x64, o 256x256, mlp 3x256x688, 2 norms of 256
    per_layer = 256 * 256 * 2 + 256 * 64 * 2 + 3 * 256 * 688 + 2 * 256
    expected = 4 * per_layer + 2 * 1000 * 256 + 256
    assert data["total_params"] == expected
    assert (
        data["active_params"] == expected - 1000 * 256
    )  # the untied input table is looked up, not multiplied
    assert isinstance(data["total_params"], int) and isinstance(data["active_params"], int)


def test_config_folder_is_accepted(capsys, tiny_config):
    code, out, _ = run(capsys, "params", "--config", str(tiny_config.parent), "--json")
    assert code == 0 and json.loads(out)["n_layers"] == 4


def test_params_table_for_a_shipped_model(capsys):
    code, out, _ = run(capsys, "params", "--model", "Qwen3-8B")
    assert code == 0
    assert "8,190,735,360" in out and "total parameters" in out


def test_moe_active_params_in_json(capsys):
    code, out, _ = run(capsys, "params", "--model", "Mixtral-8x7B-v0.1", "--json")
    data = json.loads(out)
    m = models.load("Mixtral-8x7B-v0.1")
    assert data["total_params"] == models.total_params(m)
    assert data["active_params"] == models.active_params(m) < data["total_params"]


def test_memory_json_matches_library(capsys):
    code, out, _ = run(
        capsys,
        "memory",
        "--model",
        "Qwen3-8B",
        "--context",
        "2048",
        "--batch",
        "4",
        "--gpu",
        "h100",
        "--json",
    )
    assert code == 0
    d = json.loads(out)
    m = models.load("Qwen3-8B")
    assert d["weight_bytes"] == memory.weight_bytes(m, "bf16")
    assert d["kv_bytes_per_request"] == memory.kv_bytes_per_request(m, 2048)
    assert d["total_bytes"] == pytest.approx(d["weight_bytes"] + 4 * d["kv_bytes_per_request"])
    assert d["min_gpus_for_weights_and_kv"] == 1
    # the deployment's default reserve holds back 10 % of the 80 GB: floor((72e9 - W) / KV)
    assert d["memory_reserve"] == cli.DEFAULT_MEMORY_RESERVE == deployment.DEFAULT_MEMORY_RESERVE == 0.1
    assert d["max_batch_on_one_gpu"] == int((72e9 - d["weight_bytes"]) // d["kv_bytes_per_request"])
    code, out, _ = run(
        capsys,
        "memory",
        "--model",
        "Qwen3-8B",
        "--context",
        "2048",
        "--batch",
        "4",
        "--gpu",
        "h100",
        "--reserve",
        "0",
        "--json",
    )
    assert json.loads(out)["max_batch_on_one_gpu"] == int(
        (80e9 - d["weight_bytes"]) // d["kv_bytes_per_request"]
    )


def test_memory_table_with_precision_and_config(capsys, tiny_config):
    code, out, _ = run(
        capsys, "memory", "--config", str(tiny_config), "--precision", "int8", "--context", "100"
    )
    assert code == 0 and "weights (int8)" in out and "KV per request @ 100 tokens" in out


def test_decode_json_matches_library(capsys):
    code, out, _ = run(
        capsys,
        "decode",
        "--model",
        "Qwen3-8B",
        "--gpu",
        "pro6000",
        "--batch",
        "1",
        "--context",
        "2048",
        "--prompt",
        "2048",
        "--output-tokens",
        "256",
        "--json",
    )
    assert code == 0
    d = json.loads(out)
    m, g = models.load("Qwen3-8B"), hardware.gpu("pro6000")
    # weights read plus the KV of 2,048 tokens over 1.792 TB/s (the bound of chapter 1's measurement)
    read = models.decode_read_params(m) * 2 + 36 * 2 * 8 * 128 * 2 * 2048
    assert d["step_time_s"] == pytest.approx(read / g.memory_bandwidth_bytes_per_s, rel=1e-12)
    assert round(d["step_time_s"] * 1e3, 2) == 8.62
    assert d["prefill_flops"] == compute.prefill_flops(m, 2048)
    assert d["bound"] == "memory-bound"
    assert d["end_to_end_latency_s"] > d["ttft_s"] + 254 * d["step_time_s"]
    assert d["fits_in_memory"] is True


def test_decode_batch_and_efficiency_change_the_answer(capsys):
    _, out1, _ = run(capsys, "decode", "--model", "Llama-3.1-8B", "--json")
    _, out64, _ = run(
        capsys, "decode", "--model", "Llama-3.1-8B", "--batch", "64", "--eta-b", "0.7", "--json"
    )
    d1, d64 = json.loads(out1), json.loads(out64)
    assert d64["step_time_s"] > d1["step_time_s"]
    assert d64["tokens_per_s_aggregate"] > d1["tokens_per_s_aggregate"]


def test_decode_table(capsys, tiny_config):
    code, out, _ = run(capsys, "decode", "--config", str(tiny_config), "--gpu", "a100", "--batch", "8")
    assert code == 0 and "TTFT" in out and "tokens/s aggregate (batch 8)" in out


def test_roofline_plan_and_list(capsys):
    code, out, _ = run(capsys, "roofline", "--flops", "1.4e11", "--bytes", "7e10", "--json")
    d = json.loads(out)
    assert code == 0 and d["bound"] == "memory-bound"
    assert round(d["memory_time_s"] * 1e3, 2) == 20.90
    code, out, _ = run(
        capsys, "plan", "--model", "Llama-3.1-8B", "--users", "100", "--tpot-ms", "30", "--json"
    )
    d = json.loads(out)
    assert code == 0 and d["gpus_total"] >= 1 and d["step_time_s"] <= 0.03
    code, out, _ = run(capsys, "list", "--json")
    assert "Qwen3-8B" in json.loads(out)["models"]


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["params"], "--model"),
        (["params", "--model", "Qwen3-8B", "--config", "x.json"], "not both"),
        (["params", "--model", "no-such-model"], "no-such-model"),
        (["params", "--config", "/nonexistent/config.json"], "does not exist"),
        (["memory", "--model", "Qwen3-8B", "--precision", "fp7"], "precision"),
        (["memory", "--model", "Qwen3-8B", "--batch", "0"], "--batch"),
        (["decode", "--model", "Qwen3-8B", "--gpu", "tpu9000"], "tpu9000"),
        (["decode", "--model", "Qwen3-8B", "--batch", "many"], "--batch"),
        (["decode", "--model", "Qwen3-8B", "--eta-b", "1.5"], "--eta-b"),
        (["decode", "--model", "Qwen3-8B", "--output-tokens", "0"], "--output-tokens"),
        (["plan", "--model", "Qwen3-8B", "--users", "10", "--tpot-ms", "0.001"], "target_tpot_s"),
        (
            ["plan", "--model", "Qwen3-8B", "--users", "10", "--tpot-ms", "30", "--replica-sizes", "a,b"],
            "--replica-sizes",
        ),
        (["roofline", "--flops", "1"], "--bytes"),
        (["frobnicate"], "invalid choice"),
        ([], "COMMAND"),
    ],
)
def test_bad_arguments_give_one_line_and_nonzero_exit(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code != 0
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert needle in lines[0]
    assert "Traceback" not in err


def test_bad_json_config(capsys, tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    code, _, err = run(capsys, "params", "--config", str(bad))
    assert code != 0 and len(err.strip().splitlines()) == 1 and "JSON" in err


def test_python_dash_m_and_console_script(tiny_config):
    res = subprocess.run(
        [sys.executable, "-m", "aiinfra", "params", "--config", str(tiny_config), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["total_params"] > 0
    script = Path(sys.executable).with_name("aiinfra")
    assert script.exists(), "the aiinfra console script is not installed next to this interpreter"
    res = subprocess.run(
        [str(script), "decode", "--model", "nope"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr


# --- exact families, the labelled estimate, window-aware KV, the checkpoint check -------

UNKNOWN_CONFIG = dict(TINY_CONFIG, model_type="falcon_like")


@pytest.fixture
def unknown_config(tmp_path):
    return _write_config(tmp_path / "mystery", UNKNOWN_CONFIG)


def test_an_unknown_family_is_refused_without_approximate(capsys, unknown_config):
    code, out, err = run(capsys, "params", "--config", str(unknown_config))
    assert code == cli.EXIT_USAGE and out == ""
    (line,) = err.strip().splitlines()
    assert "'falcon_like'" in line and "--approximate" in line


def test_approximate_is_labelled_in_the_table_and_the_json(capsys, unknown_config):
    code, out, _ = run(capsys, "params", "--config", str(unknown_config), "--approximate", "--json")
    data = json.loads(out)
    assert code == 0 and data["count"] == "approximate" and data["exact"] is False
    estimate = models.load(UNKNOWN_CONFIG, approximate=True)
    assert data["assumptions"] == list(estimate.assumptions) and len(data["assumptions"]) >= 3
    # the estimate is the Llama closed form: 4 layers of GQA + gated MLP + 2 norms, untied head
    h, q, kv, ffn, vocab = 256, 256, 64, 688, 1000
    assert data["total_params"] == 4 * (2 * h * q + 2 * h * kv + 3 * h * ffn + 2 * h) + h + 2 * vocab * h
    code, out, _ = run(capsys, "params", "--config", str(unknown_config), "--approximate")
    assert code == 0 and "APPROXIMATE ESTIMATE" in out and "assumes" in out
    for command in (["memory", "--gpu", "h100"], ["decode"]):
        code, out, _ = run(capsys, *command, "--config", str(unknown_config), "--approximate", "--json")
        assert code == 0 and json.loads(out)["count"] == "approximate"


def test_json_keeps_the_counts_and_kv_keys(capsys):
    _, out, _ = run(capsys, "params", "--model", "gpt-oss-20b", "--json")
    p = json.loads(out)
    # OpenAI's model card: 20.91B total, 3.61B active (the embedding table left out, as the library does)
    assert (p["total_params"], p["active_params"]) == (20_914_757_184, 3_608_307_264)
    assert (
        p["count"] == "exact"
        and p["model_type"] == "gpt_oss"
        and sum(p["params_by_group"].values()) == 20_914_757_184
    )
    assert p["sliding_window"] == 128 and p["sliding_window_layers"] == list(range(0, 24, 2))
    _, out, _ = run(capsys, "memory", "--model", "gpt-oss-20b", "--context", "131072", "--json")
    m = json.loads(out)
    assert {"total_params", "active_params", "kv_bytes_per_request"} <= set(m)
    # 12 full layers keep 131,072 tokens, 12 sliding layers 128; 8 KV heads of 64, K and V, BF16
    assert m["kv_bytes_per_request"] == 2 * 8 * 64 * 2 * (12 * 131_072 + 12 * 128) == 3_224_371_200


def test_memory_and_decode_are_window_aware(capsys):
    _, out, _ = run(
        capsys,
        "memory",
        "--model",
        "gemma-2-2b-it",
        "--context",
        "8192",
        "--gpu",
        "h100",
        "--reserve",
        "0",
        "--json",
    )
    m = json.loads(out)
    kv = 2 * 4 * 256 * 2 * (13 * 4096 + 13 * 8192)  # 13 sliding layers hold 4,096 tokens, 13 global 8,192
    assert m["kv_bytes_per_request"] == kv == 654_311_424
    assert m["max_batch_on_one_gpu"] == int((80e9 - m["weight_bytes"]) // kv)
    _, out, _ = run(
        capsys,
        "decode",
        "--model",
        "gemma-2-2b-it",
        "--context",
        "8192",
        "--prompt",
        "8000",
        "--output-tokens",
        "8",
        "--json",
    )
    d = json.loads(out)
    attention = 2 * 8192 * (2048 + 2048) * 13 + 2 * 4096 * (2048 + 2048) * 13  # 8 heads x 256 = 2,048 wide
    assert d["decode_flops_per_request"] == 2 * (2_024_275_968 + 256_000 * 2304) + attention
    assert d["kv_bytes_read_per_request"] == kv


def test_a_context_past_the_model_positions_warns_on_stderr(capsys):
    code, out, err = run(capsys, "memory", "--model", "gemma-2-2b-it", "--context", "10000", "--json")
    assert code == 0 and json.loads(out)["context_tokens"] == 10_000
    (line,) = err.strip().splitlines()
    assert line.startswith("aiinfra: warning:") and "max_position_embeddings 8,192" in line
    _, _, err = run(capsys, "memory", "--model", "gemma-2-2b-it", "--context", "8192")
    assert err == ""


def test_check_a_published_index(capsys):
    from aiinfra.catalog import checkpoint

    folder = str(checkpoint.published_index_folder("OLMo-2-1124-13B"))
    code, out, _ = run(capsys, "check", folder, "--model", "OLMo-2-1124-13B")
    assert code == 0 and "exact match (13,716,198,400 parameters, compared with the index)" in out
    code, out, _ = run(capsys, "check", folder, "--model", "OLMo-2-1124-13B", "--dtype", "bfloat16", "--json")
    data = json.loads(out)
    assert code == 1 and data["exact_match"] is False and data["index_total_size_bytes"] == 54_864_793_600
    assert data["predicted_bytes_by_dtype"] == {"BF16": 27_432_396_800}
    code, _, err = run(capsys, "check", folder)  # no config.json in the folder and none given
    assert code == cli.EXIT_USAGE and "config" in err


def test_check_reports_the_byte_difference_from_an_index(capsys, tmp_path):
    from aiinfra.catalog import checkpoint

    cfg = dict(models.shipped_config("OLMo-2-1124-13B"), intermediate_size=13_312)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    folder = checkpoint.published_index_folder("OLMo-2-1124-13B")
    (tmp_path / checkpoint.INDEX_FILE).write_text((folder / checkpoint.INDEX_FILE).read_text())
    code, out, _ = run(capsys, "check", str(tmp_path))
    assert code == 1 and "differs from the index" in out and "bytes: index total_size 54,864,793,600" in out


def test_list_says_which_configs_are_reconstructed(capsys):
    _, out, _ = run(capsys, "list", "--json")
    data = json.loads(out)
    assert data["model_sources"]["gpt2"]["copy"] == "reconstructed"
    assert data["model_sources"]["OLMo-2-1124-13B"]["copy"] == "as released"
    assert len(data["exact_model_types"]) >= 15


# --- predict: the bound and the calibrated prediction of a run -------------------------------

_PREDICT = [
    "predict",
    "--model",
    "Llama-3.1-8B",
    "--gpu",
    "h100",
    "--tp",
    "1",
    "--replicas",
    "1",
    "--batch",
    "8",
    "--prompt",
    "1024",
    "--output",
    "128",
    "--precision",
    "bf16",
    "--kv-bytes",
    "2",
    "--compute-precision",
    "bf16",
    "--json",
]
_SPEED_KEYS = {
    "ttft_s",
    "tpot_s",
    "step_s",
    "latency_s",
    "throughput_tok_s",
    "user_tok_s",
    "max_batch",
    "fits",
}


def _predict(capsys, **changes):
    argv = list(_PREDICT)
    for flag, value in changes.items():
        argv[argv.index("--" + flag.replace("_", "-")) + 1] = str(value)
    return run(capsys, *argv)


def test_predict_json_has_the_prediction_the_bound_and_their_provenance(capsys):
    code, out, err = _predict(capsys)
    assert code == 0 and err == ""
    data = json.loads(out)
    assert set(data["prediction"]) == _SPEED_KEYS == set(data["bound"])
    assert data["prediction"]["tpot_s"] > data["bound"]["tpot_s"]
    assert data["prediction"]["throughput_tok_s"] < data["bound"]["throughput_tok_s"]
    assert set(data["parameters"]) == set(predict.PARAMETER_SPECS)
    assert data["calibration"]["name"] == calibration.load().name
    assert data["batch"] == 8 and data["prediction"]["fits"] is True


def test_predict_batch_zero_is_the_largest_batch_that_fits(capsys):
    code, out, _ = _predict(capsys, batch=0)
    data = json.loads(out)
    assert code == 0 and data["batch"] == data["prediction"]["max_batch"] > 8


def test_predict_replicas_scale_throughput(capsys):
    one = json.loads(_predict(capsys)[1])
    two = json.loads(_predict(capsys, replicas=2, batch=16)[1])
    assert two["prediction"]["throughput_tok_s"] == pytest.approx(2 * one["prediction"]["throughput_tok_s"])


@pytest.mark.parametrize(
    "changes, text",
    [
        ({"tp": 3}, "tp must divide"),  # 8 KV heads
        ({"precision": "fp2"}, "weight_precision"),
        ({"compute_precision": "fp4"}, "compute_precision"),  # no FP4 on Hopper
        ({"batch": -1}, "--batch"),
        ({"kv_bytes": 0}, "--kv-bytes"),
        ({"replicas": 0}, "--replicas"),
        ({"output": 0}, "--output"),
    ],
)
def test_predict_rejects_nonsense_with_one_line(capsys, changes, text):
    code, out, err = _predict(capsys, **changes)
    assert code == cli.EXIT_USAGE and out == "" and text in err and len(err.strip().splitlines()) == 1


def test_predict_refuses_a_model_that_does_not_fit(capsys):
    code, _, err = run(capsys, "predict", "--model", "Llama-3.1-70B", "--gpu", "h100", "--tp", "1")
    assert code == cli.EXIT_USAGE and "does not fit" in err


def test_predict_table_labels_bound_and_prediction(capsys):
    code, out, _ = run(capsys, *[a for a in _PREDICT if a != "--json"])
    assert code == 0 and "prediction  |  bound (100% of peak, no overhead)" in out


def test_plan_includes_prefill_and_prints_the_prediction_beside_the_bound(capsys):
    argv = ["plan", "--model", "Llama-3.1-70B", "--users", "10000", "--tpot-ms", "50", "--context", "8192"]
    code, out, _ = run(capsys, *argv, "--output", "256", "--json")
    d = json.loads(out)
    assert code == 0 and d["output_tokens"] == 256 and d["prompt_tokens"] == 8192 and d["prefix_reuse"] == 0.0
    assert d["limiting"] == "prefill" and d["prediction"]["gpus_total"] >= d["gpus_total"]
    reused = json.loads(run(capsys, *argv, "--prefix-reuse", "0.9", "--json")[1])
    assert reused["gpus_total"] < d["gpus_total"]
    code, _, err = run(capsys, *argv, "--prefix-reuse", "1.5")
    assert code == cli.EXIT_USAGE and "--prefix-reuse" in err


# --- decode and memory give the calibrated prediction beside every speed and capacity, labelled ---

_DECODE_TIMES = ("step_time_s", "ttft_s", "mean_tpot_s", "end_to_end_latency_s")
_DECODE_RATES = ("tokens_per_s_per_user", "tokens_per_s_aggregate")


def test_decode_json_has_a_prediction_slower_than_the_bound_for_every_speed(capsys):
    argv = [
        "decode",
        "--model",
        "Llama-3.1-8B",
        "--batch",
        "32",
        "--prompt",
        "2000",
        "--output-tokens",
        "500",
    ]
    _, out, _ = run(capsys, *argv, "--json")
    d = json.loads(out)
    assert d["speeds_are"] == "bound" and d["calibration"] == calibration.load().name
    assert set(d["prediction"]) == set(_DECODE_TIMES + _DECODE_RATES)
    assert all(d["prediction"][k] > d[k] for k in _DECODE_TIMES)
    assert all(d["prediction"][k] < d[k] for k in _DECODE_RATES)
    assert d["prediction"]["tokens_per_s_aggregate"] == pytest.approx(
        32 * d["prediction"]["tokens_per_s_per_user"]
    )


def test_decode_step_prediction_is_predicts_step_at_the_same_context(capsys):
    # `predict` times its step at the mean context P + G/2 = 2,048 + 128; `decode --context 2176` times that step.
    _, out, _ = run(
        capsys, "decode", "--model", "Llama-3.1-8B", "--batch", "8", "--context", "2176", "--json"
    )
    _, out2, _ = run(
        capsys,
        "predict",
        "--model",
        "Llama-3.1-8B",
        "--gpu",
        "h100",
        "--batch",
        "8",
        "--prompt",
        "2048",
        "--output",
        "256",
        "--json",
    )
    decode, pred = json.loads(out), json.loads(out2)
    assert decode["prediction"]["step_time_s"] == pytest.approx(pred["prediction"]["step_s"], rel=1e-12)
    assert decode["step_time_s"] == pytest.approx(pred["bound"]["step_s"], rel=1e-12)


def test_decode_labels_efficiency_scaled_rooflines_and_missing_predictions(capsys):
    _, out, _ = run(capsys, "decode", "--model", "Llama-3.1-8B", "--n-gpus", "3", "--eta-b", "0.7", "--json")
    d = json.loads(out)
    assert d["speeds_are"] == "roofline at eta_f 1, eta_b 0.7"
    assert d["prediction"] is None and "tp must divide" in d["prediction_error"]
    code, table, _ = run(capsys, "decode", "--model", "Llama-3.1-8B", "--n-gpus", "3")
    assert code == 0 and "none  [prediction]" in table and "none: tp must divide" in table


def test_decode_table_labels_every_speed_bound_and_prediction(capsys):
    _, out, _ = run(capsys, "decode", "--model", "Qwen3-8B", "--batch", "4")
    speed_rows = [
        line
        for line in out.splitlines()
        if line.startswith(("decode step", "tokens/s", "TTFT", "mean TPOT", "end-to-end"))
    ]
    assert len(speed_rows) == 6
    assert all("[bound]" in line and "[prediction]" in line for line in speed_rows)


def test_memory_gives_bound_flat_reserve_and_prediction_capacities(capsys):
    # Llama-3.1-70B, 16 requests of 8,192 tokens: 141.1 GB of weights + 16 x 8,192 x 327,680 B = 184.1 GB.
    # Bound: all of 80 GB per card, any split: 3 cards. Prediction: 90 % usable and activations, and a TP width
    # dividing the 8 KV heads: 2 cards hold 144 GB, 3 is not allowed, so 4.
    _, out, _ = run(
        capsys,
        "memory",
        "--model",
        "Llama-3.1-70B",
        "--gpu",
        "h100",
        "--batch",
        "16",
        "--context",
        "8192",
        "--json",
    )
    d = json.loads(out)
    assert d["total_bytes"] == pytest.approx(141.1e9 + 16 * 8192 * 327_680, rel=1e-3)
    assert d["bound"]["min_gpus"] == 3 and d["prediction"]["min_gpus"] == 4
    assert d["bound"]["max_batch_on_one_gpu"] == d["prediction"]["max_batch_on_one_gpu"] == 0


def test_memory_prediction_holds_fewer_requests_than_the_bound(capsys):
    # Qwen3-8B on one H100 at 2,048 tokens: the bound fills all 80 GB with KV, floor((80e9 - W) / KV).
    _, out, _ = run(capsys, "memory", "--model", "Qwen3-8B", "--gpu", "h100", "--context", "2048", "--json")
    d = json.loads(out)
    assert d["bound"]["max_batch_on_one_gpu"] == int((80e9 - d["weight_bytes"]) // d["kv_bytes_per_request"])
    assert (
        d["prediction"]["max_batch_on_one_gpu"]
        < d["max_batch_on_one_gpu"]
        < d["bound"]["max_batch_on_one_gpu"]
    )
    _, table, _ = run(capsys, "memory", "--model", "Qwen3-8B", "--gpu", "h100", "--context", "2048")
    assert "bound (all memory, ideal split)" in table and "prediction (calibrated" in table
