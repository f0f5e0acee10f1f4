"""The nine layers between a wafer and a chat product, as data (chapter 2).

Each :class:`Layer` records what the layer does, the real hardware or
software that lives there, the first number to check when something at that
layer looks slow (with its unit and the tool that reads it), and what the
layer contributes to one decode step of a batched chat request. The table is
ordered bottom-up, from the fab to the product, so ``LAYERS[0]`` is the
layer furthest from the user.

"Check first" is a debugging order, not a claim that the layer is limited by
that number alone: it is the cheapest measurement that separates "this layer
is the bottleneck" from "look elsewhere".

The scheduler comparison (:data:`SCHEDULERS`) contrasts Slurm, which allocates
whole nodes to batch jobs, with Kubernetes, where the NVIDIA device plugin
advertises GPUs as the extended resource ``nvidia.com/gpu`` that a container
requests in ``resources.limits``.

Nothing here is a formula; chapters render the tables with
:func:`layer_table_markdown` and :func:`scheduler_table_markdown` and look a
layer up with :func:`layer`.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import _check

__all__ = [
    "Layer",
    "LAYERS",
    "LAYER_NAMES",
    "layer",
    "layers_top_down",
    "layer_table_markdown",
    "decode_walk_markdown",
    "Scheduler",
    "SCHEDULERS",
    "scheduler_table_markdown",
]


@dataclass(frozen=True)
class Layer:
    """One layer of the stack.

    ``software`` names real products or libraries found at the layer;
    ``check_first`` is the number to read first when debugging, ``unit`` its
    unit, ``read_with`` the tool or source that gives it, and
    ``in_decode_step`` what this layer does during one decode step of a
    batch of chat requests.
    """

    name: str
    does: str
    software: tuple[str, ...]
    check_first: str
    unit: str
    read_with: str
    in_decode_step: str


LAYERS: tuple[Layer, ...] = (
    Layer(
        name="fab",
        does="Prints the logic die on a wafer and assembles it with memory in an advanced package",
        software=("TSMC 4N process (H100)", "CoWoS-S and CoWoS-L packaging", "HBM3/HBM3e stacks (SK hynix, Samsung, Micron)"),
        check_first="die area against the ~858 mm² lithography field, and how many packages the CoWoS and HBM supply allows",
        unit="mm², packages per month",
        read_with="vendor die sizes; foundry and memory-maker capacity reports",
        in_decode_step="nothing at run time: it fixed, years earlier, how many HBM stacks fit beside the die",
    ),
    Layer(
        name="chip",
        does="Places the GPU die and its HBM stacks on one silicon interposer",
        software=("H100 SXM5 package: 5 active HBM3 stacks, 5,120-bit memory bus",),
        check_first="peak HBM bandwidth = stacks × bits per stack × per-pin rate ÷ 8",
        unit="B/s",
        read_with="the architecture whitepaper (H100: V1.04)",
        in_decode_step="the interposer carries every weight and KV byte from the stacks to the die",
    ),
    Layer(
        name="GPU",
        does="Runs kernels on streaming multiprocessors (SMs) with Tensor Cores and an L2 cache",
        software=("H100 SXM5: 132 SMs, 50 MB L2", "Tensor Cores (BF16, FP8)"),
        check_first="achieved HBM bytes/s against the peak during decode (MBU), achieved dense FLOP/s during prefill (MFU)",
        unit="B/s and FLOP/s",
        read_with="Nsight Compute, Nsight Systems, DCGM (dcgmi dmon)",
        in_decode_step="the SMs stream the weights plus every request's KV out of HBM and multiply them by a few activation vectors",
    ),
    Layer(
        name="server",
        does="Joins 8 GPUs by NVLink/NVSwitch, and GPUs, NICs and CPUs by PCIe",
        software=("DGX H100 / HGX H100", "NVSwitch", "ConnectX-7 NICs", "Xeon 8480C hosts"),
        check_first="per-direction bandwidth of the slowest link a transfer crosses, and the GPU-NIC-CPU topology",
        unit="B/s per direction",
        read_with="nvidia-smi topo -m, nvidia-smi nvlink -s, lspci -vv, the DGX user guide",
        in_decode_step="with the model split across GPUs, each layer's partial sums cross NVLink in an all-reduce",
    ),
    Layer(
        name="cluster and scheduler",
        does="Connects servers by an InfiniBand or RDMA Ethernet fabric and hands GPUs to jobs",
        software=("Slurm (sbatch, --gres=gpu:8)", "Kubernetes + NVIDIA device plugin (nvidia.com/gpu)", "InfiniBand NDR, RoCE"),
        check_first="whether the GPUs a job got share one NVLink domain, and how long it queued",
        unit="GPUs per domain, s of queue wait",
        read_with="squeue/sacct, kubectl describe pod, the fabric's topology file",
        in_decode_step="placed the replica on GPUs of one server long before the request arrived",
    ),
    Layer(
        name="kernels and libraries",
        does="Implements each operation as GPU code: matrix multiplies, attention, collectives",
        software=("cuBLAS", "cuDNN", "CUTLASS", "Triton", "FlashAttention", "NCCL"),
        check_first="the hottest kernel's achieved FLOP/s or bytes/s against its roofline bound; NCCL bus bandwidth",
        unit="FLOP/s, B/s",
        read_with="Nsight Systems timeline, nccl-tests (busbw)",
        in_decode_step="GEMM kernels read each weight matrix once for the whole batch; an attention kernel reads each request's KV",
    ),
    Layer(
        name="framework",
        does="Turns model code into a sequence of kernel launches, and owns the tensors",
        software=("PyTorch (eager, torch.compile)", "CUDA Graphs", "JAX/XLA", "TensorRT"),
        check_first="host time per step against GPU time per step: gaps where the GPU waits for launches",
        unit="s per step",
        read_with="torch.profiler, Nsight Systems (CPU and GPU rows)",
        in_decode_step="one forward pass is issued, often replayed as a captured CUDA Graph to skip per-kernel launch cost",
    ),
    Layer(
        name="serving engine",
        does="Queues requests, forms batches step by step, and manages KV-cache memory",
        software=("vLLM", "SGLang", "TensorRT-LLM", "Text Generation Inference"),
        check_first="running batch size and free KV-cache blocks; requests waiting in the queue",
        unit="requests, blocks, requests waiting",
        read_with="the engine's /metrics endpoint (Prometheus) and logs",
        in_decode_step="chooses which requests join this step and maps each one's KV pages",
    ),
    Layer(
        name="product",
        does="Takes the user's text, streams tokens back, and bills them",
        software=("chat front end", "API gateway", "tokenizer and detokenizer"),
        check_first="time to first token and time per output token at p50 and p99; cost per million tokens",
        unit="s, $ per 1e6 tokens",
        read_with="client-side timing, request logs, billing",
        in_decode_step="the user sees one more token appear, about one step time after the last",
    ),
)

LAYER_NAMES: tuple[str, ...] = tuple(lay.name for lay in LAYERS)


def layer(name: str) -> Layer:
    """The :class:`Layer` called ``name`` (case-insensitive), e.g. ``layer("GPU")``."""
    if not isinstance(name, str):
        raise ValueError(f"name must be one of {list(LAYER_NAMES)}, got {name!r}")
    by_lower = {lay.name.lower(): lay for lay in LAYERS}
    _check.choice("name", name.lower(), set(by_lower))
    return by_lower[name.lower()]


def layers_top_down() -> tuple[Layer, ...]:
    """The layers from the product down to the fab (the order a request travels)."""
    return tuple(reversed(LAYERS))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def layer_table_markdown(top_down: bool = True) -> str:
    """A Markdown table of every layer: what it does, where to look, what to check first.

    ``top_down`` lists the product first (the reading order of chapter 2);
    ``False`` lists the fab first.
    """
    if not isinstance(top_down, bool):
        raise ValueError(f"top_down must be True or False, got {top_down!r}")
    rows = layers_top_down() if top_down else LAYERS
    out = [
        "| # | layer | what it does | real hardware and software | number to check first | unit | read it with |",
        "|---|---|---|---|---|---|---|",
    ]
    for lay in rows:
        number = LAYERS.index(lay) + 1
        out.append(
            f"| {number} | {_cell(lay.name)} | {_cell(lay.does)} | {_cell(', '.join(lay.software))} | "
            f"{_cell(lay.check_first)} | {_cell(lay.unit)} | {_cell(lay.read_with)} |"
        )
    return "\n".join(out)


def decode_walk_markdown() -> str:
    """A two-column Markdown table: what each layer does in one decode step, product first."""
    out = ["| layer | during one decode step |", "|---|---|"]
    for lay in layers_top_down():
        out.append(f"| {_cell(lay.name)} | {_cell(lay.in_decode_step)} |")
    return "\n".join(out)


@dataclass(frozen=True)
class Scheduler:
    """One cluster scheduler: how it grants GPUs and what it is built for."""

    name: str
    unit_of_allocation: str
    how_gpus_are_requested: str
    gang_scheduling: str
    built_for: str


SCHEDULERS: tuple[Scheduler, ...] = (
    Scheduler(
        name="Slurm",
        unit_of_allocation="nodes (or GPUs as generic resources) for a job with a time limit",
        how_gpus_are_requested="sbatch --nodes=4 --gres=gpu:8 (GRES configured per node)",
        gang_scheduling="built in: a job starts only when all its nodes are free",
        built_for="batch training and HPC jobs that run to completion",
    ),
    Scheduler(
        name="Kubernetes",
        unit_of_allocation="pods; GPUs are an extended resource counted per container",
        how_gpus_are_requested="resources.limits: nvidia.com/gpu: 8, advertised by the NVIDIA device plugin",
        gang_scheduling="not by default; added by Kueue, Volcano or similar",
        built_for="long-running services that scale replicas up and down",
    ),
)


def scheduler_table_markdown() -> str:
    """A Markdown table comparing Slurm and Kubernetes for GPU work."""
    out = [
        "| scheduler | what it allocates | how a job asks for GPUs | all-or-nothing start | built for |",
        "|---|---|---|---|---|",
    ]
    for s in SCHEDULERS:
        out.append(
            f"| {s.name} | {_cell(s.unit_of_allocation)} | {_cell(s.how_gpus_are_requested)} | "
            f"{_cell(s.gang_scheduling)} | {_cell(s.built_for)} |"
        )
    return "\n".join(out)
