"""Time a 10^5-point roofline sweep (target: <= 10 ms). Prints timings; asserts nothing.

Three sweeps an interactive figure might redraw on every slider move:
  1. the roofline itself, attainable FLOP/s over 1e5 arithmetic intensities;
  2. the overlapped step bound over 1e5 (FLOPs, bytes) points;
  3. batched decode step time and aggregate tokens/s over 1e5 batch sizes.
Each is timed as the best of several repeats (validation included), on an
H100 SXM's dense BF16 peak and HBM bandwidth.
"""

from __future__ import annotations

import platform
import time

import numpy as np

from aiinfra import decode, roofline
from aiinfra.catalog import hardware

N_POINTS = 100_000
REPEATS = 20
TARGET_S = 10e-3


def best_time_s(fn, repeats=REPEATS):
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    gpu = hardware.gpu("H100 SXM")
    pi, bw = gpu.bf16_dense_flops_per_s, gpu.memory_bandwidth_bytes_per_s
    intensity = np.logspace(-2, 4, N_POINTS)
    flops = np.logspace(6, 15, N_POINTS)
    bytes_moved = flops / intensity
    batch = np.linspace(1, 4096, N_POINTS)

    sweeps = {
        "attainable_flops_per_s (roofline curve)": lambda: roofline.attainable_flops_per_s(intensity, pi, bw),
        "step_time_overlapped_s": lambda: roofline.step_time_overlapped_s(
            flops, bytes_moved, pi, bw, 0.7, 0.8
        ),
        "batched decode step + tokens/s": lambda: decode.tokens_per_s_aggregate(
            batch, decode.batched_decode_step_time_s(batch, 1.4e11, 70e9, 0.3e9, pi, bw, 0.5, 0.7)
        ),
    }
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, {N_POINTS:,} points, best of {REPEATS}"
    )
    worst = 0.0
    for name, fn in sweeps.items():
        t = best_time_s(fn)
        worst = max(worst, t)
        print(f"  {name:<42s} {t * 1e3:7.3f} ms")
    verdict = "within" if worst <= TARGET_S else "OVER"
    print(f"slowest sweep {worst * 1e3:.3f} ms: {verdict} the {TARGET_S * 1e3:.0f} ms target")


if __name__ == "__main__":
    main()
