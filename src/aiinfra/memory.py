"""Bytes that must sit in GPU memory: weights, the KV cache, and how they split over cards.

Every function returns bytes as SI floats (decimal GB = 1e9 B; use
:mod:`aiinfra.units` to print GiB). The scalar formulas carry symbolic twins
(``fn.sym``) so chapters can show the equation they compute; the wrappers
that take a :class:`~aiinfra.models.ModelConfig` call those cores with
exact counts from :mod:`aiinfra.models`.

Chapter 1 (capacity checks: does a 70B model fit, on which cards),
chapter 4 (the bytes one decode step reads) and chapter 5 (KV bytes for MHA,
GQA and MLA) are the main users.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from aiinfra.units import _check
from aiinfra import models as _models
from aiinfra.symbols import L, M, M_cap, H_kv, N, b_KV, b_W, d_head, n_ctx, n_gpu, twin
from aiinfra import units as _units

# Symbols local to this module's twins (quantities the book's notation table does not name).
_N_q = sp.Symbol("N_q", positive=True)      # parameters that are quantized
_N_o = sp.Symbol("N_o", positive=True)      # parameters kept at higher precision
_bits = sp.Symbol("q", positive=True)       # bits per quantized weight
_g = sp.Symbol("g", positive=True)          # weights per scale group
_s = sp.Symbol("s_g", positive=True)        # bytes per group scale
_b_o = sp.Symbol("b_o", positive=True)      # bytes per non-quantized parameter
_r_kv = sp.Symbol("r_kv", positive=True)    # MLA latent width
_d_rope = sp.Symbol("d_rope", positive=True)  # MLA decoupled RoPE key width
_M_W = sp.Symbol("M_W", positive=True)      # resident weight bytes
_M_S = sp.Symbol("M_S", positive=True)      # resident state (KV) bytes
_M_ws = sp.Symbol("M_ws", positive=True)    # workspace (activations, allocator slack) bytes
_M_res = sp.Symbol("M_res", positive=True)  # bytes reserved per card


# --------------------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------------------

@twin(N * b_W, n_params=N, bytes_per_param=b_W)
def weight_bytes_formula(n_params, bytes_per_param):
    """Weight bytes ``N * b_W``: parameter count times bytes per parameter. Accepts arrays."""
    n = _check.non_negative("n_params", n_params)
    b = _check.positive("bytes_per_param", bytes_per_param)
    return n * b


def weight_bytes(m, precision: str = "bf16") -> float:
    """Bytes of every stored parameter of ``m`` in ``precision`` (see :func:`aiinfra.units.bytes_per_param`).

    DeepSeek-R1-Distill-Llama-70B in BF16: 141.11 GB (131.42 GiB).
    """
    return float(weight_bytes_formula(_models.total_params(m), _units.bytes_per_param(precision)))


@twin(_N_q * _bits / 8 + _N_q * _s / _g + _N_o * _b_o,
      n_quant_params=_N_q, n_other_params=_N_o, bits=_bits, group_size=_g, scale_bytes=_s,
      other_bytes_per_param=_b_o)
def grouped_quant_bytes_formula(n_quant_params, n_other_params, bits, group_size, scale_bytes,
                                other_bytes_per_param):
    """Bytes of a grouped-quantized model: ``N_q*q/8 + N_q*s/g + N_o*b_o``.

    ``N_q`` weights stored in ``q`` bits with one ``s``-byte scale per group
    of ``g`` weights, and ``N_o`` parameters left at ``b_o`` bytes each. The
    closed form assumes ``g`` divides every row; :func:`grouped_quant_weight_bytes`
    counts groups matrix by matrix instead. Accepts arrays.
    """
    nq = _check.non_negative("n_quant_params", n_quant_params)
    no = _check.non_negative("n_other_params", n_other_params)
    q = _check.positive("bits", bits)
    g = _check.positive("group_size", group_size)
    s = _check.non_negative("scale_bytes", scale_bytes)
    bo = _check.positive("other_bytes_per_param", other_bytes_per_param)
    return nq * q / 8 + nq * s / g + no * bo


def grouped_quant_weight_bytes(m, bits=8, group_size=128, scale_bytes=2, keep_bf16=()) -> float:
    """Bytes of ``m`` with every linear weight inside the blocks quantized in groups.

    Each row of each block matrix (attention projections, MLP and expert
    matrices, routers) is cut into groups of ``group_size`` consecutive
    input weights; every weight takes ``bits`` bits and every group one
    ``scale_bytes`` scale (a row whose length is not a multiple of the group
    size gets a last, shorter group). Everything else stays BF16: the
    embedding table, the LM head, the norms and the biases. ``keep_bf16``
    lists block roles to leave in BF16 as well (``"attention"``, ``"mlp"``,
    ``"expert"``, ``"shared_expert"``, ``"router"``), e.g. ``("router",)``.

    DeepSeek-R1-Distill-Llama-70B, 8-bit, groups of 128, 2-byte scales:
    73.73 GB.
    """
    m = _models._as_model(m)
    q = _check.integer("bits", bits, minimum=1)
    if q > 16:
        raise ValueError(f"bits must be a whole number in [1, 16], got {bits!r}")
    g = _check.integer("group_size", group_size, minimum=1)
    s = _check.non_negative("scale_bytes", scale_bytes)
    if isinstance(keep_bf16, str):
        keep_bf16 = (keep_bf16,)
    keep = set(keep_bf16)
    unknown = keep - set(_models.LINEAR_ROLES)
    if unknown:
        raise ValueError(f"keep_bf16 entries must be among {list(_models.LINEAR_ROLES)}, got {sorted(unknown)}")
    bf16 = _units.bytes_per_param("bf16")
    quant_bytes = 0.0
    other_params = _models.total_params(m) - _models.block_linear_params(m)
    for lin in _models.linear_shapes(m):
        if lin.role in keep:
            other_params += lin.params
            continue
        groups = lin.out_features * math.ceil(lin.in_features / g) * lin.count
        quant_bytes += lin.params * q / 8 + groups * s
    return float(quant_bytes + other_params * bf16)


# --------------------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------------------

@twin(2 * L * H_kv * d_head * b_KV,
      domains={"n_layers": (1, 128, "int"), "n_kv_heads": (1, 128, "int"), "head_dim": (1, 512, "int")},
      n_layers=L, n_kv_heads=H_kv, head_dim=d_head, bytes_per_element=b_KV)
def kv_bytes_per_token_formula(n_layers, n_kv_heads, head_dim, bytes_per_element):
    """KV bytes one token adds with MHA/GQA: ``2 * L * H_kv * d_head * b_KV`` (K and V, every layer).

    Full multi-head attention at d = 8192 (64 heads of 128, 80 layers, BF16)
    gives 2,621,440 B; the 8-KV-head GQA of Llama-3-70B gives 327,680 B.
    """
    layers = _check.positive("n_layers", n_layers)
    heads = _check.positive("n_kv_heads", n_kv_heads)
    width = _check.positive("head_dim", head_dim)
    b = _check.positive("bytes_per_element", bytes_per_element)
    return 2 * layers * heads * width * b


@twin((_r_kv + _d_rope) * L * b_KV,
      domains={"n_layers": (1, 128, "int"), "kv_lora_rank": (1, 1024, "int"), "qk_rope_head_dim": (1, 128, "int")},
      n_layers=L, kv_lora_rank=_r_kv, qk_rope_head_dim=_d_rope, bytes_per_element=b_KV)
def mla_kv_bytes_per_token_formula(n_layers, kv_lora_rank, qk_rope_head_dim, bytes_per_element):
    """KV bytes one token adds with MLA: ``(r_kv + d_rope) * L * b_KV``.

    Multi-head latent attention caches one compressed latent of width
    ``kv_lora_rank`` and one shared RoPE key of width ``qk_rope_head_dim``
    per layer, instead of per-head keys and values. DeepSeek-V3 in BF16:
    (512 + 64) * 61 * 2 = 70,272 B.
    """
    layers = _check.positive("n_layers", n_layers)
    r = _check.positive("kv_lora_rank", kv_lora_rank)
    rope = _check.positive("qk_rope_head_dim", qk_rope_head_dim)
    b = _check.positive("bytes_per_element", bytes_per_element)
    return (r + rope) * layers * b


@twin(2 * L * H_kv * d_head * n_ctx * b_KV,
      n_layers=L, n_kv_heads=H_kv, head_dim=d_head, context_tokens=n_ctx, bytes_per_element=b_KV)
def kv_bytes_for_context_formula(n_layers, n_kv_heads, head_dim, context_tokens, bytes_per_element):
    """KV bytes of one request holding ``n_ctx`` tokens, full attention: ``2 L H_kv d_head n_ctx b_KV``."""
    ctx = _check.non_negative("context_tokens", context_tokens)
    return kv_bytes_per_token_formula(n_layers, n_kv_heads, head_dim, bytes_per_element) * ctx


def _per_layer_token_bytes(m: _models.ModelConfig, b):
    """KV bytes one token adds in one layer."""
    if m.attention_kind == "mla":
        return mla_kv_bytes_per_token_formula(1, m.kv_lora_rank, m.qk_rope_head_dim, b)
    return kv_bytes_per_token_formula(1, m.n_kv_heads, m.head_dim, b)


def kv_bytes_per_token(m, bytes_per_element=2):
    """KV-cache bytes one more cached token costs, summed over all layers.

    MHA/GQA: ``2 * L * n_kv_heads * head_dim * b``; MLA: the compressed
    latent, ``(kv_lora_rank + qk_rope_head_dim) * L * b``. Sliding-window
    layers are included (a token costs the same there until the window is
    full; :func:`kv_bytes_per_request` applies the cap). ``bytes_per_element``
    may be an array (2 for BF16, 1 for an FP8 cache).

    Qwen3-8B in BF16: 147,456 B (144 KiB).
    """
    m = _models._as_model(m)
    b = _check.positive("bytes_per_element", bytes_per_element)
    return _per_layer_token_bytes(m, b) * m.n_layers


def kv_bytes_per_request(m, context_tokens, bytes_per_element=2):
    """KV-cache bytes of one request holding ``context_tokens`` tokens.

    Full-attention layers keep every token; sliding-window layers keep at
    most ``sliding_window`` of them. ``context_tokens`` and
    ``bytes_per_element`` may be arrays (they broadcast).

    Qwen3-8B at 2,048 tokens: 288 MiB. DeepSeek-R1-Distill-Llama-70B at
    8,192 tokens: 2.5 GiB.
    """
    m = _models._as_model(m)
    ctx = _check.non_negative("context_tokens", context_tokens)
    b = _check.positive("bytes_per_element", bytes_per_element)
    per_layer = _per_layer_token_bytes(m, b)
    n_window = len(m.sliding_window_layers)
    n_full = m.n_layers - n_window
    tokens = n_full * np.asarray(ctx, dtype=float)
    if n_window:
        tokens = tokens + n_window * np.minimum(ctx, m.sliding_window)
    out = per_layer * tokens
    return float(out) if np.ndim(out) == 0 else out


# --------------------------------------------------------------------------------------
# Does it fit?
# --------------------------------------------------------------------------------------

@twin(M_cap - (_M_W + _M_S + _M_ws),
      weights_bytes=_M_W, state_bytes=_M_S, workspace_bytes=_M_ws, capacity_bytes=M_cap)
def free_bytes(weights_bytes, state_bytes, workspace_bytes, capacity_bytes):
    """Capacity left after weights, state (KV) and workspace: ``M_cap - (M_W + M_S + M_ws)``.

    Negative means the shortfall. One H100 (80 GB) holding the 73.73 GB
    8-bit 70B model alone leaves 6.27 GB. Accepts arrays.
    """
    w = _check.non_negative("weights_bytes", weights_bytes)
    s = _check.non_negative("state_bytes", state_bytes)
    ws = _check.non_negative("workspace_bytes", workspace_bytes)
    cap = _check.positive("capacity_bytes", capacity_bytes)
    return cap - (w + s + ws)


def fits(weights_bytes, state_bytes, workspace_bytes, capacity_bytes):
    """True when weights + state + workspace <= capacity (elementwise for arrays).

    73.73 GB + 2.68 GB + 2.15 GB = 78.56 GB fits in one 80 GB H100.
    """
    left = free_bytes(weights_bytes, state_bytes, workspace_bytes, capacity_bytes)
    return bool(left >= 0) if np.ndim(left) == 0 else np.asarray(left) >= 0


@twin(M / n_gpu, domains={"n_cards": (1, 64, "int")}, total_bytes=M, n_cards=n_gpu)
def split_even(total_bytes, n_cards):
    """Bytes per card when ``total_bytes`` is split evenly over ``n_cards``: ``M / n_G``.

    The 141.11 GB BF16 70B model on two cards: 70.55 GB each.
    """
    total = _check.non_negative("total_bytes", total_bytes)
    n = _check.integer("n_cards", n_cards, minimum=1)
    return total / n


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
    """
    total = _check.non_negative("total_bytes", total_bytes)
    if isinstance(capacities_bytes, (str, bytes)) or np.ndim(capacities_bytes) != 1 or len(capacities_bytes) == 0:
        raise ValueError(f"capacities_bytes must be a non-empty list of numbers, got {capacities_bytes!r}")
    caps = np.asarray(_check.positive("capacities_bytes", capacities_bytes), dtype=float)
    reserve = _check.non_negative("reserve_bytes_per_card", reserve_bytes_per_card)
    usable = caps - reserve
    if np.any(usable <= 0):
        raise ValueError(
            f"reserve_bytes_per_card must be < every capacity (min {caps.min()!r}), got {reserve_bytes_per_card!r}"
        )
    shares = total * usable / usable.sum()
    left = usable - shares
    return CapacitySplit(
        shares_bytes=tuple(float(x) for x in shares),
        free_bytes=tuple(float(x) for x in left),
        fits_each=tuple(bool(x >= 0) for x in left),
    )


@twin(sp.ceiling(M / (M_cap - _M_res)),
      domains={"capacity_bytes_per_card": (500.0, 1000.0, "float"),
               "reserve_bytes_per_card": (0.5, 400.0, "float"),
               "total_bytes": (0.5, 1e5, "float")},
      total_bytes=M, capacity_bytes_per_card=M_cap, reserve_bytes_per_card=_M_res)
def min_cards(total_bytes, capacity_bytes_per_card, reserve_bytes_per_card=0) -> int:
    """Fewest cards that hold ``total_bytes``: ``ceil(M / (M_cap - M_res))``.

    Ignores that a split must fall on layer or tensor boundaries. The
    73.73 GB 8-bit 70B model needs 4 RTX 4090s (24 GB each).
    """
    total = _check.non_negative("total_bytes", total_bytes)
    cap = _check.positive("capacity_bytes_per_card", capacity_bytes_per_card)
    reserve = _check.non_negative("reserve_bytes_per_card", reserve_bytes_per_card)
    if reserve >= cap:
        raise ValueError(
            f"reserve_bytes_per_card must be < capacity_bytes_per_card ({cap!r}), got {reserve_bytes_per_card!r}"
        )
    return math.ceil(total / (cap - reserve))


__all__ = [
    "weight_bytes_formula", "weight_bytes", "grouped_quant_bytes_formula", "grouped_quant_weight_bytes",
    "kv_bytes_per_token_formula", "mla_kv_bytes_per_token_formula", "kv_bytes_for_context_formula",
    "kv_bytes_per_token", "kv_bytes_per_request", "free_bytes", "fits", "split_even", "CapacitySplit",
    "split_by_capacity", "min_cards",
]
