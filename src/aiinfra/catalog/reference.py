"""Reference data: measured points, published numbers and the book's prose tables, each with its source.

Only numbers that were actually measured or published live here, with their
conditions; every other point a chapter draws is a *prediction* of a model and
must be labelled so. The prose tables (the stack's layers, the schedulers,
the shifts that break assumptions, the 2009 latency numbers) are shipped as
JSON in ``aiinfra/catalog/data`` and read with :func:`table`; the chapters
render them with :mod:`aiinfra.book.tables`.

Chapter 1's decode record: Qwen3-8B in BF16 served by vLLM 0.23 in eager mode
on one RTX PRO 6000 Blackwell Workstation Edition (96 GB, 1.792 TB/s, 503.8
dense BF16 TFLOP/s); every request had a 2,048-token prompt and produced 256
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

import json
from collections import namedtuple
from dataclasses import dataclass
from functools import cache
from importlib import resources

from aiinfra import roofline, units
from aiinfra.formula import check, choice

__all__ = [
    "TABLES",
    "table",
    "source",
    "layer",
    "latency_s",
    "latency_ratio",
    "DecodeMeasurement",
    "QWEN3_8B_RTX_PRO_6000",
    "ReportedRun",
    "REPORTED_TRAINING_RUNS",
    "ClusterAssumption",
    "THECATCH_CLUSTER",
    "PublishedPower",
    "SYSTEM_POWER",
    "system_power",
    "PublishedShare",
    "NVIDIA_FY2024_INFERENCE_SHARE",
    "PublishedGain",
    "ROUTING_GAINS",
    "SystolicChip",
    "TPU_V1",
    "Die",
    "GH100",
    "DEFECT_DENSITY_PER_M2",
    "DEFECT_DENSITY_SOURCE",
    "LaunchTiming",
    "CUDA_GRAPHS_V100",
    "MPS_MAX_CLIENTS",
    "MPS_SOURCE",
]

#: The prose tables shipped as package data (``aiinfra/catalog/data/NAME.json``).
TABLES = ("layers", "schedulers", "shifts", "latency_2009")


@cache
def _load(name: str) -> dict:
    choice("name", name, set(TABLES))
    text = resources.files("aiinfra.catalog").joinpath("data", f"{name}.json").read_text(encoding="utf-8")
    return json.loads(text)


def _tuples(value):
    return tuple(value) if isinstance(value, list) else value


@cache
def table(name: str) -> tuple:
    """The rows of the prose table ``name`` (one of :data:`TABLES`), as named tuples, in the order shipped.

    ``layers``: the nine layers between a wafer and a chat product, bottom-up
    (fields ``name, does, software, check_first, unit, read_with,
    in_decode_step``); ``schedulers``: Slurm and Kubernetes for GPU work;
    ``shifts``: what changed, the assumption it broke, an example and the
    chapters that treat it (empty: beyond this book); ``latency_2009``: Jeff
    Dean's 2009 "numbers everyone should know", in ns (read them with
    :func:`latency_s`).
    """
    rows = _load(name)["rows"]
    Row = namedtuple(name.title().replace("_", "") + "Row", list(rows[0]))  # type: ignore[misc]  # named after its table at run time
    return tuple(Row(**{k: _tuples(v) for k, v in row.items()}) for row in rows)


def source(name: str) -> str:
    """Where the table ``name`` comes from."""
    return _load(name)["source"]


def layer(name: str):
    """The row of the ``layers`` table called ``name`` (case-insensitive), e.g. ``layer("GPU")``."""
    rows = {row.name.lower(): row for row in table("layers")}
    if not isinstance(name, str):
        raise ValueError(f"name must be one of {[r.name for r in table('layers')]}, got {name!r}")
    choice("name", name.lower(), set(rows))
    return rows[name.lower()]


def latency_s(operation: str) -> float:
    """Seconds the 2009 table gives for ``operation`` (case-insensitive exact name)."""
    rows = {row.operation.lower(): row for row in table("latency_2009")}
    if not isinstance(operation, str) or operation.lower() not in rows:
        names = ", ".join(repr(r.operation) for r in table("latency_2009"))
        raise ValueError(f"operation must be one of {names}; got {operation!r}")
    return rows[operation.lower()].ns * units.ns


def latency_ratio(slower: str, faster: str) -> float:
    """How many times longer ``slower`` takes than ``faster`` (a disk seek is 1e5 memory references)."""
    return latency_s(slower) / latency_s(faster)


# --------------------------------------------------------------------------------------
# Measured decode points (chapter 1)
# --------------------------------------------------------------------------------------


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
    tpot_s: dict  # batch -> measured TPOT (s)
    throughput_ratio: dict  # batch -> measured throughput / throughput at batch 1
    followups_s: dict  # name -> measured time (s) at batch 1
    source: str

    def measured_batches(self) -> list[int]:
        """Batch sizes with a measured TPOT, ascending."""
        return sorted(self.tpot_s)

    def tpot(self, batch: int) -> float:
        """Measured TPOT at ``batch``; a batch that was not measured raises ``ValueError``."""
        b = check("batch", batch, "int>=1", scalar=True)
        if b not in self.tpot_s:
            raise ValueError(
                f"batch must be one of the measured batches {self.measured_batches()}, got {batch!r}"
            )
        return self.tpot_s[b]

    @property
    def mid_reply_context_tokens(self) -> int:
        """Context of the decode step halfway through the reply: ``P + G // 2`` (chapter 4 evaluates the bound there)."""
        return self.prompt_tokens + self.output_tokens // 2


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


# --------------------------------------------------------------------------------------
# Published training runs (chapter 6)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportedRun:
    """A published large training run: GPUs, layout and achieved BF16 MFU."""

    name: str
    gpu: str
    gpus: int
    layout: str  # parallel layout as the authors give it ("" if not quoted here)
    tflops_per_gpu: float  # achieved, dense BF16, per GPU
    mfu: float  # as the authors report it
    source: str

    @property
    def useful_flops_per_s(self) -> float:
        """The run's achieved compute over all its GPUs: ``gpus x tflops_per_gpu``, in FLOP/s."""
        return self.gpus * self.tflops_per_gpu * units.TERA


#: Runs cited in chapter 6 (figures checked against the papers).
REPORTED_TRAINING_RUNS = (
    ReportedRun(
        "Megatron-LM GPT, 1T parameters",
        "A100 80GB",
        3072,
        "TP 8 inside each DGX A100, PP across nodes",
        163.0,
        0.52,
        "Narayanan et al. 2021 (502 PFLOP/s aggregate; A100 dense BF16 peak 312 TFLOP/s)",
    ),
    ReportedRun(
        "Llama 3 405B, 8K sequence",
        "H100 SXM",
        8192,
        "TP 8, CP 1, PP 16, DP 64",
        430.0,
        0.43,
        "Llama 3 Herd of Models 2024, Table 4",
    ),
    ReportedRun(
        "Llama 3 405B, 8K sequence",
        "H100 SXM",
        16384,
        "TP 8, CP 1, PP 16, DP 128",
        400.0,
        0.41,
        "Llama 3 Herd of Models 2024, Table 4",
    ),
    ReportedRun(
        "Llama 3 405B, 128K sequence",
        "H100 SXM",
        16384,
        "TP 8, CP 16, PP 16, DP 4",
        380.0,
        0.38,
        "Llama 3 Herd of Models 2024, Table 4",
    ),
)


# --------------------------------------------------------------------------------------
# Cluster figures and published power (chapter 6)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterAssumption:
    """Round per-GPU figures a cluster estimate starts from, with the boundary of the watts."""

    flops_per_s_per_gpu: float  # dense, one precision
    watts_per_gpu: float
    power_convention: str  # "all-in" (host, network and cooling included) or "chip-only"
    source: str
    cite: str  # key in book/references.bib


#: The Catch's cluster chapter: about 1 PFLOP/s of dense compute per GPU (an H100-class round
#: figure) and 1.4 kW per GPU all-in. 1.4 kW sits between a DGX H100's server power per GPU
#: (1.275 kW, facility overhead excluded) and SemiAnalysis's 1.5 kW per GPU for a 100,000-H100
#: site: an H100-era figure, too low for Blackwell (see :data:`SYSTEM_POWER`).
THECATCH_CLUSTER = ClusterAssumption(
    flops_per_s_per_gpu=1e15,
    watts_per_gpu=1400.0,
    power_convention="all-in",
    source="The Catch, 'AI infrastructure from first principles', cluster chapter (round figures)",
    cite="thecatch2025firstprinciples",
)


@dataclass(frozen=True)
class PublishedPower:
    """A published power figure of a GPU system: what it covers and how firm it is."""

    system: str
    gpus: int
    watts: float
    boundary: str  # what the figure includes
    confirmed: bool  # True: read in a vendor document; False: press or analyst figure
    source: str
    cite: str


#: Published power of GPU systems, server to row (chapter 6). Checked against
#: /work/notes/research-18.md sections 1 and 10.
SYSTEM_POWER = (
    PublishedPower(
        "DGX H100",
        8,
        10.2e3,
        "server maximum (8 H100 SXM, CPUs, NICs, NVSwitch, fans)",
        True,
        "NVIDIA DGX H100/H200 User Guide",
        "nvidia2023dgxh100",
    ),
    PublishedPower(
        "DGX B200",
        8,
        14.3e3,
        "server maximum (8 B200 at up to 1,000 W each, CPUs, NICs, fans)",
        True,
        "NVIDIA DGX B200 User Guide, introduction",
        "nvidia2024dgxb200",
    ),
    PublishedPower(
        "GB200 NVL72",
        72,
        120e3,
        "one rack (72 GPUs, 36 Grace CPUs, NVLink switch trays)",
        False,
        "NVIDIA at GTC 2024, as reported by ServeTheHome; no NVIDIA document gives a rack draw",
        "kennedy2024dgxgb200",
    ),
    PublishedPower(
        "DGX SuperPOD GB200 scalable unit",
        576,
        1.2e6,
        "power budget (TDP) of 8 DGX GB200 racks with their share of the network",
        True,
        "NVIDIA DGX SuperPOD reference architecture (GB200)",
        "nvidia2025superpodgb200",
    ),
    PublishedPower(
        "100,000-H100 cluster",
        100_000,
        150e6,
        "data-center capacity the site needs (an estimate: 'more than 150 MW')",
        False,
        "SemiAnalysis, '100,000 H100 Clusters', June 2024",
        "semianalysis2024h100clusters",
    ),
    PublishedPower(
        "B200 in a GB200 NVL72",
        1,
        1.2e3,
        "one GPU (analyst figure; NVIDIA publishes none)",
        False,
        "SemiAnalysis, 'GB300 & B300', December 2024",
        "semianalysis2024gb300",
    ),
)


def system_power(name: str) -> PublishedPower:
    """The entry of :data:`SYSTEM_POWER` called ``name`` (exact, e.g. ``"GB200 NVL72"``)."""
    rows = {p.system: p for p in SYSTEM_POWER}
    choice("name", name, set(rows))
    return rows[name]


# --------------------------------------------------------------------------------------
# What inference is worth (chapter 7)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublishedShare:
    """A share a company or paper published, with its period and source."""

    what: str
    share: float
    period: str
    source: str
    cite: str


#: NVIDIA's own estimate: about 40 % of its Data Center revenue in fiscal 2024 (the year to
#: 28 January 2024) came from AI inference (Form 10-K, "Market Platform Highlights"; the CFO
#: repeated it on the Q4 FY2024 call).
NVIDIA_FY2024_INFERENCE_SHARE = PublishedShare(
    "share of NVIDIA Data Center revenue for AI inference",
    0.40,
    "fiscal 2024 (year to 28 January 2024)",
    "NVIDIA Form 10-K for fiscal 2024, MD&A",
    "nvidia2024annual",
)


# --------------------------------------------------------------------------------------
# Published gains of cache-aware routing (chapter 7)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PublishedGain:
    """A speed-up a paper or vendor reported, as a range ``low``..``high`` (equal for a single figure)."""

    name: str
    what: str
    low: float
    high: float
    source: str
    cite: str

    @property
    def factor_text(self) -> str:
        """The factor as prose: ``"1.9"``, or ``"1.5 to 14.5"`` for a range."""
        return f"{self.low:g}" if self.low == self.high else f"{self.low:g} to {self.high:g}"


#: Reported gains of routing requests to where their prefix is cached (factors over the baseline
#: the authors compared with). Preble: ICLR 2025 paper; SGLang v0.4: LMSYS blog, 4 Dec 2024.
ROUTING_GAINS = (
    PublishedGain(
        "preble_mean_latency",
        "lower mean latency than the state of the art",
        1.5,
        14.5,
        "Srivatsa et al., Preble (ICLR 2025)",
        "srivatsa2024preble",
    ),
    PublishedGain(
        "preble_p99_latency",
        "lower p99 latency than the state of the art",
        2.0,
        10.0,
        "Srivatsa et al., Preble (ICLR 2025)",
        "srivatsa2024preble",
    ),
    PublishedGain(
        "sglang_throughput",
        "higher throughput with the cache-aware load balancer",
        1.9,
        1.9,
        "SGLang v0.4 release blog (LMSYS, 2024)",
        "sglang2024v04",
    ),
    PublishedGain(
        "sglang_hit_rate",
        "higher cache hit rate with the cache-aware load balancer",
        3.8,
        3.8,
        "SGLang v0.4 release blog (LMSYS, 2024)",
        "sglang2024v04",
    ),
)


# --------------------------------------------------------------------------------------
# Chapter 2: a chip built for one workload, the die and the wafer, launches and sharing
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystolicChip:
    """A matrix-unit accelerator as its paper describes it (SI units; peaks as the paper counts them).

    ``reported_peak_ops_per_s`` counts a MAC as two operations;
    ``reported_ridge_macs_per_byte`` is the ridge point of the paper's
    roofline, whose x axis counts multiply-accumulates (not FLOPs) per byte
    of weight memory read. ``throughput_at_latency_limit`` gives, per
    device, the share of its best throughput it kept under the latency
    limit of the paper's MLP service.
    """

    name: str
    array_rows: int
    array_cols: int
    clock_hz: float
    bits_per_weight: int
    weight_memory_bytes: float
    weight_memory_bandwidth_bytes_per_s: float
    unified_buffer_bytes: float
    accumulator_bytes: float
    reported_peak_ops_per_s: float
    reported_ridge_macs_per_byte: float
    latency_limit_s: float
    throughput_at_latency_limit: dict
    share_of_inference_mlp_lstm_cnn: float
    share_of_inference_cnn: float
    memory_bound_apps: tuple  # (applications on the memory-bound slope, applications studied)
    source: str

    @property
    def macs(self) -> int:
        """Multiply-accumulate cells in the array."""
        return self.array_rows * self.array_cols

    @property
    def peak_flops_per_s(self) -> float:
        """Peak of the array: :func:`aiinfra.roofline.mac_array_peak_flops_per_s`."""
        return roofline.mac_array_peak_flops_per_s(self.array_rows, self.array_cols, self.clock_hz)


TPU_V1 = SystolicChip(
    name="TPU v1",
    array_rows=256,
    array_cols=256,
    clock_hz=700e6,
    bits_per_weight=8,
    weight_memory_bytes=8 * units.GiB,
    weight_memory_bandwidth_bytes_per_s=34e9,
    unified_buffer_bytes=24 * units.MiB,
    accumulator_bytes=4 * units.MiB,
    reported_peak_ops_per_s=92e12,
    reported_ridge_macs_per_byte=1350.0,
    latency_limit_s=7e-3,
    throughput_at_latency_limit={"Haswell CPU": 0.42, "K80 GPU": 0.37, "TPU v1": 0.80},
    share_of_inference_mlp_lstm_cnn=0.95,
    share_of_inference_cnn=0.05,
    memory_bound_apps=(4, 6),
    source="Jouppi et al., 'In-Datacenter Performance Analysis of a Tensor Processing Unit', ISCA 2017: abstract "
    "(65,536 8-bit MACs, 92 TOPS, 28 MiB on chip), section 2 (8 GiB DDR3 Weight Memory, 24 MiB Unified Buffer, "
    "4 MiB accumulators), section 9 (700 MHz, 34 GB/s), figure 5 (ridge ~1,350 MAC per weight byte), section 4 "
    "(7 ms 99th-percentile limit of MLP0; 42 %, 37 % and 80 % of peak throughput), sections 1 and 10 "
    "(MLPs, CNNs and LSTMs 95 % of inference, CNNs about 5 %; 4 of the 6 applications memory-bound)",
)
"""TPU v1 (deployed 2015, published 2017): the systolic matrix unit of chapter 2."""


@dataclass(frozen=True)
class Die:
    """A logic die as its vendor describes it: area, transistors, process, and the units the product enables."""

    name: str
    area_m2: float
    transistors: float
    process: str
    enabled_of_built: dict  # unit -> (enabled in the product, built on the die)
    source: str


GH100 = Die(
    "GH100",
    814 * units.mm2,
    80e9,
    "TSMC 4N",
    {"SMs": (132, 144), "HBM3 stack sites": (5, 6)},
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper V1.04, section 4 (814 mm^2, 80 billion "
    "transistors, 144 SMs on the full die, 132 on H100 SXM5, 5 active HBM3 stacks of 6 sites)",
)
"""The H100's die: the chapter-2 example of dies per wafer and yield."""

#: Defect densities TSMC showed for its leading processes, per square metre: N7 three quarters into
#: volume production (2019), and N5 in 2020 (a range). TSMC publishes none for N4/4N.
DEFECT_DENSITY_PER_M2 = {
    "TSMC N7, 2019": 0.09 / units.cm2,
    "TSMC N5, 2020 (low)": 0.10 / units.cm2,
    "TSMC N5, 2020 (high)": 0.11 / units.cm2,
}
DEFECT_DENSITY_SOURCE = (
    "I. Cutress, 'Better Yield on 5nm than 7nm: TSMC Update on Defect Rates for N5', AnandTech, "
    "25 Aug 2020 (a reading of TSMC's 2020 Technology Symposium slides)"
)


@dataclass(frozen=True)
class LaunchTiming:
    """Time per kernel of a chain of identical short kernels, launched three ways (one published measurement).

    ``per_kernel_s`` maps the launch mode (``"synchronized"``: the host waits
    for each kernel; ``"stream"``: launches queued back to back; ``"graph"``:
    the chain captured once as a CUDA graph and replayed) to the measured
    time per kernel; ``kernel_s`` is the kernel's own duration.
    """

    gpu: str
    kernel_s: float
    per_kernel_s: dict
    graph_instantiation_s: float
    source: str

    def overhead_s(self, mode: str) -> float:
        """Time each kernel adds beyond its own work in ``mode``: ``per_kernel_s[mode] - kernel_s``."""
        return self.per_kernel_s[choice("mode", mode, set(self.per_kernel_s))] - self.kernel_s


CUDA_GRAPHS_V100 = LaunchTiming(
    gpu="V100",
    kernel_s=2.9e-6,
    per_kernel_s={"synchronized": 9.6e-6, "stream": 3.8e-6, "graph": 3.4e-6},
    graph_instantiation_s=400e-6,
    source="A. Gray, 'Getting Started with CUDA Graphs', NVIDIA Technical Blog, 2019 (V100, CUDA 10.1; figures as "
    "two independent summaries of the post give them)",
)
"""Kernel-launch overhead and what a CUDA graph saves (chapter 2)."""

#: Most client processes one GPU serves under the Multi-Process Service, by architecture.
MPS_MAX_CLIENTS = {"before Volta": 16, "Volta and later (CUDA 13.0 and earlier)": 48}
MPS_SOURCE = "NVIDIA Multi-Process Service documentation, section 2.3.5.1 (client limits)"
