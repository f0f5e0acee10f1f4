"""Roofline bounds: how long work must take on a device, and how close a run came.

A piece of work does ``F`` floating-point operations and moves ``R`` bytes
through one interface. A device offers a peak compute rate ``Pi`` (FLOP/s,
dense) and a peak bandwidth ``beta`` (B/s). Dividing each demand by the rate
that serves it gives two lower bounds on time (Williams, Waterman and
Patterson, "Roofline", CACM 2009):

    T_compute = F / (eta_F * Pi)        T_memory = R / (eta_B * beta)

``eta_F`` and ``eta_B`` are the achieved fractions of peak; at 1 (the default)
the bounds are the hardware's physical limits. When the two streams overlap
(data for the next tile arrives while this one is computed), the slower one
sets the step time, ``max(T_compute, T_memory)``; when they run one after the
other, the times add. Arithmetic intensity ``I = F / R`` compared with the
ridge point ``Pi / beta`` says which bound wins.

Utilisation compares a measured time ``T`` with the peak-rate bound:
MFU = F / (Pi T) and MBU = R / (beta T). Both are at most 1 when ``F`` and
``R`` are work the run really had to do.

All quantities are SI: FLOP, bytes, seconds, FLOP/s and B/s. Every function
takes numpy arrays as well as scalars, so a figure can sweep any argument.

Two more laws of "how long": Amdahl's law (G. Amdahl, AFIPS 1967): if a
fraction ``f`` of the original time is made ``s`` times faster and the rest is
untouched, the job takes ``(1 - f) + f / s`` of its old time, so the speedup is
``1 / ((1 - f) + f / s)`` with the limit ``1 / (1 - f)``; and the time of
dependent operations that cannot overlap (a chain of disk seeks).

Serves: Chapters 1 (orders of magnitude, four metrics, one model step, pitfalls), 2 (one request
by hand), 4 (the decode roofline) and every later chapter that speeds up part of a pipeline.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aiinfra import units
from aiinfra.formula import check, formula

__all__ = [
    "compute_time_s",
    "memory_time_s",
    "step_time_overlapped_s",
    "step_time_serial_s",
    "arithmetic_intensity_flops_per_byte",
    "ridge_point_flops_per_byte",
    "gqa_decode_attention_intensity_flops_per_byte",
    "mla_decode_attention_intensity_flops_per_byte",
    "decode_step_intensity_flops_per_byte",
    "model_decode_attention_intensity_flops_per_byte",
    "model_decode_step_intensity_flops_per_byte",
    "attainable_flops_per_s",
    "mac_array_peak_flops_per_s",
    "cpu_flops_per_cycle",
    "cpu_peak_flops_per_s",
    "sparse_peak_flops_per_s",
    "bound_label",
    "bound_of",
    "mfu",
    "mbu",
    "reported_gpu_utilisation",
    "steady_step_timeline_s",
    "MEMORY_BOUND",
    "COMPUTE_BOUND",
    "amdahl_speedup",
    "amdahl_limit",
    "time_after_speedup_s",
    "sequential_seeks_time_s",
]

MEMORY_BOUND = "memory-bound"
COMPUTE_BOUND = "compute-bound"


@formula("F/(eta_F*Pi)", flops="F >=0", flops_per_s="Pi >0", efficiency="eta_F (0,1]")
def compute_time_s(flops, flops_per_s, efficiency=1.0):
    """Lower bound on the time to execute ``flops``: ``F / (eta_F * Pi)``.

    ``flops_per_s`` is the dense peak for the precision used; ``efficiency``
    (0, 1] is the achieved fraction of that peak (1 gives the physical limit).
    """
    return flops / (efficiency * flops_per_s)


@formula("R/(eta_B*beta)", bytes_moved="R >=0", bandwidth_bytes_per_s="beta >0", efficiency="eta_B (0,1]")
def memory_time_s(bytes_moved, bandwidth_bytes_per_s, efficiency=1.0):
    """Lower bound on the time to move ``bytes_moved`` bytes: ``R / (eta_B * beta)``.

    ``bandwidth_bytes_per_s`` is the peak of the interface the bytes cross
    (HBM for weights and KV, a link for a transfer); ``efficiency`` (0, 1] is
    the achieved fraction of it.
    """
    return bytes_moved / (efficiency * bandwidth_bytes_per_s)


_TWO_TIMES: dict[str, Any] = dict(
    flops="F >=0",
    bytes_moved="R >=0",
    flops_per_s="Pi >0",
    bandwidth_bytes_per_s="beta >0",
    eta_f="eta_F (0,1]",
    eta_b="eta_B (0,1]",
)


def _two_times(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b):
    """Compute and memory times as arrays (inputs already validated)."""
    return (
        np.asarray(compute_time_s(flops, flops_per_s, eta_f)),
        np.asarray(memory_time_s(bytes_moved, bandwidth_bytes_per_s, eta_b)),
    )


@formula(**_TWO_TIMES)
def step_time_overlapped_s(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """Step time when reads and arithmetic overlap: ``max(F/(eta_F Pi), R/(eta_B beta))``.

    Assumes a steady pipeline in which every chunk is both read and computed,
    so the slower stream sets the pace. This is the usual roofline bound.
    """
    tc, tm = _two_times(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b)
    return np.maximum(tc, tm)


@formula(**_TWO_TIMES)
def step_time_serial_s(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """Step time when reads and arithmetic cannot overlap: ``F/(eta_F Pi) + R/(eta_B beta)``.

    An upper companion to :func:`step_time_overlapped_s`; a real kernel lies
    between the two (at most a factor of 2 apart).
    """
    tc, tm = _two_times(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b)
    return tc + tm


@formula(flops="F >=0", bytes_moved="R >0")
def arithmetic_intensity_flops_per_byte(flops, bytes_moved):
    """Arithmetic intensity ``I = F / R``: FLOPs performed per byte moved."""
    return flops / bytes_moved


@formula(flops_per_s="Pi >0", bandwidth_bytes_per_s="beta >0")
def ridge_point_flops_per_byte(flops_per_s, bandwidth_bytes_per_s):
    """Ridge point ``Pi / beta``: the intensity where compute and memory time are equal.

    Work with ``I`` below it is memory-bound, above it compute-bound. Use the
    dense peak of the precision in question and the bandwidth of the
    interface the bytes cross (e.g. 989.4e12 / 3.352e12 = 295 FLOP/B for an
    H100 SXM with BF16 and HBM3).
    """
    return flops_per_s / bandwidth_bytes_per_s


@formula(
    group_size="g int>=1",
    query_tokens="s_q int>=1",
    bytes_per_element="b_KV >0",
)
def gqa_decode_attention_intensity_flops_per_byte(group_size, query_tokens=1, bytes_per_element=2.0):
    """Attention intensity of a decode step under GQA: ``2 g s_q / b_KV`` FLOP per cache byte.

    Each cached token of one KV head costs ``2 d_head b_KV`` bytes (key and
    value) and serves the ``g`` query heads of its group, ``s_q`` new tokens
    each, at ``2 d_head`` FLOPs for the score and ``2 d_head`` for the value:
    ``4 g s_q d_head / (2 d_head b_KV)``. Llama-3.1-70B (``g = 8``) in BF16: 8,
    far below every GPU's ridge, which is why decode attention stays
    memory-bound under GQA (chapters 4 and 5).
    """
    return 2.0 * group_size * query_tokens / bytes_per_element


@formula(
    n_q_heads="h_q int>=1",
    kv_lora_rank="r_kv int>=1",
    qk_rope_head_dim="d_rope int>=0",
    query_tokens="s_q int>=1",
    bytes_per_element="b_KV >0",
)
def mla_decode_attention_intensity_flops_per_byte(
    n_q_heads, kv_lora_rank, qk_rope_head_dim, query_tokens=1, bytes_per_element=2.0
):
    """Attention intensity of an MLA decode step with weight absorption, FLOP per cache byte.

    With the up-projections absorbed into the query and output matrices,
    every query head attends over the same cached latent of width
    ``d_k = r_kv + d_rope`` (keys) and ``d_v = r_kv`` (values), so one cached
    token's ``(r_kv + d_rope) b_KV`` bytes serve all ``h_q`` heads:
    ``2 h_q s_q (d_k + d_v) / (d_k b_KV)``, about ``2 h_q s_q`` in BF16
    (FlashMLA deep dive, 2025). DeepSeek-V3 (128 heads, 512 + 64) in BF16:
    241.8 FLOP/B, near an H100's ridge of 295, where a GQA model sits at 8
    (chapters 4 and 5).
    """
    d_k = kv_lora_rank + qk_rope_head_dim
    d_v = kv_lora_rank
    return 2.0 * n_q_heads * query_tokens * (d_k + d_v) / (d_k * bytes_per_element)


@formula(None, model="label", query_tokens="int>=1", bytes_per_element=">0")
def model_decode_attention_intensity_flops_per_byte(model, query_tokens=1, bytes_per_element=2.0):
    """Decode attention intensity of a catalog model, FLOP per cache byte, by its attention kind.

    MLA (``attention_kind == "mla"``): the absorbed form,
    :func:`mla_decode_attention_intensity_flops_per_byte` with the model's
    query heads, latent rank and rotary width. MHA and GQA:
    :func:`gqa_decode_attention_intensity_flops_per_byte` with the group
    ``g = h_q / h_kv`` query heads per KV head (``g = 1`` for MHA, ``g = h_q``
    for MQA). ``model`` is a name or a :class:`~aiinfra.catalog.models.ModelConfig`. Chapter 3.
    """
    from aiinfra.catalog import models  # the catalog imports this module's siblings; load it late

    m = models.load(model)
    if m.attention_kind == "mla":
        return mla_decode_attention_intensity_flops_per_byte(
            m.n_heads, m.kv_lora_rank, m.qk_rope_head_dim, query_tokens, bytes_per_element
        )
    return gqa_decode_attention_intensity_flops_per_byte(
        m.n_heads // m.n_kv_heads, query_tokens, bytes_per_element
    )


@formula(
    "B*(F_w + I_attn*K)/(W + B*K)",
    sample={"batch": (1, 4096), "weight_flops_per_token": (1e9, 1e12), "weight_bytes": (1e9, 1e12)},
    batch="B int>=1",
    weight_flops_per_token="F_w >=0",
    weight_bytes="W >=0",
    attention_intensity_flops_per_byte="I_attn >=0",
    kv_bytes_per_request="K >0",
)
def decode_step_intensity_flops_per_byte(
    batch, weight_flops_per_token, weight_bytes, attention_intensity_flops_per_byte, kv_bytes_per_request
):
    """Intensity of a whole decode step of ``B`` requests: ``B (F_w + I_attn K) / (W + B K)`` FLOP per byte.

    One step reads the weights once (``W`` bytes, shared by the batch; for a
    mixture of experts the experts the batch touches) and every request's own
    KV cache (``K`` bytes each). Each request does ``F_w`` FLOPs of matrix
    work and ``I_attn K`` FLOPs of attention, ``I_attn`` being the attention
    intensity (:func:`gqa_decode_attention_intensity_flops_per_byte`,
    :func:`mla_decode_attention_intensity_flops_per_byte`). As ``B`` grows the
    weights' share vanishes and the intensity tends to ``F_w / K + I_attn``;
    as the context grows (``K`` large) it tends to ``I_attn``, whatever the
    batch: batching amortises weights, never a request's cache. Chapter 3.
    """
    return (
        batch
        * (weight_flops_per_token + attention_intensity_flops_per_byte * kv_bytes_per_request)
        / (weight_bytes + batch * kv_bytes_per_request)
    )


@formula(
    None,
    model="label",
    batch="int>=1",
    context_tokens="int>=1",
    bytes_per_weight=">0",
    kv_bytes_per_element=">0",
)
def model_decode_step_intensity_flops_per_byte(
    model, batch, context_tokens, bytes_per_weight=2.0, kv_bytes_per_element=2.0
):
    """:func:`decode_step_intensity_flops_per_byte` for a catalog model at ``batch`` requests of ``context_tokens``.

    ``F_w``: the matrix FLOPs of one token (:func:`aiinfra.compute.flops_per_token`);
    ``W``: the weights the step reads at ``bytes_per_weight``, every expert the
    batch's tokens route to for a mixture of experts
    (:func:`aiinfra.serving.moe.step_read_params`); ``K``: one request's KV
    cache at ``kv_bytes_per_element`` (:func:`aiinfra.memory.kv_bytes_per_token`
    times the context); ``I_attn``:
    :func:`model_decode_attention_intensity_flops_per_byte` (absorbed for MLA).
    Accepts an array of batches. Chapter 3.
    """
    from aiinfra import compute, memory  # both import the catalog, which loads late
    from aiinfra.catalog import models
    from aiinfra.serving import moe

    m = models.load(model)
    weights = bytes_per_weight * moe.step_read_params(m, batch)
    kv = memory.kv_bytes_per_token(m, kv_bytes_per_element) * context_tokens
    i_attn = model_decode_attention_intensity_flops_per_byte(m, 1, kv_bytes_per_element)
    return decode_step_intensity_flops_per_byte(batch, compute.flops_per_token(m), weights, i_attn, kv)


@formula(intensity_flops_per_byte="I >=0", flops_per_s="Pi >0", bandwidth_bytes_per_s="beta >0")
def attainable_flops_per_s(intensity_flops_per_byte, flops_per_s, bandwidth_bytes_per_s):
    """The roofline itself: ``min(Pi, I * beta)``, the best rate work of intensity ``I`` can reach."""
    return np.minimum(flops_per_s, intensity_flops_per_byte * bandwidth_bytes_per_s)


@formula(
    "2*n_rows*n_cols*f_clk",
    sample={"rows": (1, 1024), "cols": (1, 1024), "clock_hz": (1e6, 3e9)},
    rows="n_rows int>=1",
    cols="n_cols int>=1",
    clock_hz="f_clk >0",
)
def mac_array_peak_flops_per_s(rows, cols, clock_hz):
    """Peak of a grid of multiply-accumulate units: ``2 x rows x cols x clock`` FLOP/s.

    Every cell of a ``rows x cols`` array (a systolic matrix unit) finishes one
    multiply-accumulate per cycle, and a MAC counts as two FLOPs
    (:data:`aiinfra.units.FLOPS_PER_MAC`). TPU v1: 256 x 256 8-bit MACs at
    700 MHz give 91.75e12 operations per second, which Jouppi et al. (ISCA
    2017) round to 92 TOPS. Chapter 2.
    """
    return units.FLOPS_PER_MAC * rows * cols * clock_hz


_CPU = {"fma_units": (1, 4), "simd_bits": (128, 512), "bits_per_element": (16, 64)}


@formula(
    fma_units="n_FMA int>=1",
    simd_bits="w_SIMD int>=1",
    bits_per_element="w_elem int>=1",
)
def cpu_flops_per_cycle(fma_units, simd_bits, bits_per_element):
    """Peak FLOPs one CPU core can finish per clock cycle: ``2 n_FMA w_SIMD / w_elem``.

    Each fused multiply-add (FMA) unit takes one ``simd_bits``-wide vector
    per cycle, i.e. ``simd_bits / bits_per_element`` lanes, and an FMA counts
    as 2 FLOPs. Two 256-bit FMA units in float32: ``2 x 2 x 8 = 32``.
    Chapter 8.
    """
    return 2.0 * fma_units * simd_bits / bits_per_element


@formula(
    "n_cores*f_clk*2*n_FMA*w_SIMD/w_elem",
    sample={**_CPU, "cores": (1, 128)},
    cores="n_cores int>=1",
    clock_hz="f_clk >0",
    fma_units="n_FMA int>=1",
    simd_bits="w_SIMD int>=1",
    bits_per_element="w_elem int>=1",
)
def cpu_peak_flops_per_s(cores, clock_hz, fma_units, simd_bits, bits_per_element):
    """Datasheet-style peak of a CPU: ``cores x clock x`` :func:`cpu_flops_per_cycle`.

    Assumes every core runs its FMA units every cycle at ``clock_hz`` (real
    all-core clocks under wide vector load are often lower). Chapter 8.
    """
    return cores * clock_hz * cpu_flops_per_cycle(fma_units, simd_bits, bits_per_element)


@formula(flops_per_s="Pi >0")
def sparse_peak_flops_per_s(flops_per_s):
    """The 2:4 structured-sparse peak vendors headline: twice the dense peak ``Pi``.

    It assumes two of every four weights are zero, which a dense model's
    weights are not; this book computes with dense peaks and shows this
    figure only so that it can be recognised (H100 SXM BF16: 989.4 dense,
    1,979 sparse TFLOP/s). Chapters 1 and 2.
    """
    return 2.0 * flops_per_s


@formula(None, **{k: v.split()[1] for k, v in _TWO_TIMES.items()})
def bound_label(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f=1.0, eta_b=1.0):
    """``"memory-bound"`` when the memory time exceeds the compute time, else ``"compute-bound"``.

    A tie (intensity exactly at the ridge point) is labelled compute-bound:
    from there on more reuse no longer shortens the step. Arrays give an
    array of labels.
    """
    tc, tm = _two_times(flops, bytes_moved, flops_per_s, bandwidth_bytes_per_s, eta_f, eta_b)
    return bound_of(tc, tm)


def bound_of(compute_s, memory_s):
    """The label of the larger of two times: ``"memory-bound"`` when ``memory_s > compute_s``, else ``"compute-bound"``.

    The one rule every reported bound follows (a tie is compute-bound).
    Arrays give an array of labels.
    """
    labels = np.where(np.asarray(memory_s) > np.asarray(compute_s), MEMORY_BOUND, COMPUTE_BOUND)
    return str(labels) if labels.ndim == 0 else labels


def _utilisation(name_work, w, name_rate, r, elapsed_s):
    t = elapsed_s
    u = w / (r * t)
    if np.any(u > 1 + 1e-12):
        raise ValueError(
            f"elapsed_s is shorter than the peak-rate bound {name_work}/{name_rate}, "
            f"so the utilisation would exceed 1; got elapsed_s={elapsed_s!r}"
        )
    return np.minimum(u, 1.0)


@formula(
    flops="F >=0",
    flops_per_s="Pi >0",
    elapsed_s="T >0",
)
def mfu(flops, flops_per_s, elapsed_s):
    """Model FLOPs utilisation ``F / (Pi * T)``, in [0, 1].

    ``flops`` is the work the model requires (not what a kernel happened to
    execute), ``flops_per_s`` the dense peak, ``elapsed_s`` the measured time.
    Raises ``ValueError`` if ``elapsed_s`` is below ``F / Pi``: that would mean
    the peak or the FLOP count is wrong.
    """
    return _utilisation("flops", flops, "flops_per_s", flops_per_s, elapsed_s)


@formula(
    bytes_moved="R >=0",
    bandwidth_bytes_per_s="beta >0",
    elapsed_s="T >0",
)
def mbu(bytes_moved, bandwidth_bytes_per_s, elapsed_s):
    """Memory bandwidth utilisation ``R / (beta * T)``, in [0, 1].

    ``bytes_moved`` is what the work must read or write at least once (e.g.
    weights plus KV for a decode step). Raises ``ValueError`` if ``elapsed_s``
    is below ``R / beta``.
    """
    return _utilisation("bytes_moved", bytes_moved, "bandwidth_bytes_per_s", bandwidth_bytes_per_s, elapsed_s)


def reported_gpu_utilisation(kernel_intervals_s, window_s):
    """What ``nvidia-smi`` reports as GPU utilisation for a kernel timeline, in [0, 1].

    NVML defines ``utilization.gpu`` (``nvmlDeviceGetUtilizationRates``) as the
    percent of time over the past sample period (1/6 s to 1 s, by product)
    during which one or more kernels was executing. So the reading is

        U = |union of kernel intervals within [0, W]| / W

    ``kernel_intervals_s`` is a sequence of ``(start_s, end_s)`` pairs, measured
    from the start of the sample window; ``window_s`` is the window ``W``.
    Kernels that overlap (several streams) count once, and the parts of a kernel
    outside the window are cut off. Assumption: the counter samples busy time
    exactly (a real driver samples it). The reading counts *time*, not work: a
    kernel that keeps one SM busy and the memory system idle counts as fully
    busy, which is why it says nothing about MFU or MBU (Chapter 8, page 4).
    """
    w = check("window_s", window_s, ">0", scalar=True)
    pairs = np.asarray(kernel_intervals_s, dtype=float) if len(kernel_intervals_s) else np.zeros((0, 2))
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError(
            f"kernel_intervals_s must be a sequence of (start_s, end_s) pairs, got {kernel_intervals_s!r}"
        )
    check("kernel_intervals_s", pairs, "any")
    if np.any(pairs[:, 1] < pairs[:, 0]):
        raise ValueError("kernel_intervals_s must have end_s >= start_s in every pair")
    clipped = np.clip(pairs[np.argsort(pairs[:, 0])], 0.0, w)
    busy, reach = 0.0, 0.0
    for start, end in clipped:
        busy += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return busy / w


def steady_step_timeline_s(busy_s, step_interval_s, window_s):
    """The kernel timeline of a server in steady state: one busy stretch of ``busy_s`` every ``step_interval_s``.

    Returns the ``(start_s, end_s)`` pairs of the steps that begin inside a
    window of ``window_s``: step ``k`` is busy from ``k*step_interval_s`` for
    ``busy_s`` (the GPU's own time per step) and idle for the rest of the
    interval (host work between steps). Assumes the GPU is busy for the whole
    of its step, so :func:`reported_gpu_utilisation` of the result is an upper
    bound on what ``nvidia-smi`` shows. Serves Chapter 8, page 4.
    """
    t = check("step_interval_s", step_interval_s, ">0", scalar=True)
    b = check("busy_s", busy_s, ">=0", scalar=True)
    if b > t:
        raise ValueError(f"busy_s must be <= step_interval_s ({t!r}), got {busy_s!r}")
    starts = np.arange(int(np.ceil(check("window_s", window_s, ">0", scalar=True) / t))) * t
    return np.column_stack([starts, starts + b])


# --- Amdahl's law -------------------------------------------------------------


@formula("1/((1 - f) + f/s)", fraction="f [0,1]", speedup="s >0")
def amdahl_speedup(fraction, speedup):
    """Overall speedup ``1 / ((1 - f) + f / s)``.

    ``fraction`` is the share ``f`` in [0, 1] of the *original* time that is
    sped up, ``speedup`` the factor ``s > 0`` applied to it (``s < 1`` is a
    slowdown). Example: coding is 20% of a task and becomes 5x faster, so the
    task as a whole gets 1 / (0.8 + 0.04) = 1.19x faster.
    """
    return 1.0 / ((1.0 - fraction) + fraction / speedup)


@formula("1/(1 - f)", fraction="f [0,1)")
def amdahl_limit(fraction):
    """Ceiling on the overall speedup as the part's own speedup grows without bound: ``1 / (1 - f)``.

    ``fraction`` must lie in [0, 1); at ``f = 1`` there is no ceiling and the
    function raises rather than return infinity.
    """
    return 1.0 / (1.0 - fraction)


@formula(original_time_s="T >=0", fraction="f [0,1]", speedup="s >0")
def time_after_speedup_s(original_time_s, fraction, speedup):
    """New duration ``T ((1 - f) + f / s)`` of a job of ``original_time_s`` seconds.

    E.g. 100 hours with 20% coding made 5x faster: 80 + 20/5 = 84 hours.
    """
    return original_time_s / amdahl_speedup(fraction, speedup)


@formula(
    n_seeks="k int>=0",
    seek_time_s="t_seek >0",
    compute_time_s="t_cpu >=0",
)
def sequential_seeks_time_s(n_seeks, seek_time_s=10e-3, compute_time_s=0.0):
    """Time of ``n_seeks`` dependent disk seeks plus CPU work: ``k t_seek + t_cpu``.

    The seeks cannot overlap because each one's target depends on the data
    the previous one returned. With the 2009 seek of 10 ms, 20 seeks and 1 ms
    of CPU take 201 ms: halving the CPU time saves 0.5 ms, halving the seeks
    saves 100 ms.
    """
    return n_seeks * seek_time_s + compute_time_s
