"""A roofline plot: every GPU of the catalog, with LLM operations placed by arithmetic intensity.

The roofline of a GPU is ``min(Pi, I * beta)`` (Williams, Waterman and
Patterson 2009; :func:`aiinfra.roofline.attainable_flops_per_s`): work of
intensity ``I`` FLOP/B below the ridge point ``Pi / beta`` is limited by
memory bandwidth, above it by compute. Peaks are dense BF16 (FP16 where the
GPU has no BF16 tensor cores, e.g. V100) and HBM bandwidth, from
:mod:`aiinfra.catalog.hardware`.

Operations (Qwen3-8B in BF16 by default, intensities from the library's
exact FLOP and byte counts):

* a decode step of ``batch`` requests at ``context_tokens`` of context:
  ``B x`` :func:`aiinfra.compute.decode_flops` over the weights one step
  reads plus ``B`` KV caches;
* attention of one decode token over its KV cache (FLOPs of
  :func:`aiinfra.compute.attention_flops_per_token` over the cache bytes):
  stuck near 1-10 FLOP/B whatever the batch, since no request shares its cache;
* a prefill of ``prompt_tokens`` tokens (:func:`aiinfra.compute.prefill_flops`
  over weights plus the KV written), far right of every ridge.

The first slider picks the highlighted GPU; the second, the decode batch,
moves the decode step to the right (batching shares one read of the
weights). Both are precomputed in the static book.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from aiinfra import compute, memory, roofline, units
from aiinfra.book.interactive import Slider, View, interactive_figure, redraws
from aiinfra.catalog import hardware, models
from aiinfra.deployment import Deployment
from aiinfra.formula import check

from . import FONT, PALETTE, new_figure, panel_title

__all__ = ["DECODE_BATCHES", "STATIC_GPUS", "Operation", "operations", "draw", "sliders", "show"]

DECODE_BATCHES = (1, 8, 32, 128, 512)
#: GPUs precomputed for the static page (five generations and vendors), so that every decode batch is too.
STATIC_GPUS = ("V100 SXM2 32GB", "A100 80GB SXM", "H100 SXM", "MI300X", "B200")
_OP_COLORS = (PALETTE["red"], PALETTE["purple"], PALETTE["green"])


@dataclass(frozen=True)
class Operation:
    """One piece of work: its name, FLOPs and bytes moved (SI)."""

    name: str
    flops: float
    bytes_moved: float

    @property
    def intensity_flops_per_byte(self) -> float:
        return roofline.arithmetic_intensity_flops_per_byte(self.flops, self.bytes_moved)


@lru_cache(maxsize=64)
def operations(
    model_name="Qwen3-8B", batch=1, context_tokens=2048, prompt_tokens=2048
) -> tuple[Operation, ...]:
    """Decode step, decode attention and prefill of ``model_name`` in BF16, as :class:`Operation`."""
    b = check("batch", batch, "int>=1", scalar=True)
    ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
    p = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    d = Deployment(model_name, "H100 SXM")  # the operations do not depend on the GPU
    m, step = d.model, d.step(b, ctx)
    kv = float(d.kv_bytes(ctx))
    attn = compute.attention_flops_per_token(
        m.n_layers, models.attention_qk_width(m), models.attention_v_width(m), ctx
    )
    return (
        Operation(f"decode step, batch {b}", step.flops, step.bytes_moved),
        Operation("decode attention over KV", attn, kv),
        Operation(
            f"prefill, {p:,} tokens",
            compute.prefill_flops(m, p),
            memory.weight_bytes(m, "bf16") + float(memory.kv_bytes_per_request(m, p)),
        ),
    )


def _names():
    return tuple(g.name for g in hardware.catalog())


@redraws("gpu_name", "batch")
def draw(gpu_name="H100 SXM", batch=1, model_name="Qwen3-8B", context_tokens=2048, prompt_tokens=2048):
    """Draw the catalog's rooflines, highlight ``gpu_name`` and place the operations; return ``(Figure, readouts)``."""
    intens = np.geomspace(0.1, 1e5, 200)
    fig, ax = new_figure(7.2, 3.7, left=0.1, right=0.96, bottom=0.14, top=0.91)
    for g in hardware.catalog():
        ax.loglog(
            intens,
            roofline.attainable_flops_per_s(
                intens, g.dense_flops_per_s("fp16"), g.memory_bandwidth_bytes_per_s
            )
            / units.TERA,
            color=PALETTE["light"],
            lw=1.0,
        )
    (roof,) = ax.plot([], [], color=PALETTE["blue"], lw=2.4, zorder=3)
    ridge_line = ax.axvline(1.0, color=PALETTE["blue"], lw=0.8, ls=":")
    ridge_text = ax.text(1.0, 1.0, "", color=PALETTE["blue"], fontsize=FONT["note"])
    dots = [
        ax.plot([], [], "o", color=color, mec="black", ms=8, zorder=5, label=" ")[0] for color in _OP_COLORS
    ]
    ax.set_xlim(0.1, 1e5)
    ax.set_ylim(0.1, 1e4)
    xt = [0.1, 1, 10, 100, 1000, 10000, 100000]
    ax.set_xticks(xt, ["0.1", "1", "10", "100", "1k", "10k", "100k"])
    yt = [0.1, 1, 10, 100, 1000, 10000]
    ax.set_yticks(yt, ["0.1", "1", "10", "100", "1k", "10k"])
    ax.minorticks_off()
    ax.set_xlabel("arithmetic intensity (FLOP per byte of HBM traffic)")
    ax.set_ylabel("attainable TFLOP/s (dense)")
    ax.grid(True, alpha=0.3)
    legend = ax.legend(
        loc="lower right", fontsize=FONT["legend"], frameon=True, framealpha=0.9, edgecolor="none"
    )
    title = panel_title(ax, "", loc="left")
    ax.text(
        0.02,
        0.96,
        f"grey: the other GPUs of the catalog\ndots: {model_name} in BF16",
        transform=ax.transAxes,
        va="top",
        fontsize=FONT["note"],
        color="#555555",
    )

    def update(gpu_name, batch):
        sel = hardware.gpu(gpu_name)
        ops = operations(model_name, batch, context_tokens, prompt_tokens)
        peak = sel.dense_flops_per_s("fp16")  # dense BF16, or FP16 where a GPU has no BF16
        bw = sel.memory_bandwidth_bytes_per_s
        ridge = roofline.ridge_point_flops_per_byte(peak, bw)
        roof.set_data(intens, roofline.attainable_flops_per_s(intens, peak, bw) / units.TERA)
        ridge_line.set_xdata([ridge, ridge])
        ridge_text.set_position((ridge * 1.1, 0.012 * peak / units.TERA))
        ridge_text.set_text(f"ridge {ridge:,.0f} FLOP/B")
        for op, dot, text in zip(ops, dots, legend.get_texts()):
            i = op.intensity_flops_per_byte
            dot.set_data([i], [roofline.attainable_flops_per_s(i, peak, bw) / units.TERA])
            text.set_text(f"{op.name}: {i:,.1f} FLOP/B")
        title.set_text(
            f"{sel.name}: {units.fmt_flops_rate(peak)} dense 16-bit, {units.fmt_rate_bytes(bw)} HBM"
        )
        decode_op = ops[0]
        t = roofline.step_time_overlapped_s(decode_op.flops, decode_op.bytes_moved, peak, bw)
        return {
            "ridge point": f"{ridge:,.0f} FLOP/B",
            f"decode step, batch {batch}": roofline.bound_label(
                decode_op.flops, decode_op.bytes_moved, peak, bw
            ),
            "decode step time (bound)": units.fmt_time(t),
            "prefill": roofline.bound_label(ops[2].flops, ops[2].bytes_moved, peak, bw),
        }

    return View(fig, update, [roof, ridge_line, ridge_text, *dots, legend, title])


#: Catalog names too long for a slider's readout, as the slider shows them.
_SHORT_NAMES = {"RTX PRO 6000 Blackwell Workstation": "RTX PRO 6000 (WS)"}


def _short_name(name: str) -> str:
    return _SHORT_NAMES.get(name, name)


def sliders():
    """GPU of the catalog and decode batch, both precomputed (the static page: the :data:`STATIC_GPUS`)."""
    names = _names()
    return [
        Slider("gpu_name", names, label="GPU", default="H100 SXM", static=STATIC_GPUS, fmt=_short_name),
        Slider("batch", DECODE_BATCHES, label="decode batch", default=1),
    ]


def show(mode=None, **fixed):
    """The interactive roofline (GPU and decode batch)."""
    return interactive_figure(
        draw, sliders(), title="Roofline: the catalog's GPUs and where LLM work lands", fixed=fixed, mode=mode
    )
