"""The inventory records: a stored tensor, one layer's token mixer, and the counted model.

Conventions (chapters 1, 3, 4 and 5):

* **Total** counts every stored parameter once: a tied LM head is not stored
  again. Multi-token-prediction layers (DeepSeek-V3, GLM, MiniMax) and
  non-parameter buffers (GPT-2's causal masks) are not counted; persistent
  buffers that a checkpoint stores (DeepSeek-V3's score-correction bias) are.
* **Active** is total minus the routed experts a token does not use: the
  embedding table counts (see :func:`aiinfra.catalog.models.active_params`).
* Shapes are as stored: ``(out, in)`` for ``nn.Linear``, ``(in, out)`` for
  GPT-2's ``Conv1D``, ``(experts, in, out)`` for gpt-oss's fused experts
  (:attr:`Tensor.layout` says which).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from dataclasses import dataclass, field
from math import prod

#: Token mixers that keep a fixed-size state per request instead of a KV cache.
STATE_KINDS: tuple[str, ...] = ("linear", "mamba", "none")
#: Every kind of layer a :class:`LayerAttention` may be (``"none"``: a block without a token mixer).
LAYER_KINDS: tuple[str, ...] = ("full", "sliding", "chunked") + STATE_KINDS

#: Tensor groups. Routed-expert groups are the ones "active" scales by ``k / E``.
GROUPS: tuple[str, ...] = (
    "embedding",
    "position_embedding",
    "lm_head",
    "attention",
    "attention_bias",
    "attention_sink",
    "qk_norm",
    "mlp",
    "mlp_bias",
    "expert",
    "expert_bias",
    "shared_expert",
    "router",
    "router_bias",
    "norm",
    "ssm",
)
ROUTED_GROUPS: tuple[str, ...] = ("expert", "expert_bias")
#: Groups holding the matrices inside the blocks (the matmuls a token runs; biases and norms apart).
MATMUL_GROUPS: tuple[str, ...] = ("attention", "mlp", "expert", "shared_expert", "router")
#: How a matrix is stored: ``nn.Linear`` (out, in), GPT-2's ``Conv1D`` (in, out), fused experts (E, in, out)
#: (gpt-oss) or (E, out, in) (Gemma 4).
LAYOUTS: tuple[str, ...] = ("out_in", "in_out", "experts_in_out", "experts_out_in")


# --------------------------------------------------------------------------------------
# The inventory
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tensor:
    """One stored tensor, repeated over ``layers`` (if any) and ``experts`` (if the name has ``{expert}``)."""

    name: str
    group: str
    shape: tuple[int, ...]
    layers: tuple[int, ...] = ()
    experts: int = 0
    layout: str = "out_in"

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def count(self) -> int:
        return max(1, len(self.layers)) * max(1, self.experts)

    @property
    def params(self) -> int:
        return self.numel * self.count

    @property
    def matrix(self) -> tuple[int, int, int]:
        """``(copies, out_features, in_features)`` of a matmul weight, whatever its stored layout."""
        if self.layout == "in_out":
            n_in, n_out = self.shape
            return self.count, n_out, n_in
        if self.layout == "experts_in_out":
            experts, n_in, n_out = self.shape
            return self.count * experts, n_out, n_in
        if self.layout == "experts_out_in":
            experts, n_out, n_in = self.shape
            return self.count * experts, n_out, n_in
        n_out, n_in = self.shape
        return self.count, n_out, n_in

    def names(self) -> Iterator[str]:
        """Every checkpoint name this row stands for."""
        for layer in self.layers or (None,):
            for expert in range(self.experts) if self.experts else (None,):
                yield self.name.format(layer=layer, expert=expert)


@dataclass(frozen=True)
class LayerAttention:
    """One layer's token mixer as the cache and the FLOPs see it.

    ``kind`` is ``"full"``, ``"sliding"`` (at most ``window`` past tokens),
    ``"chunked"`` (Llama 4: at most ``window`` tokens, the current chunk),
    ``"linear"`` (Gated DeltaNet), ``"mamba"`` (Mamba-2) or ``"none"`` (a
    Nemotron-H MLP block); the last three cache no tokens, and the state
    mixers keep ``conv_state_elements`` plus ``recurrent_state_elements`` per
    request whatever the context. ``kv_elements_per_token`` is what one cached token costs
    (a sparse-attention indexer's key included);
    ``qk_width`` and ``v_width`` are the query/key and value channels of all
    heads (``heads * head_dim``; MLA: ``heads * (nope + rope)`` and
    ``heads * v_head_dim``), the widths of the score and value products.
    """

    index: int
    kind: str
    window: int | None
    kv_elements_per_token: int
    qk_width: int
    v_width: int
    conv_state_elements: int = 0
    recurrent_state_elements: int = 0

    @property
    def caches_tokens(self) -> bool:
        """True for attention layers (their cache grows with the context), False for fixed-state mixers."""
        return self.kind not in STATE_KINDS


@dataclass(frozen=True)
class ModelConfig:
    """A model as counted from its config: shape, per-layer attention, tensor inventory, provenance.

    Attention: ``n_heads`` query heads of width ``head_dim`` and
    ``n_kv_heads`` key/value heads (equal: MHA; fewer: GQA). When
    ``kv_lora_rank`` is set the layers use multi-head latent attention (MLA,
    DeepSeek-V2/V3): queries through ``q_lora_rank`` (None: a direct
    projection), keys and values rebuilt from a ``kv_lora_rank`` latent, each
    head ``qk_nope_head_dim + qk_rope_head_dim`` query/key channels (that sum
    is ``head_dim``) and ``v_head_dim`` value channels.

    ``full_kv_elements_per_token`` is set when the full-attention layers have
    heads of their own (Gemma 4: ``num_global_key_value_heads`` heads of
    ``global_head_dim``): what one token costs in those layers, while
    ``n_kv_heads`` and ``head_dim`` describe the other layers.

    Mixture of experts: the layers in ``moe_layers`` hold ``n_routed_experts``
    experts of width ``moe_intermediate_size``, ``n_experts_per_token`` of
    which run per token, plus ``n_shared_experts`` always-on ones.

    ``exact`` is False only for the ``approximate=True`` estimate, whose
    ``assumptions`` say what was guessed. ``defaults_used`` names the config
    fields that were absent and took the ``transformers`` class default.
    Build one with :func:`aiinfra.catalog.models.load`; a changed copy goes
    through :func:`dataclasses.replace`, which re-checks that the shape and
    the per-layer attention agree.
    """

    name: str
    model_type: str
    exact: bool
    tensors: tuple[Tensor, ...]
    attention: tuple[LayerAttention, ...]
    hidden_size: int
    vocab_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    intermediate_size: int = 0
    tie_word_embeddings: bool = False
    n_routed_experts: int = 0
    n_experts_per_token: int = 0
    n_shared_experts: int = 0
    moe_intermediate_size: int = 0
    moe_layers: tuple[int, ...] = ()
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    max_position_embeddings: int | None = None
    torch_dtype: str | None = None
    quant_method: str | None = None
    wrapper_model_type: str | None = None
    n_mtp_layers: int = 0
    index_head_dim: int = 0
    full_kv_elements_per_token: int | None = None
    notes: tuple[str, ...] = ()
    assumptions: tuple[str, ...] = ()
    defaults_used: tuple[str, ...] = ()
    source: str = field(default="", compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        for f in ("hidden_size", "vocab_size", "n_heads", "n_kv_heads", "head_dim"):
            _whole(f, getattr(self, f), 1)
        for f in (
            "intermediate_size",
            "n_routed_experts",
            "n_experts_per_token",
            "n_shared_experts",
            "moe_intermediate_size",
            "n_mtp_layers",
        ):
            _whole(f, getattr(self, f), 0)
        if not self.attention or [a.index for a in self.attention] != list(range(len(self.attention))):
            raise ValueError("attention must list layers 0, 1, ... in order")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads, got {self.n_kv_heads}"
            )
        if not (1 if self.n_routed_experts else 0) <= self.n_experts_per_token <= self.n_routed_experts:
            raise ValueError(
                f"n_experts_per_token must lie in [1, n_routed_experts={self.n_routed_experts}] "
                f"(0 without experts), got {self.n_experts_per_token}"
            )
        if any(not 0 <= i < self.n_layers for i in self.moe_layers) or (
            self.moe_layers and not self.n_routed_experts
        ):
            raise ValueError(
                f"moe_layers must be layers in [0, {self.n_layers - 1}] of a model with experts, "
                f"got {self.moe_layers}"
            )
        per_token = (
            2 * self.n_kv_heads * self.head_dim
            if self.kv_lora_rank is None
            else self.kv_lora_rank + (self.qk_rope_head_dim or 0)
        )
        allowed = {per_token, per_token + self.index_head_dim}
        full = allowed if self.full_kv_elements_per_token is None else {self.full_kv_elements_per_token}
        if any(
            a.kv_elements_per_token not in (full if a.kind == "full" else allowed)
            for a in self.attention
            if a.caches_tokens
        ):
            raise ValueError(
                f"every attention layer must cache {per_token} elements per token (n_kv_heads x head_dim, or "
                f"the MLA latent; plus index_head_dim in indexer layers; full_kv_elements_per_token in full "
                f"layers when set); change heads with aiinfra.catalog.models.load on an edited config"
            )
        if any(a.kind not in LAYER_KINDS for a in self.attention):
            raise ValueError(f"every layer kind must be one of {LAYER_KINDS}")

    @property
    def n_layers(self) -> int:
        return len(self.attention)

    @property
    def label(self) -> str:
        """``"exact"`` or ``"approximate"``, for tables and JSON."""
        return "exact" if self.exact else "approximate"

    @property
    def attention_kind(self) -> str:
        """``"mla"``, ``"mha"`` (one KV head per query head) or ``"gqa"``."""
        if self.kv_lora_rank is not None:
            return "mla"
        return "mha" if self.n_kv_heads == self.n_heads else "gqa"

    @property
    def is_moe(self) -> bool:
        return self.n_routed_experts > 0

    @property
    def dense_layers(self) -> tuple[int, ...]:
        """Indices of the layers with a dense MLP (no experts)."""
        moe = set(self.moe_layers)
        return tuple(i for i in range(self.n_layers) if i not in moe)

    @property
    def sliding_window_layers(self) -> tuple[int, ...]:
        """Indices of the layers that attend to (and cache) a window or chunk of past tokens."""
        return tuple(a.index for a in self.attention if a.kind in ("sliding", "chunked"))

    @property
    def sliding_window(self) -> int | None:
        """The window of the sliding layers (None when every layer attends to the whole context)."""
        windows = {
            a.window for a in self.attention if a.kind in ("sliding", "chunked") and a.window is not None
        }
        return max(windows) if windows else None

    def layer_summary(self) -> str:
        """The layers by kind, e.g. ``"12 full + 36 linear"`` or ``"8 full + 24 sliding (512)"``."""
        parts = []
        for kind in LAYER_KINDS:
            layers = [a for a in self.attention if a.kind == kind]
            if layers:
                windows = sorted({a.window for a in layers if a.window is not None})
                label = "without a mixer" if kind == "none" else kind
                parts.append(
                    f"{len(layers)} {label}"
                    + (f" ({', '.join(f'{w:,}' for w in windows)})" if windows else "")
                )
        return " + ".join(parts)

    @property
    def state_layers(self) -> tuple[int, ...]:
        """Indices of the layers that cache no tokens: linear attention and Mamba (a fixed state), Nemotron-H's
        MLP blocks (nothing)."""
        return tuple(a.index for a in self.attention if not a.caches_tokens)


class _BadValue(ValueError):
    """A config field holds a value no model can have (not merely an unsupported family)."""


def _whole(key: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise _BadValue(f"config field {key!r} must be a whole number >= {minimum}, got {value!r}")
    return int(value)
