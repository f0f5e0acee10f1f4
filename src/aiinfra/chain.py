"""The chain behind one request (chapter 2): spec-sheet conversions, one server's links,
HBM arithmetic, GPU generations and the 8B request worked by hand.

Four groups of functions, all SI inside:

* **Reading a spec sheet.** :func:`per_direction_bytes_per_s` turns a printed
  figure (in Gbit/s or GB/s, one direction or both added) into bytes per
  second per direction; :func:`misread_factor` says how far off a reader is
  who skips the conversion (2 for both directions, 8 for bits, 16 for both).
* **One server.** :func:`server_links` lists the links inside a DGX H100 from
  the catalog (:mod:`aiinfra.hardware`), :func:`bottleneck` finds the slowest
  link on a path, :func:`path_transfer_time_s` the time to push bytes through
  it, and :func:`hbm_bandwidth_bytes_per_s` rebuilds a memory bandwidth from
  its bus width and pin rate (5 stacks x 1,024 bits = 5,120 bits on an H100).
* **Generations.** :func:`generations_table_markdown` prints the NVIDIA data
  center parts of the catalog, Volta to Blackwell, in aligned units (dense
  tensor peaks, per-direction NVLink).
* **The 8B request.** :data:`TEACHING_8B` holds the teaching assumptions of
  the worked example (N = 8e9 in BF16, 1e15 FLOP/s at 50 %, 3e12 B/s at 70 %,
  a 2,000-token prompt, at most 0.3 GB of KV read per request per step, a
  batch of 32); :func:`worked_request` runs them through
  :mod:`aiinfra.compute`, :mod:`aiinfra.roofline` and :mod:`aiinfra.decode`
  and returns every number of the worked example (64 ms of prefill, 7.6 ms
  of weight read, 7.8 ms per step, 12.2 ms per step at batch 32, ~20x the
  throughput).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import sympy as sp

from . import _check
from .symbols import twin

__all__ = [
    "per_direction_bytes_per_s",
    "misread_factor",
    "SERVER_LINK_NAMES",
    "server_links",
    "server_link_table_markdown",
    "bottleneck",
    "path_transfer_time_s",
    "hbm_bandwidth_bytes_per_s",
    "hbm_pin_rate_bits_per_s",
    "HBM_BITS_PER_STACK",
    "HBM_STACKS",
    "GENERATION_GPUS",
    "generations",
    "generations_table_markdown",
    "Assumptions",
    "TEACHING_8B",
    "WorkedRequest",
    "worked_request",
    "decode_share_of_reply",
    "ScaleUpDomain",
    "DGX_H100_DOMAIN",
    "GB200_NVL72",
    "domain_bandwidth_bytes_per_s",
]

_SPEC_UNITS = {"Gbit/s": 1e9 / 8, "GB/s": 1e9, "Tbit/s": 1e12 / 8, "TB/s": 1e12}


def _flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


# --------------------------------------------------------------------------------------
# Reading a spec sheet
# --------------------------------------------------------------------------------------

def per_direction_bytes_per_s(value, unit: str, both_directions: bool):
    """Bytes per second in one direction from a printed link figure.

    ``value`` in ``unit`` (``"Gbit/s"``, ``"GB/s"``, ``"Tbit/s"`` or
    ``"TB/s"``, decimal prefixes); ``both_directions`` says whether the sheet
    added the two directions of a full-duplex link (then the result is half).
    NVLink 4's "900 GB/s" with ``both_directions=True`` gives 4.5e11 B/s; a
    ConnectX-7's "400 Gbit/s" (per direction) gives 5e10 B/s. Accepts arrays.
    """
    v = _check.positive("value", value)
    _check.choice("unit", unit, set(_SPEC_UNITS))
    both_directions = _flag("both_directions", both_directions)
    out = np.asarray(v) * _SPEC_UNITS[unit] / (2.0 if both_directions else 1.0)
    return float(out) if out.ndim == 0 else out


def misread_factor(printed_in_bits: bool, printed_both_directions: bool) -> int:
    """How many times too large a printed figure becomes when it is taken as bytes/s per direction.

    A sum of both directions taken as one direction is 2x too large; a line
    rate in Gbit/s taken as GB/s is 8x too large; a both-directions figure in
    bits taken as per-direction bytes is 16x too large. Returns
    ``8 ** printed_in_bits * 2 ** printed_both_directions``.
    """
    printed_in_bits = _flag("printed_in_bits", printed_in_bits)
    printed_both_directions = _flag("printed_both_directions", printed_both_directions)
    return (8 if printed_in_bits else 1) * (2 if printed_both_directions else 1)


# --------------------------------------------------------------------------------------
# One server
# --------------------------------------------------------------------------------------

#: The links a byte can cross inside one DGX H100, fastest first (catalog names).
SERVER_LINK_NAMES = (
    "HBM3 (H100 SXM)",
    "NVLink 4 (per GPU, 18 links)",
    "DDR5-4800, 8 channels (one Xeon 8480C socket)",
    "PCIe Gen5 x16",
    "ConnectX-7 400 Gbit/s",
    "NVLink 4 (one link)",
)

_ROLE = {
    "HBM3 (H100 SXM)": "GPU to its own memory",
    "NVLink 4 (per GPU, 18 links)": "GPU to the other 7 GPUs, through 4 NVSwitch chips",
    "NVLink 4 (one link)": "one of a GPU's 18 NVLink lanes",
    "DDR5-4800, 8 channels (one Xeon 8480C socket)": "CPU socket to its DRAM",
    "PCIe Gen5 x16": "GPU or NIC to the CPU (through PCIe switches)",
    "ConnectX-7 400 Gbit/s": "one GPU's NIC to the cluster network",
}


def server_links(names=SERVER_LINK_NAMES):
    """The catalog :class:`~aiinfra.hardware.Link` objects named in ``names``, fastest first."""
    from . import hardware

    if isinstance(names, str) or not names:
        raise ValueError(f"names must be a non-empty sequence of link names, got {names!r}")
    found = [hardware.link(n) for n in names]
    return sorted(found, key=lambda x: -x.bytes_per_s_per_direction)


def server_link_table_markdown(names=SERVER_LINK_NAMES, reference: str = "ConnectX-7 400 Gbit/s") -> str:
    """A Markdown table of links: as printed, what the print counted, per direction, x the ``reference``.

    Per-direction values are in decimal GB/s (1e9 B/s). The last column is
    each link's bandwidth divided by the ``reference`` link's (the NIC by
    default), so the HBM row reads 67x.
    """
    from . import hardware, units
    from .quickref import markdown_table

    ref = hardware.link(reference)
    rows = []
    for x in server_links(names):
        if not x.full_duplex:
            counted = "shared by reads and writes"
        elif x.bidirectional_in_spec:
            counted = "both directions added"
        else:
            counted = "one direction"
        rows.append([
            x.name,
            _ROLE.get(x.name, x.kind),
            x.raw_spec,
            counted,
            f"{x.bytes_per_s_per_direction / units.GB:,.1f}",
            f"{hardware.ratio(x, ref):,.1f}",
        ])
    return markdown_table(
        ["link", "joins", "as printed", "the printed figure counts", "per direction (GB/s)",
         f"x {ref.name.split(' ')[0]}"],
        rows, align="llllrr",
    )


def bottleneck(path):
    """The slowest link of ``path`` (a sequence of link names or Link objects), per direction.

    Returns the :class:`~aiinfra.hardware.Link`; ties go to the first one.
    """
    from . import hardware

    if isinstance(path, str) or not path:
        raise ValueError(f"path must be a non-empty sequence of links or link names, got {path!r}")
    resolved = [x if isinstance(x, hardware.Link) else hardware.link(x) for x in path]
    return min(resolved, key=lambda x: x.bytes_per_s_per_direction)


def path_transfer_time_s(size_bytes, path, latency_s_per_hop=0.0):
    """Time to stream ``size_bytes`` through every link of ``path``, pipelined.

    ``hops * t_0 + S / min(beta_i)``: in a pipelined transfer (chunks
    forwarded as they arrive) the slowest link sets the rate and every hop
    adds its fixed latency once. Accepts an array of sizes.
    """
    from . import network

    link = bottleneck(path)
    lat = _check.non_negative("latency_s_per_hop", latency_s_per_hop)
    return network.transfer_time_s(size_bytes, link.bytes_per_s_per_direction, len(path) * lat)


#: Data bits one HBM stack (HBM2, HBM2e, HBM3, HBM3e) exposes to the GPU.
HBM_BITS_PER_STACK = 1024

#: Active HBM stacks per package (vendor architecture documents): the H100 SXM enables 5 of its
#: 6 sites (5,120 bits), the H200 uses all 6 (6,144 bits), the B200 has 4 per die on 2 dies.
HBM_STACKS = {"V100 SXM2 32GB": 4, "A100 80GB SXM": 5, "H100 SXM": 5, "H200 SXM": 6, "B200": 8}

_w, _r = sp.symbols("w_bus r_pin", positive=True)


@twin(_w * _r / 8, domains={"bus_width_bits": (64, 8192, "int"), "pin_rate_bits_per_s": (1e9, 1e10, "float")},
      bus_width_bits=_w, pin_rate_bits_per_s=_r)
def hbm_bandwidth_bytes_per_s(bus_width_bits, pin_rate_bits_per_s):
    """Peak memory bandwidth from the bus: ``w_bus * r_pin / 8`` bytes per second.

    ``bus_width_bits`` is the data width (stacks x 1,024 for HBM);
    ``pin_rate_bits_per_s`` is the data rate of one pin. An H100 SXM has 5
    active stacks (5,120 bits); 3.35e12 B/s then needs ~5.2 Gbit/s per pin.
    Accepts arrays.
    """
    w = np.asarray(_check.integers("bus_width_bits", bus_width_bits, minimum=1), dtype=float)
    r = np.asarray(_check.positive("pin_rate_bits_per_s", pin_rate_bits_per_s))
    out = w * r / 8.0
    return float(out) if out.ndim == 0 else out


def hbm_pin_rate_bits_per_s(bandwidth_bytes_per_s, bus_width_bits):
    """The per-pin data rate a bandwidth implies: ``8 beta / w_bus`` (inverse of the function above)."""
    bw = np.asarray(_check.positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s))
    w = np.asarray(_check.integers("bus_width_bits", bus_width_bits, minimum=1), dtype=float)
    out = 8.0 * bw / w
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------------------
# Generations
# --------------------------------------------------------------------------------------

#: NVIDIA's data-center flagship of each generation, as named in the catalog.
GENERATION_GPUS = ("V100 SXM2 32GB", "A100 80GB SXM", "H100 SXM", "H200 SXM", "B200")


def generations(names=GENERATION_GPUS):
    """The catalog GPUs named in ``names``, by year (ties keep the order of ``names``)."""
    from . import hardware

    if isinstance(names, str) or not names:
        raise ValueError(f"names must be a non-empty sequence of GPU names, got {names!r}")
    return sorted((hardware.gpu(n) for n in names), key=lambda g: g.year)


def generations_table_markdown(names=GENERATION_GPUS) -> str:
    """One row per generation, units aligned: GB, TB/s, dense TFLOP/s, per-direction NVLink GB/s, FLOP/B, W.

    The 16-bit column is the dense BF16 tensor peak (FP16 for Volta, which has
    no BF16); FP8 is dense too, and "none" before Hopper. The ridge point is
    the 16-bit peak over the memory bandwidth.
    """
    from . import units
    from .quickref import markdown_table

    rows = []
    for g in generations(names):
        fp8 = g.fp8_dense_flops_per_s
        rows.append([
            g.name,
            f"{g.architecture} ({g.year})",
            f"{g.memory_bytes / units.GB:g} {g.memory_type}",
            f"{g.memory_bandwidth_bytes_per_s / units.TB:.2f}",
            f"{g.dense_flops_per_s('fp16') / 1e12:,.1f}",
            "none" if fp8 is None else f"{fp8 / 1e12:,.1f}",
            f"{g.scaleup_link}: {g.scaleup_bytes_per_s_per_direction / units.GB:,.0f}",
            f"{g.ridge_flops_per_byte:.0f}",
            f"{g.tdp_watts:,.0f}",
        ])
    return markdown_table(
        ["GPU", "architecture (year)", "memory (GB)", "HBM (TB/s)", "16-bit dense (TFLOP/s)",
         "FP8 dense (TFLOP/s)", "scale-up per direction (GB/s)", "ridge (FLOP/B)", "power (W)"],
        rows, align="llrrrrlrr",
    )


# --------------------------------------------------------------------------------------
# The 8B request, by hand
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Assumptions:
    """Inputs of the hand-worked request (SI units).

    ``kv_bytes_per_request`` is the KV one request reads in one decode step
    (an upper bound, taken constant over the reply); ``n_layers`` and
    ``d_model`` only serve the attention-term check.
    """

    n_params: float = 8e9
    bytes_per_weight: float = 2.0
    peak_flops_per_s: float = 1e15
    eta_f: float = 0.5
    bandwidth_bytes_per_s: float = 3e12
    eta_b: float = 0.7
    prompt_tokens: int = 2000
    kv_bytes_per_request: float = 0.3e9
    batch: int = 32
    n_layers: int = 32
    d_model: int = 4096
    attention_context_tokens: int = 1000

    def __post_init__(self):
        for name in ("n_params", "bytes_per_weight", "peak_flops_per_s", "bandwidth_bytes_per_s"):
            object.__setattr__(self, name, _check.positive(name, getattr(self, name)))
        for name in ("eta_f", "eta_b"):
            object.__setattr__(self, name, _check.fraction(name, getattr(self, name)))
        object.__setattr__(self, "kv_bytes_per_request",
                           _check.non_negative("kv_bytes_per_request", self.kv_bytes_per_request))
        for name in ("prompt_tokens", "batch", "n_layers", "d_model", "attention_context_tokens"):
            object.__setattr__(self, name, _check.integer(name, getattr(self, name), minimum=1))

    @property
    def weight_bytes(self) -> float:
        """Bytes of weights: ``N * b_W`` (16e9 B for the teaching model)."""
        from . import memory

        return memory.weight_bytes_formula(self.n_params, self.bytes_per_weight)


#: The teaching assumptions of the worked 8B request (source texts, see NOTES.md):
#: a Llama-3-8B-like model (32 layers, d_model 4096) in BF16 on a round GPU.
TEACHING_8B = Assumptions()


@dataclass(frozen=True)
class WorkedRequest:
    """Every number of the hand-worked request (SI units: FLOPs, bytes, seconds, tokens/s)."""

    assumptions: Assumptions
    prefill_flops: float
    prefill_compute_s: float
    prefill_weight_read_s: float
    prefill_time_s: float
    prefill_intensity_flops_per_byte: float
    decode_flops_per_request: float
    decode_compute_s: float
    weight_read_s: float
    step_time_s: float
    decode_intensity_flops_per_byte: float
    ridge_flops_per_byte: float
    batched_step_time_s: float
    batched_bytes_per_step: float
    batched_kv_share: float
    tokens_per_s_single: float
    tokens_per_s_batched: float
    throughput_gain: float
    attention_share_of_2n: float


def worked_request(assumptions: Assumptions = TEACHING_8B, **overrides) -> WorkedRequest:
    """Work the chat request of chapter 2 through the library's formulas.

    * prefill: ``2 N P`` FLOPs (:func:`aiinfra.compute.approx_prefill_flops_2n`)
      at ``eta_F Pi``, against one weight read at ``eta_B beta``; the slower
      sets the time (compute, 64 ms, for the teaching values);
    * one decode step: ``2N`` FLOPs against the weights plus one request's
      KV; with overlap the read wins (7.8 ms);
    * batch ``B``: one shared weight read plus ``B`` KV reads (12.2 ms for 32);
    * intensities: prefill ``2NP / (N b_W)``, decode ``2N / (N b_W + KV)``,
      against the ridge ``Pi / beta`` (333 FLOP/B);
    * the attention term ``2 L n_ctx d`` over ``2N`` at the given context
      (1.6 % at 1,000 tokens), the reason it is dropped.

    ``overrides`` replace fields of ``assumptions`` (e.g. ``batch=8``).
    """
    from . import compute, decode, roofline

    if not isinstance(assumptions, Assumptions):
        raise ValueError(f"assumptions must be an aiinfra.chain.Assumptions, got {type(assumptions).__name__}")
    unknown = set(overrides) - set(Assumptions.__dataclass_fields__)
    if unknown:
        raise ValueError(f"overrides must be fields of Assumptions, got unknown {sorted(unknown)}")
    a = replace(assumptions, **overrides)
    w = a.weight_bytes
    kv = a.kv_bytes_per_request
    f_pre = compute.approx_prefill_flops_2n(a.n_params, a.prompt_tokens)
    f_tok = compute.approx_decode_flops_2n(a.n_params, 1)
    pre_c = roofline.compute_time_s(f_pre, a.peak_flops_per_s, a.eta_f)
    pre_m = roofline.memory_time_s(w, a.bandwidth_bytes_per_s, a.eta_b)
    step1 = decode.batched_decode_step_time_s(1, f_tok, w, kv, a.peak_flops_per_s, a.bandwidth_bytes_per_s,
                                              a.eta_f, a.eta_b)
    step_b = decode.batched_decode_step_time_s(a.batch, f_tok, w, kv, a.peak_flops_per_s,
                                               a.bandwidth_bytes_per_s, a.eta_f, a.eta_b)
    bytes_b = w + a.batch * kv
    tps1 = decode.tokens_per_s_aggregate(1, step1)
    tpsb = decode.tokens_per_s_aggregate(a.batch, step_b)
    attn = compute.kaplan_attention_flops_per_token(a.n_layers, a.attention_context_tokens, a.d_model)
    return WorkedRequest(
        assumptions=a,
        prefill_flops=f_pre,
        prefill_compute_s=pre_c,
        prefill_weight_read_s=pre_m,
        prefill_time_s=roofline.step_time_overlapped_s(f_pre, w, a.peak_flops_per_s, a.bandwidth_bytes_per_s,
                                                       a.eta_f, a.eta_b),
        prefill_intensity_flops_per_byte=roofline.arithmetic_intensity_flops_per_byte(f_pre, w),
        decode_flops_per_request=f_tok,
        decode_compute_s=roofline.compute_time_s(f_tok, a.peak_flops_per_s, a.eta_f),
        weight_read_s=pre_m,
        step_time_s=step1,
        decode_intensity_flops_per_byte=roofline.arithmetic_intensity_flops_per_byte(f_tok, w + kv),
        ridge_flops_per_byte=roofline.ridge_point_flops_per_byte(a.peak_flops_per_s, a.bandwidth_bytes_per_s),
        batched_step_time_s=step_b,
        batched_bytes_per_step=bytes_b,
        batched_kv_share=a.batch * kv / bytes_b,
        tokens_per_s_single=tps1,
        tokens_per_s_batched=tpsb,
        throughput_gain=tpsb / tps1,
        attention_share_of_2n=attn / f_tok,
    )


_t1, _t2, _g = sp.symbols("T_TTFT T_TPOT G", positive=True)


@twin((_g - 1) * _t2 / (_t1 + (_g - 1) * _t2), domains={"output_tokens": (2, 4096, "int")},
      ttft_s=_t1, tpot_s=_t2, output_tokens=_g)
def decode_share_of_reply(ttft_s, tpot_s, output_tokens):
    """Fraction of a reply's latency spent in decode: ``(G - 1) T_TPOT / (TTFT + (G - 1) T_TPOT)``.

    Uses the serving-benchmark convention of :func:`aiinfra.decode.end_to_end_latency_s`
    (prefill emits the first token, each later token costs one step).
    The 8B request with a 500-token reply: 64 ms of prefill against
    499 x 7.8 ms of decode, 98 % decode. Accepts arrays.
    """
    from . import decode

    first = np.asarray(_check.positive("ttft_s", ttft_s))
    total = np.asarray(decode.end_to_end_latency_s(ttft_s, tpot_s, output_tokens))
    out = (total - first) / total
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------------------
# Scale-up domains
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ScaleUpDomain:
    """A group of GPUs joined all-to-all by one switched link (an NVLink domain).

    ``link`` is the catalog name of the per-GPU link (all its lanes);
    ``n_cpus`` the host CPUs in the domain.
    """

    name: str
    n_gpus: int
    link: str
    n_cpus: int
    source: str

    def __post_init__(self):
        from . import hardware

        _check.integer("n_gpus", self.n_gpus, minimum=1)
        _check.integer("n_cpus", self.n_cpus, minimum=0)
        hardware.link(self.link)  # raises ValueError for an unknown link
        if not isinstance(self.name, str) or not self.name or not isinstance(self.source, str) or not self.source:
            raise ValueError("name and source must be non-empty strings")


#: One DGX H100: 8 GPUs, NVLink 4 through 4 NVSwitch chips, 2 Xeon sockets.
DGX_H100_DOMAIN = ScaleUpDomain("DGX H100", 8, "NVLink 4 (per GPU, 18 links)", 2,
                                "NVIDIA DGX H100 User Guide, 'Hardware Overview' (2023)")
#: One GB200 NVL72 rack: 72 Blackwell GPUs and 36 Grace CPUs in one NVLink 5 domain
#: (18 compute trays, 9 NVLink switch trays; NVIDIA quotes 130 TB/s of NVLink bandwidth).
GB200_NVL72 = ScaleUpDomain("GB200 NVL72", 72, "NVLink 5 (per GPU, 18 links)", 36,
                            "NVIDIA GB200 NVL72 product page and datasheet (2024)")


def domain_bandwidth_bytes_per_s(domain: ScaleUpDomain, both_directions: bool = False) -> float:
    """Sum of every GPU's scale-up bandwidth in ``domain``: ``n_GPUs x beta_GPU``.

    Per direction by default; ``both_directions=True`` doubles it, the way
    vendors quote the domain (GB200 NVL72: 72 x 1.8 TB/s = 129.6 TB/s, "130 TB/s").
    """
    from . import hardware

    if not isinstance(domain, ScaleUpDomain):
        raise ValueError(f"domain must be an aiinfra.chain.ScaleUpDomain, got {type(domain).__name__}")
    both = _flag("both_directions", both_directions)
    per_dir = domain.n_gpus * hardware.link(domain.link).bytes_per_s_per_direction
    return per_dir * (2.0 if both else 1.0)
