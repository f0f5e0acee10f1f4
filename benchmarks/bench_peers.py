"""aiinfra beside two peer calculators from PyPI, on every stored published measurement. Asserts nothing.

    python benchmarks/bench_peers.py            (make bench runs it)

The peers, llm-analysis and GenZ (``genz-llm``), are installed in their own virtual environment
(``_build/peers-venv``, made on the first run; the packages come from the ordinary package index). This
script then runs itself inside that environment (``--worker``) on the same cases: each expressible point of
``aiinfra.catalog.measurements``, its model's shape and its GPU's figures taken from the aiinfra catalog, so
that the tools differ only in how they turn a shape and a GPU into time. Each tool runs at its defaults
(every peer defaults to 100% of peak, as aiinfra's bound does).

The table: per tool, the median and the worst factor between measured and predicted (``exp|ln(m/p)|``),
how many points it predicts faster than measured ("optimistic") and how many it could not run. The closing
lines say what each peer needed to be run at all.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / "_build" / "peers-venv"
PEERS = ("llm-analysis==0.2.2", "genz-llm==0.0.16")
WORKAROUNDS = {
    "llm-analysis": [
        "no H200, B200, L40S, MI300X or RTX PRO 6000 in its GPU list: every GPU is registered at run time "
        "from aiinfra's catalog (memory, bandwidth, scale-up link; dense BF16 peak as its FP16 peak, FP8 "
        "as its INT8 peak, FP4 as its INT4 peak)",
        "models two MLP matrices of ffn_embed_dim: a gated MLP of width I is given as ffn_embed_dim = 1.5 I, "
        "with expansion_ratio passed too (its divisibility check would refuse Llama-2's 11008)",
        "no per-expert width: an MoE is given its expert width, the shared dense width ignored",
        "weight-only int8/int4 as w8a16/w4a16; FP8 and FP4 math as w8a8/w4a4 (integer peaks)",
        "tokens per second counts prefill; TPOT is the summed decode time over the output tokens",
    ],
    "GenZ": [
        "systems given as real_values dicts from aiinfra's catalog (TFLOP/s, GB/s, GB); its own H100/B100 "
        "entries use sparse or other peaks",
        "no end-to-end call: latency is prefill plus output tokens x the decode step at the mean context",
        "FP4 math has no bits setting: run as int4; MoE models given num_experts/expert_top_k per layer",
    ],
    "all": [
        "batch 0 (the source ran as many requests as fit) is run at the largest batch aiinfra's prediction "
        "fits for that point, the same batch for every tool",
    ],
}


# --------------------------------------------------------------------------------------
# The worker: runs inside the peers' environment and imports nothing from aiinfra
# --------------------------------------------------------------------------------------


def _metric(case, prefill_s, step_s, total_s):
    """One case's metric from a tool's prefill time, decode step time and whole-batch latency."""
    b, g = case["batch"], case["output_tokens"]
    return {
        "ttft_s": prefill_s,
        "tpot_s": step_s,
        "step_s": step_s,
        "latency_s": total_s,
        "throughput_tok_s": b * g * case["replicas"] / total_s,
        "user_tok_s": g / total_s,
    }[case["metric"]]


def _llm_analysis(case):
    from llm_analysis import config
    from llm_analysis.analysis import infer

    s, gpu = case["shape"], case["gpu"]
    config.gpu_configs[gpu["name"]] = config.GPUConfig(
        name=gpu["name"],
        mem_per_GPU_in_GB=gpu["memory_bytes"] / 1e9,
        hbm_bandwidth_in_GB_per_sec=gpu["bandwidth_bytes_per_s"] / 1e9,
        intra_node_bandwidth_in_GB_per_sec=gpu["scaleup_bytes_per_s"] / 1e9,
        intra_node_min_message_latency=8e-6,
        peak_fp16_TFLOPS=gpu["bf16_flops_per_s"] / 1e12,
        peak_i8_TFLOPS=gpu["fp8_flops_per_s"] / 1e12,
        peak_i4_TFLOPS=gpu["fp4_flops_per_s"] / 1e12,
    )
    ffn = int(1.5 * (s["expert_width"] or s["intermediate"]))
    config.model_configs[case["id"]] = config.ModelConfig(
        name=case["id"],
        num_layers=s["layers"],
        n_head=s["heads"],
        hidden_dim=s["hidden"],
        vocab_size=s["vocab"],
        max_seq_len=max(4096, case["prompt_tokens"] + case["output_tokens"]),
        num_key_value_heads=s["kv_heads"],
        ffn_embed_dim=ffn,
        expansion_ratio=ffn / s["hidden"],
        model_type="llama",
        moe_num_experts=max(s["experts"], 1),
        moe_top_k=max(s["top_k"], 1),
    )
    dtype = {"bf16": "w16a16e16", "fp16": "w16a16e16", "int8": "w8a16e16", "int4": "w4a16e16"}
    dtype.update({"fp8": "w8a8e16", "fp4": "w4a4e16"} if case["compute"] in ("fp8", "fp4") else {})
    g = case["output_tokens"]
    out = infer(
        model_name=case["id"],
        gpu_name=gpu["name"],
        dtype_name=dtype.get(case["weights"], "w16a16e16"),
        log_level="ERROR",
        batch_size_per_gpu=case["batch"],
        tp_size=case["tp"],
        seq_len=case["prompt_tokens"],
        num_tokens_to_generate=g,
        kv_cache_dtype_bytes=case["kv_bytes"],
    )
    step = out["total_decode_latency"] / g
    return _metric(case, out["prefill_latency"], step, out["total_latency"])


def _genz(case):
    from GenZ import ModelConfig, decode_moddeling, prefill_moddeling

    s, gpu = case["shape"], case["gpu"]
    peak = {"fp8": gpu["fp8_flops_per_s"], "fp4": gpu["fp4_flops_per_s"]}.get(
        case["compute"], gpu["bf16_flops_per_s"]
    )
    system = {
        "Flops": peak / 1e12,
        "Memory_size": gpu["memory_bytes"] / 1e9,
        "Memory_BW": gpu["bandwidth_bytes_per_s"] / 1e9,
        "ICN": gpu["scaleup_bytes_per_s"] / 1e9,
        "real_values": True,
    }
    moe = dict(num_experts=s["experts"], expert_top_k=s["top_k"], moe_layer_freq=1) if s["experts"] else {}
    if s["expert_width"]:
        moe["moe_intermediate_size"] = s["expert_width"]
    model = ModelConfig(
        model=case["id"],
        vocab_size=s["vocab"],
        hidden_size=s["hidden"],
        intermediate_size=s["intermediate"] or s["expert_width"],
        num_ffi=2,
        num_decoder_layers=s["layers"],
        num_attention_heads=s["heads"],
        head_dim=s["head_dim"],
        num_key_value_heads=s["kv_heads"],
        **moe,
    )
    bits = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "int8": "int8", "int4": "int4", "fp4": "int4"}
    kw = dict(system_name=system, bits=bits[case["weights"]], tensor_parallel=case["tp"])
    p, g, b = case["prompt_tokens"], case["output_tokens"], case["batch"]
    prefill_s = prefill_moddeling(model=model, batch_size=b, input_tokens=p, **kw)["Latency"] / 1e3
    if g > 1:
        mean_context = p + g // 2
        step_s = (
            decode_moddeling(model=model, batch_size=b, input_tokens=mean_context, Bb=1, **kw)["Latency"]
            / 1e3
        )
    else:
        step_s = 0.0
    return _metric(case, prefill_s, step_s, prefill_s + (g - 1) * step_s)


def worker() -> None:
    """Read cases (JSON) on stdin; print, per case, each peer's value or the error it raised."""
    import contextlib
    import io
    import warnings

    warnings.filterwarnings("ignore")
    cases, out = json.load(sys.stdin), []
    for case in cases:
        row = {"id": case["id"]}
        for name, fn in (("llm-analysis", _llm_analysis), ("GenZ", _genz)):
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    row[name] = float(fn(case))
            except Exception as e:  # a peer that cannot run a case is reported, not fatal
                row[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''}"
        out.append(row)
    print(json.dumps(out))


# --------------------------------------------------------------------------------------
# The driver: builds the cases from aiinfra's catalog and prints the table
# --------------------------------------------------------------------------------------


def peers_python() -> Path:
    """The peers' interpreter, making the environment on the first run."""
    py = VENV / "bin" / "python"
    if not py.exists():
        print(f"making {VENV.relative_to(ROOT)} and installing {', '.join(PEERS)} ...", flush=True)
        venv.create(VENV, with_pip=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PEERS], check=True)
    return py


def _gpu_figures(gpu) -> dict:
    fp8 = gpu.fp8_dense_flops_per_s or 2 * gpu.bf16_dense_flops_per_s
    fp4 = getattr(gpu, "fp4_dense_flops_per_s", None) or 2 * fp8
    return {
        "name": gpu.name,
        "memory_bytes": gpu.memory_bytes,
        "bandwidth_bytes_per_s": gpu.memory_bandwidth_bytes_per_s,
        "scaleup_bytes_per_s": gpu.scaleup_bytes_per_s_per_direction,
        "bf16_flops_per_s": gpu.bf16_dense_flops_per_s,
        "fp8_flops_per_s": fp8,
        "fp4_flops_per_s": fp4,
    }


def _shape(m) -> dict:
    return {
        "layers": m.n_layers,
        "hidden": m.hidden_size,
        "heads": m.n_heads,
        "kv_heads": m.n_kv_heads,
        "head_dim": m.head_dim,
        "intermediate": m.intermediate_size if not m.n_routed_experts or m.moe_intermediate_size else 0,
        "expert_width": (m.moe_intermediate_size or m.intermediate_size) if m.n_routed_experts else 0,
        "experts": m.n_routed_experts,
        "top_k": m.n_experts_per_token,
        "vocab": m.vocab_size,
    }


def largest_batch(p) -> int:
    """The largest batch aiinfra's calibrated prediction fits for a stored point (its replicas together)."""
    from aiinfra import calibration, predict

    params = calibration.load().parameters
    setup = calibration.setup_of(p)
    return predict.max_batch(setup, params, max(p.prompt_tokens, 1), p.output_tokens) * p.replicas


def aiinfra_values(p) -> dict:
    """aiinfra's two columns for a stored point (the bound and the calibrated prediction) and its split."""
    from aiinfra import calibration

    (row,) = calibration.rows(points=[p])
    return {"aiinfra bound": row.bound, "aiinfra prediction": row.predicted, "split": row.split}


def cases() -> list[dict]:
    """One case per expressible stored point (batch 0: the largest batch the prediction fits)."""
    from aiinfra import units
    from aiinfra.catalog import hardware, measurements, models

    out = []
    for p in measurements.points():
        if not p.expressible:
            continue
        kv = p.kv_precision or ("fp8" if p.compute_precision in ("fp8", "fp4") else "bf16")
        out.append(
            {
                "id": p.id,
                "metric": p.metric,
                "measured": p.value,
                "engine": p.engine,
                "shape": _shape(models.load(p.model)),
                "gpu": _gpu_figures(hardware.gpu(p.gpu)),
                "tp": p.tp,
                "replicas": p.replicas,
                "batch": p.batch or largest_batch(p),
                "prompt_tokens": p.prompt_tokens,
                "output_tokens": p.output_tokens,
                "weights": p.weight_precision,
                "compute": p.compute_precision,
                "kv_bytes": units.bytes_per_param(kv),
                **aiinfra_values(p),
            }
        )
    return out


def factor(measured: float, predicted) -> float | None:
    """``exp|ln(measured / predicted)|``, or None for a tool that did not run the case."""
    from aiinfra.book.model_check import factor_off

    return factor_off(measured, predicted) if isinstance(predicted, float) and predicted > 0 else None


def summary_row(tool: str, rows: list[dict]) -> list[str]:
    pairs = [(r, r[tool]) for r in rows]
    ok = [(r, v) for r, v in pairs if factor(r["measured"], v) is not None]
    if not ok:
        return [tool, "-", "-", "-", f"{len(rows)}"]
    f = [factor(r["measured"], v) for r, v in ok]
    worst_r, worst_f = max(zip([r for r, _ in ok], f), key=lambda t: t[1])
    from aiinfra.book.model_check import optimistic

    n_opt = sum(optimistic(r["metric"], r["measured"], v) for r, v in ok)
    return [
        tool,
        f"x{statistics.median(f):.2f}",
        f"x{worst_f:.1f} ({worst_r['id']})",
        f"{n_opt} of {len(ok)}",
        f"{len(rows) - len(ok)}",
    ]


def print_table(title: str, rows: list[dict], tools: list[str]) -> None:
    table = [["tool", "median factor off", "worst (point)", "optimistic on", "could not run"]]
    table += [summary_row(t, rows) for t in tools]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    print(f"{title}: {len(rows)} points; factor = exp|ln(measured / predicted)|")
    for r in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())


def main() -> int:
    todo = cases()
    py = peers_python()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the peers see none of aiinfra
    run = subprocess.run(
        [str(py), __file__, "--worker"],
        input=json.dumps(todo),
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    by_id = {r["id"]: r for r in json.loads(run.stdout.strip().splitlines()[-1])}
    rows = [{**c, **by_id[c["id"]]} for c in todo]
    tools = ["aiinfra bound", "aiinfra prediction", "llm-analysis", "GenZ"]
    print_table("every expressible stored point", rows, tools)
    print_table("held-out split only", [r for r in rows if r["split"] == "held-out"], tools)
    for t in ("llm-analysis", "GenZ"):
        for r in rows:
            if isinstance(r[t], str):
                print(f"{t} could not run {r['id']}: {r[t]}")
    print("workarounds:")
    for tool, notes in WORKAROUNDS.items():
        for n in notes:
            print(f"  {tool}: {n}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        sys.exit(main())
