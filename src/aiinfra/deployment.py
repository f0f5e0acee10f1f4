"""One deployment: a model served on ``n`` GPUs, with its precisions, efficiencies and memory reserve.

The chapters keep asking the same questions of a model on some GPUs: how many
bytes the weights take and how many one decode step reads, how many bytes of
KV a token adds, how much memory is left for the cache and how large a batch
fits, how long a step takes at a given batch and context and what bounds it,
how long the prefill, the first token and a whole reply take.
:class:`Deployment` answers each of them once::

    d = Deployment("Llama-3.1-8B", "H100 SXM", weight_precision="int8")
    d.prefill(200).bound          # 'compute-bound': int8 weights, BF16 arithmetic
    d.step(batch=32, context_tokens=4096).time_s
    d.max_batch(8192), d.request(2000, 500).end_to_end_s

**The peak it runs at.** One rule: the *compute* precision decides the peak
(``n_gpus`` x :meth:`aiinfra.catalog.hardware.GPU.dense_flops_per_s`). Weights
stored at int8 or int4 but multiplied in BF16 (weight-only quantisation) run
at the BF16 peak; FP8 arithmetic must be asked for with
``compute_precision="fp8"``. Every time and every bound label of a deployment
uses that one peak, so a reported bound always names the larger of its two
times (``tests/test_deployment.py`` checks it as a property).

**Bytes.** Stored: every parameter at ``weight_precision``
(:func:`aiinfra.memory.weight_bytes`). Read per step: the parameters one token
touches, the embedding table replaced by its one row
(:func:`aiinfra.catalog.models.decode_read_params`; for a mixture of experts the
active experts, an optimistic figure once the batch grows). KV: per token and
per request at ``kv_precision``, sliding windows capped
(:func:`aiinfra.memory.kv_bytes_per_request`). Free memory is the capacity of
the ``n_gpus`` minus the ``memory_reserve`` share (activations, workspace,
allocator; vLLM keeps 10 %) minus the stored weights.

**Time.** Lower bounds from the roofline, with reads and arithmetic
overlapped and no communication between the GPUs (they share bandwidth and
compute perfectly): :func:`aiinfra.decode.batched_decode_step_time_s` for a
step, :func:`aiinfra.decode.ttft_s` for the prefill pass.

A :class:`RoundModel` stands in for a real config where a worked example uses
round numbers (``N = 8e9`` and the ``2N`` rule); :data:`TEACHING_8B` is
chapter 2's request worked by hand.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aiinfra import compute, decode, memory, roofline, units
from aiinfra.catalog import hardware, models
from aiinfra.cluster import network, parallelism
from aiinfra.formula import check

__all__ = [
    "Deployment",
    "Step",
    "Request",
    "RoundModel",
    "TEACHING_GPU",
    "TEACHING_8B",
    "TEACHING_PROMPT_TOKENS",
    "TEACHING_BATCH",
    "SERVING_70B",
    "SERVING_CONTEXT_TOKENS",
    "SERVING_TPOT_S",
]

#: Share of GPU memory a deployment keeps back for activations, workspace and the allocator by
#: default (vLLM's ``gpu_memory_utilization=0.9`` keeps 10 %).
DEFAULT_MEMORY_RESERVE = 0.1


# --------------------------------------------------------------------------------------
# What is being served: a real config, or round numbers
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundModel:
    """A model given by round numbers, for worked examples: ``N`` parameters, the ``2N`` rule, a KV size.

    Every parameter is stored and read once per step; a token costs ``2N``
    FLOPs in decode (no attention term) and a prefill of ``P`` tokens ``2NP``.
    ``kv_bytes_per_token`` is the cache one token adds at 2 bytes per element
    (BF16); ``n_layers`` and ``d_model`` only serve the check that attention
    is small next to ``2N``.
    """

    n_params: float
    kv_bytes_per_token: float
    n_layers: int = 1
    d_model: int = 1
    name: str = "round model"

    def __post_init__(self):
        object.__setattr__(self, "n_params", check("n_params", self.n_params, ">0", scalar=True))
        object.__setattr__(
            self,
            "kv_bytes_per_token",
            check("kv_bytes_per_token", self.kv_bytes_per_token, ">=0", scalar=True),
        )
        object.__setattr__(self, "n_layers", check("n_layers", self.n_layers, "int>=1", scalar=True))
        object.__setattr__(self, "d_model", check("d_model", self.d_model, "int>=1", scalar=True))


class _Exact:
    """The counts of a :class:`~aiinfra.catalog.models.ModelConfig` (what a RoundModel approximates)."""

    def __init__(self, m: models.ModelConfig, kv_heads: int | None):
        self.model = m
        self.kv_model = m if kv_heads is None else models._with_kv_heads(m, kv_heads)
        self.stored_params = models.total_params(m)
        self.read_params = models.decode_read_params(m)

    def decode_flops(self, context_tokens):
        return compute.decode_flops(self.model, context_tokens)

    def prefill_flops(self, prompt_tokens):
        return compute.prefill_flops(self.model, prompt_tokens)

    def kv_bytes_per_token(self, b):
        return memory.kv_bytes_per_token(self.kv_model, b)

    def kv_bytes(self, context_tokens, b):
        return memory.kv_bytes_per_request(self.kv_model, context_tokens, b)

    def state_bytes(self, b):
        return memory.state_bytes_per_request(self.kv_model, b)


class _Round:
    """The counts of a :class:`RoundModel`."""

    def __init__(self, m: RoundModel):
        self.model = m
        self.stored_params = self.read_params = m.n_params

    def decode_flops(self, context_tokens):
        ctx = check("context_tokens", context_tokens, "int>=0")
        flops = compute.approx_decode_flops_2n(self.model.n_params, 1)
        return flops if np.ndim(ctx) == 0 else np.full(np.shape(ctx), flops)

    def prefill_flops(self, prompt_tokens):
        return compute.approx_prefill_flops_2n(self.model.n_params, prompt_tokens)

    def kv_bytes_per_token(self, b):
        return (
            self.model.kv_bytes_per_token
            * check("bytes_per_element", b, ">0")
            / units.PRECISION_BYTES["bf16"]
        )

    def kv_bytes(self, context_tokens, b):
        return self.kv_bytes_per_token(b) * check("context_tokens", context_tokens, ">=0")

    def state_bytes(self, b):
        return 0.0


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """The roofline of some work on a deployment: one decode step, one prefill pass, or a whole phase.

    ``passes`` forward passes of ``batch`` requests did ``flops`` and read
    ``weight_bytes`` of weights and ``kv_bytes`` of KV. ``compute_s`` and
    ``memory_s`` are the two lower bounds, ``time_s`` the time (their
    maximum for one pass, the sum of the passes' maxima for a phase), and
    ``bound`` names the larger of the two. Fields are arrays when a batch or a
    context was swept.
    """

    batch: float
    passes: int
    flops: float
    weight_bytes: float
    kv_bytes: float
    compute_s: float
    memory_s: float
    time_s: float
    bound: str

    @property
    def bytes_moved(self):
        """Weights plus KV read."""
        return self.weight_bytes + self.kv_bytes

    @property
    def kv_share(self):
        """Share of the bytes read that are KV: ``B S / (W + B S)``."""
        return self.kv_bytes / self.bytes_moved

    @property
    def intensity_flops_per_byte(self):
        """Arithmetic intensity of the work, FLOPs per byte read."""
        return roofline.arithmetic_intensity_flops_per_byte(self.flops, self.bytes_moved)

    @property
    def tokens_per_s(self):
        """Tokens the whole batch produces per second: ``B x passes / time``."""
        return decode.tokens_per_s_aggregate(self.batch * self.passes, self.time_s)

    @property
    def tokens_per_s_per_user(self):
        """Tokens one request sees per second: ``passes / time`` (``1 / T_step`` for a step)."""
        return decode.tokens_per_s_aggregate(self.passes, self.time_s)


@dataclass(frozen=True)
class Request:
    """One request (or a batch of identical ones) from prompt to last token: prefill, then decode.

    The prefill pass emits output token 1; each of the ``output_tokens - 1``
    decode steps that follow reads the weights plus the KV of its context
    (``P + 1`` up to ``P + G - 1`` tokens). ``prefill.flops + decode.flops``
    equals :func:`aiinfra.compute.request_flops` at batch 1.
    """

    prompt_tokens: int
    output_tokens: int
    prefill: Step
    decode: Step

    @property
    def ttft_s(self) -> float:
        """Time to first token (no queueing): the prefill pass."""
        return self.prefill.time_s

    @property
    def decode_steps(self) -> int:
        return self.decode.passes

    @property
    def tpot_s(self) -> float:
        """Mean time per output token over the decode steps (0 when the prefill's token is the whole reply)."""
        return self.decode.time_s / self.decode.passes if self.decode.passes else 0.0

    @property
    def end_to_end_s(self) -> float:
        """Prefill plus every decode step: ``TTFT + sum of the steps``."""
        return self.prefill.time_s + self.decode.time_s


# --------------------------------------------------------------------------------------
# The deployment
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deployment:
    """A model served on ``n_gpus`` x ``gpu`` (one replica; see the module docstring for the rules).

    ``model``: a :class:`~aiinfra.catalog.models.ModelConfig`, a shipped name,
    or a :class:`RoundModel`. ``gpu``: a catalog
    :class:`~aiinfra.catalog.hardware.GPU` or its name. ``weight_precision``
    and ``kv_precision`` are storage formats (names understood by
    :func:`aiinfra.units.bytes_per_param`; ``kv_precision`` may also be bytes
    per element); ``compute_precision`` ("bf16", "fp16" or "fp8") picks the
    dense peak. ``eta_f`` and ``eta_b`` are the achieved fractions of peak
    compute and bandwidth; ``memory_reserve`` the share of memory kept back
    from weights and KV. ``kv_heads`` caches that many KV heads per layer
    instead of the model's own (chapter 5's full-MHA assumption).
    """

    model: Any  # a name or a config on the way in; a ModelConfig or RoundModel after __post_init__
    gpu: Any  # a name or a GPU on the way in; a GPU after __post_init__
    n_gpus: int = 1
    weight_precision: str = "bf16"
    kv_precision: Any = "bf16"  # a format name or bytes per element
    compute_precision: str = "bf16"
    eta_f: float = 1.0
    eta_b: float = 1.0
    memory_reserve: float = DEFAULT_MEMORY_RESERVE
    kv_heads: int | None = None
    _counts: Any = field(init=False, repr=False, compare=False)  # the model's counts, set in __post_init__

    def __post_init__(self):
        model = self.model if isinstance(self.model, RoundModel) else models.load(self.model)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "gpu", hardware.gpu(self.gpu))
        object.__setattr__(self, "n_gpus", check("n_gpus", self.n_gpus, "int>=1", scalar=True))
        units.bytes_per_param(self.weight_precision)
        if not isinstance(self.kv_precision, str):
            object.__setattr__(
                self, "kv_precision", check("kv_precision", self.kv_precision, ">0", scalar=True)
            )
        else:
            units.bytes_per_param(self.kv_precision)
        self.gpu.dense_flops_per_s(self.compute_precision)  # raises for a precision the GPU has no peak for
        object.__setattr__(self, "eta_f", check("eta_f", self.eta_f, "(0,1]", scalar=True))
        object.__setattr__(self, "eta_b", check("eta_b", self.eta_b, "(0,1]", scalar=True))
        object.__setattr__(
            self, "memory_reserve", check("memory_reserve", self.memory_reserve, "[0,1)", scalar=True)
        )
        if self.kv_heads is not None:
            if isinstance(model, RoundModel) or model.attention_kind == "mla":
                raise ValueError(
                    "kv_heads applies to MHA/GQA model configs only, got a model without KV heads"
                )
            object.__setattr__(self, "kv_heads", check("kv_heads", self.kv_heads, "int>=1", scalar=True))
        counts = _Round(model) if isinstance(model, RoundModel) else _Exact(model, self.kv_heads)
        object.__setattr__(self, "_counts", counts)

    def replace(self, **changes) -> Deployment:
        """A copy with some fields changed, e.g. ``d.replace(n_gpus=4, eta_b=0.8)``."""
        return dataclasses.replace(self, **changes)

    # --- the hardware ---------------------------------------------------------------
    @property
    def peak_flops_per_s(self) -> float:
        """The one peak every time and bound uses: ``n_gpus`` x the dense peak of ``compute_precision``."""
        return self.n_gpus * self.gpu.dense_flops_per_s(self.compute_precision)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Memory bandwidth of the ``n_gpus`` together."""
        return self.n_gpus * self.gpu.memory_bandwidth_bytes_per_s

    @property
    def capacity_bytes(self) -> float:
        """Memory of the ``n_gpus`` together."""
        return self.n_gpus * self.gpu.memory_bytes

    @property
    def ridge_flops_per_byte(self) -> float:
        """Ridge point of the deployment: peak over bandwidth."""
        return roofline.ridge_point_flops_per_byte(self.peak_flops_per_s, self.bandwidth_bytes_per_s)

    @property
    def critical_batch(self) -> float:
        """Batch at which the weights' arithmetic takes as long as their read, KV ignored: ``b_W eta_F Pi / (2 eta_B beta)``."""
        return decode.critical_batch_size(
            self.bytes_per_weight, self.peak_flops_per_s, self.bandwidth_bytes_per_s, self.eta_f, self.eta_b
        )

    def crossover_batch(self, context_tokens):
        """Batch at which a decode step's arithmetic takes as long as its reads, caches included; ``inf`` if never.

        :func:`aiinfra.decode.crossover_batch_with_state` with one request's
        FLOPs and KV at ``context_tokens`` and the weight bytes a step reads.
        When one cache takes longer to read than its token's arithmetic takes,
        no batch makes decode compute-bound (chapter 4).
        """
        one = self.step(1, context_tokens)
        return decode.crossover_batch_with_state(
            one.flops,
            one.weight_bytes,
            one.kv_bytes,
            self.peak_flops_per_s,
            self.bandwidth_bytes_per_s,
            self.eta_f,
            self.eta_b,
        )

    @property
    def max_context_with_crossover(self) -> float:
        """Longest context (tokens) at which :meth:`crossover_batch` is finite: the condition of chapter 1.

        :func:`aiinfra.decode.max_context_with_crossover_tokens` with one
        request's step FLOPs split into the part that does not grow with the
        context (``F_0``, at context 0) and the attention added per cached
        token (``a``), and :attr:`kv_bytes_per_token` as ``k``. Below it a
        batch exists at which decode turns compute-bound even with every
        cache read counted; above it no batch does, and memory caps the batch
        first. Sliding-window layers are counted at full attention (chapter 1).
        """
        f0 = float(self._counts.decode_flops(0))
        a = float(self._counts.decode_flops(1)) - f0
        return float(
            decode.max_context_with_crossover_tokens(
                f0,
                a,
                self.kv_bytes_per_token,
                self.peak_flops_per_s,
                self.bandwidth_bytes_per_s,
                self.eta_f,
                self.eta_b,
            )
        )

    def ceiling_tokens_per_s(self, context_tokens=0):
        """Single-stream decode ceiling: ``eta_B beta / (R_W + R_state)``, the bytes a step actually reads.

        ``R_W`` is :attr:`weight_bytes_read` (every weight but the embedding
        table, of which one row), ``R_state`` the KV of ``context_tokens``
        cached tokens (0: weights only), ``beta`` the bandwidth of the
        ``n_gpus`` together (:func:`aiinfra.decode.memory_bound_tokens_per_s`).
        Compute and communication are ignored; the number does not check that
        the weights fit (see :attr:`min_gpus`). Accepts an array of contexts (chapter 4).
        """
        return decode.memory_bound_tokens_per_s(
            self.weight_bytes_read,
            self.bandwidth_bytes_per_s,
            state_bytes=self.kv_bytes(context_tokens),
            efficiency=self.eta_b,
        )

    # --- bytes --------------------------------------------------------------------
    @property
    def bytes_per_weight(self) -> float:
        return units.bytes_per_param(self.weight_precision)

    @property
    def kv_bytes_per_element(self) -> float:
        p = self.kv_precision
        return units.bytes_per_param(p) if isinstance(p, str) else p

    @property
    def weight_bytes(self) -> float:
        """Bytes of every stored parameter at ``weight_precision``."""
        return memory.weight_bytes_formula(self._counts.stored_params, self.bytes_per_weight)

    @property
    def weight_bytes_read(self) -> float:
        """Weight bytes one decode step (or one prefill pass) reads."""
        return memory.weight_bytes_formula(self._counts.read_params, self.bytes_per_weight)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV bytes one more cached token costs (all layers)."""
        return self._counts.kv_bytes_per_token(self.kv_bytes_per_element)

    def kv_bytes(self, context_tokens):
        """KV bytes of one request holding ``context_tokens`` tokens (sliding windows capped). Accepts arrays."""
        return self._counts.kv_bytes(context_tokens, self.kv_bytes_per_element)

    @property
    def state_bytes_per_request(self) -> float:
        """The fixed state one request keeps in linear-attention and Mamba layers, whatever its context.

        Zero for attention-only models (:func:`aiinfra.memory.state_bytes_per_request`: the
        convolution state at the KV precision, the recurrent state in FP32).
        """
        return self._counts.state_bytes(self.kv_bytes_per_element)

    def request_bytes(self, context_tokens):
        """All one request holds: :meth:`kv_bytes` (grows with the context) plus :attr:`state_bytes_per_request`."""
        return self.kv_bytes(context_tokens) + self.state_bytes_per_request

    @property
    def kv_copies(self) -> float:
        """How many copies of each request's KV cache the ``n_gpus`` keep between them (tensor parallel).

        TP splits the cache by KV heads (:func:`aiinfra.memory.kv_bytes_per_gpu`): each of the ``n``
        GPUs keeps ``max(1/n, 1/h)`` of it, so the group keeps ``n max(1/n, 1/h)`` copies: one while
        ``n <= h``, ``n/h`` when there are more GPUs than heads. MLA caches one latent per token, which no
        head split divides, so each of the ``n`` GPUs keeps all of it: ``n`` copies, the reason
        engines serve MLA models with data-parallel attention (chapter 6, "Inference across many
        chips"). A round model has no heads: one copy. Linear-attention and Mamba state splits by
        its own heads and is not copied.
        """
        m = self._counts.model
        if isinstance(m, RoundModel):
            return 1.0
        heads = 1 if m.attention_kind == "mla" else self._counts.kv_model.n_kv_heads
        return self.n_gpus * memory.kv_bytes_per_gpu(1.0, self.n_gpus, heads)

    def held_bytes(self, context_tokens):
        """What one request occupies across the ``n_gpus``: ``kv_copies * kv_bytes + state`` (the fit and the reads)."""
        return self.kv_copies * self.kv_bytes(context_tokens) + self.state_bytes_per_request

    @property
    def reserve_bytes(self) -> float:
        return self.memory_reserve * self.capacity_bytes

    @property
    def usable_bytes(self) -> float:
        """Memory the weights and the KV cache may occupy together: capacity less the reserve."""
        return self.capacity_bytes - self.reserve_bytes

    @property
    def free_bytes(self) -> float:
        """Memory left for the KV cache: capacity - (weights + reserve); negative when the weights do not fit."""
        return memory.free_bytes(self.weight_bytes, 0.0, self.reserve_bytes, self.capacity_bytes)

    def max_batch(self, context_tokens):
        """Most requests of ``context_tokens`` tokens whose KV and state fit in :attr:`free_bytes` (0 if the weights do not fit)."""
        return decode.max_batch_from_kv_budget(max(self.free_bytes, 0.0), self.held_bytes(context_tokens))

    @property
    def min_gpus(self) -> int:
        """Fewest GPUs of this kind whose memory, less the reserve, holds the stored weights (capacity first).

        :func:`aiinfra.memory.min_cards` of :attr:`weight_bytes` with
        ``memory_reserve`` of each card kept back; independent of ``n_gpus``.
        A 70B model in BF16 (141.11 GB) needs 2 H100s (chapter 4).
        """
        return memory.min_cards(
            self.weight_bytes, self.gpu.memory_bytes, self.memory_reserve * self.gpu.memory_bytes
        )

    # --- time ---------------------------------------------------------------------
    def _times(self, flops, bytes_moved):
        return (
            roofline.compute_time_s(flops, self.peak_flops_per_s, self.eta_f),
            roofline.memory_time_s(bytes_moved, self.bandwidth_bytes_per_s, self.eta_b),
        )

    def step(self, batch=1, context_tokens=2048) -> Step:
        """One decode step of ``batch`` requests, each attending to ``context_tokens`` cached tokens.

        The weights are read once for the batch; each request adds its KV and
        its FLOPs (:func:`aiinfra.decode.batched_decode_step_time_s`).
        ``batch`` or ``context_tokens`` may be an array (a sweep).
        """
        b = check("batch", batch, ">0")
        f1 = self._counts.decode_flops(context_tokens)
        kv = self.held_bytes(
            context_tokens
        )  # each GPU reads its copy; a state layer reads (and rewrites) its state
        w = self.weight_bytes_read
        time = decode.batched_decode_step_time_s(
            b, f1, w, kv, self.peak_flops_per_s, self.bandwidth_bytes_per_s, self.eta_f, self.eta_b
        )
        flops, kv_total = b * np.asarray(f1), b * np.asarray(kv)
        tc, tm = self._times(flops, w + kv_total)
        return Step(b, 1, _plain(flops), w, _plain(kv_total), tc, tm, time, roofline.bound_of(tc, tm))

    def prefill(self, prompt_tokens) -> Step:
        """The prefill pass of one prompt: causal FLOPs, lm_head on the last token, one read of the weights.

        ``prompt_tokens`` may be an array.
        """
        flops = self._counts.prefill_flops(prompt_tokens)
        w = self.weight_bytes_read
        time = decode.ttft_s(
            flops, w, self.peak_flops_per_s, self.bandwidth_bytes_per_s, self.eta_f, self.eta_b
        )
        tc, tm = self._times(flops, w)
        return Step(1, 1, flops, w, 0.0, tc, tm, time, roofline.bound_of(tc, tm))

    def ttft_s(self, prompt_tokens, queue_s=0.0):
        """Time to first token: queueing plus the prefill pass (:func:`aiinfra.decode.ttft_s`)."""
        return decode.ttft_s(
            self._counts.prefill_flops(prompt_tokens),
            self.weight_bytes_read,
            self.peak_flops_per_s,
            self.bandwidth_bytes_per_s,
            self.eta_f,
            self.eta_b,
            queue_s,
        )

    def request(self, prompt_tokens, output_tokens, batch=1) -> Request:
        """A reply of ``output_tokens`` tokens to a ``prompt_tokens`` prompt, ``batch`` such requests decoded together.

        The decode phase sums the ``G - 1`` steps over their growing context;
        its bound names the larger of its summed compute and memory times.
        """
        p = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
        g = check("output_tokens", output_tokens, "int>=1", scalar=True)
        b = check("batch", batch, "int>=1", scalar=True)
        pre = self.prefill(p)
        if g == 1:
            return Request(p, g, pre, Step(b, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "none"))
        steps = self.step(b, np.arange(p + 1, p + g))
        flops = float(np.sum(steps.flops))
        w = self.weight_bytes_read * (g - 1)
        kv = float(np.sum(steps.kv_bytes))
        tc, tm = self._times(flops, w + kv)
        dec = Step(b, g - 1, flops, w, kv, tc, tm, float(np.sum(steps.time_s)), roofline.bound_of(tc, tm))
        return Request(p, g, pre, dec)

    def decode_without_cache(self, prompt_tokens, output_tokens) -> Step:
        """The ``G - 1`` decode steps of a reply if nothing were cached: each reruns a full prefill.

        Without a KV cache, output token ``k + 1`` means pushing all ``P + k``
        tokens through the model again (causal, logits for the last position
        only): ``sum_{k=1}^{G-1}`` of :meth:`prefill` at ``P + k`` tokens. Compare
        with the cached steps of :meth:`request` (chapter 3).
        """
        p = check("prompt_tokens", prompt_tokens, "int>=1", scalar=True)
        g = check("output_tokens", output_tokens, "int>=1", scalar=True)
        if g == 1:
            return Step(1, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "none")
        passes = self.prefill(np.arange(p + 1, p + g))
        flops, w = float(np.sum(passes.flops)), self.weight_bytes_read * (g - 1)
        tc, tm = self._times(flops, w)
        return Step(1, g - 1, flops, w, 0.0, tc, tm, float(np.sum(passes.time_s)), roofline.bound_of(tc, tm))

    def tp_comm_s(self, tokens=1, bandwidth_bytes_per_s=None, latency_s=None):
        """Time one forward pass spends in tensor-parallel all-reduces, none overlapped: ``2 L T_AR``.

        The ``n_gpus`` form one tensor-parallel group in the Megatron layout:
        two all-reduces per layer (:func:`aiinfra.cluster.parallelism.tp_allreduce_count`),
        each of the BF16 activations of the ``tokens`` in flight
        (:func:`~aiinfra.cluster.parallelism.tp_allreduce_message_bytes`). By
        default each is timed as engines run it, the fastest measured regime
        for its size over the GPU's scale-up link
        (:func:`aiinfra.cluster.network.tp_allreduce_time_s`: one-shot, two-shot,
        NVLS or the NCCL ring); given ``bandwidth_bytes_per_s`` or
        ``latency_s``, as a ring (:func:`aiinfra.cluster.network.ring_allreduce_time_s`)
        over that link with that step latency (default: the GPU's link and
        :data:`aiinfra.cluster.parallelism.ASSUMED_STEP_LATENCY_S`). A decode
        step has ``tokens`` = its batch. Zero on one GPU. The roofline times of
        this class leave it out; :mod:`aiinfra.predict` adds it (chapters 6 and 7).
        """
        n_tok = check("tokens", tokens, ">0")
        m = self.model
        width = m.d_model if isinstance(m, RoundModel) else m.hidden_size
        size = parallelism.tp_allreduce_message_bytes(n_tok, width, units.PRECISION_BYTES["bf16"])
        link = self.gpu.scaleup_bytes_per_s_per_direction
        if bandwidth_bytes_per_s is None and latency_s is None:
            switched = "pcie" not in self.gpu.scaleup_link.lower()
            one = network.tp_allreduce_time_s(size, self.n_gpus, link, switched)
        else:
            bw = link if bandwidth_bytes_per_s is None else bandwidth_bytes_per_s
            t0 = parallelism.ASSUMED_STEP_LATENCY_S["nvlink"] if latency_s is None else latency_s
            one = network.ring_allreduce_time_s(size, self.n_gpus, bw, t0)
        return parallelism.tp_comm_time_per_step_s(m.n_layers, one)

    def tp_comm_share(self, batch=1, context_tokens=2048, bandwidth_bytes_per_s=None, latency_s=None):
        """Share of a decode step the all-reduces would take if added to it: ``T_comm / (T_step + T_comm)``.

        :meth:`step` at ``batch`` and ``context_tokens`` plus :meth:`tp_comm_s`
        of ``batch`` tokens (same link arguments). Accepts arrays.
        """
        comm = self.tp_comm_s(batch, bandwidth_bytes_per_s, latency_s)
        return comm / (self.step(batch, context_tokens).time_s + comm)

    # --- capacity -----------------------------------------------------------------
    def max_users(self, target_tpot_s, context_tokens) -> tuple[int, str]:
        """Most concurrent users this replica holds at ``context_tokens`` each and still meets ``target_tpot_s``.

        Three ceilings, each floored to a whole user: memory (their KV fits in
        :attr:`free_bytes`), bandwidth (``t eta_B beta >= W_read + B KV``) and
        compute (``t eta_F Pi >= B F_1``). Returns ``(users, limiting)`` with
        ``limiting`` one of ``"memory"``, ``"bandwidth"``, ``"compute"``;
        ``users`` is 0 when the weights do not fit or one user's step already
        misses the target.
        """
        ctx = check("context_tokens", context_tokens, "int>=1", scalar=True)
        return decode.max_users_per_replica(
            self.n_gpus,
            target_tpot_s,
            self.weight_bytes,
            self.kv_bytes(ctx),
            self._counts.decode_flops(ctx),
            self.gpu.memory_bytes,
            self.gpu.memory_bandwidth_bytes_per_s,
            self.gpu.dense_flops_per_s(self.compute_precision),
            self.eta_f,
            self.eta_b,
            self.memory_reserve,
            self.weight_bytes_read,
        )


def _plain(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


# --------------------------------------------------------------------------------------
# Chapter 2's request, worked by hand
# --------------------------------------------------------------------------------------

#: The round GPU of the worked request: 1 PFLOP/s of dense BF16 and 3 TB/s (the H100's 80 GB).
TEACHING_GPU = hardware.custom_gpu(
    base="H100 SXM",
    name="round GPU (teaching)",
    bf16_dense_flops_per_s=1e15,
    fp8_dense_flops_per_s=None,
    memory_bandwidth_bytes_per_s=3e12,
    sources={
        "bf16_dense_flops_per_s": "teaching assumption (source texts, see NOTES.md): a round 1 PFLOP/s",
        "memory_bandwidth_bytes_per_s": "teaching assumption: a round 3 TB/s",
    },
)

#: The worked request's prompt (also the context of its attention check) and batch.
TEACHING_PROMPT_TOKENS = 2000
TEACHING_BATCH = 32

#: The teaching assumptions of chapter 2 (source texts, see NOTES.md): a Llama-3-8B-like model
#: (N = 8e9, 32 layers of 4,096) in BF16 on the round GPU at 50 % of peak compute and 70 % of
#: peak bandwidth; each request reads 0.3 GB of KV per step at its 2,000-token context.
TEACHING_8B = Deployment(
    RoundModel(
        n_params=8e9,
        kv_bytes_per_token=0.3e9 / TEACHING_PROMPT_TOKENS,
        n_layers=32,
        d_model=4096,
        name="8B (round numbers)",
    ),
    TEACHING_GPU,
    eta_f=0.5,
    eta_b=0.7,
    memory_reserve=0.0,
)


# --------------------------------------------------------------------------------------
# Chapter 7's server: one assumption set for the whole chapter
# --------------------------------------------------------------------------------------

#: One 8 x H100 SXM server running Llama-3.1-70B in BF16 at 50 % of peak FLOP/s and 70 % of peak
#: bandwidth, with the default 10 % memory reserve: the replica every page of chapter 7 uses.
SERVING_70B = Deployment("Llama-3.1-70B", "H100 SXM", n_gpus=8, eta_f=0.5, eta_b=0.7)
#: The context every user of chapter 7 holds, and the TPOT the service promises.
SERVING_CONTEXT_TOKENS = 8192
SERVING_TPOT_S = 0.05
