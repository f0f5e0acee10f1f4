"""Time every figure that has a slider: live update, static frames, page weight.

For each figure the book shows with sliders (the chapter figures with a
``*_sliders`` companion, the five rebuilt widgets of
:data:`aiinfra.book.figures.SOURCE_FIGURES` and chapter 7's routing figure),
built with the arguments its chapter passes:

* **live update**: the figure is built in live mode (what a Jupyter, Binder
  or Colab kernel shows) and every slider is moved through all of its values
  in turn; each move is one slider step as a reader makes it: compute the
  new state, redraw, encode the image the widget shows. Printed: median and
  worst wall time over all moves (the first move after building is a
  warm-up and is not counted), and the median CPU time of this process
  (the machine may be shared). Goal: median <= 50 ms, worst <= 100 ms.
* **static frames**: the figure is built as the book build builds it
  (``AIINFRA_BOOK_BUILD=1``). Printed: the wall time per precomputed frame
  (build time over frames; goal <= 0.1 s), the number of frames, the pixel
  density, the exact embedded widget state in bytes (the page weight, cap
  400 KB) and the sliders that stay live-only.

The machine's load average is printed before and after. Prints a table and
asserts nothing (``make bench``); ``--json PATH`` also writes the numbers,
``--only NAME`` (repeatable) limits the run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

from aiinfra.book import interactive

LIVE_MEDIAN_GOAL_S = 0.050
LIVE_WORST_GOAL_S = 0.100
FRAME_GOAL_S = 0.100


def _tp_allreduce():
    from aiinfra.book.figures import ch06
    from aiinfra.catalog import hardware, models
    from aiinfra.cluster import parallelism as par

    m = models.load("Llama-3.1-70B")
    fixed = dict(
        d_model=m.hidden_size,
        n_layers=m.n_layers,
        nvlink_bytes_per_s=hardware.gpu("H100 SXM").scaleup_bytes_per_s_per_direction,
        ib_bytes_per_s=hardware.link("ndr").bytes_per_s_per_direction,
        nvlink_latency_s=par.ASSUMED_STEP_LATENCY_S["nvlink"],
        ib_latency_s=par.ASSUMED_STEP_LATENCY_S["infiniband"],
        model_name="Llama-3.1-70B",
    )
    return ch06.tp_allreduce, ch06.tp_allreduce_sliders(), fixed


def _disaggregation():
    from aiinfra import memory
    from aiinfra.book.figures import ch07
    from aiinfra.catalog import hardware, models
    from aiinfra.deployment import Deployment

    m = models.load("Llama-3.1-70B")
    server = Deployment(m, hardware.gpu("H100 SXM"), n_gpus=8, eta_f=0.5, eta_b=0.7)
    fixed = dict(
        decode_step_time_s=server.step(32, 4096).time_s,
        prefill_time_per_token_s=server.prefill(4096).time_s / 4096,
        kv_bytes_per_token=memory.kv_bytes_per_token(m),
        link_bytes_per_s=hardware.DGX_H100.compute_nic.bytes_per_s_per_direction,
    )
    return ch07.disaggregation, ch07.disaggregation_sliders(), fixed


def _prefix_cache():
    from aiinfra.book.figures import ch07
    from aiinfra.catalog import hardware, models
    from aiinfra.serving import prefix_cache as pc

    m = models.load("Llama-3.1-70B")
    f, a = pc.model_prefill_coefficients(m)
    fixed = dict(
        prompt_tokens=8192,
        flops_per_token=f,
        attention_flops_per_pair=a,
        flops_per_s=8 * hardware.gpu("H100 SXM").bf16_dense_flops_per_s,
        efficiency=0.5,
    )
    return ch07.prefix_cache, ch07.prefix_cache_sliders(), fixed


def _toy_decode():
    from aiinfra.book.figures import ch08

    # a plausible sweep of a 64 MiB float32 GEMV on a laptop-class CPU (synthetic, not measured here)
    batches = (1, 2, 4, 8, 16, 32, 64)
    times = (6.1e-3, 6.3e-3, 6.6e-3, 7.4e-3, 11e-3, 21e-3, 41e-3)
    fixed = dict(
        batches=batches,
        times_s=times,
        n_params=2**24,
        bytes_per_weight=4,
        flops_per_s=50e9,
        bandwidth_bytes_per_s=11e9,
        machine="a test machine",
    )
    return ch08.toy_decode_roofline, ch08.toy_decode_sliders(batches), fixed


def _chapter(module, name):
    def make():
        import importlib

        mod = importlib.import_module(f"aiinfra.book.figures.{module}")
        return getattr(mod, name), getattr(mod, f"{name}_sliders")(), {}

    return make


def _source(module):
    def make():
        import importlib

        mod = importlib.import_module(f"aiinfra.book.figures.{module}")
        return mod.draw, mod.sliders(), {}

    return make


#: Every figure with sliders: name -> () -> (fn, sliders, fixed), as its chapter calls it.
FIGURES = {
    "ch01.batch_explorer": _chapter("ch01", "batch_explorer"),
    "ch01.capacity_explorer": _chapter("ch01", "capacity_explorer"),
    "ch02.bandwidth_ladder": _chapter("ch02", "bandwidth_ladder"),
    "ch02.request_explorer": _chapter("ch02", "request_explorer"),
    "ch03.two_n_drift": _chapter("ch03", "two_n_drift"),
    "ch04.throughput_latency": _chapter("ch04", "throughput_latency"),
    "ch05.batching_policies": _chapter("ch05", "batching_policies"),
    "ch05.kv_reservation": _chapter("ch05", "kv_reservation"),
    "ch06.tp_allreduce": _tp_allreduce,
    "ch06.mfu_scaling": _chapter("ch06", "mfu_scaling"),
    "ch07.speculative": _chapter("ch07", "speculative"),
    "ch07.disaggregation": _disaggregation,
    "ch07.prefix_cache": _prefix_cache,
    "ch08.toy_decode_roofline": _toy_decode,
    "cluster_scale": _source("cluster_scale"),
    "run_inference": _source("run_inference"),
    "tokens_per_s": _source("tokens_per_s"),
    "batching_kv": _source("batching_kv"),
    "roofline_plot": _source("roofline_plot"),
    "routing": _source("routing"),  # chapter 7's routing figure (a plain function: redrawn whole each step)
}


def live_times(fn, sliders, fixed):
    """Wall and CPU seconds of every slider step (each slider through all its values, then back)."""
    f = interactive.interactive_figure(fn, sliders, fixed=fixed, mode="live")
    moves = []
    for s in sliders:
        values = list(s.values)
        path = values[1:] + values[-2::-1] if len(values) > 1 else values
        moves += [(s.name, v) for v in path]
        moves.append((s.name, s.default_value if s.default is not None else values[0]))
    wall, cpu, warm = [], [], False
    for name, v in moves:
        c0 = time.process_time()
        f.last_update_s = None
        f.set(**{name: v})
        if f.last_update_s is None:  # the value did not change: no redraw happened
            continue
        if warm:
            wall.append(f.last_update_s)
            cpu.append(time.process_time() - c0)
        warm = True
    return wall, cpu


def static_build(fn, sliders, fixed):
    t0 = time.perf_counter()
    f = interactive.interactive_figure(fn, sliders, fixed=fixed, mode="static")
    build_s = time.perf_counter() - t0
    return {
        "frames": len(f.frames),
        "density": getattr(f, "density", None),
        "dpi": f.dpi,
        "embedded_bytes": interactive.embedded_state_bytes(f),
        "live_only": list(f.live_only),
        "build_s": build_s,
        "per_frame_s": build_s / max(len(f.frames), 1),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--only", action="append", choices=sorted(FIGURES), help="run this figure (repeatable)")
    ap.add_argument("--no-static", action="store_true", help="time the live updates only")
    args = ap.parse_args(argv)

    load0 = os.getloadavg()
    print(
        f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
        f"load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} (1, 5, 15 min)"
    )
    print(
        f"goals: live median <= {LIVE_MEDIAN_GOAL_S * 1e3:.0f} ms, worst <= {LIVE_WORST_GOAL_S * 1e3:.0f} ms; "
        f"static <= {FRAME_GOAL_S:.1f} s per frame and <= {interactive.DEFAULT_MAX_BYTES / 1e3:.0f} KB per figure"
    )
    header = (
        f"{'figure':26s} {'moves':>5s} {'median':>8s} {'worst':>8s} {'cpu med':>8s} | "
        f"{'s/frame':>7s} {'frames':>6s} {'dens':>5s} {'weight':>9s}  live-only"
    )
    print(header)
    print("-" * len(header))
    results = {}
    for name in args.only or FIGURES:
        fn, sliders, fixed = FIGURES[name]()
        wall, cpu = live_times(fn, sliders, fixed)
        row = {
            "live_moves": len(wall),
            "live_median_s": statistics.median(wall),
            "live_worst_s": max(wall),
            "live_cpu_median_s": statistics.median(cpu),
            "live_all_s": wall,
        }
        line = (
            f"{name:26s} {len(wall):5d} {row['live_median_s'] * 1e3:5.0f} ms {row['live_worst_s'] * 1e3:5.0f} ms "
            f"{row['live_cpu_median_s'] * 1e3:5.0f} ms | "
        )
        if not args.no_static:
            st = static_build(fn, sliders, fixed)
            row.update(st)
            dens = f"{st['density']:.2f}" if st["density"] else f"{st['dpi']:.0f}dpi"
            line += (
                f"{st['per_frame_s']:7.3f} {st['frames']:6d} {dens:>5s} {st['embedded_bytes'] / 1e3:6.1f} KB  "
                f"{', '.join(st['live_only']) or '-'}"
            )
        results[name] = row
        print(line, flush=True)
    meds = [r["live_median_s"] for r in results.values()]
    worst = max(r["live_worst_s"] for r in results.values())
    print("-" * len(header))
    print(
        f"all figures: median of the live medians {statistics.median(meds) * 1e3:.0f} ms, "
        f"largest median {max(meds) * 1e3:.0f} ms, worst step {worst * 1e3:.0f} ms"
    )
    if not args.no_static:
        frames = [r["per_frame_s"] for r in results.values()]
        weights = [r["embedded_bytes"] for r in results.values()]
        print(
            f"static: worst {max(frames):.3f} s per frame, heaviest figure {max(weights) / 1e3:.1f} KB, "
            f"{sum(1 for r in results.values() if r['live_only'])} figure(s) with live-only sliders"
        )
    load1 = os.getloadavg()
    print(f"load average at the end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    # the rows of issue 17's table (benchmarks/run_all.py collects the lines that start with "row:")
    ok = statistics.median(meds) <= LIVE_MEDIAN_GOAL_S and worst <= LIVE_WORST_GOAL_S
    print(
        f"row: {f'live figure update, {len(results)} figures':<44} median {statistics.median(meds) * 1e3:.0f} ms, "
        f"worst {worst * 1e3:.0f} ms  goal median <= {LIVE_MEDIAN_GOAL_S * 1e3:.0f} ms, worst <= "
        f"{LIVE_WORST_GOAL_S * 1e3:.0f} ms {'met' if ok else 'NOT met'}; load {load0[0]:.2f} -> {load1[0]:.2f}"
    )
    if not args.no_static:
        ok = max(frames) <= FRAME_GOAL_S and max(weights) <= interactive.DEFAULT_MAX_BYTES
        print(
            f"row: {'static frame rendering':<44} {max(frames):7.3f} s per frame (worst), heaviest figure "
            f"{max(weights) / 1e3:.0f} KB  goal <= {FRAME_GOAL_S:.1f} s, <= {interactive.DEFAULT_MAX_BYTES / 1e3:.0f} KB "
            f"{'met' if ok else 'NOT met'}"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"load_before": load0, "load_after": load1, "figures": results}, fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
