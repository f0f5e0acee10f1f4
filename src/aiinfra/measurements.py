"""Measured data points the book checks its models against (chapter 1).

Only numbers that were actually measured live here, each with its
conditions; every other point a chapter draws is a *prediction* of a model in
:mod:`aiinfra.decode` and must be labelled so.

Chapter 1's record: Qwen3-8B in BF16 served by vLLM 0.23 in eager mode on one
RTX PRO 6000 Blackwell Workstation Edition (96 GB, 1.792 TB/s, 503.8 dense
BF16 TFLOP/s); every request had a 2,048-token prompt and produced 256
tokens; each batch size was run three times and medians were kept. TPOT is
the client-side interval between a request's first and last output token,
divided by the 255 intervals between them (median over requests, then over
runs). Throughput is the batch's output tokens over the batch's total time
(prefill included). Of the concurrency sweep only two points survive as
numbers: batch 1 and batch 64. Two follow-ups at batch 1 measured the TPOT
with per-step client logging turned off, and the accelerator-side time of
one model step. (The follow-up also turned off prefix caching and rebuilt
the inputs, so the logging effect is not perfectly isolated; the GPU-side
time excludes sampling and output processing.)
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _check

__all__ = ["DecodeMeasurement", "QWEN3_8B_RTX_PRO_6000", "throughput_ratio_if_tpot_only"]


@dataclass(frozen=True)
class DecodeMeasurement:
    """A measured decode sweep: conditions, measured points and follow-ups (SI units)."""

    model: str
    gpu: str
    engine: str
    precision: str
    prompt_tokens: int
    output_tokens: int
    repeats: int
    tpot_s: dict            # batch -> measured TPOT (s)
    throughput_ratio: dict  # batch -> measured throughput / throughput at batch 1
    followups_s: dict       # name -> measured time (s) at batch 1
    source: str

    def measured_batches(self) -> list[int]:
        """Batch sizes with a measured TPOT, ascending."""
        return sorted(self.tpot_s)

    def tpot(self, batch: int) -> float:
        """Measured TPOT at ``batch``; a batch that was not measured raises ``ValueError``."""
        b = _check.integer("batch", batch, minimum=1)
        if b not in self.tpot_s:
            raise ValueError(f"batch must be one of the measured batches {self.measured_batches()}, got {batch!r}")
        return self.tpot_s[b]


QWEN3_8B_RTX_PRO_6000 = DecodeMeasurement(
    model="Qwen3-8B",
    gpu="RTX PRO 6000 Blackwell Workstation",
    engine="vLLM 0.23, eager mode",
    precision="bf16",
    prompt_tokens=2048,
    output_tokens=256,
    repeats=3,
    tpot_s={1: 26.5e-3, 64: 40.5e-3},
    throughput_ratio={1: 1.0, 64: 31.0},
    followups_s={"tpot_logging_off": 12.1e-3, "gpu_step_time": 10.7e-3},
    source="first-encounter source text, section 1.3.3-1.3.4 and its notes (figures 1-13, 1-14)",
)


def throughput_ratio_if_tpot_only(batch, tpot_1_s, tpot_b_s):
    """Throughput at ``batch`` relative to batch 1 if tokens came out at TPOT pace only: ``B T_1 / T_B``.

    Ignores prefill and queueing, which a measured end-to-end throughput
    includes; the gap between this and the measured ratio is time spent
    outside the decode steps. Chapter 1.
    """
    b = _check.positive("batch", batch)
    t1 = _check.positive("tpot_1_s", tpot_1_s)
    tb = _check.positive("tpot_b_s", tpot_b_s)
    out = np.asarray(b) * np.asarray(t1) / np.asarray(tb)
    return float(out) if out.ndim == 0 else out
