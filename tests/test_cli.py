"""The aiinfra calculator: tables, --json, a config.json that is not shipped, clean errors."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from aiinfra import cli, compute, deployment, memory
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


@pytest.fixture
def tiny_config(tmp_path):
    path = tmp_path / "tiny-llama" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(TINY_CONFIG))
    return path


def test_params_json_on_an_unshipped_config(capsys, tiny_config):
    code, out, err = run(capsys, "params", "--config", str(tiny_config), "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    # hand count: per layer q 256x256, k,v 256x64, o 256x256, mlp 3x256x688, 2 norms of 256
    per_layer = 256 * 256 * 2 + 256 * 64 * 2 + 3 * 256 * 688 + 2 * 256
    expected = 4 * per_layer + 2 * 1000 * 256 + 256
    assert data["total_params"] == expected
    assert data["active_params"] == expected
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
    code, out, _ = run(capsys, "memory", "--model", "Qwen3-8B", "--context", "2048", "--batch", "4",
                       "--gpu", "h100", "--json")
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
    code, out, _ = run(capsys, "memory", "--model", "Qwen3-8B", "--context", "2048", "--batch", "4",
                       "--gpu", "h100", "--reserve", "0", "--json")
    assert json.loads(out)["max_batch_on_one_gpu"] == int((80e9 - d["weight_bytes"]) // d["kv_bytes_per_request"])


def test_memory_table_with_precision_and_config(capsys, tiny_config):
    code, out, _ = run(capsys, "memory", "--config", str(tiny_config), "--precision", "int8", "--context", "100")
    assert code == 0 and "weights (int8)" in out and "KV per request @ 100 tokens" in out


def test_decode_json_matches_library(capsys):
    code, out, _ = run(capsys, "decode", "--model", "Qwen3-8B", "--gpu", "pro6000", "--batch", "1",
                       "--context", "2048", "--prompt", "2048", "--output-tokens", "256", "--json")
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
    _, out64, _ = run(capsys, "decode", "--model", "Llama-3.1-8B", "--batch", "64", "--eta-b", "0.7", "--json")
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
    code, out, _ = run(capsys, "plan", "--model", "Llama-3.1-8B", "--users", "100", "--tpot-ms", "30", "--json")
    d = json.loads(out)
    assert code == 0 and d["gpus_total"] >= 1 and d["step_time_s"] <= 0.03
    code, out, _ = run(capsys, "list", "--json")
    assert "Qwen3-8B" in json.loads(out)["models"]


@pytest.mark.parametrize("argv, needle", [
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
    (["plan", "--model", "Qwen3-8B", "--users", "10", "--tpot-ms", "30", "--replica-sizes", "a,b"], "--replica-sizes"),
    (["roofline", "--flops", "1"], "--bytes"),
    (["frobnicate"], "invalid choice"),
    ([], "COMMAND"),
])
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
    res = subprocess.run([sys.executable, "-m", "aiinfra", "params", "--config", str(tiny_config), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["total_params"] > 0
    script = Path(sys.executable).with_name("aiinfra")
    assert script.exists(), "the aiinfra console script is not installed next to this interpreter"
    res = subprocess.run([str(script), "decode", "--model", "nope"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
