"""The stored published measurements: schema, sources, resolvable conditions and the conversions made."""

import dataclasses
import math
import re
from pathlib import Path

import pytest

from aiinfra.catalog import hardware, measurements, models, reference

BIB = Path(__file__).resolve().parents[1] / "book" / "references.bib"
POINTS = measurements.points()
BYTES_PER_WEIGHT = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "fp4": 0.5}


def test_counts_and_sources():
    assert len(POINTS) == 55
    assert measurements.sources() == [
        "firstencounter2025qwen3run",
        "nvidia2023trtllmh200",
        "nvidia2023trtllmperf",
        "nvidia2025trtllmperfoverview",
        "oracle2024mi300x405b",
        "pytorchlabs2023gptfast",
        "sglang2024vllm060",
    ]
    assert {p.engine for p in POINTS} == {"seed", "gpt-fast", "TensorRT-LLM", "vLLM", "SGLang"}
    assert sum(not p.expressible for p in POINTS) == 6


def test_every_source_is_in_the_bibliography():
    keys = set(re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(encoding="utf-8"), flags=re.M))
    assert set(measurements.sources()) <= keys


def test_every_model_and_gpu_resolves():
    for p in POINTS:
        assert models.load(p.model).name == p.model
        assert hardware.gpu(p.gpu).name == p.gpu


@pytest.mark.parametrize("p", POINTS, ids=[p.id for p in POINTS])
def test_conditions_are_physically_possible(p):
    m = models.load(p.model)
    assert m.n_kv_heads % p.tp == 0 or p.tp % m.n_kv_heads == 0
    weights_bytes = models.total_params(m) * BYTES_PER_WEIGHT[p.weight_precision]
    assert weights_bytes < p.tp * p.pp * hardware.gpu(p.gpu).memory_bytes
    if measurements.METRICS[p.metric] == "s":
        assert 1e-4 < p.value < 1e3  # a millisecond figure stored as seconds would fail here
    else:
        assert 1.0 < p.value < 1e6


def test_seed_points_match_the_stored_seed_run():
    run = reference.QWEN3_8B_RTX_PRO_6000
    assert measurements.point("seed-qwen3-8b-b1-tpot-logging").value == run.tpot_s[1]
    assert measurements.point("seed-qwen3-8b-b64-tpot-logging").value == run.tpot_s[64]
    assert measurements.point("seed-qwen3-8b-b1-tpot").value == run.followups_s["tpot_logging_off"]
    assert measurements.point("seed-qwen3-8b-b1-step").value == run.followups_s["gpu_step_time"]
    for p in POINTS:
        if p.engine == "seed":
            assert (p.prompt_tokens, p.output_tokens, p.gpu) == (
                run.prompt_tokens,
                run.output_tokens,
                run.gpu,
            )


def test_per_gpu_tables_are_multiplied_by_the_tp_size():
    # performance.md: Llama 2 70B on H100, TP2, 2,657 out tok/s/GPU; H200 launch note: TP2, 1,654 per GPU
    assert measurements.point("trtllm061-h100-70b-b1024-128-128").value == 2 * 2657
    assert measurements.point("trtllm-h200launch-70b-b512-tp2-128-2048").value == 2 * 1654
    assert measurements.point("trtllm05-a100-70b-tp4-ttft-2048").value == pytest.approx(0.377)


def test_gpt_fast_bandwidth_column_is_one_weight_read_per_token():
    # gpt-fast prints achieved GB/s beside tokens/s: 1397.31 GB/s at 104.9 tokens/s for Llama-2-7B in bf16,
    # i.e. 13.32 GB per token, the weights the catalog counts (6,738,415,616 x 2 B) to within 2%
    p = measurements.point("gptfast-7b-tp1-bf16")
    per_token_bytes = 1397.31e9 / p.value
    assert per_token_bytes == pytest.approx(2 * models.total_params(p.model), rel=0.02)


def test_new_configs_have_their_published_totals():
    assert models.total_params("Llama-2-7b-hf") == 6_738_415_616
    assert models.total_params("Llama-2-70b-hf") == 68_976_648_192
    assert models.total_params("Llama-3.1-405B") == 405_853_388_800


GOOD = dataclasses.asdict(measurements.point("gptfast-7b-tp1-bf16"))


@pytest.mark.parametrize(
    "field, value",
    [
        ("metric", "tokens_per_s"),
        ("value", -1.0),
        ("value", math.nan),
        ("value", True),
        ("tp", 0),
        ("pp", 1.5),
        ("batch", -1),
        ("output_tokens", 0),
        ("engine", "llama.cpp?"),
        ("weight_precision", "fp6"),
        ("kv_precision", "int4"),
        ("compute_precision", "int8"),
        ("graph_capture", "yes"),
        ("expressible", 1),
        ("url", "http://example.com"),
        ("model", ""),
        ("why_not", "a reason given for an expressible point"),
    ],
)
def test_bad_fields_are_refused_by_name(field, value):
    with pytest.raises(ValueError, match=field):
        measurements.from_dict({**GOOD, field: value})


def test_missing_url_only_for_the_seed_and_unknown_fields_refused():
    with pytest.raises(ValueError, match="url"):
        measurements.from_dict({**GOOD, "url": None})
    with pytest.raises(ValueError, match="fields"):
        measurements.from_dict({**GOOD, "speedup": 2.0})
    with pytest.raises(ValueError, match="why_not"):
        measurements.from_dict({**GOOD, "expressible": False})
    with pytest.raises(ValueError, match="id"):
        measurements.point("no-such-point")
