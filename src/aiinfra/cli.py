"""The ``aiinfra`` calculator: the book's formulas from the command line.

    aiinfra params   --model Qwen3-8B
    aiinfra params   --config ./my-model/config.json --approximate
    aiinfra check    ~/.cache/huggingface/hub/models--org--name/snapshots/REV
    aiinfra memory   --config ./my-model/config.json --precision int8 --context 8192 --batch 16 --gpu h100
    aiinfra decode   --model Llama-3.1-8B --gpu h100 --batch 32 --prompt 2000 --output-tokens 500
    aiinfra roofline --flops 1.4e11 --bytes 7e10 --gpu h100
    aiinfra predict  --model Llama-3.1-70B --gpu h100 --tp 8 --replicas 1 --batch 0 --prompt 2048 --output 256 \
                     --precision bf16 --kv-bytes 2 --compute-precision bf16 --json
    aiinfra plan     --model Llama-3.1-70B --gpu h100 --users 1000 --tpot-ms 50 --context 8192 --output 256
    aiinfra list

Every subcommand prints a table for people and, with ``--json``, one JSON
object for programs (SI units, the unit in every key). A bad argument gets
one line on stderr and exit status 2; nothing prints a traceback.

Counts are exact for the families of :data:`aiinfra.catalog.models.SUPPORTED_MODEL_TYPES`;
any other config is refused unless ``--approximate`` asks for an estimate,
which the table and the JSON (``"count": "approximate"``, ``"assumptions"``)
label as such. A context past the model's ``max_position_embeddings`` prints
a warning on stderr. ``check`` compares a downloaded model folder with the
count (exit status 0 for an exact match, 1 for a difference).
Also runnable as ``python -m aiinfra``. ``memory``, ``decode`` and ``plan``
describe one :class:`aiinfra.deployment.Deployment` (the same memory reserve
and the same peak rule everywhere). ``predict`` gives the roofline bound and
the calibrated prediction of a run side by side (:mod:`aiinfra.predict`, with
the stored calibration of :mod:`aiinfra.calibration`); ``decode`` and
``memory`` print the same prediction beside each speed and capacity they
give, every value labelled bound or prediction, and their JSON holds it under
``"prediction"`` (``null`` with a ``"prediction_error"`` where none applies,
such as a GPU count that does not divide the KV heads).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

EXIT_USAGE = 2
#: aiinfra.deployment.DEFAULT_MEMORY_RESERVE, repeated here so that ``--help`` imports nothing
#: (tests/test_cli.py checks the two agree).
DEFAULT_MEMORY_RESERVE = 0.1


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr, not usage plus message."""

    def error(self, message):  # argparse API
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


# --- shared option groups ----------------------------------------------------


def _model_options(p, required=True):
    g = p.add_argument_group("model (one of)")
    g.add_argument("--model", metavar="NAME", help="a shipped model name (see `aiinfra list`)")
    g.add_argument("--config", metavar="PATH", help="path to a Hugging Face config.json (or its folder)")
    p.add_argument(
        "--approximate",
        action="store_true",
        help="estimate a model_type that is not counted exactly (labelled, with its assumptions)",
    )
    p.set_defaults(_model_required=required)


def _gpu_option(p, default=None):
    p.add_argument(
        "--gpu",
        metavar="NAME",
        default=default,
        help="GPU name or alias (h100, a100, pro6000, ...)" + (f"; default {default}" if default else ""),
    )


def _storage_options(p):
    p.add_argument(
        "--precision", default="bf16", help="weight storage precision (bf16, fp16, fp8, int8, int4, ...)"
    )
    p.add_argument(
        "--kv-bytes",
        type=float,
        default=2.0,
        dest="kv_bytes",
        help="bytes per stored KV element (2 = BF16 cache, 1 = FP8)",
    )
    p.add_argument(
        "--reserve",
        type=float,
        default=DEFAULT_MEMORY_RESERVE,
        help="share of each GPU's memory held back for activations and workspace, [0, 1) "
        f"(default {DEFAULT_MEMORY_RESERVE})",
    )


def _workload_options(p):
    _storage_options(p)
    p.add_argument("--batch", type=int, default=1, help="requests decoded together")
    p.add_argument(
        "--context", type=int, default=None, help="tokens in each request's KV cache (default: --prompt)"
    )
    p.add_argument("--prompt", type=int, default=2048, help="prompt tokens (prefill length)")
    p.add_argument(
        "--output-tokens", type=int, default=256, dest="output_tokens", help="generated tokens per request"
    )


def _efficiency_options(p):
    p.add_argument(
        "--eta-f", type=float, default=1.0, dest="eta_f", help="achieved fraction of peak compute (0, 1]"
    )
    p.add_argument(
        "--eta-b", type=float, default=1.0, dest="eta_b", help="achieved fraction of peak bandwidth (0, 1]"
    )
    p.add_argument(
        "--n-gpus",
        type=int,
        default=1,
        dest="n_gpus",
        help="GPUs sharing the model (ideal tensor parallelism, no communication cost)",
    )
    p.add_argument(
        "--compute-precision",
        default="bf16",
        dest="compute_precision",
        choices=["bf16", "fp8"],
        help="matrix-input precision whose dense peak is used",
    )


def _json_option(p):
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="aiinfra",
        description="Back-of-envelope calculator for LLM inference infrastructure "
        "(AI Infrastructure by the Numbers).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("params", help="exact parameter counts of a model")
    _model_options(p)
    _json_option(p)

    p = sub.add_parser(
        "check", help="compare the count with a downloaded model folder (safetensors or index)"
    )
    p.add_argument(
        "folder",
        metavar="FOLDER",
        help="model folder: config.json with *.safetensors and/or model.safetensors.index.json",
    )
    g = p.add_argument_group("config (default: FOLDER/config.json)")
    g.add_argument("--model", metavar="NAME", help="a shipped model name to predict from instead")
    g.add_argument("--config", metavar="PATH", help="another config.json to predict from")
    p.add_argument(
        "--dtype",
        default=None,
        help="storage dtype to predict (bfloat16, F32, ...); default: the config's torch_dtype",
    )
    p.add_argument(
        "--approximate", action="store_true", help="predict from an estimate for an unknown family"
    )
    _json_option(p)

    p = sub.add_parser(
        "memory",
        help="weights and KV cache bytes; with --gpu, how many GPUs and how big a batch (bound and prediction)",
    )
    _model_options(p)
    _gpu_option(p)
    _workload_options(p)
    _json_option(p)

    p = sub.add_parser(
        "decode",
        help="prefill, decode step, TTFT, TPOT and tokens/s: the roofline bound and the calibrated prediction",
    )
    _model_options(p)
    _gpu_option(p, default="H100 SXM")
    _workload_options(p)
    _efficiency_options(p)
    _json_option(p)

    p = sub.add_parser("roofline", help="compute vs memory time of any piece of work on a GPU")
    _gpu_option(p, default="H100 SXM")
    p.add_argument("--flops", type=float, required=True, help="floating-point operations of the work")
    p.add_argument("--bytes", type=float, required=True, dest="bytes_moved", help="bytes it must move")
    p.add_argument(
        "--compute-precision",
        default="bf16",
        dest="compute_precision",
        choices=["bf16", "fp8"],
        help="matrix-input precision whose dense peak is used",
    )
    _json_option(p)

    p = sub.add_parser(
        "predict", help="bound and calibrated prediction of TTFT, TPOT, latency and throughput of a run"
    )
    _model_options(p)
    _gpu_option(p, default="H100 SXM")
    p.add_argument(
        "--tp", type=int, default=1, help="tensor-parallel GPUs per replica (must divide the KV heads)"
    )
    p.add_argument("--replicas", type=int, default=1, help="data-parallel replicas")
    p.add_argument(
        "--batch",
        type=int,
        default=1,
        help="concurrent requests over all replicas; 0 = the largest that fits",
    )
    p.add_argument("--prompt", type=int, default=2048, help="prompt tokens per request")
    p.add_argument("--output", type=int, default=256, help="output tokens per request")
    p.add_argument("--precision", default="bf16", help="weight storage: bf16, fp16, fp8, int8, int4 or fp4")
    p.add_argument(
        "--kv-bytes",
        type=float,
        default=2.0,
        dest="kv_bytes",
        help="bytes per KV element (2 = BF16, 1 = FP8)",
    )
    p.add_argument(
        "--compute-precision",
        default="bf16",
        dest="compute_precision",
        help="precision of the matrix math: bf16, fp16, fp8 or fp4 (the GPU must have its peak)",
    )
    _json_option(p)

    p = sub.add_parser("plan", help="fewest GPUs for U concurrent users at a target TPOT")
    _model_options(p)
    _gpu_option(p, default="H100 SXM")
    p.add_argument("--users", type=int, required=True, help="concurrent users (each decoding)")
    p.add_argument(
        "--tpot-ms", type=float, required=True, dest="tpot_ms", help="target time per output token, ms"
    )
    p.add_argument("--context", type=int, default=8192, help="tokens in each user's KV cache")
    p.add_argument(
        "--prompt", type=int, default=None, help="prompt tokens each request prefills (default: --context)"
    )
    p.add_argument(
        "--output", type=int, default=256, help="answer tokens per request (each answer ends in a new prompt)"
    )
    p.add_argument(
        "--prefix-reuse",
        type=float,
        default=0.0,
        dest="prefix_reuse",
        help="share of each prompt already in the prefix cache, [0, 1) (default 0)",
    )
    _storage_options(p)
    p.add_argument(
        "--replica-sizes",
        default="1,2,4,8",
        dest="replica_sizes",
        help="comma-separated GPUs per replica to consider (default 1,2,4,8)",
    )
    p.add_argument(
        "--eta-f", type=float, default=1.0, dest="eta_f", help="achieved fraction of peak compute (0, 1]"
    )
    p.add_argument(
        "--eta-b", type=float, default=1.0, dest="eta_b", help="achieved fraction of peak bandwidth (0, 1]"
    )
    _json_option(p)

    p = sub.add_parser("list", help="shipped model names and catalogued GPUs")
    _json_option(p)
    return parser


# --- helpers -----------------------------------------------------------------


def _load_model(args):
    from aiinfra.catalog import models

    if args.model and args.config:
        raise ValueError("give either --model or --config, not both")
    if args.config:
        return models.load(Path(args.config), approximate=args.approximate)
    if args.model:
        return models.load(args.model, approximate=args.approximate)
    raise ValueError("one of --model NAME or --config PATH is required")


def _count_label(m, data, rows):
    """Say whether the count is exact or an estimate, in the JSON and at the top of the table."""
    from aiinfra.catalog.architectures import FAMILY_NOTES

    data.update(model_type=m.model_type, count=m.label, exact=bool(m.exact))
    if m.exact:
        rows[:0] = [("count", f"exact ({m.model_type})"), ("  family", FAMILY_NOTES[m.model_type])]
    else:
        data["assumptions"] = list(m.assumptions)
        rows[:0] = [("count", f"APPROXIMATE ESTIMATE ({m.model_type}), not an exact count")]
        rows[1:1] = [("  assumes", a) for a in m.assumptions]
    if m.notes:
        data["notes"] = list(m.notes)
        rows += [("note", n) for n in m.notes]


def _attention_text(m) -> str:
    return m.layer_summary()


def _count(name, value, minimum=1):
    from aiinfra.formula import check

    return check(name, value, f"int>={minimum}", scalar=True)


def _deployment(args, model, gpu, **settings):
    """The one Deployment a subcommand describes, from the storage options shared by memory/decode/plan."""
    from aiinfra.deployment import Deployment
    from aiinfra.formula import check

    return Deployment(
        model,
        gpu,
        weight_precision=args.precision,
        kv_precision=check("--kv-bytes", args.kv_bytes, ">0"),
        memory_reserve=check("--reserve", args.reserve, "[0,1)"),
        **settings,
    )


def _rows_table(title, rows):
    """Render ``(label, text)`` rows as an aligned two-column table."""
    width = max(len(label) for label, _ in rows)
    lines = [title, "-" * max(len(title), width + 20)]
    lines += [f"{label:<{width}}  {text}" for label, text in rows]
    return "\n".join(lines)


def _emit(args, title, rows, data):
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=False))
    else:
        print(_rows_table(title, rows))


def _int(x):
    return f"{int(x):,}"


# --- subcommands -------------------------------------------------------------


def _cmd_params(args):
    from aiinfra import compute, memory, units
    from aiinfra.catalog import models

    m = _load_model(args)
    groups = models.params_by_group(m)
    data = {
        "model": m.name,
        "total_params": int(models.total_params(m)),
        "active_params": int(models.active_params(m)),
        "embedding_params": int(models.embedding_params(m)),
        "lm_head_params": int(models.lm_head_params(m)),
        "block_linear_params_per_token": int(models.block_linear_params_per_token(m)),
        "decode_read_params": int(models.decode_read_params(m)),
        "params_by_group": {k: int(v) for k, v in groups.items()},
        "n_layers": int(m.n_layers),
        "hidden_size": int(m.hidden_size),
        "n_heads": int(m.n_heads),
        "n_kv_heads": int(m.n_kv_heads),
        "head_dim": int(m.head_dim),
        "vocab_size": int(m.vocab_size),
        "tie_word_embeddings": bool(m.tie_word_embeddings),
        "attention": m.attention_kind,
        "sliding_window": m.sliding_window,
        "sliding_window_layers": list(m.sliding_window_layers),
        "max_position_embeddings": m.max_position_embeddings,
        "kv_bytes_per_token": float(memory.kv_bytes_per_token(m)),
        "state_bytes_per_request": float(memory.state_bytes_per_request(m)),
        "state_layers": list(m.state_layers),
        "flops_per_token": float(compute.flops_per_token(m)),
    }
    rows = [
        ("total parameters", _int(data["total_params"])),
        ("active parameters per token", _int(data["active_params"])),
        ("embedding table", _int(data["embedding_params"])),
        ("lm_head matmul (vocab x hidden)", _int(data["lm_head_params"])),
        ("block matmul weights per token", _int(data["block_linear_params_per_token"])),
        ("read per decode step", _int(data["decode_read_params"])),
        (
            "layers / hidden / heads / kv heads / head_dim",
            f"{m.n_layers} / {m.hidden_size} / {m.n_heads} / {m.n_kv_heads} / {m.head_dim}",
        ),
        ("vocab (tied embeddings)", f"{m.vocab_size:,} ({'yes' if m.tie_word_embeddings else 'no'})"),
        (f"attention layers ({m.attention_kind.upper()})", _attention_text(m)),
        ("KV per token (BF16, all layers)", units.fmt_bytes(data["kv_bytes_per_token"], "KiB")),
        ("state per request (conv BF16 + recurrent FP32)", units.fmt_bytes(data["state_bytes_per_request"])),
        ("matrix FLOPs per token", units.fmt_flops(data["flops_per_token"])),
    ]
    rows += [(f"  group {k}", _int(v)) for k, v in groups.items()]
    _count_label(m, data, rows)
    _emit(args, f"params: {m.name}", rows, data)


def _cmd_check(args):
    from aiinfra.catalog import checkpoint

    if args.model and args.config:
        raise ValueError("give either --model or --config, not both")
    report = checkpoint.compare(
        args.folder, config=args.model or args.config, approximate=args.approximate, dtype=args.dtype
    )
    data = {
        "model": report.name,
        "compared_with": report.source,
        "exact_match": report.exact,
        "total_params": report.predicted_params,
        "stored_params": report.stored_params,
        "predicted_bytes_by_dtype": report.predicted_bytes,
        "stored_bytes_by_dtype": report.stored_bytes,
        "index_total_size_bytes": report.index_total_size,
        "differences": [
            {
                "group": g.group,
                "predicted_params": g.predicted_params,
                "stored_params": g.stored_params,
                "missing": list(g.missing),
                "unexpected": list(g.unexpected),
                "shape_mismatches": [list(x) for x in g.shape_mismatches],
                "dtype_mismatches": [list(x) for x in g.dtype_mismatches],
            }
            for g in report.differences
        ],
        "not_parameters": {k: {"tensors": n, "bytes": b} for k, (n, b) in report.extras.items()},
        "notes": list(report.notes),
    }
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(report.summary())
    return 0 if report.exact else 1


def _capacity_text(n) -> str:
    return "none" if n is None else ("weights do not fit" if n == 0 else f"{n:,}")


def _memory_bound_and_prediction(d, batch, prompt, ctx, total_bytes):
    """``memory``'s two capacities at the bound and as calibrated predictions: ``(bound, prediction, why)``.

    The bound holds weights, KV and state in all the memory, nothing back,
    split ideally over any number of GPUs. The prediction
    (:func:`aiinfra.predict.min_gpus` and :func:`~aiinfra.predict.max_batch`)
    keeps the calibrated usable share, adds activations growing with the
    tokens in flight, and needs a TP width that divides the KV heads; its
    requests hold ``ctx`` tokens, read as a ``P``-token prompt (capped below
    ``ctx``) plus ``ctx - P`` generated ones. ``prediction`` is None and
    ``why`` the reason when it cannot be made.
    """
    from aiinfra import memory, predict

    full = d.replace(memory_reserve=0.0)
    bound = {
        "min_gpus": memory.min_cards(total_bytes, d.gpu.memory_bytes, 0.0),
        "max_batch_on_one_gpu": int(full.max_batch(ctx)) if full.request_bytes(ctx) > 0 else 0,
    }
    p_tokens = max(1, min(prompt, ctx - 1))
    g_tokens = max(1, ctx - p_tokens)
    try:
        p = predict.fitted()
        one = predict.max_batch(predict.setup_of_deployment(d), p, p_tokens, g_tokens)
        most = predict.min_gpus(d, p, batch, p_tokens, g_tokens)
    except ValueError as exc:
        return bound, None, str(exc)
    return bound, {"min_gpus": most, "max_batch_on_one_gpu": one}, None


def _cmd_memory(args):
    from aiinfra import calibration, memory, units
    from aiinfra.catalog import hardware, models

    m = _load_model(args)
    batch = _count("--batch", args.batch)
    prompt = _count("--prompt", args.prompt)
    ctx = _count("--context", prompt if args.context is None else args.context, minimum=0)
    g = hardware.gpu(args.gpu) if args.gpu else hardware.gpu("H100 SXM")
    d = _deployment(args, m, g)
    w, kv_tok, kv_req = d.weight_bytes, d.kv_bytes_per_token, float(d.kv_bytes(ctx))
    state = d.state_bytes_per_request
    total = w + batch * (kv_req + state)
    data = {
        "model": m.name,
        "precision": args.precision,
        "total_params": int(models.total_params(m)),
        "active_params": int(models.active_params(m)),
        "weight_bytes": w,
        "kv_bytes_per_token": kv_tok,
        "context_tokens": ctx,
        "kv_bytes_per_request": kv_req,
        "state_bytes_per_request": state,
        "request_bytes": kv_req + state,
        "batch": batch,
        "kv_bytes_batch": batch * kv_req,
        "state_bytes_batch": batch * state,
        "total_bytes": total,
    }
    rows = [
        (f"weights ({args.precision})", f"{units.fmt_bytes(w)}  ({units.fmt_bytes(w, 'GiB')})"),
        ("KV per token", f"{units.fmt_bytes(kv_tok, 'KB')}  ({units.fmt_bytes(kv_tok, 'KiB')})"),
        (
            f"KV per request @ {ctx:,} tokens",
            f"{units.fmt_bytes(kv_req)}  ({units.fmt_bytes(kv_req, 'GiB', 3)})",
        ),
        ("state per request (fixed, any context)", units.fmt_bytes(state)),
        ("attention layers", _attention_text(m)),
        (f"KV + state for batch {batch}", units.fmt_bytes(batch * (kv_req + state))),
        ("weights + KV + state", units.fmt_bytes(total)),
    ]
    if args.gpu:
        cards = memory.min_cards(total, g.memory_bytes, d.memory_reserve * g.memory_bytes)
        max_batch_one = int(d.max_batch(ctx)) if kv_req > 0 else 0
        data.update(
            gpu=g.name,
            gpu_memory_bytes=float(g.memory_bytes),
            memory_reserve=d.memory_reserve,
            min_gpus_for_weights_and_kv=cards,
            max_batch_on_one_gpu=max_batch_one,
        )
        bound, pred, why = _memory_bound_and_prediction(d, batch, prompt, ctx, total)
        data.update(bound=bound, prediction=pred, calibration=calibration.load().name)
        if why:
            data["prediction_error"] = why
        flat = f"{d.memory_reserve:.0%} flat reserve"
        rows += [
            (f"GPU {g.name}", f"{units.fmt_bytes(g.memory_bytes)}, {d.memory_reserve:.0%} held back"),
            (
                "",
                f"bound (all memory, ideal split)  |  {flat}  |  prediction (calibrated; TP divides the KV heads)",
            ),
            (
                "GPUs to hold weights + KV",
                "  |  ".join(
                    _capacity_text(x) for x in (bound["min_gpus"], cards, pred and pred["min_gpus"])
                ),
            ),
            (
                "largest batch on one GPU",
                "  |  ".join(
                    _capacity_text(x)
                    for x in (
                        bound["max_batch_on_one_gpu"],
                        max_batch_one if d.free_bytes > 0 else 0,
                        pred and pred["max_batch_on_one_gpu"],
                    )
                ),
            ),
        ]
        if why:
            rows.append(("prediction", f"none: {why}"))
    _count_label(m, data, rows)
    _emit(args, f"memory: {m.name}", rows, data)


def _cmd_decode(args):
    from aiinfra import units
    from aiinfra.catalog import models
    from aiinfra.formula import check

    m = _load_model(args)
    batch = _count("--batch", args.batch)
    prompt = _count("--prompt", args.prompt)
    out_tokens = _count("--output-tokens", args.output_tokens)
    ctx = _count("--context", prompt if args.context is None else args.context, minimum=0)
    d = _deployment(
        args,
        m,
        args.gpu,
        n_gpus=_count("--n-gpus", args.n_gpus),
        compute_precision=args.compute_precision,
        eta_f=check("--eta-f", args.eta_f, "(0,1]"),
        eta_b=check("--eta-b", args.eta_b, "(0,1]"),
    )
    step = d.step(batch, ctx)
    prefill = d.prefill(prompt)
    reply = d.request(prompt, out_tokens, batch)
    resident = d.weight_bytes + batch * float(d.held_bytes(prompt + out_tokens))
    pi, bw, n = d.peak_flops_per_s, d.bandwidth_bytes_per_s, d.n_gpus
    data = {
        "model": m.name,
        "gpu": d.gpu.name,
        "n_gpus": n,
        "precision": args.precision,
        "compute_precision": args.compute_precision,
        "batch": batch,
        "context_tokens": ctx,
        "prompt_tokens": prompt,
        "output_tokens": out_tokens,
        "eta_f": d.eta_f,
        "eta_b": d.eta_b,
        "memory_reserve": d.memory_reserve,
        "peak_flops_per_s": pi,
        "bandwidth_bytes_per_s": bw,
        "decode_flops_per_request": float(d.step(1, ctx).flops),
        "weight_bytes_read_per_step": d.weight_bytes_read,
        "kv_bytes_read_per_request": float(d.kv_bytes(ctx)),
        "state_bytes_per_request": float(d.state_bytes_per_request),
        "compute_time_s": float(step.compute_s),
        "memory_time_s": float(step.memory_s),
        "step_time_s": float(step.time_s),
        "bound": step.bound,
        "tokens_per_s_per_user": float(step.tokens_per_s_per_user),
        "tokens_per_s_aggregate": float(step.tokens_per_s),
        "critical_batch_size": float(d.critical_batch),
        "ridge_point_flops_per_byte": float(d.ridge_flops_per_byte),
        "prefill_flops": float(prefill.flops),
        "ttft_s": float(prefill.time_s),
        "mean_tpot_s": float(reply.tpot_s if reply.decode_steps else step.time_s),
        "end_to_end_latency_s": float(reply.end_to_end_s),
        "resident_bytes_at_end": resident,
        "fits_in_memory": bool(batch * d.held_bytes(prompt + out_tokens) <= d.free_bytes),
    }
    rows = [
        (
            "GPU",
            f"{n} x {d.gpu.name}: {units.fmt_flops_rate(pi)} dense {args.compute_precision}, "
            f"{units.fmt_rate_bytes(bw)}",
        ),
        ("efficiency (compute / bandwidth)", f"{d.eta_f:g} / {d.eta_b:g}"),
        (f"decode FLOPs per request @ {ctx:,} ctx", units.fmt_flops(data["decode_flops_per_request"])),
        ("weights read per step", units.fmt_bytes(d.weight_bytes_read)),
        ("KV read per request per step", units.fmt_bytes(data["kv_bytes_read_per_request"])),
        ("state read per request per step (fixed)", units.fmt_bytes(data["state_bytes_per_request"])),
        (f"compute time (batch {batch})", units.fmt_time(data["compute_time_s"], 4)),
        (f"memory time (batch {batch})", units.fmt_time(data["memory_time_s"])),
        (f"decode step = TPOT @ {ctx:,} ctx", f"{units.fmt_time(data['step_time_s'])}  ({data['bound']})"),
        ("tokens/s per user", f"{data['tokens_per_s_per_user']:,.1f}"),
        (f"tokens/s aggregate (batch {batch})", f"{data['tokens_per_s_aggregate']:,.1f}"),
        ("critical batch B* (weights only)", f"{data['critical_batch_size']:,.1f}"),
        ("ridge point", f"{data['ridge_point_flops_per_byte']:,.1f} FLOP/B"),
        (
            f"prefill FLOPs @ {prompt:,} tokens (causal)",
            f"{units.fmt_flops(data['prefill_flops'])}  ({prefill.bound})",
        ),
        ("TTFT (no queueing)", units.fmt_time(data["ttft_s"])),
        ("mean TPOT over the reply", units.fmt_time(data["mean_tpot_s"])),
        (f"end-to-end, {out_tokens:,} output tokens", units.fmt_time(data["end_to_end_latency_s"])),
        (
            "weights + KV + state at the end of the reply",
            f"{units.fmt_bytes(resident)}{'' if data['fits_in_memory'] else '  (does NOT fit)'}",
        ),
    ]
    if models.active_params(m) != models.total_params(m):
        rows.append(("note", "MoE: reads count the active experts only (optimistic once batch > 1)"))
    _beside_prediction(rows, data, _speed_kind(d), _decode_prediction(d, batch, ctx, prompt, out_tokens))
    _count_label(m, data, rows)
    _emit(args, f"decode: {m.name} on {d.gpu.name}", rows, data)


#: The speeds ``decode`` prints, by JSON key: the row they go with and how to print them.
_DECODE_SPEEDS = {
    "step_time_s": ("decode step", "time"),
    "tokens_per_s_per_user": ("tokens/s per user", "rate"),
    "tokens_per_s_aggregate": ("tokens/s aggregate", "rate"),
    "ttft_s": ("TTFT", "time"),
    "mean_tpot_s": ("mean TPOT", "time"),
    "end_to_end_latency_s": ("end-to-end", "time"),
}


def _decode_prediction(d, batch, ctx, prompt, out_tokens):
    """The calibrated prediction of ``decode``'s speeds (:mod:`aiinfra.predict`), or the reason there is none."""
    from aiinfra import predict

    try:
        setup = predict.setup_of_deployment(d)
    except ValueError as exc:
        return None, str(exc)
    p = predict.fitted()
    step = predict.decode_step_s(setup, p, batch, ctx)
    ttft, tpot, e2e = predict.reply_s(setup, p, batch, prompt, out_tokens)
    speeds = {
        "step_time_s": step,
        "tokens_per_s_per_user": 1.0 / step,
        "tokens_per_s_aggregate": batch / step,
        "ttft_s": ttft,
        "mean_tpot_s": tpot if out_tokens > 1 else step,
        "end_to_end_latency_s": e2e,
    }
    return speeds, None


def _speed_kind(d) -> str:
    """What a Deployment's own speeds are: the bound at 100 % of peak, or a roofline at the efficiencies given."""
    return "bound" if d.eta_f == d.eta_b == 1.0 else f"roofline at eta_f {d.eta_f:g}, eta_b {d.eta_b:g}"


def _beside_prediction(rows, data, kind, prediction):
    """Label ``decode``'s speed rows with ``kind`` (bound, or a roofline at given efficiencies) and add the prediction."""
    from aiinfra import calibration

    speeds, why = prediction
    data.update(speeds_are=kind, prediction=speeds, calibration=calibration.load().name)
    if why:
        data["prediction_error"] = why
    for i, (label, text) in enumerate(rows):
        key = next((k for k, (start, _) in _DECODE_SPEEDS.items() if label.startswith(start)), None)
        if key is None:
            continue
        pred = "none" if speeds is None else _speed_text(speeds[key], _DECODE_SPEEDS[key][1])
        rows[i] = (label, f"{text}  [{kind}]  |  {pred}  [prediction]")
    rows.append(("prediction", f"calibrated: {data['calibration']}" + (f"; none: {why}" if why else "")))


def _cmd_roofline(args):
    from aiinfra import roofline, units
    from aiinfra.catalog import hardware

    g = hardware.gpu(args.gpu)
    pi = g.dense_flops_per_s(args.compute_precision)
    bw = g.memory_bandwidth_bytes_per_s
    tc = float(roofline.compute_time_s(args.flops, pi))
    tm = float(roofline.memory_time_s(args.bytes_moved, bw))
    data = {
        "gpu": g.name,
        "flops": float(args.flops),
        "bytes_moved": float(args.bytes_moved),
        "peak_flops_per_s": pi,
        "bandwidth_bytes_per_s": bw,
        "compute_time_s": tc,
        "memory_time_s": tm,
        "step_time_overlapped_s": float(
            roofline.step_time_overlapped_s(args.flops, args.bytes_moved, pi, bw)
        ),
        "step_time_serial_s": float(roofline.step_time_serial_s(args.flops, args.bytes_moved, pi, bw)),
        "arithmetic_intensity_flops_per_byte": float(
            roofline.arithmetic_intensity_flops_per_byte(args.flops, args.bytes_moved)
        ),
        "ridge_point_flops_per_byte": float(roofline.ridge_point_flops_per_byte(pi, bw)),
        "bound": roofline.bound_of(tc, tm),
    }
    rows = [
        ("GPU", f"{g.name}: {units.fmt_flops_rate(pi)}, {units.fmt_rate_bytes(bw)}"),
        ("compute time F/Pi", units.fmt_time(tc, 4)),
        ("memory time R/beta", units.fmt_time(tm, 4)),
        ("overlapped bound max(...)", units.fmt_time(data["step_time_overlapped_s"], 4)),
        ("serial bound sum", units.fmt_time(data["step_time_serial_s"], 4)),
        ("arithmetic intensity", f"{data['arithmetic_intensity_flops_per_byte']:,.2f} FLOP/B"),
        ("ridge point", f"{data['ridge_point_flops_per_byte']:,.1f} FLOP/B"),
        ("verdict", data["bound"]),
    ]
    _emit(args, "roofline", rows, data)


_SPEED_ROWS = (
    ("ttft_s", "TTFT (mean)", "time"),
    ("tpot_s", "TPOT (mean, after the first token)", "time"),
    ("step_s", "decode step at the mean context", "time"),
    ("latency_s", "latency of the whole batch", "time"),
    ("throughput_tok_s", "output tokens/s, all replicas", "rate"),
    ("user_tok_s", "tokens/s per user", "rate"),
    ("max_batch", "largest batch that fits", "count"),
    ("fits", "batch fits in memory", "flag"),
)


def _speed_text(value, kind):
    from aiinfra import units

    if kind == "time":
        return units.fmt_time(value)
    if kind == "rate":
        return f"{value:,.1f}"
    return f"{value:,}" if kind == "count" else ("yes" if value else "NO")


def _cmd_predict(args):
    from aiinfra import calibration, predict
    from aiinfra.formula import check

    m = _load_model(args)
    setup = predict.Setup(
        m,
        args.gpu,
        tp=_count("--tp", args.tp),
        replicas=_count("--replicas", args.replicas),
        weight_precision=args.precision,
        kv_bytes_per_element=check("--kv-bytes", args.kv_bytes, ">0"),
        compute_precision=args.compute_precision,
    )
    cal = calibration.load()
    est = predict.estimate(
        setup,
        _count("--batch", args.batch, minimum=0),
        _count("--prompt", args.prompt),
        _count("--output", args.output),
        cal,
    )
    data = {
        "model": m.name,
        "gpu": setup.gpu.name,
        "tp": setup.tp,
        "replicas": setup.replicas,
        "batch": est.batch,
        "prompt_tokens": args.prompt,
        "output_tokens": args.output,
        "precision": args.precision,
        "kv_bytes": setup.kv_bytes_per_element,
        "compute_precision": args.compute_precision,
        "prediction": est.prediction.as_dict(),
        "bound": est.bound.as_dict(),
        "parameters": est.parameters.as_dict(),
        "calibration": {
            "name": est.calibration,
            "file": "aiinfra/catalog/data/calibration.json",
            **{k: v for k, v in cal.provenance.items() if k.startswith(("held_out_", "train_"))},
        },
    }
    rows = [
        ("run", f"{est.batch:,} requests of {args.prompt:,} + {args.output:,} tokens"),
        ("GPUs", f"{setup.replicas} replica(s) x TP {setup.tp} x {setup.gpu.name}"),
        ("", "prediction  |  bound (100% of peak, no overhead)"),
    ]
    for key, label, kind in _SPEED_ROWS:
        pred, bound = getattr(est.prediction, key), getattr(est.bound, key)
        rows.append((label, f"{_speed_text(pred, kind)}  |  {_speed_text(bound, kind)}"))
    rows.append(("calibration", f"{est.calibration} (aiinfra/catalog/data/calibration.json)"))
    _count_label(m, data, rows)
    _emit(args, f"predict: {m.name} on {setup.gpu.name}", rows, data)


def _cmd_plan(args):
    from aiinfra import calibration, predict, units
    from aiinfra.formula import check
    from aiinfra.serving import capacity

    m = _load_model(args)
    try:
        sizes = tuple(int(x) for x in args.replica_sizes.split(",") if x.strip())
    except ValueError:
        raise ValueError(
            f"--replica-sizes must be comma-separated whole numbers, got {args.replica_sizes!r}"
        ) from None
    tpot = check("--tpot-ms", args.tpot_ms, ">0") * units.ms
    d = _deployment(
        args,
        m,
        args.gpu,
        eta_f=check("--eta-f", args.eta_f, "(0,1]"),
        eta_b=check("--eta-b", args.eta_b, "(0,1]"),
    )
    workload = dict(
        replica_sizes=sizes,
        prompt_tokens=args.context if args.prompt is None else _count("--prompt", args.prompt),
        output_tokens=_count("--output", args.output),
        prefix_reuse=check("--prefix-reuse", args.prefix_reuse, "[0,1)"),
    )
    plan = capacity.plan(d, args.users, tpot, args.context, **workload)
    try:
        predicted, why = predict.plan(d, args.users, tpot, args.context, **workload), None
    except ValueError as exc:
        predicted, why = None, str(exc)
    data = {
        "model": m.name,
        "gpu": d.gpu.name,
        "concurrent_users": args.users,
        "target_tpot_s": tpot,
        "context_tokens": args.context,
        "precision": args.precision,
        **plan.as_dict(),
        "prediction": None if predicted is None else predicted.as_dict(),
        "calibration": calibration.load().name,
    }
    if why:
        data["prediction_error"] = why
    label = "bound" if d.eta_f == d.eta_b == 1.0 else f"at eta_f {d.eta_f:g}, eta_b {d.eta_b:g}"

    def text(p):
        return (
            f"{p.gpus_total:,} GPUs = {p.replicas:,} x {p.gpus_per_replica}, {p.users_per_replica:,} users each "
            f"(limited by {p.limiting}); TPOT {units.fmt_time(p.tpot_s)}, prefill {p.prefill_share:.0%} of the time"
        )

    rows = [
        (
            "target",
            f"{args.users:,} users at <= {units.fmt_time(tpot)} per token, {args.context:,} tokens each",
        ),
        (
            "workload",
            f"prompts of {workload['prompt_tokens']:,} tokens ({workload['prefix_reuse']:.0%} cached), "
            f"answers of {workload['output_tokens']:,}: {plan.requests_per_s:,.1f} requests/s",
        ),
        (f"plan ({label})", text(plan)),
        ("plan (calibrated prediction)", text(predicted) if predicted else f"none: {why}"),
        ("prefill per request", units.fmt_time(plan.prefill_s)),
        ("decode step at that load", units.fmt_time(plan.step_time_s)),
    ]
    _count_label(m, data, rows)
    _emit(args, f"plan: {m.name} on {d.gpu.name} (no queueing, no spare capacity)", rows, data)


def _cmd_list(args):
    from aiinfra.catalog import hardware, models

    names = models.shipped_names()
    data = {
        "models": names,
        "gpus": [g.name for g in hardware.catalog()],
        "model_sources": {
            n: {
                "config": models.SHIPPED[n][1],
                "copy": "reconstructed" if n in models.RECONSTRUCTED else "as released",
            }
            for n in names
        },
        "exact_model_types": list(models.SUPPORTED_MODEL_TYPES),
    }
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(
            "models:\n  "
            + "\n  ".join(
                n + (" (config reconstructed from published values)" if n in models.RECONSTRUCTED else "")
                for n in names
            )
        )
        print("gpus:\n  " + "\n  ".join(data["gpus"]))
        print("model types counted exactly:\n  " + ", ".join(data["exact_model_types"]))


COMMANDS = {
    "params": _cmd_params,
    "check": _cmd_check,
    "memory": _cmd_memory,
    "decode": _cmd_decode,
    "roofline": _cmd_roofline,
    "predict": _cmd_predict,
    "plan": _cmd_plan,
    "list": _cmd_list,
}


def _run(args) -> int:
    """Run one subcommand; warnings (a context past the model's positions) become one stderr line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = COMMANDS[args.command](args) or 0
    seen = set()
    for w in caught:
        text = str(w.message)
        if text not in seen:
            seen.add(text)
            print(f"aiinfra: warning: {text}", file=sys.stderr)
    return status


def main(argv=None) -> int:
    """Entry point of the ``aiinfra`` console script; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return _run(args)
    except _UsageError as exc:
        print(f"{exc} (try --help)", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, KeyError, OSError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"aiinfra: error: {msg}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
