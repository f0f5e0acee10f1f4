"""Tensor, pipeline and data parallelism: what each one splits and what it sends.

Chapter 6. A model that does not fit (or run fast enough) on one GPU is cut in
one of three ways, and each cut has its own traffic:

* **Tensor parallelism** (TP, degree ``t``; Shoeybi et al. 2019) splits every
  weight matrix of a layer across ``t`` GPUs. In the Megatron layout the
  attention block and the MLP block each end with a row-parallel matmul whose
  ``t`` partial outputs must be summed, so a forward pass needs **two
  all-reduces per layer**, each of the full activation ``n_tok * d * b`` bytes
  (``n_tok`` tokens in flight, width ``d``, ``b`` bytes per element). Training
  adds two more in the backward pass.
* **Pipeline parallelism** (PP, degree ``p``) gives each GPU a contiguous run of
  layers. Only the hidden state crosses a stage boundary, point to point:
  again ``n_tok * d * b`` bytes per micro-batch and boundary, but no
  collective. The cost is the *bubble*: with ``m`` micro-batches a GPipe/1F1B
  schedule leaves each stage idle for ``(p-1)/(m+p-1)`` of the time
  (Narayanan et al. 2021 write the same thing as ``(p-1)/m`` of the ideal
  compute time).
* **Data parallelism** (DP, degree ``r``) keeps a full replica per group and
  splits the batch. Inference needs no traffic at all; training all-reduces
  the gradients once per step: ``N * b_grad`` bytes.

The times of the collectives themselves (ring all-reduce, bus vs algorithm
bandwidth) live in :mod:`aiinfra.cluster.network`; this module only says how many
bytes and how many collectives each layout implies.

All sizes are bytes, counts are plain numbers; every scalar formula takes
numpy arrays and carries a symbolic twin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aiinfra.formula import check, choice, formula

__all__ = [
    "ALLREDUCES_PER_LAYER",
    "ASSUMED_STEP_LATENCY_S",
    "TPPlan",
    "tp_allreduce_message_bytes",
    "tp_allreduce_count",
    "tp_allreduce_bytes_per_token",
    "tp_comm_time_per_step_s",
    "pp_boundary_bytes",
    "pipeline_bubble_fraction",
    "dp_gradient_bytes",
    "weight_bytes_per_gpu",
    "gpus_in_layout",
    "tp_plan",
    "useful_compute_ratio",
    "microbatches_for_bubble",
]

#: All-reduces per transformer layer in the Megatron tensor-parallel layout:
#: one after attention and one after the MLP in the forward pass, and the same
#: two again for the input gradients in the backward pass.
ALLREDUCES_PER_LAYER = {"forward": 2, "training": 4}

#: Per-step latency ``t_0`` of a ring all-reduce step, in seconds: a teaching
#: assumption of the right order (a GPU-initiated NVLink transfer through an
#: NVSwitch costs about a microsecond to start; an RDMA message across a
#: switched network a few), not a measurement. Chapter 6 states it in its
#: assumption table; measured NCCL latencies depend on algorithm and size.
ASSUMED_STEP_LATENCY_S = {"nvlink": 1e-6, "infiniband": 3e-6}


@formula(tokens="n_tok >0", d_model="d >0", bytes_per_element="b_act >0")
def tp_allreduce_message_bytes(tokens, d_model, bytes_per_element=2.0):
    """Bytes of one tensor-parallel all-reduce: ``n_tok * d * b``.

    Each GPU of the TP group holds a partial sum of the block's output for
    every token in flight (``tokens``: the batch at one decode step, or the
    prompt length in prefill), ``d_model`` elements per token at
    ``bytes_per_element`` (2 for BF16). This is the message size ``S`` handed
    to the all-reduce; it does not shrink with the TP degree. Chapter 6.
    """
    return tokens * d_model * bytes_per_element


@formula(
    n_layers="L int>=1",
    allreduces_per_layer="k_AR int>=1",
)
def tp_allreduce_count(n_layers, allreduces_per_layer=2):
    """All-reduces in one pass through the model: ``k * L``.

    ``allreduces_per_layer`` is 2 for a forward pass (inference) and 4 for a
    training step (see :data:`ALLREDUCES_PER_LAYER`). Each one is a
    synchronisation point, so at small messages the count times the
    per-collective latency sets a floor on the step time. Chapter 6.
    """
    return n_layers * allreduces_per_layer


@formula(
    n_layers="L int>=1",
    d_model="d >0",
    bytes_per_element="b_act >0",
    allreduces_per_layer="k_AR int>=1",
)
def tp_allreduce_bytes_per_token(n_layers, d_model, bytes_per_element=2.0, allreduces_per_layer=2):
    """All-reduce payload per token for one pass: ``k * L * d * b`` bytes.

    The sum of the message sizes of every TP all-reduce, counted once per
    token (the algorithm-bandwidth view; the bytes each GPU actually puts on
    the wire are ``2(t-1)/t`` times this for a ring). Chapter 6.
    """
    return allreduces_per_layer * n_layers * d_model * bytes_per_element


@formula(
    n_layers="L int>=1",
    allreduce_time_s="t_AR >=0",
    allreduces_per_layer="k_AR int>=1",
)
def tp_comm_time_per_step_s(n_layers, allreduce_time_s, allreduces_per_layer=2):
    """Time one pass spends in TP all-reduces when none overlaps compute: ``k L t_AR``.

    ``allreduce_time_s`` is the time of one all-reduce of the layer's message
    (from :func:`aiinfra.cluster.network` ring formulas). Megatron's forward pass
    cannot start the next block before the sum arrives, so for decode this
    adds directly to the step time. Chapter 6.
    """
    return allreduces_per_layer * n_layers * allreduce_time_s


@formula(
    tokens="n_tok >0",
    d_model="d >0",
    stages="p int>=1",
    bytes_per_element="b_act >0",
)
def pp_boundary_bytes(tokens, d_model, stages, bytes_per_element=2.0):
    """Bytes sent between pipeline stages in one forward pass: ``(p-1) n_tok d b``.

    Each of the ``p-1`` stage boundaries receives the hidden state of the
    ``tokens`` in flight, point to point (send/recv, not a collective). A
    training step sends the same amount back as activation gradients.
    A single stage (``stages=1``) sends nothing. Chapter 6.
    """
    return (stages - 1) * tokens * d_model * bytes_per_element


@formula(
    stages="p int>=1",
    microbatches="m int>=1",
)
def pipeline_bubble_fraction(stages, microbatches):
    """Share of a training step a pipeline stage sits idle: ``(p-1)/(m+p-1)``.

    A step pushes ``m`` micro-batches through ``p`` stages; filling and
    draining the pipeline costs ``p-1`` micro-batch slots in which some stage
    has nothing to do (GPipe and 1F1B schedules alike). Narayanan et al.
    (2021) quote the bubble as ``(p-1)/m`` relative to the ideal time; this
    function returns the share of the *total* time, which stays below 1.
    Interleaved schedules divide the bubble further; not modelled. Chapter 6.
    """
    p, m = stages, microbatches
    return (p - 1) / (m + p - 1)


@formula(params="N >0", bytes_per_gradient="b_g >0")
def dp_gradient_bytes(params, bytes_per_gradient=2.0):
    """Message of the data-parallel gradient all-reduce per training step: ``N b_g``.

    Every replica holds a gradient for every one of its ``params`` and the
    replicas must agree on their sum once per step (BF16 gradients: 2 bytes;
    FP32: 4). With TP or PP inside a replica, pass the parameters one GPU
    holds. Inference with pure data parallelism sends nothing. Chapter 6.
    """
    return params * bytes_per_gradient


@formula(
    weight_bytes="W >0",
    tensor_parallel="t int>=1",
    pipeline_parallel="p int>=1",
)
def weight_bytes_per_gpu(weight_bytes, tensor_parallel=1, pipeline_parallel=1):
    """Weight bytes resident on one GPU: ``W / (t p)``.

    TP and PP both divide the weights (evenly, in this model); data
    parallelism copies them, so it does not appear. Chapter 6.
    """
    return weight_bytes / (tensor_parallel * pipeline_parallel)


@formula(
    tensor_parallel="t int>=1",
    pipeline_parallel="p int>=1",
    data_parallel="r int>=1",
)
def gpus_in_layout(tensor_parallel, pipeline_parallel, data_parallel):
    """GPUs used by a 3-D layout: ``t * p * r``. Chapter 6."""
    return tensor_parallel * pipeline_parallel * data_parallel


@dataclass(frozen=True)
class TPPlan:
    """The tensor-parallel traffic of one pass of a real model (bytes, counts)."""

    model: str
    tensor_parallel: int
    tokens: int
    message_bytes: float  # one all-reduce
    allreduces: int  # per pass
    bytes_per_pass: float  # sum of message sizes over the pass
    bytes_per_token: float  # per token in flight


def tp_plan(config, tokens, tensor_parallel=8, bytes_per_element=2.0, phase="forward"):
    """The TP all-reduce sizes for ``config`` (a :class:`aiinfra.catalog.models.ModelConfig`).

    Reads the layer count and hidden width from the config (attributes
    ``n_layers``/``num_hidden_layers`` and ``d_model``/``hidden_size``),
    checks that the attention heads and FFN width divide by the TP degree,
    and returns a :class:`TPPlan`. ``phase`` is ``"forward"`` (inference) or
    ``"training"``. Chapter 6.
    """
    layers = _attr(config, "n_layers", "num_hidden_layers")
    width = _attr(config, "d_model", "hidden_size")
    t = check("tensor_parallel", tensor_parallel, "int>=1", scalar=True)
    n = check("tokens", tokens, "int>=1", scalar=True)
    choice("phase", phase, set(ALLREDUCES_PER_LAYER))
    heads = _attr(config, "n_heads", "num_attention_heads", default=None)
    if heads is not None and heads % t:
        raise ValueError(f"tensor_parallel must divide the {heads} attention heads, got {t}")
    k = ALLREDUCES_PER_LAYER[phase]
    msg = tp_allreduce_message_bytes(n, width, bytes_per_element)
    count = int(tp_allreduce_count(layers, k))
    return TPPlan(
        model=str(
            config.get("name", "model") if isinstance(config, dict) else getattr(config, "name", "model")
        ),
        tensor_parallel=t,
        tokens=n,
        message_bytes=msg,
        allreduces=count,
        bytes_per_pass=msg * count,
        bytes_per_token=tp_allreduce_bytes_per_token(layers, width, bytes_per_element, k),
    )


def _attr(config, *names, default=...):
    for name in names:
        if isinstance(config, dict) and name in config:
            return int(config[name])
        if hasattr(config, name):
            return int(getattr(config, name))
    if default is ...:
        raise ValueError(f"config must provide one of {names}, got {type(config).__name__}")
    return default


@formula(None, mfu_before="(0,1]", mfu_after="(0,1]", gpu_ratio=">0")
def useful_compute_ratio(mfu_before, mfu_after, gpu_ratio=2.0):
    """How much more useful compute a bigger cluster delivers: ``k * MFU_after / MFU_before``.

    Growing a cluster ``gpu_ratio`` (``k``) times multiplies the bill by
    ``k`` but the useful FLOP/s by ``k`` times the MFU ratio, which is below
    1 when efficiency falls with scale. Chapter 6 (economics).
    """
    return gpu_ratio * mfu_after / mfu_before


def microbatches_for_bubble(stages, max_bubble_fraction):
    """Fewest micro-batches that keep the bubble share at or below ``f``: ``ceil((p-1)(1-f)/f)``.

    Inverts :func:`pipeline_bubble_fraction`: ``(p-1)/(m+p-1) <= f`` holds
    from ``m = (p-1)(1-f)/f`` on. Returns an ``int`` (at least 1). Chapter 6.
    """
    p = check("stages", stages, "int>=1", scalar=True)
    f = check("max_bubble_fraction", max_bubble_fraction, "(0,1)")
    m = int(np.ceil((p - 1) * (1.0 - f) / f - 1e-9))
    return max(1, m)
