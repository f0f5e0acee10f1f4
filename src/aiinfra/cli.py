"""The ``aiinfra`` calculator: the book's formulas from the command line.

    aiinfra params   --model Qwen3-8B
    aiinfra memory   --config ./my-model/config.json --precision int8 --context 8192 --batch 16 --gpu h100
    aiinfra decode   --model Llama-3.1-8B --gpu h100 --batch 32 --prompt 2000 --output-tokens 500
    aiinfra roofline --flops 1.4e11 --bytes 7e10 --gpu h100
    aiinfra plan     --model Llama-3.1-70B --gpu h100 --users 1000 --tpot-ms 50 --context 8192
    aiinfra list

Every subcommand prints a table for people and, with ``--json``, one JSON
object for programs (SI units, the unit in every key). A bad argument gets
one line on stderr and exit status 2; nothing prints a traceback.
Also runnable as ``python -m aiinfra``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr, not usage plus message."""

    def error(self, message):  # noqa: D401 - argparse API
        raise _UsageError(f"{self.prog}: {message}")


class _UsageError(Exception):
    pass


# --- shared option groups ----------------------------------------------------

def _model_options(p, required=True):
    g = p.add_argument_group("model (one of)")
    g.add_argument("--model", metavar="NAME", help="a shipped model name (see `aiinfra list`)")
    g.add_argument("--config", metavar="PATH", help="path to a Hugging Face config.json (or its folder)")
    p.set_defaults(_model_required=required)


def _gpu_option(p, default=None):
    p.add_argument("--gpu", metavar="NAME", default=default,
                   help="GPU name or alias (h100, a100, pro6000, ...)" + (f"; default {default}" if default else ""))


def _workload_options(p):
    p.add_argument("--precision", default="bf16", help="weight storage precision (bf16, fp16, fp8, int8, int4, ...)")
    p.add_argument("--kv-bytes", type=float, default=2.0, dest="kv_bytes",
                   help="bytes per stored KV element (2 = BF16 cache, 1 = FP8)")
    p.add_argument("--batch", type=int, default=1, help="requests decoded together")
    p.add_argument("--context", type=int, default=None,
                   help="tokens in each request's KV cache (default: --prompt)")
    p.add_argument("--prompt", type=int, default=2048, help="prompt tokens (prefill length)")
    p.add_argument("--output-tokens", type=int, default=256, dest="output_tokens", help="generated tokens per request")


def _efficiency_options(p):
    p.add_argument("--eta-f", type=float, default=1.0, dest="eta_f", help="achieved fraction of peak compute (0, 1]")
    p.add_argument("--eta-b", type=float, default=1.0, dest="eta_b", help="achieved fraction of peak bandwidth (0, 1]")
    p.add_argument("--n-gpus", type=int, default=1, dest="n_gpus",
                   help="GPUs sharing the model (ideal tensor parallelism, no communication cost)")
    p.add_argument("--compute-precision", default="bf16", dest="compute_precision", choices=["bf16", "fp8"],
                   help="matrix-input precision whose dense peak is used")


def _json_option(p):
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="aiinfra", description="Back-of-envelope calculator for LLM inference infrastructure "
                                                  "(AI Infrastructure by the Numbers).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("params", help="exact parameter counts of a model")
    _model_options(p)
    _json_option(p)

    p = sub.add_parser("memory", help="weights and KV cache bytes; with --gpu, how many GPUs and how big a batch")
    _model_options(p)
    _gpu_option(p)
    _workload_options(p)
    _json_option(p)

    p = sub.add_parser("decode", help="roofline bounds on prefill, decode step, TTFT, TPOT and tokens/s")
    _model_options(p)
    _gpu_option(p, default="H100 SXM")
    _workload_options(p)
    _efficiency_options(p)
    _json_option(p)

    p = sub.add_parser("roofline", help="compute vs memory time of any piece of work on a GPU")
    _gpu_option(p, default="H100 SXM")
    p.add_argument("--flops", type=float, required=True, help="floating-point operations of the work")
    p.add_argument("--bytes", type=float, required=True, dest="bytes_moved", help="bytes it must move")
    p.add_argument("--compute-precision", default="bf16", dest="compute_precision", choices=["bf16", "fp8"])
    _json_option(p)

    p = sub.add_parser("plan", help="fewest GPUs for U concurrent users at a target TPOT")
    _model_options(p)
    _gpu_option(p, default="H100 SXM")
    p.add_argument("--users", type=int, required=True, help="concurrent users (each decoding)")
    p.add_argument("--tpot-ms", type=float, required=True, dest="tpot_ms", help="target time per output token, ms")
    p.add_argument("--context", type=int, default=8192, help="tokens in each user's KV cache")
    p.add_argument("--precision", default="bf16", help="weight storage precision")
    p.add_argument("--kv-bytes", type=float, default=2.0, dest="kv_bytes", help="bytes per stored KV element")
    p.add_argument("--reserve", type=float, default=0.1,
                   help="share of each GPU's memory held back for workspace, [0, 1) (default 0.1)")
    p.add_argument("--replica-sizes", default="1,2,4,8", dest="replica_sizes",
                   help="comma-separated GPUs per replica to consider (default 1,2,4,8)")
    p.add_argument("--eta-f", type=float, default=1.0, dest="eta_f")
    p.add_argument("--eta-b", type=float, default=1.0, dest="eta_b")
    _json_option(p)

    p = sub.add_parser("list", help="shipped model names and catalogued GPUs")
    _json_option(p)
    return parser


# --- helpers -----------------------------------------------------------------

def _load_model(args):
    from . import models

    if args.model and args.config:
        raise ValueError("give either --model or --config, not both")
    if args.config:
        return models.load(Path(args.config))
    if args.model:
        return models.load(args.model)
    raise ValueError("one of --model NAME or --config PATH is required")


def _load_gpu(name):
    from . import hardware

    return hardware.gpu(name)


def _positive_int(name, value, minimum=1):
    from . import _check

    return _check.integer(name, value, minimum=minimum)


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

def cmd_params(args):
    from . import compute, models

    m = _load_model(args)
    data = {
        "model": m.name,
        "total_params": int(models.total_params(m)),
        "active_params": int(models.active_params(m)),
        "embedding_params": int(models.embedding_params(m)),
        "lm_head_params": int(models.lm_head_params(m)),
        "block_linear_params_per_token": int(models.block_linear_params_per_token(m)),
        "decode_read_params": int(models.decode_read_params(m)),
        "n_layers": int(m.n_layers),
        "hidden_size": int(m.hidden_size),
        "n_heads": int(m.n_heads),
        "n_kv_heads": int(m.n_kv_heads),
        "head_dim": int(m.head_dim),
        "vocab_size": int(m.vocab_size),
        "tie_word_embeddings": bool(m.tie_word_embeddings),
        "flops_per_token": float(compute.flops_per_token(m)),
    }
    rows = [
        ("total parameters", _int(data["total_params"])),
        ("active parameters per token", _int(data["active_params"])),
        ("embedding table", _int(data["embedding_params"])),
        ("lm_head matmul (vocab x hidden)", _int(data["lm_head_params"])),
        ("block matmul weights per token", _int(data["block_linear_params_per_token"])),
        ("read per decode step", _int(data["decode_read_params"])),
        ("layers / hidden / heads / kv heads / head_dim",
         f"{m.n_layers} / {m.hidden_size} / {m.n_heads} / {m.n_kv_heads} / {m.head_dim}"),
        ("vocab (tied embeddings)", f"{m.vocab_size:,} ({'yes' if m.tie_word_embeddings else 'no'})"),
        ("matrix FLOPs per token", f"{data['flops_per_token'] / 1e9:.2f} GFLOPs"),
    ]
    _emit(args, f"params: {m.name}", rows, data)


def cmd_memory(args):
    from . import _check, decode, memory, models, units

    m = _load_model(args)
    batch = _positive_int("--batch", args.batch)
    prompt = _positive_int("--prompt", args.prompt)
    ctx = _positive_int("--context", prompt if args.context is None else args.context, minimum=0)
    kv_b = _check.positive("--kv-bytes", args.kv_bytes)
    w = float(memory.weight_bytes(m, args.precision))
    kv_tok = float(memory.kv_bytes_per_token(m, kv_b))
    kv_req = float(memory.kv_bytes_per_request(m, ctx, kv_b))
    total = w + batch * kv_req
    data = {
        "model": m.name,
        "precision": args.precision,
        "total_params": int(models.total_params(m)),
        "weight_bytes": w,
        "kv_bytes_per_token": kv_tok,
        "context_tokens": ctx,
        "kv_bytes_per_request": kv_req,
        "batch": batch,
        "kv_bytes_batch": batch * kv_req,
        "total_bytes": total,
    }
    rows = [
        (f"weights ({args.precision})", f"{units.fmt_bytes(w)}  ({units.fmt_bytes(w, 'GiB')})"),
        ("KV per token", f"{units.fmt_bytes(kv_tok, 'KB')}  ({units.fmt_bytes(kv_tok, 'KiB')})"),
        (f"KV per request @ {ctx:,} tokens", f"{units.fmt_bytes(kv_req)}  ({units.fmt_bytes(kv_req, 'GiB', 3)})"),
        (f"KV for batch {batch}", units.fmt_bytes(batch * kv_req)),
        ("weights + KV", units.fmt_bytes(total)),
    ]
    if args.gpu:
        g = _load_gpu(args.gpu)
        cards = int(memory.min_cards(total, g.memory_bytes))
        free_one = g.memory_bytes - w
        max_batch_one = int(decode.max_batch_from_kv_budget(free_one, kv_req)) if free_one > 0 and kv_req > 0 else 0
        data.update(gpu=g.name, gpu_memory_bytes=float(g.memory_bytes), min_gpus_for_weights_and_kv=cards,
                    max_batch_on_one_gpu=max_batch_one)
        rows += [
            (f"GPU {g.name}", units.fmt_bytes(g.memory_bytes)),
            ("GPUs to hold weights + KV (ideal split)", str(cards)),
            ("largest batch on one GPU (KV budget)", str(max_batch_one) if free_one > 0 else "weights do not fit"),
        ]
    _emit(args, f"memory: {m.name}", rows, data)


def cmd_decode(args):
    import numpy as np

    from . import _check, compute, decode, memory, models, roofline, units

    m = _load_model(args)
    g = _load_gpu(args.gpu)
    batch = _positive_int("--batch", args.batch)
    prompt = _positive_int("--prompt", args.prompt)
    out_tokens = _positive_int("--output-tokens", args.output_tokens)
    ctx = _positive_int("--context", prompt if args.context is None else args.context, minimum=0)
    n = _positive_int("--n-gpus", args.n_gpus)
    kv_b = _check.positive("--kv-bytes", args.kv_bytes)
    eta_f = _check.fraction("--eta-f", args.eta_f)
    eta_b = _check.fraction("--eta-b", args.eta_b)
    pi = decode.peak_flops_per_s(g, args.compute_precision) * n
    bw = g.memory_bandwidth_bytes_per_s * n

    f1 = float(compute.decode_flops(m, ctx))
    w_read = float(models.decode_read_params(m) * units.bytes_per_param(args.precision))
    kv = float(memory.kv_bytes_per_request(m, ctx, kv_b))
    step = float(decode.decode_step_time_s(m, g, batch, ctx, args.precision, kv_b, eta_f, eta_b, n,
                                           args.compute_precision))
    t_math = float(roofline.compute_time_s(batch * f1, pi, eta_f))
    t_read = float(roofline.memory_time_s(w_read + batch * kv, bw, eta_b))
    prefill_f = float(compute.prefill_flops(m, prompt))
    ttft = float(decode.prefill_time_s(m, g, prompt, args.precision, eta_f, eta_b, n, args.compute_precision))
    # the reply's steps see a growing context: P + 1, ..., P + G - 1 keys
    if out_tokens > 1:
        steps = decode.decode_step_time_s(m, g, batch, prompt + np.arange(1, out_tokens), args.precision, kv_b,
                                          eta_f, eta_b, n, args.compute_precision)
        mean_step = float(np.mean(steps))
    else:
        mean_step = step
    e2e = float(decode.end_to_end_latency_s(ttft, mean_step, out_tokens))
    resident = float(memory.weight_bytes(m, args.precision)) + batch * float(
        memory.kv_bytes_per_request(m, prompt + out_tokens, kv_b))
    data = {
        "model": m.name, "gpu": g.name, "n_gpus": n, "precision": args.precision,
        "compute_precision": args.compute_precision, "batch": batch, "context_tokens": ctx,
        "prompt_tokens": prompt, "output_tokens": out_tokens, "eta_f": eta_f, "eta_b": eta_b,
        "peak_flops_per_s": pi, "bandwidth_bytes_per_s": bw,
        "decode_flops_per_request": f1, "weight_bytes_read_per_step": w_read, "kv_bytes_read_per_request": kv,
        "compute_time_s": t_math, "memory_time_s": t_read, "step_time_s": step,
        "bound": roofline.bound_label(batch * f1, w_read + batch * kv, pi, bw, eta_f, eta_b),
        "tokens_per_s_per_user": float(decode.tokens_per_s_per_user(step)),
        "tokens_per_s_aggregate": float(decode.tokens_per_s_aggregate(batch, step)),
        "critical_batch_size": float(decode.critical_batch_size(units.bytes_per_param(args.precision), pi, bw,
                                                                eta_f, eta_b)),
        "ridge_point_flops_per_byte": float(roofline.ridge_point_flops_per_byte(pi, bw)),
        "prefill_flops": prefill_f, "ttft_s": ttft, "mean_tpot_s": mean_step, "end_to_end_latency_s": e2e,
        "resident_bytes_at_end": resident, "fits_in_memory": bool(resident <= g.memory_bytes * n),
    }
    rows = [
        ("GPU", f"{n} x {g.name}: {units.fmt_flops_rate(pi)} dense {args.compute_precision}, "
                f"{units.fmt_rate_bytes(bw)}"),
        ("efficiency (compute / bandwidth)", f"{eta_f:g} / {eta_b:g}"),
        (f"decode FLOPs per request @ {ctx:,} ctx", units.fmt_flops(f1)),
        ("weights read per step", units.fmt_bytes(w_read)),
        ("KV read per request per step", units.fmt_bytes(kv)),
        (f"compute time (batch {batch})", units.fmt_time(t_math, 4)),
        (f"memory time (batch {batch})", units.fmt_time(t_read)),
        ("decode step = TPOT (lower bound)", f"{units.fmt_time(step)}  ({data['bound']})"),
        ("tokens/s per user", f"{data['tokens_per_s_per_user']:,.1f}"),
        (f"tokens/s aggregate (batch {batch})", f"{data['tokens_per_s_aggregate']:,.1f}"),
        ("critical batch B* (weights only)", f"{data['critical_batch_size']:,.1f}"),
        ("ridge point", f"{data['ridge_point_flops_per_byte']:,.1f} FLOP/B"),
        (f"prefill FLOPs @ {prompt:,} tokens (causal)", units.fmt_flops(prefill_f)),
        ("TTFT (lower bound, no queueing)", units.fmt_time(ttft)),
        (f"end-to-end, {out_tokens:,} output tokens", units.fmt_time(e2e)),
        ("weights + KV at the end of the reply", f"{units.fmt_bytes(resident)}"
                                                  f"{'' if data['fits_in_memory'] else '  (does NOT fit)'}"),
    ]
    if models.active_params(m) != models.total_params(m):
        rows.append(("note", "MoE: reads count the active experts only (optimistic once batch > 1)"))
    _emit(args, f"decode: {m.name} on {g.name}", rows, data)


def cmd_roofline(args):
    from . import decode, roofline, units

    g = _load_gpu(args.gpu)
    pi = decode.peak_flops_per_s(g, args.compute_precision)
    bw = g.memory_bandwidth_bytes_per_s
    tc = float(roofline.compute_time_s(args.flops, pi))
    tm = float(roofline.memory_time_s(args.bytes_moved, bw))
    data = {
        "gpu": g.name, "flops": float(args.flops), "bytes_moved": float(args.bytes_moved),
        "peak_flops_per_s": pi, "bandwidth_bytes_per_s": bw,
        "compute_time_s": tc, "memory_time_s": tm,
        "step_time_overlapped_s": float(roofline.step_time_overlapped_s(args.flops, args.bytes_moved, pi, bw)),
        "step_time_serial_s": float(roofline.step_time_serial_s(args.flops, args.bytes_moved, pi, bw)),
        "arithmetic_intensity_flops_per_byte": float(roofline.arithmetic_intensity_flops_per_byte(
            args.flops, args.bytes_moved)),
        "ridge_point_flops_per_byte": float(roofline.ridge_point_flops_per_byte(pi, bw)),
        "bound": roofline.bound_label(args.flops, args.bytes_moved, pi, bw),
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


def cmd_plan(args):
    from . import _check, serving, units

    m = _load_model(args)
    g = _load_gpu(args.gpu)
    try:
        sizes = tuple(int(x) for x in args.replica_sizes.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--replica-sizes must be comma-separated whole numbers, got {args.replica_sizes!r}") \
            from None
    tpot = _check.positive("--tpot-ms", args.tpot_ms) * 1e-3
    plan = serving.gpus_for_users(args.users, tpot, args.context, m, g, args.precision, args.kv_bytes,
                                  args.eta_f, args.eta_b, args.reserve, sizes)
    data = {"model": m.name, "gpu": g.name, "concurrent_users": args.users, "target_tpot_s": tpot,
            "context_tokens": args.context, "precision": args.precision, **plan.as_dict()}
    rows = [
        ("target", f"{args.users:,} users at <= {units.fmt_time(tpot)} per token, {args.context:,} tokens each"),
        ("GPUs in total", f"{plan.gpus_total:,}"),
        ("replicas x GPUs each", f"{plan.replicas:,} x {plan.gpus_per_replica}"),
        ("users per replica", f"{plan.users_per_replica:,} (room for {plan.max_users_per_replica:,}, "
                              f"limited by {plan.limiting})"),
        ("predicted decode step", units.fmt_time(plan.step_time_s)),
    ]
    _emit(args, f"plan: {m.name} on {g.name} (lower bound, no communication or queueing)", rows, data)


def cmd_list(args):
    from . import hardware, models

    data = {"models": models.shipped_names(), "gpus": [g.name for g in hardware.catalog()]}
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print("models:\n  " + "\n  ".join(data["models"]))
        print("gpus:\n  " + "\n  ".join(data["gpus"]))


COMMANDS = {"params": cmd_params, "memory": cmd_memory, "decode": cmd_decode, "roofline": cmd_roofline,
            "plan": cmd_plan, "list": cmd_list}


def main(argv=None) -> int:
    """Entry point of the ``aiinfra`` console script; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        COMMANDS[args.command](args)
    except _UsageError as exc:
        print(f"{exc} (try --help)", file=sys.stderr)
        return EXIT_USAGE
    except (ValueError, KeyError, OSError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"aiinfra: error: {msg}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
