"""Bytes in GPU memory: weights, the KV cache, how they split over cards, and the bus that feeds them.

Every function returns bytes as SI floats (decimal GB = 1e9 B; use
:mod:`aiinfra.units` to print GiB). The scalar formulas a chapter typesets carry
symbolic twins (``fn.sym``); the wrappers
that take a :class:`~aiinfra.catalog.models.ModelConfig` call those cores with
exact counts from :mod:`aiinfra.catalog.models`.

Chapter 1 (capacity checks, and how often each kind of data moves while one
request is generated), chapter 2 (the memory bus), chapter 4 (the bytes one
decode step reads) and chapter 5 (KV bytes for MHA, GQA and MLA) are the main
users. For the questions a whole deployment asks (free memory, largest batch)
see :class:`aiinfra.deployment.Deployment`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aiinfra import units as _units
from aiinfra.catalog import models as _models
from aiinfra.formula import check, formula

# --------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------


@formula(n_params="N >=0", bytes_per_param="b_W >0")
def weight_bytes_formula(n_params, bytes_per_param):
    """Weight bytes ``N * b_W``: parameter count times bytes per parameter. Accepts arrays."""
    return n_params * bytes_per_param


def weight_bytes(m, precision: str = "bf16") -> float:
    """Bytes of every stored parameter of ``m`` in ``precision`` (see :func:`aiinfra.units.bytes_per_param`).

    DeepSeek-R1-Distill-Llama-70B in BF16: 141.11 GB (131.42 GiB).
    """
    return weight_bytes_formula(_models.total_params(m), _units.bytes_per_param(precision))


@formula(
    n_quant_params="N_q >=0",
    n_other_params="N_o >=0",
    bits="q >0",
    group_size="g >0",
    scale_bytes="s_g >=0",
    other_bytes_per_param="b_o >0",
)
def _grouped_quant_bytes_formula(
    n_quant_params, n_other_params, bits, group_size, scale_bytes, other_bytes_per_param
):
    """Bytes of a grouped-quantized model: ``N_q*q/8 + N_q*s/g + N_o*b_o``.

    ``N_q`` weights stored in ``q`` bits with one ``s``-byte scale per group
    of ``g`` weights, and ``N_o`` parameters left at ``b_o`` bytes each. The
    closed form assumes ``g`` divides every row; :func:`grouped_quant_weight_bytes`
    counts groups matrix by matrix instead. Accepts arrays.
    """
    nq, no = n_quant_params, n_other_params
    return nq * bits / 8 + nq * scale_bytes / group_size + no * other_bytes_per_param


def grouped_quant_weight_bytes(m, bits=8, group_size=128, scale_bytes=2, keep_bf16=(), block_rows=1) -> float:
    """Bytes of ``m`` with every linear weight inside the blocks quantized in groups.

    Each row of each block matrix (attention projections, MLP and expert
    matrices, routers) is cut into groups of ``group_size`` consecutive
    input weights; every weight takes ``bits`` bits and every group one
    ``scale_bytes`` scale (a row whose length is not a multiple of the group
    size gets a last, shorter group). Everything else stays BF16: the
    embedding table, the LM head, the norms and the biases. ``keep_bf16``
    lists block roles to leave in BF16 as well (``"attention"``, ``"mlp"``,
    ``"expert"``, ``"shared_expert"``, ``"router"``), e.g. ``("router",)``.
    ``block_rows`` > 1 makes each group a ``block_rows x group_size`` tile
    sharing one scale (DeepSeek-V3's FP8 checkpoint: :data:`FP8_BLOCK_128`).

    DeepSeek-R1-Distill-Llama-70B, 8-bit, groups of 128, 2-byte scales:
    73.73 GB.
    """
    m = _models._as_model(m)
    scheme = _quant_scheme(bits, group_size, scale_bytes, keep_bf16, block_rows)
    other_params = _models.total_params(m) - _models._block_linear_params(m)
    linear = sum(_quantized_matrix_bytes(*mat, *scheme) for mat in _models._matrices(m))
    return float(linear + other_params * _units.bytes_per_param("bf16"))


def grouped_quant_read_bytes(
    m, bits=8, group_size=128, scale_bytes=2, keep_bf16=(), block_rows=1, expert_fraction=None
) -> float:
    """Weight bytes one decode step reads from ``m`` stored as in :func:`grouped_quant_weight_bytes`.

    The parameters of :func:`aiinfra.catalog.models.decode_read_params` at
    their stored size: every block matrix a token multiplies, with its
    scales; the norms and biases, the LM head and one row of the embedding
    table in BF16. Of the routed experts a step reads ``expert_fraction``
    (default ``k / E``, one token; pass
    :func:`aiinfra.serving.moe.expected_expert_fraction` for a batch).
    """
    m = _models._as_model(m)
    scheme = _quant_scheme(bits, group_size, scale_bytes, keep_bf16, block_rows)
    if expert_fraction is None:
        frac = m.n_experts_per_token / m.n_routed_experts if m.is_moe else 1.0
    else:
        frac = check("expert_fraction", expert_fraction, "[0,1]", scalar=True)
    linear = sum(
        _quantized_matrix_bytes(*mat, *scheme) * (frac if mat[0] == "expert" else 1.0)
        for mat in _models._matrices(m)
    )
    other_params: float = _models.decode_read_params(m) - _models.block_linear_params_per_token(m)
    bias = _models._groups(m).get(
        "expert_bias", 0
    )  # counted at k / E in the decode read; scale it as the experts
    if bias:
        other_params += frac * bias - _models._per_token(m, bias)
    return float(linear + other_params * _units.bytes_per_param("bf16"))


#: DeepSeek-V3's published FP8 format: e4m3 weights, one FP32 scale per 128 x 128 block
#: (the checkpoint's ``quantization_config``, ``weight_block_size: [128, 128]``, and its weight
#: documentation); pass as ``**FP8_BLOCK_128`` to the two functions above.
FP8_BLOCK_128 = {"bits": 8, "group_size": 128, "block_rows": 128, "scale_bytes": 4}


def _quant_scheme(bits, group_size, scale_bytes, keep_bf16, block_rows):
    """Validated ``(bits, group_size, scale_bytes, roles kept in BF16, block_rows)``."""
    q = check("bits", bits, "int>=1", scalar=True)
    if q > 16:
        raise ValueError(f"bits must be a whole number in [1, 16], got {bits!r}")
    g = check("group_size", group_size, "int>=1", scalar=True)
    s = check("scale_bytes", scale_bytes, ">=0", scalar=True)
    r = check("block_rows", block_rows, "int>=1", scalar=True)
    keep = {keep_bf16} if isinstance(keep_bf16, str) else set(keep_bf16)
    unknown = keep - set(_models.LINEAR_ROLES)
    if unknown:
        raise ValueError(
            f"keep_bf16 entries must be among {list(_models.LINEAR_ROLES)}, got {sorted(unknown)}"
        )
    return q, g, s, frozenset(keep), r


def _quantized_matrix_bytes(
    group, copies, n_out, n_in, bits, group_size, scale_bytes, keep, block_rows
) -> float:
    """Stored bytes of ``copies`` matrices of ``n_out x n_in`` weights of inventory group ``group``."""
    params = copies * n_out * n_in
    if group in keep:
        return params * _units.bytes_per_param("bf16")
    tiles = math.ceil(n_out / block_rows) * math.ceil(n_in / group_size) * copies
    return params * bits / 8 + tiles * scale_bytes


# --------------------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------------------


@formula(
    "2*L*H_kv*d_head*b_KV",
    n_layers="L >0",
    n_kv_heads="H_kv >0",
    head_dim="d_head >0",
    bytes_per_element="b_KV >0",
)
def kv_bytes_per_token_formula(n_layers, n_kv_heads, head_dim, bytes_per_element):
    """KV bytes one token adds with MHA/GQA: ``2 * L * H_kv * d_head * b_KV`` (K and V, every layer).

    Full multi-head attention at d = 8192 (64 heads of 128, 80 layers, BF16)
    gives 2,621,440 B; the 8-KV-head GQA of Llama-3-70B gives 327,680 B.
    """
    return 2 * n_layers * n_kv_heads * head_dim * bytes_per_element


@formula(
    "(r_kv + d_rope)*L*b_KV",
    n_layers="L >0",
    kv_lora_rank="r_kv >0",
    qk_rope_head_dim="d_rope >0",
    bytes_per_element="b_KV >0",
)
def mla_kv_bytes_per_token_formula(n_layers, kv_lora_rank, qk_rope_head_dim, bytes_per_element):
    """KV bytes one token adds with MLA: ``(r_kv + d_rope) * L * b_KV``.

    Multi-head latent attention caches one compressed latent of width
    ``kv_lora_rank`` and one shared RoPE key of width ``qk_rope_head_dim``
    per layer, instead of per-head keys and values. DeepSeek-V3 in BF16:
    (512 + 64) * 61 * 2 = 70,272 B.
    """
    return (kv_lora_rank + qk_rope_head_dim) * n_layers * bytes_per_element


def _layer_groups(m: _models.ModelConfig) -> list[tuple[int, int, int | None]]:
    """Layers grouped by what they cache: ``(count, elements per token, window or None)``, full layers first."""
    counts: dict[tuple[int, int | None], int] = {}
    for a in m.attention:
        if not a.caches_tokens:
            continue
        counts[(a.kv_elements_per_token, a.window)] = counts.get((a.kv_elements_per_token, a.window), 0) + 1
    return [(n, e, w) for (e, w), n in sorted(counts.items(), key=lambda kv: (kv[0][1] is not None, kv[0]))]


def kv_bytes_per_token(m, bytes_per_element=2):
    """KV-cache bytes one more cached token costs, summed over all layers: ``sum_l e_l * b``.

    ``e_l`` is what layer ``l`` caches per token: ``2 * n_kv_heads * head_dim``
    for MHA/GQA (:func:`kv_bytes_per_token_formula`), the compressed latent
    plus the RoPE key ``kv_lora_rank + qk_rope_head_dim`` for MLA
    (:func:`mla_kv_bytes_per_token_formula`). Sliding-window layers are
    included (a token costs the same there until the window is full;
    :func:`kv_bytes_per_request` applies the cap). ``bytes_per_element`` may
    be an array (2 for BF16, 1 for an FP8 cache).

    Qwen3-8B in BF16: 147,456 B (144 KiB).
    """
    m = _models._as_model(m)
    b = check("bytes_per_element", bytes_per_element, ">0")
    return sum(a.kv_elements_per_token for a in m.attention) * b


def kv_bytes_per_request(m, context_tokens, bytes_per_element=2):
    """KV-cache bytes of one request holding ``n`` tokens: ``sum_l e_l * min(n, w_l) * b`` (chapter 5).

    Full-attention layers keep every token (``w_l`` infinite); a
    sliding-window layer keeps at most its window ``w_l``; MLA layers keep the
    compressed latent plus the RoPE key. Gemma 2 at 8,192 tokens: 13 sliding
    layers hold 4,096 tokens, 13 global layers 8,192. ``context_tokens`` and
    ``bytes_per_element`` may be arrays (they broadcast). A context longer
    than the model's ``max_position_embeddings`` raises a
    :class:`~aiinfra.catalog.models.ContextLengthWarning`.

    Qwen3-8B at 2,048 tokens: 288 MiB. DeepSeek-R1-Distill-Llama-70B at
    8,192 tokens: 2.5 GiB.
    """
    m = _models._as_model(m)
    ctx = check("context_tokens", context_tokens, ">=0")
    b = check("bytes_per_element", bytes_per_element, ">0")
    _models._check_context(m, ctx)
    n = np.asarray(ctx, dtype=float)
    elements = sum(count * e * (n if w is None else np.minimum(n, w)) for count, e, w in _layer_groups(m))
    out = elements * b
    return float(out) if np.ndim(out) == 0 else out


@formula(
    "(c_conv*b_KV + s_rec*b_S)*L_S",
    n_state_layers="L_S >=0",
    conv_state_elements="c_conv >=0",
    recurrent_state_elements="s_rec >=0",
    bytes_per_element="b_KV >0",
    state_bytes_per_element="b_S >0",
)
def state_bytes_per_request_formula(
    n_state_layers, conv_state_elements, recurrent_state_elements, bytes_per_element, state_bytes_per_element
):
    """Fixed state one request keeps in ``L_S`` linear-attention or Mamba layers: ``(c_conv*b + s_rec*b_S)*L_S``.

    A Gated DeltaNet layer keeps a convolution state of ``(2*n_k*d_k + n_v*d_v) * kernel`` elements and
    a recurrent state of ``n_v * d_k * d_v``; a Mamba-2 layer ``(heads*head_dim + 2*groups*d_state) *
    kernel`` and ``heads * head_dim * d_state``. Neither grows with the context (chapter 5). The
    convolution state is stored like the KV cache (``b_KV``), the recurrent state at ``b_S`` (float32
    in ``transformers``' caches and Nemotron-H's ``mamba_ssm_cache_dtype``). Qwen3-Next-80B-A3B: 36
    layers of 32,768 conv elements in BF16 and 524,288 recurrent ones in FP32, 77.86 MB.
    """
    return (conv_state_elements * bytes_per_element + recurrent_state_elements * state_bytes_per_element) * (
        n_state_layers
    )


def state_bytes_per_request(m, bytes_per_element=2, state_bytes_per_element=4) -> float:
    """Bytes of the fixed-size state one request keeps, whatever its context: summed over state layers.

    Zero for a model whose every layer is attention. Linear-attention (Gated DeltaNet) and Mamba-2
    layers keep a convolution state at ``bytes_per_element`` (the KV cache's, 2 for BF16) and a
    recurrent state at ``state_bytes_per_element`` (4: float32, as ``transformers`` keeps it); see
    :func:`state_bytes_per_request_formula`. Add :func:`kv_bytes_per_request` for all a request holds
    (:func:`request_state_bytes`).
    """
    m = _models._as_model(m)
    b = check("bytes_per_element", bytes_per_element, ">0")
    s = check("state_bytes_per_element", state_bytes_per_element, ">0")
    return float(
        sum(
            state_bytes_per_request_formula(1, a.conv_state_elements, a.recurrent_state_elements, b, s)
            for a in m.attention
            if a.conv_state_elements or a.recurrent_state_elements  # an attention layer adds 0
        )
    )


@formula(
    kv_bytes="K >=0",
    tensor_parallel="t int>=1",
    kv_heads="h_KV int>=1",
)
def kv_bytes_per_gpu(kv_bytes, tensor_parallel, kv_heads):
    """KV bytes each GPU of a ``t``-way tensor-parallel group holds: ``K max(1/t, 1/h_KV)``.

    TP splits the cache by KV heads: each rank holds ``h_KV / t`` of them,
    but never less than one, so a group wider than the KV heads repeats
    them. MLA caches one latent shared by every head: pass ``kv_heads=1``,
    and every rank holds the whole cache (:attr:`aiinfra.deployment.Deployment.kv_copies`). Llama-3.1-70B (8 KV heads) on
    TP8 holds 1/8 per GPU; DeepSeek-V3 holds all of it on each of the 8.
    """
    return kv_bytes * np.maximum(1.0 / tensor_parallel, 1.0 / kv_heads)


def request_state_bytes(m, context_tokens, bytes_per_element=2, state_bytes_per_element=4):
    """Everything one request holds on the GPU: the KV that grows with the context plus the fixed state.

    ``kv_bytes_per_request(m, n) + state_bytes_per_request(m)`` (chapter 5). Nemotron-H-8B at 8,192
    tokens: 134.2 MB of KV in its 4 attention layers and 102.6 MB of Mamba-2 state in 24 others.
    """
    kv = kv_bytes_per_request(m, context_tokens, bytes_per_element)
    return kv + state_bytes_per_request(m, bytes_per_element, state_bytes_per_element)


# --------------------------------------------------------------------------------------
# Does it fit?
# --------------------------------------------------------------------------------------


@formula(
    weights_bytes="M_W >=0",
    state_bytes="M_S >=0",
    workspace_bytes="M_ws >=0",
    capacity_bytes="M_cap >0",
)
def free_bytes(weights_bytes, state_bytes, workspace_bytes, capacity_bytes):
    """Capacity left after weights, state (KV) and workspace: ``M_cap - (M_W + M_S + M_ws)``.

    Negative means the shortfall. One H100 (80 GB) holding the 73.73 GB
    8-bit 70B model alone leaves 6.27 GB. Accepts arrays.
    """
    return capacity_bytes - (weights_bytes + state_bytes + workspace_bytes)


def fits(weights_bytes, state_bytes, workspace_bytes, capacity_bytes):
    """True when weights + state + workspace <= capacity (elementwise for arrays).

    73.73 GB + 2.68 GB + 2.15 GB = 78.56 GB fits in one 80 GB H100.
    """
    left = free_bytes(weights_bytes, state_bytes, workspace_bytes, capacity_bytes)
    return bool(left >= 0) if np.ndim(left) == 0 else np.asarray(left) >= 0


@formula(total_bytes="M >=0", n_cards="n_G int>=1")
def split_even(total_bytes, n_cards):
    """Bytes per card when ``total_bytes`` is split evenly over ``n_cards``: ``M / n_G``.

    The 141.11 GB BF16 70B model on two cards: 70.55 GB each.
    """
    return total_bytes / n_cards


@dataclass(frozen=True)
class CapacitySplit:
    """Result of :func:`split_by_capacity`: one entry per card, in the order given."""

    shares_bytes: tuple[float, ...]
    free_bytes: tuple[float, ...]
    fits_each: tuple[bool, ...]

    @property
    def all_fit(self) -> bool:
        return all(self.fits_each)


def split_by_capacity(total_bytes, capacities_bytes, reserve_bytes_per_card=0) -> CapacitySplit:
    """Split ``total_bytes`` over mixed cards in proportion to their usable capacity.

    Card ``i`` gets ``total * u_i / sum(u)`` with ``u_i = capacity_i -
    reserve``, so every card is filled to the same fraction; the result says
    what each card has left (``u_i - share_i``) and whether each share fits.
    A card filled exactly (the total equals the usable sum) fits: the few
    units in the last place that the division can leave over are counted as 0.
    """
    total = check("total_bytes", total_bytes, ">=0", scalar=True)
    if (
        isinstance(capacities_bytes, (str, bytes))
        or np.ndim(capacities_bytes) != 1
        or len(capacities_bytes) == 0
    ):
        raise ValueError(f"capacities_bytes must be a non-empty list of numbers, got {capacities_bytes!r}")
    caps = check("capacities_bytes", capacities_bytes, ">0")
    reserve = check("reserve_bytes_per_card", reserve_bytes_per_card, ">=0", scalar=True)
    usable = caps - reserve
    if np.any(usable <= 0):
        raise ValueError(
            f"reserve_bytes_per_card must be < every capacity (min {caps.min()!r}), got {reserve_bytes_per_card!r}"
        )
    shares = total * usable / usable.sum()
    left = usable - shares
    left = np.where(np.abs(left) <= 1e-12 * usable, 0.0, left)
    return CapacitySplit(
        shares_bytes=tuple(float(x) for x in shares),
        free_bytes=tuple(float(x) for x in left),
        fits_each=tuple(bool(x >= 0) for x in left),
    )


@formula(
    out=int,
    total_bytes="M >=0",
    capacity_bytes_per_card="M_cap >0",
    reserve_bytes_per_card="M_res >=0",
)
def min_cards(total_bytes, capacity_bytes_per_card, reserve_bytes_per_card=0):
    """Fewest cards that hold ``total_bytes``: ``ceil(M / (M_cap - M_res))``.

    Ignores that a split must fall on layer or tensor boundaries. The
    73.73 GB 8-bit 70B model needs 4 RTX 4090s (24 GB each). Any positive
    size needs at least one card, however small (the quotient of a
    subnormal size can round to 0); nothing needs none.
    """
    usable = capacity_bytes_per_card - reserve_bytes_per_card
    if np.any(usable <= 0):
        raise ValueError(
            f"reserve_bytes_per_card must be < capacity_bytes_per_card ({capacity_bytes_per_card!r}), "
            f"got {reserve_bytes_per_card!r}"
        )
    cards = np.ceil(total_bytes / usable)
    return np.where(total_bytes > 0, np.maximum(cards, 1.0), 0.0)


def mha_equivalent_kv_bytes_per_token(m, bytes_per_element=2):
    """KV bytes per token the model would cache if every query head kept its own keys and values.

    ``L * (qk_width + v_width) * b`` with the widths of
    :func:`aiinfra.catalog.models.attention_qk_width` and
    :func:`~aiinfra.catalog.models.attention_v_width`: for an MHA/GQA model that
    is ``2 L H d_head b`` with all ``H`` query heads, for an MLA model the full
    per-head keys (no-RoPE plus RoPE part) and values that the latent
    replaces. Divide by :func:`kv_bytes_per_token` for the saving of GQA or
    MLA (chapter 5).
    """
    m = _models._as_model(m)
    b = check("bytes_per_element", bytes_per_element, ">0")
    out = sum(a.qk_width + a.v_width for a in m.attention) * np.asarray(b)
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------------------
# The bytes one request moves (chapter 1)
# --------------------------------------------------------------------------------------
#
# Batch 1; decode step ``i`` (``i = 0 .. G-1``) attends to the ``P + i`` tokens already in
# the cache, reads all of their keys and values once, and appends its own; prefill writes
# the prompt's ``P`` entries.


@formula(
    kv_bytes_per_token="k_tok >0",
    prompt_tokens="P int>=0",
    output_tokens="G int>=0",
)
def _kv_bytes_written(kv_bytes_per_token, prompt_tokens, output_tokens):
    """Bytes appended to the KV cache over a whole request: ``k (P + G)``.

    Prefill stores one entry per prompt token, each decode step one more, so
    the cache ends at ``P + G`` entries of ``k`` bytes. This is also the cache
    size the request holds when it finishes. Chapter 1.
    """
    return kv_bytes_per_token * (prompt_tokens + output_tokens)


@formula(
    "k_tok*(G*P + G*(G - 1)/2)",
    sample={"prompt_tokens": (1, 5000), "output_tokens": (1, 5000), "kv_bytes_per_token": (1e3, 1e6)},
    kv_bytes_per_token="k_tok >0",
    prompt_tokens="P int>=0",
    output_tokens="G int>=0",
)
def kv_bytes_read(kv_bytes_per_token, prompt_tokens, output_tokens):
    """Bytes of KV cache read over all decode steps: ``k (G P + G (G - 1) / 2)``.

    Step ``i`` (0-based) reads the ``P + i`` entries already cached, so the
    total is ``k * sum_{i=0}^{G-1} (P + i)``. It grows with the *square* of
    the answer length, while the weight reads grow linearly. Prefill's own
    attention reads are not counted (they stay on chip in a fused kernel).
    Chapter 1.
    """
    g, p = output_tokens, prompt_tokens
    return kv_bytes_per_token * (g * p + g * (g - 1) / 2)


@formula(weight_bytes_per_step="R_W >0", output_tokens="G int>=0")
def _weight_bytes_streamed(weight_bytes_per_step, output_tokens):
    """Weight bytes streamed from device memory over a request at batch 1: ``G R_W``.

    Each decode step reads every weight it multiplies once (``R_W`` bytes),
    however many times the weights were loaded (once, at start-up). With a
    batch of ``B`` requests sharing a step, divide by ``B`` for one request's
    share. Chapter 1.
    """
    return weight_bytes_per_step * output_tokens


@formula(
    hidden_size="d int>=1",
    bytes_per_element="b_act >0",
)
def _activation_bytes_per_token(hidden_size, bytes_per_element=2):
    """Bytes of one token's hidden vector, ``d b``: what crosses a pipeline cut.

    When a model's layers are split between two cards, each token's hidden
    state (``hidden_size`` elements, 2 bytes each in BF16) is handed from one
    card to the next once per step. Tensor parallelism moves more (two
    all-reduces per layer; see chapter 6). Chapter 1.
    """
    return hidden_size * bytes_per_element


def request_traffic(
    weight_bytes_resident,
    weight_bytes_per_step,
    kv_bytes_per_token,
    hidden_size,
    prompt_tokens,
    output_tokens,
    bytes_per_element=2,
):
    """Every movement of one batch-1 request, as a dict of bytes (chapter 1's table).

    Keys: ``weights_loaded`` (once, at start-up), ``weights_streamed`` (over all
    decode steps), ``kv_written`` and ``kv_read`` (whole request),
    ``kv_per_token`` (appended per token), ``activation_per_token_per_cut``
    (hidden vector handed across a pipeline cut), ``steps`` (decode steps).
    """
    loaded = check("weight_bytes_resident", weight_bytes_resident, ">0")
    g = check("output_tokens", output_tokens, "int>=0", scalar=True)
    p = check("prompt_tokens", prompt_tokens, "int>=0", scalar=True)
    return {
        "weights_loaded": float(loaded),
        "weights_streamed": _weight_bytes_streamed(weight_bytes_per_step, g),
        "kv_per_token": check("kv_bytes_per_token", kv_bytes_per_token, ">0"),
        "kv_written": _kv_bytes_written(kv_bytes_per_token, p, g),
        "kv_read": kv_bytes_read(kv_bytes_per_token, p, g),
        "activation_per_token_per_cut": _activation_bytes_per_token(hidden_size, bytes_per_element),
        "steps": g,
    }


# --------------------------------------------------------------------------------------
# The memory bus
# --------------------------------------------------------------------------------------

#: Data bits one HBM stack (HBM2, HBM2e, HBM3, HBM3e) exposes to the GPU.
HBM_BITS_PER_STACK = 1024
#: Data bits of one DDR4/DDR5 channel (8 bytes per transfer).
DDR_BITS_PER_CHANNEL = 64


@formula(out=int, stacks="n_stack int>=1")
def hbm_bus_width_bits(stacks):
    """Data width of a memory interface built from ``stacks`` HBM stacks: ``1,024`` bits each.

    H100 SXM, 5 active stacks: 5,120 bits. Chapter 2.
    """
    return stacks * HBM_BITS_PER_STACK


@formula(
    bus_width_bits="w_bus int>=1",
    transfers_per_s="r_pin >0",
)
def bus_bandwidth_bytes_per_s(bus_width_bits, transfers_per_s):
    """Peak bandwidth of a memory bus: ``w_bus * r_pin / 8`` bytes per second (reads and writes share it).

    ``bus_width_bits`` is the data width (HBM: stacks x 1,024; DDR: channels
    x 64); ``transfers_per_s`` the data rate of one pin (HBM3 on an H100: ~5.2
    Gbit/s per pin; "DDR5-4800": 4.8e9). An H100 SXM's 5 active stacks (5,120
    bits) need ~5.2 Gbit/s per pin for 3.35 TB/s; eight DDR5-4800 channels
    give 307.2 GB/s. Chapters 2 and 8. Accepts arrays.
    """
    return _units.bytes_from_bits(bus_width_bits * transfers_per_s)


@formula(
    bandwidth_bytes_per_s="beta >0",
    bus_width_bits="w_bus int>=1",
)
def bus_transfer_rate_per_s(bandwidth_bytes_per_s, bus_width_bits):
    """The per-pin data rate a bandwidth implies: ``8 beta / w_bus`` (the inverse of :func:`bus_bandwidth_bytes_per_s`)."""
    return _units._bits_from_bytes(bandwidth_bytes_per_s) / bus_width_bits


__all__ = [
    "weight_bytes_formula",
    "weight_bytes",
    "grouped_quant_weight_bytes",
    "grouped_quant_read_bytes",
    "FP8_BLOCK_128",
    "kv_bytes_per_token_formula",
    "mla_kv_bytes_per_token_formula",
    "kv_bytes_per_token",
    "kv_bytes_per_request",
    "state_bytes_per_request_formula",
    "state_bytes_per_request",
    "kv_bytes_per_gpu",
    "request_state_bytes",
    "free_bytes",
    "fits",
    "split_even",
    "CapacitySplit",
    "split_by_capacity",
    "min_cards",
    "mha_equivalent_kv_bytes_per_token",
    "kv_bytes_read",
    "request_traffic",
    "HBM_BITS_PER_STACK",
    "DDR_BITS_PER_CHANNEL",
    "bus_bandwidth_bytes_per_s",
    "bus_transfer_rate_per_s",
    "hbm_bus_width_bits",
]
