"""A bound and a calibrated prediction of one deployment's speed, side by side.

The **bound** is the roofline at 100 % of peak: every decode step and every
prefill pass takes the larger of its arithmetic at the dense peak and its
reads at the peak bandwidth, nothing else, and the whole memory holds weights
and KV. No real run is faster.

The **prediction** runs the same schedule with the few named
:class:`Parameters`, each with a physical meaning, a range and a source
(:data:`PARAMETER_SPECS`):

* achieved fractions of peak bandwidth and compute, separate for decode and
  prefill (``eta_b_decode``, ``eta_f_decode``, ``eta_b_prefill``, ``eta_f_prefill``),
  and for attention's reads of the KV cache (``eta_b_kv``);
* a fixed cost per layer per forward pass (launches, framework and host
  time), one for graph-captured engines and one for eager ones;
* two tensor-parallel all-reduces per layer per pass, each timed by the
  fastest measured regime for its size (:func:`aiinfra.cluster.network.tp_allreduce_time_s`);
* memory: a share ``memory_utilization`` of it for weights, KV and
  activations, the activations growing with the tokens in flight
  (``activation_copies`` hidden-width vectors per token, FP32 logits per
  sequence).

The schedule (:func:`speeds`): ``batch`` requests arrive together, split
evenly over ``replicas`` data-parallel copies of a ``tp``-GPU replica. Each
replica prefills its prompts in passes of at most ``prefill_chunk_tokens``
tokens (chunked, batched prefill: one weight read per pass); a request's
first token comes with the pass that ends its prompt. Then ``G - 1`` decode
steps, each at the mean context ``P + G/2``. Because every parameter only
slows a pass or shrinks the memory, the prediction is never faster than the
bound (``tests/test_predict.py`` checks it as a property).

Serves: chapters 4 and 7 (every quoted speed, bound beside prediction) and
chapter 8 ("How good is the model?"). The fitted values come from
:mod:`aiinfra.calibration`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from functools import cached_property, lru_cache

import numpy as np

from aiinfra import compute, units
from aiinfra.catalog import hardware, models
from aiinfra.cluster import network
from aiinfra.deployment import Deployment
from aiinfra.formula import check, choice
from aiinfra.serving import moe

__all__ = [
    "PARAMETER_SPECS",
    "ParameterSpec",
    "Parameters",
    "IDEAL",
    "Setup",
    "Speeds",
    "Estimate",
    "speeds",
    "estimate",
    "max_batch",
    "plan",
    "bound_plan",
    "fitted",
    "setup_of_deployment",
    "decode_step_s",
    "prefill_s",
    "reply_s",
    "calibrated_step_s",
    "min_gpus",
    "step_overhead_s",
    "WEIGHT_PRECISIONS",
    "COMPUTE_PRECISIONS",
]

#: Weight storage formats ``predict`` accepts (block scales of the 4-bit formats not counted).
WEIGHT_PRECISIONS = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")
#: Matrix-input precisions whose dense peak a prediction may run at.
COMPUTE_PRECISIONS = ("bf16", "fp16", "fp8", "fp4")
#: BF16 activations are what the all-reduces carry.
_ACT_BYTES = units.PRECISION_BYTES["bf16"]
_LOGIT_BYTES = units.PRECISION_BYTES["fp32"]


@dataclass(frozen=True)
class ParameterSpec:
    """What one prediction parameter means: unit, allowed range (``check`` domain), meaning and source."""

    unit: str
    domain: str
    meaning: str
    source: str


_FIT = "fitted on the training split of the stored measurements (aiinfra.calibration)"
PARAMETER_SPECS = {
    "eta_b_decode": ParameterSpec(
        "1",
        "(0,1]",
        "achieved share of peak memory bandwidth in a decode step",
        _FIT + "; published batch-1 decode reaches 15-81 % of peak bandwidth",
    ),
    "eta_b_kv": ParameterSpec(
        "1",
        "(0,1]",
        "achieved share of peak memory bandwidth when attention reads the KV cache in a decode step "
        "(many small, scattered pages rather than one long weight stream)",
        _FIT,
    ),
    "eta_f_decode": ParameterSpec(
        "1",
        "(0,1]",
        "achieved share of the dense peak in a decode step's matrix products (large batches)",
        _FIT,
    ),
    "eta_b_prefill": ParameterSpec(
        "1", "(0,1]", "achieved share of peak bandwidth in a prefill pass (its weight read)", _FIT
    ),
    "eta_f_prefill": ParameterSpec(
        "1",
        "(0,1]",
        "achieved share of the dense peak in a prefill pass",
        _FIT + "; large GEMMs measure 33-65 % of peak",
    ),
    "layer_overhead_graph_s": ParameterSpec(
        "s",
        "[0,0.001]",
        "fixed time per layer per forward pass with CUDA graphs or a compiled engine "
        "(kernel gaps, norms, sampling and host time spread over the layers)",
        _FIT,
    ),
    "layer_overhead_eager_s": ParameterSpec(
        "s",
        "[0,0.001]",
        "fixed time per layer per forward pass in eager mode (every kernel launched from Python)",
        _FIT + "; the seed's eager vLLM run: 12.1 ms measured against an 8.62 ms bound over 36 layers",
    ),
    "memory_utilization": ParameterSpec(
        "1",
        "(0,1]",
        "share of GPU memory the engine may fill with weights, KV and activations",
        "vLLM's default gpu_memory_utilization = 0.9 (stated, not fitted)",
    ),
    "activation_copies": ParameterSpec(
        "1",
        "[0,256]",
        "hidden-width BF16 vectors live per token in flight on each GPU (residual, norms, QKV, "
        "MLP input and its gate/up outputs)",
        "counted from a Llama block (stated, not fitted): about 2 + 3 + 1 + 2 x 3.5 = 13, rounded up to 16",
    ),
    "prefill_chunk_tokens": ParameterSpec(
        "tokens",
        "int>=1",
        "most prompt tokens one prefill pass carries (chunked prefill's token budget)",
        "vLLM's max_num_batched_tokens = 8,192 for chunked prefill (stated, not fitted)",
    ),
}


@dataclass(frozen=True)
class Parameters:
    """The named parameters of a prediction (see :data:`PARAMETER_SPECS` for meaning, range and source).

    Each is checked against its range; a bad value raises ``ValueError``
    naming it.
    """

    eta_b_decode: float
    eta_f_decode: float
    eta_b_prefill: float
    eta_f_prefill: float
    layer_overhead_graph_s: float
    layer_overhead_eager_s: float
    memory_utilization: float = 0.9
    activation_copies: float = 16.0
    prefill_chunk_tokens: int = 8192
    eta_b_kv: float = 1.0

    def __post_init__(self):
        for f in fields(self):
            spec = PARAMETER_SPECS[f.name]
            object.__setattr__(self, f.name, check(f.name, getattr(self, f.name), spec.domain, scalar=True))

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def is_roofline(self) -> bool:
        """Whether these are the roofline's own values (every share 1, no fixed cost): then no communication either."""
        etas = (self.eta_b_decode, self.eta_f_decode, self.eta_b_prefill, self.eta_f_prefill, self.eta_b_kv)
        return (
            all(e == 1.0 for e in etas) and self.layer_overhead_graph_s == self.layer_overhead_eager_s == 0.0
        )

    def layer_overhead_s(self, graph_capture: bool) -> float:
        """The fixed cost per layer per pass for a graph-captured (``True``) or an eager engine."""
        return self.layer_overhead_graph_s if graph_capture else self.layer_overhead_eager_s


#: The roofline itself: 100 % of every peak, no fixed cost, all memory, no activations.
IDEAL = Parameters(1.0, 1.0, 1.0, 1.0, 0.0, 0.0, memory_utilization=1.0, activation_copies=0.0)


@dataclass(frozen=True)
class Setup:
    """What runs where: a model on ``replicas`` copies of a ``tp``-GPU tensor-parallel group.

    ``weight_precision`` is the storage format (:data:`WEIGHT_PRECISIONS`),
    ``kv_bytes_per_element`` the cache's bytes per element,
    ``compute_precision`` the dense peak the matrices run at
    (:data:`COMPUTE_PRECISIONS`; the GPU must have it). ``tp`` must divide the
    model's KV heads (a TP group wider than the KV heads only replicates
    them). ``graph_capture`` picks the graph or eager fixed cost. ``model``
    and ``gpu`` may be given by name; ``__post_init__`` replaces them with
    their records.
    """

    model: models.ModelConfig
    gpu: hardware.GPU
    tp: int = 1
    replicas: int = 1
    weight_precision: str = "bf16"
    kv_bytes_per_element: float = 2.0
    compute_precision: str = "bf16"
    graph_capture: bool = True

    def __post_init__(self):
        object.__setattr__(self, "model", models.load(self.model))
        object.__setattr__(self, "gpu", hardware.gpu(self.gpu))
        tp = check("tp", self.tp, "int>=1", scalar=True)
        object.__setattr__(self, "tp", tp)
        object.__setattr__(self, "replicas", check("replicas", self.replicas, "int>=1", scalar=True))
        choice("weight_precision", self.weight_precision, set(WEIGHT_PRECISIONS))
        object.__setattr__(
            self,
            "kv_bytes_per_element",
            check("kv_bytes_per_element", self.kv_bytes_per_element, ">0", scalar=True),
        )
        choice("compute_precision", self.compute_precision, set(COMPUTE_PRECISIONS))
        if (
            getattr(self.gpu, f"{self.compute_precision}_dense_flops_per_s") is None
            and self.compute_precision != "fp16"
        ):
            raise ValueError(
                f"compute_precision {self.compute_precision!r} has no dense tensor-core peak on {self.gpu.name}; "
                "choose one the GPU has (see aiinfra.catalog.hardware)"
            )
        check("graph_capture", self.graph_capture, "bool")
        m = self.model
        if m.attention_kind != "mla" and m.n_kv_heads % tp:
            raise ValueError(
                f"tp must divide the model's {m.n_kv_heads} KV heads (KV heads cap useful tensor "
                f"parallelism), got tp={tp}"
            )

        _ = self.deployment  # build it now, so its checks raise here

    @cached_property
    def _hash(self) -> int:  # the model record is large: hash it once
        return hash(tuple(getattr(self, f.name) for f in fields(self)))

    def __hash__(self) -> int:
        return self._hash

    @cached_property
    def deployment(self) -> Deployment:
        """One replica as a :class:`~aiinfra.deployment.Deployment` (its bytes, FLOPs and peaks)."""
        return Deployment(
            self.model,
            self.gpu,
            n_gpus=self.tp,
            weight_precision=self.weight_precision,
            kv_precision=self.kv_bytes_per_element,
            compute_precision=self.compute_precision,
            memory_reserve=0.0,
        )

    @property
    def switched(self) -> bool:
        """Whether the GPUs reach each other through a switch fabric (NVLink/NVSwitch, Infinity Fabric), not PCIe."""
        link = self.gpu.scaleup_link.lower()
        return "pcie" not in link and "bridge" not in link


@dataclass(frozen=True)
class Speeds:
    """What a run of ``batch`` requests achieves (SI units), as the JSON of ``aiinfra predict`` gives it.

    ``ttft_s``: mean time to first token; ``tpot_s``: mean time per output
    token after the first; ``step_s``: one decode step at the mean context;
    ``latency_s``: the whole batch, first prefill pass to last token;
    ``throughput_tok_s``: output tokens per second of all replicas together;
    ``user_tok_s``: one request's decode speed, ``1 / tpot_s``;
    ``max_batch``: most concurrent requests that fit (all replicas);
    ``fits``: the weights fit and ``batch <= max_batch``.
    """

    ttft_s: float
    tpot_s: float
    step_s: float
    latency_s: float
    throughput_tok_s: float
    user_tok_s: float
    max_batch: int
    fits: bool

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Estimate:
    """The bound and the prediction of one run, with the parameters and calibration behind the prediction."""

    batch: int
    bound: Speeds
    prediction: Speeds
    parameters: Parameters
    calibration: str


# --------------------------------------------------------------------------------------
# The pieces of a pass
# --------------------------------------------------------------------------------------


def _layer_costs_s(setup: Setup, p: Parameters, tokens):
    """Fixed cost plus the two all-reduces of every layer of one pass carrying ``tokens`` tokens (one replica)."""
    comm: float | np.ndarray
    if p.is_roofline:
        comm = 0.0
    elif np.ndim(tokens):
        comm = np.array([_allreduces_per_layer_s(setup, int(t)) for t in tokens])
    else:
        comm = _allreduces_per_layer_s(setup, int(tokens))
    return setup.model.n_layers * (p.layer_overhead_s(setup.graph_capture) + comm)


@lru_cache(maxsize=65536)
def _allreduces_per_layer_s(setup: Setup, tokens: int) -> float:
    """The two all-reduces of one layer over the TP group, ``tokens`` BF16 rows of the hidden width (0 on one GPU)."""
    if setup.tp == 1:
        return 0.0
    size = tokens * setup.model.hidden_size * _ACT_BYTES
    link = setup.gpu.scaleup_bytes_per_s_per_direction
    return 2.0 * network.tp_allreduce_time_s(size, setup.tp, link, setup.switched)


@lru_cache(maxsize=4096)
def _counts(setup: Setup, prompt_tokens: int, context_tokens: int):
    """What the parameters do not change: one replica's peaks and bytes, and the FLOPs of a prompt and a step."""
    d = setup.deployment
    return (
        d.peak_flops_per_s,
        d.bandwidth_bytes_per_s,
        float(d.kv_copies * d.kv_bytes(context_tokens)),
        float(compute.decode_flops(setup.model, context_tokens)),
        float(compute.prefill_flops(setup.model, prompt_tokens)),
    )


@lru_cache(maxsize=65536)
def _weight_read_bytes(setup: Setup, tokens: int) -> float:
    """Weight bytes one pass of ``tokens`` tokens reads: every expert some token routes to (:func:`aiinfra.serving.moe.step_read_params`)."""
    return float(setup.deployment.bytes_per_weight * moe.step_read_params(setup.model, tokens))


def _decode_step_s(setup: Setup, p: Parameters, batch, prompt_tokens, context_tokens):
    peak, bw, kv, f1, _ = _counts(setup, prompt_tokens, context_tokens)
    return float(_step_of_counts(setup, p, batch, peak, bw, kv, f1))


def _step_of_counts(setup: Setup, p: Parameters, batch, peak, bw, kv, f1):
    """One decode step from its counts; ``kv`` and ``f1`` (one request's KV bytes and FLOPs) may be arrays."""
    w = _weight_read_bytes(setup, batch)
    reads = w / (p.eta_b_decode * bw) + batch * kv / (p.eta_b_kv * bw)
    roof = np.maximum(batch * f1 / (p.eta_f_decode * peak), reads)
    return roof + _layer_costs_s(setup, p, batch)


def _prefill_passes_s(setup: Setup, p: Parameters, batch, prompt_tokens, context_tokens):
    """Cumulative end time of each prefill pass of ``batch`` prompts, and the pass each prompt ends in."""
    peak, bw, _, _, f_prompt = _counts(setup, prompt_tokens, context_tokens)
    total_tokens = batch * prompt_tokens
    chunk = p.prefill_chunk_tokens
    n_pass = math.ceil(total_tokens / chunk)
    tokens = np.full(n_pass, float(chunk))
    tokens[-1] = total_tokens - chunk * (n_pass - 1)
    flops = batch * f_prompt * tokens / total_tokens
    w = np.array([_weight_read_bytes(setup, int(t)) for t in (tokens[0], tokens[-1])])[
        (tokens != tokens[0]) * 1
    ]
    roof = np.maximum(flops / (p.eta_f_prefill * peak), w / (p.eta_b_prefill * bw))
    ends = np.cumsum(roof + _layer_costs_s(setup, p, tokens))
    last_pass = (np.arange(1, batch + 1) * prompt_tokens - 1) // chunk
    return ends, last_pass


def _activation_bytes(setup: Setup, p: Parameters, batch, prompt_tokens):
    """Activations and workspace of one replica: the peak tokens in flight times their vectors, plus logits."""
    m = setup.model
    in_flight = max(batch, min(batch * prompt_tokens, p.prefill_chunk_tokens))
    hidden = setup.tp * p.activation_copies * m.hidden_size * _ACT_BYTES
    return in_flight * hidden + batch * m.vocab_size * _LOGIT_BYTES * (p.activation_copies > 0)


def max_batch(setup: Setup, p: Parameters, prompt_tokens, output_tokens) -> int:
    """Most requests of ``P + G`` tokens one replica holds: weights + KV + activations <= the usable memory.

    The usable memory is ``memory_utilization`` of the replica's ``tp`` GPUs;
    KV is counted at the full ``P + G`` context, activations at the batch's
    peak tokens in flight (:data:`PARAMETER_SPECS`). 0 when not even one
    request fits beside the weights.
    """
    prompt = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    g = check("output_tokens", output_tokens, "int>=1", scalar=True)
    return _max_batch(setup, p, prompt, g)


def _max_batch(setup: Setup, p: Parameters, prompt: int, g: int) -> int:
    return _max_batch_memory(
        setup, p.memory_utilization, p.activation_copies, p.prefill_chunk_tokens, prompt, g
    )


@lru_cache(maxsize=4096)
def _max_batch_memory(setup: Setup, utilization, copies, chunk, prompt: int, g: int) -> int:
    p = Parameters(1.0, 1.0, 1.0, 1.0, 0.0, 0.0, utilization, copies, chunk, 1.0)
    d = setup.deployment
    usable = p.memory_utilization * d.capacity_bytes - d.weight_bytes
    kv = float(d.kv_copies * d.kv_bytes(prompt + g))

    def fits(b):
        return b * kv + _activation_bytes(setup, p, b, prompt) <= usable

    lo, hi = 0, max(int(usable // kv) + 1, 1)
    while lo < hi:  # the largest b with fits(b); fits is monotone in b
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def speeds(setup: Setup, p: Parameters, batch, prompt_tokens, output_tokens) -> Speeds:
    """The speeds of ``batch`` requests of ``prompt_tokens`` + ``output_tokens`` under parameters ``p``.

    ``batch`` counts all replicas' requests together; each replica serves
    ``ceil(batch / replicas)`` (the busiest sets the latency). The times
    are those of the batch as given even when it does not fit (``fits`` then
    says so). ``p`` = :data:`IDEAL` gives the bound. See the module docstring
    for the schedule.
    """
    b_all = check("batch", batch, "int>=1", scalar=True)
    prompt = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    g = check("output_tokens", output_tokens, "int>=1", scalar=True)
    if not isinstance(p, Parameters):
        raise ValueError(f"p must be aiinfra.predict.Parameters, got {type(p).__name__}")
    return _speeds(setup, p, b_all, prompt, g)


def _speeds(setup: Setup, p: Parameters, b_all: int, prompt: int, g: int) -> Speeds:
    b = math.ceil(b_all / setup.replicas)
    most = _max_batch(setup, p, prompt, g)
    ctx = prompt + g // 2
    ends, last_pass = _prefill_passes_s(setup, p, b, prompt, ctx)
    step = _decode_step_s(setup, p, b, prompt, ctx)
    latency = float(ends[-1]) + (g - 1) * step
    return Speeds(
        ttft_s=float(np.mean(ends[last_pass])),
        tpot_s=step,
        step_s=step,
        latency_s=latency,
        throughput_tok_s=b_all * g / latency,
        user_tok_s=1.0 / step,
        max_batch=int(most * setup.replicas),
        fits=bool(b_all <= most * setup.replicas),
    )


def estimate(setup: Setup, batch, prompt_tokens, output_tokens, calibration=None) -> Estimate:
    """The bound and the calibrated prediction of one run; ``batch=0`` asks for the largest batch that fits.

    ``calibration``: an :class:`aiinfra.calibration.Calibration` (default:
    the stored fit, :func:`aiinfra.calibration.load`). Raises ``ValueError``
    when the weights (with one request) do not fit the replica's usable memory.
    """
    from aiinfra import calibration as cal

    c = cal.load() if calibration is None else calibration
    p = c.parameters
    prompt = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    g = check("output_tokens", output_tokens, "int>=1", scalar=True)
    most = _max_batch(setup, p, prompt, g) * setup.replicas
    if most < 1:
        d = setup.deployment
        raise ValueError(
            f"the model does not fit: {setup.model.name} needs {units.fmt_bytes(d.weight_bytes)} of weights "
            f"plus one request's KV and activations, more than {p.memory_utilization:.0%} of "
            f"{setup.tp} x {units.fmt_bytes(setup.gpu.memory_bytes)}; raise tp or lower the precision"
        )
    b = most if check("batch", batch, "int>=0", scalar=True) == 0 else batch
    return Estimate(b, speeds(setup, IDEAL, b, prompt, g), speeds(setup, p, b, prompt, g), p, c.name)


def fitted() -> Parameters:
    """The stored calibration's parameters (:func:`aiinfra.calibration.load`): what every book prediction uses."""
    from aiinfra import calibration as cal

    return cal.load().parameters


def setup_of_deployment(deployment, graph_capture=True, replicas=1) -> Setup:
    """The :class:`Setup` of a :class:`~aiinfra.deployment.Deployment`: its ``n_gpus`` as one TP group.

    The model, GPU and precisions carry over (the KV format becomes its bytes
    per element); the deployment's ``eta_f``, ``eta_b`` and flat
    ``memory_reserve`` do not, since a prediction takes those from its
    :class:`Parameters`. Raises ``ValueError`` when ``n_gpus`` does not
    divide the model's KV heads, and for a deployment that caches other
    ``kv_heads`` than the model's own (a hypothetical layout no stored run
    calibrates). Chapters 1, 2, 4 and 5 (a bound beside its prediction).
    """
    d = deployment
    if d.kv_heads is not None:
        raise ValueError(f"kv_heads must be the model's own for a prediction, got kv_heads={d.kv_heads}")
    return Setup(
        d.model,
        d.gpu,
        tp=d.n_gpus,
        replicas=replicas,
        weight_precision=d.weight_precision,
        kv_bytes_per_element=d.kv_bytes_per_element,
        compute_precision=d.compute_precision,
        graph_capture=graph_capture,
    )


def decode_step_s(setup: Setup, p: Parameters, batch, context_tokens) -> float:
    """One decode step of ``batch`` requests on one replica, each with ``context_tokens`` tokens cached.

    ``max(B F_1 / (eta_f Pi), R_W / (eta_b beta) + B R_KV / (eta_kv beta))
    + L (t_layer + 2 t_allreduce)``: :data:`IDEAL` gives the roofline bound
    (the same step as :meth:`aiinfra.deployment.Deployment.step` for a dense
    model), the fitted :class:`Parameters` the prediction. A per-user speed is
    its inverse, an aggregate one ``batch`` over it. Chapters 1, 4 and 5.
    """
    b = check("batch", batch, "int>=1", scalar=True)
    ctx = check("context_tokens", context_tokens, "int>=0", scalar=True)
    return _decode_step_s(setup, p, b, max(ctx, 1), ctx)


def prefill_s(setup: Setup, p: Parameters, prompt_tokens, batch=1) -> float:
    """Time to prefill ``batch`` prompts of ``prompt_tokens`` together on one replica: the end of the last pass.

    Chunked, batched passes of at most ``p.prefill_chunk_tokens`` tokens
    (module docstring); with ``batch=1`` and :data:`IDEAL` it is the
    roofline bound on TTFT without queueing. Chapters 1, 2 and 4.
    """
    prompt = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    b = check("batch", batch, "int>=1", scalar=True)
    ends, _ = _prefill_passes_s(setup, p, b, prompt, prompt)
    return float(ends[-1])


def reply_s(setup: Setup, p: Parameters, batch, prompt_tokens, output_tokens) -> tuple[float, float, float]:
    """TTFT, mean TPOT and end-to-end time of ``batch`` replies decoded together, as :meth:`Deployment.request` counts them.

    TTFT is one prompt's prefill (:func:`prefill_s`, no queueing); the
    ``G - 1`` decode steps run at contexts ``P + 1 ... P + G - 1``
    (:func:`decode_step_s` each), TPOT is their mean (0 when ``G = 1``) and
    the end-to-end time ``TTFT + (G - 1) TPOT``. :data:`IDEAL` gives the
    bound. Chapter 4, and ``aiinfra decode``.
    """
    b = check("batch", batch, "int>=1", scalar=True)
    prompt = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    g = check("output_tokens", output_tokens, "int>=1", scalar=True)
    ttft = prefill_s(setup, p, prompt)
    if g == 1:
        return ttft, 0.0, ttft
    ctx = np.arange(prompt + 1, prompt + g)
    d = setup.deployment
    kv = d.kv_copies * np.asarray(d.kv_bytes(ctx), dtype=float)
    f1 = np.asarray(compute.decode_flops(setup.model, ctx), dtype=float)
    steps = _step_of_counts(setup, p, b, d.peak_flops_per_s, d.bandwidth_bytes_per_s, kv, f1)
    return ttft, float(np.mean(steps)), ttft + float(np.sum(steps))


def calibrated_step_s(deployment, batch=1, context_tokens=0, graph_capture=True) -> float:
    """The calibrated prediction of ``deployment.step(batch, context_tokens).time_s``, the bound's own step.

    :func:`decode_step_s` under :func:`fitted` on :func:`setup_of_deployment`.
    ``context_tokens=0`` matches :meth:`~aiinfra.deployment.Deployment.ceiling_tokens_per_s`
    (weights only). Raises ``ValueError`` for a TPU (every stored run is on a
    GPU, so no fitted value speaks for it) and for ``n_gpus`` that do not
    divide the KV heads. Chapters 1, 4 and 5: the prediction beside each quoted bound.
    """
    if deployment.gpu.name.startswith("TPU"):
        raise ValueError(f"gpu must be a GPU: no stored run calibrates {deployment.gpu.name}")
    setup = setup_of_deployment(deployment, graph_capture=graph_capture)
    return decode_step_s(setup, fitted(), batch, context_tokens)


def min_gpus(deployment, p: Parameters, batch, prompt_tokens, output_tokens, limit=1024) -> int:
    """Fewest GPUs of ``deployment.gpu`` in one TP group that hold ``batch`` requests of ``P + G`` tokens under ``p``.

    Tries every TP width up to ``limit`` that the model's KV heads allow
    (:class:`Setup`) and returns the first whose :func:`max_batch` reaches
    ``batch``: :data:`IDEAL` counts all memory and no activations (the
    bound), the fitted parameters a usable share and activations (the
    prediction). Raises ``ValueError`` when none up to ``limit`` does. Chapter 5.
    """
    b = check("batch", batch, "int>=1", scalar=True)
    prompt = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
    g = check("output_tokens", output_tokens, "int>=1", scalar=True)
    for n in range(1, check("limit", limit, "int>=1", scalar=True) + 1):
        try:
            setup = setup_of_deployment(deployment.replace(n_gpus=n))
        except ValueError:  # n does not divide the KV heads
            continue
        if _max_batch(setup, p, prompt, g) >= b:
            return n
    raise ValueError(
        f"limit must allow enough GPUs: {b} requests do not fit on {limit} x {deployment.gpu.name}"
    )


def step_overhead_s(deployment, p: Parameters, tokens, n_gpus=None) -> float:
    """The fixed time a prediction adds to one step of ``tokens`` tokens: ``L (t_layer + 2 t_allreduce)``.

    Every one of the model's ``L`` layers pays the fitted graph-captured cost
    per layer (:attr:`Parameters.layer_overhead_graph_s`) and, on more than
    one GPU, two all-reduces of ``tokens`` BF16 rows of the hidden width over
    the tensor-parallel group of ``n_gpus`` (``deployment.n_gpus`` by default)
    on its scale-up link (:func:`aiinfra.cluster.network.tp_allreduce_time_s`).
    The roofline's arithmetic and reads are not in it: add it to a bound's
    step to get the prediction's. Chapter 7 (capacity plans, chunked prefill).
    """
    n = check("n_gpus", deployment.n_gpus if n_gpus is None else n_gpus, "int>=1", scalar=True)
    t = check("tokens", tokens, "int>=1", scalar=True)
    comm = 0.0
    if n > 1:
        link = deployment.gpu.scaleup_bytes_per_s_per_direction
        switched = "pcie" not in deployment.gpu.scaleup_link.lower()
        size = t * deployment.model.hidden_size * _ACT_BYTES
        comm = 2.0 * network.tp_allreduce_time_s(size, n, link, switched)
    return deployment.model.n_layers * (p.layer_overhead_graph_s + comm)


def plan(deployment, concurrent_users, target_tpot_s, context_tokens, calibration=None, **workload):
    """The calibrated prediction of a capacity plan: :func:`aiinfra.serving.capacity.plan` with the fitted parameters.

    The replica's decode efficiencies become ``eta_f_decode`` and
    ``eta_b_decode``, its memory reserve ``1 - memory_utilization``, prefill
    runs at ``eta_f_prefill``, and every step pays the per-layer fixed cost
    (graph-captured) and its two all-reduces per layer. ``workload`` passes
    ``prompt_tokens``, ``output_tokens``, ``prefix_reuse`` and
    ``replica_sizes`` on. Chapter 7.
    """
    from aiinfra import calibration as cal
    from aiinfra.serving import capacity

    p = (cal.load() if calibration is None else calibration).parameters
    replica = deployment.replace(
        eta_f=p.eta_f_decode, eta_b=p.eta_b_decode, memory_reserve=1.0 - p.memory_utilization
    )
    return capacity.plan(
        replica,
        concurrent_users,
        target_tpot_s,
        context_tokens,
        prefill_eta_f=p.eta_f_prefill,
        step_overhead_s=lambda n_gpus, users: step_overhead_s(deployment, p, users, n_gpus),
        **workload,
    )


def bound_plan(deployment, concurrent_users, target_tpot_s, context_tokens, **workload):
    """The bound of a capacity plan: every efficiency 1, no fixed cost, no memory reserve (the fewest GPUs possible)."""
    from aiinfra.serving import capacity

    replica = deployment.replace(eta_f=1.0, eta_b=1.0, memory_reserve=0.0)
    return capacity.plan(replica, concurrent_users, target_tpot_s, context_tokens, **workload)
