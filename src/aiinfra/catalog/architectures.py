"""How a Hugging Face ``config.json`` becomes a model: the exact inventory of every stored tensor.

:func:`_from_config` reads a config (a dict, or a path to the file or its
folder) and builds a :class:`ModelConfig`: the model's shape (layers, heads,
experts, latent ranks), its per-layer attention (full or sliding, what one
cached token costs) and the list of every tensor its checkpoint stores, with
name (``{layer}`` and ``{expert}`` placeholders), group, shape and copies.
Every count in :mod:`aiinfra.catalog.models` is a sum over that list, so it is
exact for each family in :data:`EXACT_FAMILIES`; :mod:`aiinfra.catalog.checkpoint`
compares the same list with a downloaded model's safetensors files.

Conventions (chapters 1, 3, 4 and 5):

* **Total** counts every stored parameter once: a tied LM head is not stored
  again. Multi-token-prediction layers (DeepSeek-V3) and non-parameter
  buffers (GPT-2's causal masks) are not counted.
* **Active** is total minus the routed experts a token does not use.
* Shapes are as stored: ``(out, in)`` for ``nn.Linear``, ``(in, out)`` for
  GPT-2's ``Conv1D``, ``(experts, in, out)`` for gpt-oss's fused experts
  (:attr:`Tensor.layout` says which).
* A multimodal wrapper (a config with ``text_config``) is counted as its
  language model only, and says so in :attr:`ModelConfig.notes`.

Attention: each layer keeps ``kv_elements_per_token`` cached elements per
token (``2 * n_kv_heads * head_dim``; MLA keeps ``kv_lora_rank +
qk_rope_head_dim``), and a sliding-window layer keeps at most ``window``
tokens (:func:`aiinfra.memory.kv_bytes_per_request`).

Any other ``model_type`` raises ``ValueError`` unless ``approximate=True``:
then a Llama-shaped estimate is returned with ``exact=False`` and its
assumptions listed in :attr:`ModelConfig.assumptions`.
"""

from __future__ import annotations

import builtins
import json
import numbers
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from math import prod
from pathlib import Path
from typing import Any

#: ``model_type`` values counted exactly (multimodal wrappers count their ``text_config``).
EXACT_FAMILIES: tuple[str, ...] = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen3",
    "qwen3_moe",
    "deepseek_v2",
    "deepseek_v3",
    "gpt2",
    "gpt_neox",
    "phi3",
    "gemma",
    "gemma2",
    "gemma3_text",
    "gpt_oss",
    "olmo2",
    "granite",
    "starcoder2",
)

#: What makes each family's count differ from the Llama block (the book's "count your own model" page).
FAMILY_NOTES: dict[str, str] = {
    "llama": "the reference block: q/k/v/o projections, a gated MLP, two RMSNorms a layer; optional biases",
    "mistral": "the Llama block; a non-null sliding_window windows every layer",
    "mixtral": "Mistral attention; every layer holds 8 gated experts (w1, w3, w2) and a linear router",
    "qwen2": "biases on q, k and v but never on o; windows only when use_sliding_window is set",
    "qwen3": "an RMSNorm of head_dim on queries and one on keys, in every layer",
    "qwen3_moe": "Qwen3 attention; expert layers chosen by decoder_sparse_step and mlp_only_layers",
    "deepseek_v2": "latent attention (MLA), with or without a query down-projection; shared and routed experts "
    "after first_k_dense_replace dense layers",
    "deepseek_v3": "the DeepSeek-V2 layout plus a score-correction bias per expert; the stored MTP layer is "
    "not counted",
    "gpt2": "a learned position table, biases everywhere, LayerNorms with bias, Conv1D weights stored (in, out), "
    "a tied head",
    "gpt_neox": "one fused, biased QKV matrix, LayerNorms with bias, an untied embed_out; partial rotary adds nothing",
    "phi3": "fused qkv_proj and gate_up_proj matrices",
    "gemma": "head_dim set apart from the hidden size, a tied head",
    "gemma2": "four RMSNorms a layer; sliding and global layers alternate",
    "gemma3_text": "Gemma 2's norms plus q/k norms; one global layer in every sliding_window_pattern",
    "gpt_oss": "biased attention with a learned sink per head, fused biased experts stored (E, in, out), a biased "
    "router; a 128-token window on every other layer",
    "olmo2": "norms after attention and after the MLP, q/k norms as wide as the whole projection",
    "granite": "the Llama block; its four multipliers scale activations and hold no weights",
    "starcoder2": "biased projections, a plain two-matrix MLP (c_fc, c_proj), LayerNorms with bias",
}

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
)
ROUTED_GROUPS: tuple[str, ...] = ("expert", "expert_bias")
#: Groups holding the matrices inside the blocks (the matmuls a token runs; biases and norms apart).
MATMUL_GROUPS: tuple[str, ...] = ("attention", "mlp", "expert", "shared_expert", "router")
#: How a matrix is stored: ``nn.Linear`` (out, in), GPT-2's ``Conv1D`` (in, out), fused experts (E, in, out).
LAYOUTS: tuple[str, ...] = ("out_in", "in_out", "experts_in_out")


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
        n_out, n_in = self.shape
        return self.count, n_out, n_in

    def names(self) -> Iterator[str]:
        """Every checkpoint name this row stands for."""
        for layer in self.layers or (None,):
            for expert in range(self.experts) if self.experts else (None,):
                yield self.name.format(layer=layer, expert=expert)


@dataclass(frozen=True)
class LayerAttention:
    """One layer's attention as the KV cache and the FLOPs see it.

    ``kind`` is ``"full"`` or ``"sliding"`` (then at most ``window`` past
    tokens); ``kv_elements_per_token`` is what one cached token costs;
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
        if any(a.kv_elements_per_token != per_token for a in self.attention):
            raise ValueError(
                f"every layer must cache {per_token} elements per token (n_kv_heads x head_dim, or "
                f"the MLA latent); change heads with aiinfra.catalog.models.load on an edited config"
            )

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
        """Indices of the layers that attend to (and cache) a window of past tokens."""
        return tuple(a.index for a in self.attention if a.kind == "sliding")

    @property
    def sliding_window(self) -> int | None:
        """The window of the sliding layers (None when every layer attends to the whole context)."""
        windows = {a.window for a in self.attention if a.kind == "sliding" and a.window is not None}
        return max(windows) if windows else None


# --------------------------------------------------------------------------------------
# Reading a config
# --------------------------------------------------------------------------------------


def _read_config(source) -> dict:
    """The dict of a ``config.json``: from a dict, a path to the file, or a model folder holding one."""
    if isinstance(source, Mapping):
        return dict(source)
    if not isinstance(source, (str, Path)):
        raise ValueError(f"source must be a dict or a path to config.json, got {type(source).__name__}")
    path = Path(source).expanduser()
    if path.is_dir():
        path = path / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"config path {str(path)!r} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"config path {str(path)!r} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"config path {str(path)!r} must hold a JSON object, got {type(data).__name__}")
    return data


def _from_config(
    config, *, approximate: bool = False, name: str | None = None, source: str = ""
) -> ModelConfig:
    """Count the model a ``config.json`` describes (see :func:`aiinfra.catalog.models.load`).

    ``config`` is a dict, a path to ``config.json`` or a model folder. Exact
    for :data:`EXACT_FAMILIES`; any other ``model_type`` (or a field that
    changes the count and that its family does not have) raises
    ``ValueError`` unless ``approximate=True``, which returns a labelled
    estimate (``exact=False``) with its assumptions listed.
    """
    if not isinstance(approximate, bool):
        raise ValueError(f"approximate must be True or False, got {approximate!r}")
    cfg = _read_config(config)
    label = name or cfg.get("_name_or_path") or _path_label(config)
    wrapper = None
    if isinstance(cfg.get("text_config"), Mapping):
        wrapper = cfg.get("model_type")
        cfg = _unwrap(cfg)
    model_type = cfg.get("model_type")
    label = str(label or model_type)
    try:
        if model_type not in _BUILDERS:
            raise ValueError(
                f"cannot count model_type {model_type!r} exactly; exact families are {list(EXACT_FAMILIES)} "
                f"(pass approximate=True, or --approximate, for a labelled estimate)"
            )
        model = _build_exact(cfg, model_type, label)
    except ValueError as exc:
        if not approximate or isinstance(exc, _BadValue):
            raise
        model = _approximate(cfg, label, reason=str(exc).split(" (pass approximate=True")[0])
    if wrapper is not None:
        note = (
            f"multimodal wrapper {wrapper!r}: counts the language model (text_config, "
            f"model_type {model_type!r}) only; the vision tower and projector are not included"
        )
        model = replace(model, wrapper_model_type=str(wrapper), notes=model.notes + (note,))
    return replace(model, source=source) if source else model


def _path_label(config) -> str | None:
    """A model's name from its path: the folder of a ``config.json``, else the file's stem."""
    if not isinstance(config, (str, Path)):
        return None
    path = Path(config).expanduser()
    if path.is_dir() or path.name == "config.json":
        return (path if path.is_dir() else path.parent).resolve().name
    return path.stem


class _BadValue(ValueError):
    """A config field holds a value no model can have (not merely an unsupported family)."""


#: What the text model of a wrapper is, when its ``text_config`` does not say.
_WRAPPED_TEXT_TYPES = {"gemma3": "gemma3_text", "llava": "llama", "mistral3": "mistral"}


def _unwrap(cfg: Mapping[str, Any]) -> dict:
    text = dict(cfg["text_config"])
    if not text.get("model_type"):
        wrapped = _WRAPPED_TEXT_TYPES.get(cfg.get("model_type") or "")
        if wrapped is None:
            raise ValueError(
                f"text_config of model_type {cfg.get('model_type')!r} does not name its model_type"
            )
        text["model_type"] = wrapped
    for key in ("torch_dtype", "dtype", "quantization_config"):
        if key in cfg and key not in text:
            text[key] = cfg[key]
    return text


# --------------------------------------------------------------------------------------
# Field access with transformers' class defaults
# --------------------------------------------------------------------------------------


class _Fields:
    """Reads config fields; a missing one takes the family default (recorded) or raises."""

    def __init__(self, cfg: Mapping[str, Any], defaults: Mapping[str, Any]):
        self.cfg, self.defaults = cfg, defaults
        self.used: list = []
        self.model_type = cfg.get("model_type")

    def _raw(self, key: str):
        value = self.cfg.get(key)
        if value is None and key in self.defaults:
            value = self.defaults[key]
            if value is not None:
                self.used.append(f"{key}={value!r}")
        return value

    def int(self, key: str, minimum: int = 1, default=None) -> int:
        value = self._raw(key)
        if value is None:
            if default is None:
                raise ValueError(f"config field {key!r} is required for model_type {self.model_type!r}")
            value = default
        return _whole(key, value, minimum)

    def opt_int(self, key: str, minimum: builtins.int = 1) -> builtins.int | None:
        value = self._raw(key)
        return None if value is None else _whole(key, value, minimum)

    def bool(self, key: str, default: bool) -> bool:
        value = self._raw(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise _BadValue(f"config field {key!r} must be true or false, got {value!r}")
        return value


def _whole(key: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise _BadValue(f"config field {key!r} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


# Fields that add tensors; a family that does not have them refuses a config that sets them.
_FOREIGN = {
    "num_local_experts": "experts",
    "num_experts": "experts",
    "n_routed_experts": "experts",
    "n_shared_experts": "shared experts",
    "shared_expert_intermediate_size": "shared experts",
    "kv_lora_rank": "latent attention",
    "q_lora_rank": "latent attention",
}
_ALLOWED_FOREIGN = {
    "mixtral": {"num_local_experts"},
    "qwen3_moe": {"num_experts"},
    "gpt_oss": {"num_local_experts"},
    "deepseek_v2": {"n_routed_experts", "n_shared_experts", "kv_lora_rank", "q_lora_rank"},
    "deepseek_v3": {"n_routed_experts", "n_shared_experts", "kv_lora_rank", "q_lora_rank"},
}

# transformers' configuration-class defaults for fields a released config may leave out.
_NO_TIE = {"tie_word_embeddings": False}
_TIE = {"tie_word_embeddings": True}
_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": dict(
        vocab_size=262_208,
        hidden_size=2304,
        intermediate_size=9216,
        num_hidden_layers=26,
        num_attention_heads=8,
        num_key_value_heads=4,
        head_dim=256,
        max_position_embeddings=131_072,
        sliding_window=4096,
        sliding_window_pattern=6,
        **_TIE,
    ),
    "gemma": dict(head_dim=256, **_TIE),
    "gemma2": dict(head_dim=256, sliding_window=4096, **_TIE),
    "gpt2": dict(n_positions=1024, **_TIE),
    "starcoder2": dict(use_bias=True, **_TIE),
    "gpt_neox": dict(attention_bias=True, **_NO_TIE),
    "gpt_oss": dict(head_dim=64, sliding_window=128, **_NO_TIE),
}


def _build_exact(cfg: Mapping[str, Any], model_type: str, label: str) -> ModelConfig:
    allowed = _ALLOWED_FOREIGN.get(model_type, set())
    for key, what in _FOREIGN.items():
        if key not in allowed and cfg.get(key):
            raise ValueError(f"cannot count model_type {model_type!r} exactly: field {key!r} ({what}) is set")
    if cfg.get("pretraining_tp", 1) not in (1, None):
        raise ValueError(f"cannot count model_type {model_type!r} exactly: pretraining_tp != 1")
    f = _Fields(cfg, _DEFAULTS.get(model_type, _NO_TIE))
    spec = _BUILDERS[model_type](f)
    spec["tensors"] = _drop_empty(spec["tensors"])
    quant = cfg.get("quantization_config")
    return ModelConfig(
        name=label,
        model_type=model_type,
        exact=True,
        defaults_used=tuple(f.used),
        torch_dtype=cfg.get("torch_dtype") or cfg.get("dtype"),
        quant_method=quant.get("quant_method") if isinstance(quant, Mapping) else None,
        **spec,
    )


# --------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------


def _drop_empty(rows) -> tuple[Tensor, ...]:
    """Per-layer rows that apply to no layer (a model with no dense or no MoE layer) hold nothing."""
    return tuple(r for r in rows if r.layers or "{layer}" not in r.name)


def _t(name, group, shape, layers=(), experts=0, layout="out_in") -> Tensor:
    return Tensor(name, group, tuple(int(s) for s in shape), tuple(layers), experts, layout)


def _token_embeddings(vocab: int, hidden: int, tied: bool, embed: str, head: str = "lm_head.weight"):
    out = [_t(embed, "embedding", (vocab, hidden))]
    if not tied:
        out.append(_t(head, "lm_head", (vocab, hidden)))
    return out


def _norms(prefix: str, names, width: int, layers, bias: bool = False, group: str = "norm"):
    out = []
    for n in names:
        out.append(_t(f"{prefix}{n}.weight", group, (width,), layers))
        if bias:
            out.append(_t(f"{prefix}{n}.bias", group, (width,), layers))
    return out


def _linear(name: str, group: str, out_f: int, in_f: int, layers, bias: bool, bias_group: str):
    rows = [_t(f"{name}.weight", group, (out_f, in_f), layers)]
    if bias:
        rows.append(_t(f"{name}.bias", bias_group, (out_f,), layers))
    return rows


def _gqa(
    prefix: str,
    layers,
    hidden: int,
    heads: int,
    kv: int,
    head_dim: int,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    fused: bool = False,
):
    q, k = heads * head_dim, kv * head_dim
    p = f"{prefix}self_attn."
    if fused:
        rows = _linear(f"{p}qkv_proj", "attention", q + 2 * k, hidden, layers, qkv_bias, "attention_bias")
    else:
        rows = (
            _linear(f"{p}q_proj", "attention", q, hidden, layers, qkv_bias, "attention_bias")
            + _linear(f"{p}k_proj", "attention", k, hidden, layers, qkv_bias, "attention_bias")
            + _linear(f"{p}v_proj", "attention", k, hidden, layers, qkv_bias, "attention_bias")
        )
    return rows + _linear(f"{p}o_proj", "attention", hidden, q, layers, o_bias, "attention_bias")


def _gated_mlp(
    prefix: str,
    layers,
    hidden: int,
    width: int,
    *,
    bias: bool = False,
    fused: bool = False,
    group: str = "mlp",
    names=("gate_proj", "up_proj", "down_proj"),
    experts: int = 0,
):
    bias_group = "expert_bias" if group == "expert" else "mlp_bias"
    if fused:
        return _linear(f"{prefix}gate_up_proj", group, 2 * width, hidden, layers, bias, bias_group) + _linear(
            f"{prefix}down_proj", group, hidden, width, layers, bias, bias_group
        )
    gate, up, down = names
    rows = (
        _linear(f"{prefix}{gate}", group, width, hidden, layers, bias, bias_group)
        + _linear(f"{prefix}{up}", group, width, hidden, layers, bias, bias_group)
        + _linear(f"{prefix}{down}", group, hidden, width, layers, bias, bias_group)
    )
    if experts:
        rows = [replace(r, experts=experts) for r in rows]
    return rows


def _head_dim(f: _Fields, hidden: int, heads: int) -> int:
    explicit = f.opt_int("head_dim")
    if explicit is not None:
        return explicit
    if hidden % heads:
        raise _BadValue(
            f"config field 'hidden_size' ({hidden}) must be a multiple of "
            f"num_attention_heads ({heads}) when head_dim is absent"
        )
    return hidden // heads


def _kv_heads(f: _Fields, heads: int) -> int:
    kv = f.int("num_key_value_heads", default=heads)
    if heads % kv:
        raise _BadValue(
            f"config field 'num_key_value_heads' ({kv}) must divide num_attention_heads ({heads})"
        )
    return kv


def _gqa_dims(f: _Fields, tied_default: bool):
    """``(hidden, n_layers, heads, kv_heads, head_dim, vocab, tied)`` of a GQA decoder's config."""
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    return (
        hidden,
        n_layers,
        heads,
        _kv_heads(f, heads),
        _head_dim(f, hidden, heads),
        f.int("vocab_size"),
        f.bool("tie_word_embeddings", tied_default),
    )


def _heads(kinds, window: int | None, heads: int, kv: int, head_dim: int) -> dict:
    """The per-layer attention and head shape of an MHA/GQA model."""
    width = heads * head_dim
    layers = tuple(
        LayerAttention(i, kind, window if kind == "sliding" else None, 2 * kv * head_dim, width, width)
        for i, kind in enumerate(kinds)
    )
    return dict(attention=layers, n_heads=heads, n_kv_heads=kv, head_dim=head_dim)


def _all(n: int, kind: str = "full") -> list[str]:
    return [kind] * n


def _kinds_from_layer_types(f: _Fields, n_layers: int) -> list[str] | None:
    layer_types = f.cfg.get("layer_types")
    if layer_types is None:
        return None
    if not isinstance(layer_types, list) or len(layer_types) != n_layers:
        raise _BadValue(f"config field 'layer_types' must list {n_layers} entries, got {layer_types!r}")
    unknown = set(layer_types) - {"full_attention", "sliding_attention"}
    if unknown:
        raise ValueError(f"cannot count model_type {f.model_type!r} exactly: layer_types {sorted(unknown)}")
    return ["sliding" if t == "sliding_attention" else "full" for t in layer_types]


def _window(f: _Fields, kinds) -> int | None:
    if "sliding" not in kinds:
        return None
    window = f.opt_int("sliding_window")
    if window is None:
        raise _BadValue("config field 'sliding_window' must be set when layers are sliding, got null")
    return window


def _sliding_everywhere(f: _Fields, n_layers: int) -> list[str]:
    """Mistral, Mixtral, Phi-3 and StarCoder2: a non-null ``sliding_window`` windows every layer."""
    kinds = _kinds_from_layer_types(f, n_layers)
    if kinds is not None:
        return kinds
    return _all(n_layers, "sliding" if f.cfg.get("sliding_window") is not None else "full")


def _qwen_kinds(f: _Fields, n_layers: int) -> list[str]:
    """Qwen2/Qwen3: ``layer_types``, else layers from ``max_window_layers`` on slide if ``use_sliding_window``."""
    kinds = _kinds_from_layer_types(f, n_layers)
    if kinds is not None:
        return kinds
    if f.cfg.get("use_sliding_window") and f.cfg.get("sliding_window") is not None:
        start = f.cfg.get("max_window_layers") or 0
        return ["sliding" if i >= start else "full" for i in range(n_layers)]
    return _all(n_layers)


def _alternating_kinds(f: _Fields, n_layers: int, pattern: int) -> list[str]:
    """Gemma 2 / gpt-oss (pattern 2) and Gemma 3 (pattern 6): layer ``i`` is global when ``(i+1) % pattern == 0``."""
    kinds = _kinds_from_layer_types(f, n_layers)
    if kinds is not None:
        return kinds
    return ["full" if (i + 1) % pattern == 0 else "sliding" for i in range(n_layers)]


def _common(f: _Fields, hidden: int, vocab: int, tied: bool, max_pos_key: str = "max_position_embeddings"):
    return dict(
        hidden_size=hidden,
        vocab_size=vocab,
        tie_word_embeddings=tied,
        max_position_embeddings=f.opt_int(max_pos_key),
    )


def _check_topk(experts: int, k: int):
    if k > experts:
        raise _BadValue(
            f"config field 'num_experts_per_tok' ({k}) must lie in [1, {experts}] (the expert count)"
        )


# --------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------


def _llama_like(
    f: _Fields,
    *,
    qkv_bias=False,
    o_bias=False,
    mlp_bias=False,
    qk_norm: str | None = None,
    norm_names=("input_layernorm", "post_attention_layernorm"),
    kinds_fn=None,
    tied_default=False,
):
    """The Llama block: GQA attention, gated MLP, RMSNorms; options cover Qwen, Gemma, OLMo 2, Granite."""
    hidden, n_layers, heads, kv, head_dim, vocab, tied = _gqa_dims(f, tied_default)
    width = f.int("intermediate_size")
    layers = range(n_layers)
    p = "model.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    rows += _gqa(p, layers, hidden, heads, kv, head_dim, qkv_bias=qkv_bias, o_bias=o_bias)
    if qk_norm == "head":  # one norm of head_dim, shared by every head (Qwen3, Gemma 3)
        rows += _norms(f"{p}self_attn.", ("q_norm", "k_norm"), head_dim, layers, group="qk_norm")
    elif qk_norm == "full":  # OLMo 2 normalises the whole projection
        rows += [
            _t(f"{p}self_attn.q_norm.weight", "qk_norm", (heads * head_dim,), layers),
            _t(f"{p}self_attn.k_norm.weight", "qk_norm", (kv * head_dim,), layers),
        ]
    rows += _gated_mlp(f"{p}mlp.", layers, hidden, width, bias=mlp_bias)
    rows += _norms(p, norm_names, hidden, layers)
    rows += _norms("model.", ("norm",), hidden, ())
    kinds = kinds_fn(f, n_layers) if kinds_fn else (_kinds_from_layer_types(f, n_layers) or _all(n_layers))
    return dict(
        tensors=tuple(rows),
        intermediate_size=width,
        **_heads(kinds, _window(f, kinds), heads, kv, head_dim),
        **_common(f, hidden, vocab, tied),
    )


def _llama(f):
    bias = f.bool("attention_bias", False)
    return _llama_like(f, qkv_bias=bias, o_bias=bias, mlp_bias=f.bool("mlp_bias", False))


def _granite(f):
    # Granite's multipliers (embedding, residual, attention, logits) scale activations; they hold no weights.
    return _llama(f)


def _mistral(f):
    _refuse_bias(f)
    return _llama_like(f, kinds_fn=_sliding_everywhere)


def _refuse_bias(f: _Fields):
    for key in ("attention_bias", "mlp_bias"):
        if f.cfg.get(key):
            raise ValueError(f"cannot count model_type {f.model_type!r} exactly: {key} is set")


def _qwen2(f):
    # Qwen2 always has q/k/v biases and no o_proj bias (modeling_qwen2).
    return _llama_like(f, qkv_bias=True, kinds_fn=_qwen_kinds)


def _qwen3(f):
    bias = f.bool("attention_bias", False)
    return _llama_like(f, qkv_bias=bias, o_bias=bias, qk_norm="head", kinds_fn=_qwen_kinds)


def _olmo2(f):
    bias = f.bool("attention_bias", False)
    return _llama_like(
        f,
        qkv_bias=bias,
        o_bias=bias,
        qk_norm="full",
        norm_names=("post_attention_layernorm", "post_feedforward_layernorm"),
    )


def _gemma(f):
    _refuse_bias(f)
    return _llama_like(f, tied_default=True)


_GEMMA2_NORMS = (
    "input_layernorm",
    "post_attention_layernorm",
    "pre_feedforward_layernorm",
    "post_feedforward_layernorm",
)


def _gemma2(f):
    _refuse_bias(f)
    return _llama_like(
        f, norm_names=_GEMMA2_NORMS, tied_default=True, kinds_fn=lambda f, n: _alternating_kinds(f, n, 2)
    )


def _gemma3_text(f):
    _refuse_bias(f)
    pattern = f.cfg.get("sliding_window_pattern") or f.cfg.get("_sliding_window_pattern")
    pattern = (
        _whole("sliding_window_pattern", pattern, 1)
        if pattern is not None
        else f.int("sliding_window_pattern")
    )
    return _llama_like(
        f,
        norm_names=_GEMMA2_NORMS,
        qk_norm="head",
        tied_default=True,
        kinds_fn=lambda f, n: _alternating_kinds(f, n, pattern),
    )


def _phi3(f):
    hidden, n_layers, heads, kv, head_dim, vocab, tied = _gqa_dims(f, False)
    width = f.int("intermediate_size")
    layers, p = range(n_layers), "model.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    rows += _gqa(p, layers, hidden, heads, kv, head_dim, fused=True)
    rows += _gated_mlp(f"{p}mlp.", layers, hidden, width, fused=True)
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers)
    rows += _norms("model.", ("norm",), hidden, ())
    kinds = _sliding_everywhere(f, n_layers)
    return dict(
        tensors=tuple(rows),
        intermediate_size=width,
        **_heads(kinds, _window(f, kinds), heads, kv, head_dim),
        **_common(f, hidden, vocab, tied),
    )


def _starcoder2(f):
    hidden, n_layers, heads, kv, head_dim, vocab, tied = _gqa_dims(f, True)
    bias = f.bool("use_bias", True)
    layers, p = range(n_layers), "model.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    rows += _gqa(p, layers, hidden, heads, kv, head_dim, qkv_bias=bias, o_bias=bias)
    width = f.int("intermediate_size")
    rows += _linear(f"{p}mlp.c_fc", "mlp", width, hidden, layers, bias, "mlp_bias") + _linear(
        f"{p}mlp.c_proj", "mlp", hidden, width, layers, bias, "mlp_bias"
    )
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers, bias=True)
    rows += _norms("model.", ("norm",), hidden, (), bias=True)
    kinds = _sliding_everywhere(f, n_layers)
    return dict(
        tensors=tuple(rows),
        intermediate_size=width,
        **_heads(kinds, _window(f, kinds), heads, kv, head_dim),
        **_common(f, hidden, vocab, tied),
    )


def _gpt2(f):
    hidden = f.int("n_embd")
    n_layers = f.int("n_layer")
    heads = f.int("n_head")
    if hidden % heads:
        raise _BadValue(f"config field 'n_embd' ({hidden}) must be a multiple of n_head ({heads})")
    inner = f.cfg.get("n_inner")
    inner = 4 * hidden if inner is None else _whole("n_inner", inner, 1)
    vocab = f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", True)
    layers, p = range(n_layers), "transformer.h.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "transformer.wte.weight")
    rows.append(_t("transformer.wpe.weight", "position_embedding", (f.int("n_positions"), hidden)))
    for name, group, (n_in, n_out) in (
        ("attn.c_attn", "attention", (hidden, 3 * hidden)),
        ("attn.c_proj", "attention", (hidden, hidden)),
        ("mlp.c_fc", "mlp", (hidden, inner)),
        ("mlp.c_proj", "mlp", (inner, hidden)),
    ):
        # Conv1D stores its weight as (in, out), the transpose of nn.Linear.
        rows.append(_t(f"{p}{name}.weight", group, (n_in, n_out), layers, layout="in_out"))
        rows.append(_t(f"{p}{name}.bias", f"{group}_bias", (n_out,), layers))
    rows += _norms(p, ("ln_1", "ln_2"), hidden, layers, bias=True)
    rows += _norms("transformer.", ("ln_f",), hidden, (), bias=True)
    return dict(
        tensors=tuple(rows),
        intermediate_size=inner,
        **_heads(_all(n_layers), None, heads, heads, hidden // heads),
        **_common(f, hidden, vocab, tied, max_pos_key="n_positions"),
    )


def _gpt_neox(f):
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    if hidden % heads:
        raise _BadValue(
            f"config field 'hidden_size' ({hidden}) must be a multiple of num_attention_heads ({heads})"
        )
    vocab = f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", False)
    bias = f.bool("attention_bias", True)
    width = f.int("intermediate_size")
    layers, p = range(n_layers), "gpt_neox.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "gpt_neox.embed_in.weight", head="embed_out.weight")
    rows += (
        _linear(
            f"{p}attention.query_key_value", "attention", 3 * hidden, hidden, layers, bias, "attention_bias"
        )
        + _linear(f"{p}attention.dense", "attention", hidden, hidden, layers, bias, "attention_bias")
        + _linear(f"{p}mlp.dense_h_to_4h", "mlp", width, hidden, layers, True, "mlp_bias")
        + _linear(f"{p}mlp.dense_4h_to_h", "mlp", hidden, width, layers, True, "mlp_bias")
    )
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers, bias=True)
    rows += _norms("gpt_neox.", ("final_layer_norm",), hidden, (), bias=True)
    notes = ()
    rotary = f.cfg.get("rotary_pct", 1.0)
    if rotary != 1.0:
        notes = (f"partial rotary: RoPE on {rotary:g} of each head's channels (no parameters, no KV change)",)
    return dict(
        tensors=tuple(rows),
        intermediate_size=width,
        notes=notes,
        **_heads(_all(n_layers), None, heads, heads, hidden // heads),
        **_common(f, hidden, vocab, tied),
    )


def _moe(experts: int, k: int, width: int, moe_layers, shared: int = 0) -> dict:
    return dict(
        n_routed_experts=experts,
        n_experts_per_token=k,
        moe_intermediate_size=width,
        moe_layers=tuple(moe_layers),
        n_shared_experts=shared,
    )


def _mixtral(f):
    _refuse_bias(f)
    spec = _llama_like(f, kinds_fn=_sliding_everywhere)
    n_layers, hidden = f.int("num_hidden_layers"), f.int("hidden_size")
    experts, k = f.int("num_local_experts"), f.int("num_experts_per_tok")
    _check_topk(experts, k)
    width = f.int("intermediate_size")
    layers, p = range(n_layers), "model.layers.{layer}.block_sparse_moe."
    dense = tuple(t for t in spec["tensors"] if t.group != "mlp")
    moe = _gated_mlp(
        f"{p}experts.{{expert}}.",
        layers,
        hidden,
        width,
        group="expert",
        names=("w1", "w3", "w2"),
        experts=experts,
    )
    moe += [_t(f"{p}gate.weight", "router", (experts, hidden), layers)]
    return dict(spec, tensors=dense + tuple(moe), **_moe(experts, k, width, layers))


def _qwen3_moe(f):
    spec = _qwen3(f)
    n_layers, hidden = f.int("num_hidden_layers"), f.int("hidden_size")
    experts, k = f.int("num_experts"), f.int("num_experts_per_tok")
    _check_topk(experts, k)
    step = f.int("decoder_sparse_step", default=1)
    dense_only = set(f.cfg.get("mlp_only_layers") or [])
    moe_layers = tuple(i for i in range(n_layers) if i not in dense_only and (i + 1) % step == 0)
    dense_layers = tuple(i for i in range(n_layers) if i not in moe_layers)
    width = f.int("moe_intermediate_size")
    rows = [t for t in spec["tensors"] if t.group != "mlp"]
    p = "model.layers.{layer}.mlp."
    if dense_layers:
        rows += _gated_mlp(p, dense_layers, hidden, f.int("intermediate_size"))
    rows += _gated_mlp(f"{p}experts.{{expert}}.", moe_layers, hidden, width, group="expert", experts=experts)
    rows += [_t(f"{p}gate.weight", "router", (experts, hidden), moe_layers)]
    return dict(spec, tensors=tuple(rows), **_moe(experts, k, width, moe_layers))


def _deepseek(f):
    """DeepSeek-V2/V3: multi-head latent attention, shared + routed experts, the first k layers dense."""
    if f.cfg.get("attention_bias"):
        raise ValueError(
            f"cannot count model_type {f.model_type!r} exactly: attention_bias on MLA projections"
        )
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    vocab = f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", False)
    q_rank = f.opt_int("q_lora_rank")
    kv_rank = f.int("kv_lora_rank")
    nope, rope, v_dim = f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim"), f.int("v_head_dim")
    layers, p = range(n_layers), "model.layers.{layer}."
    a = f"{p}self_attn."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    if q_rank is None:
        rows.append(_t(f"{a}q_proj.weight", "attention", (heads * (nope + rope), hidden), layers))
    else:
        rows += [
            _t(f"{a}q_a_proj.weight", "attention", (q_rank, hidden), layers),
            _t(f"{a}q_a_layernorm.weight", "norm", (q_rank,), layers),
            _t(f"{a}q_b_proj.weight", "attention", (heads * (nope + rope), q_rank), layers),
        ]
    rows += [
        _t(f"{a}kv_a_proj_with_mqa.weight", "attention", (kv_rank + rope, hidden), layers),
        _t(f"{a}kv_a_layernorm.weight", "norm", (kv_rank,), layers),
        _t(f"{a}kv_b_proj.weight", "attention", (heads * (nope + v_dim), kv_rank), layers),
        _t(f"{a}o_proj.weight", "attention", (hidden, heads * v_dim), layers),
    ]
    experts, k = f.int("n_routed_experts"), f.int("num_experts_per_tok")
    _check_topk(experts, k)
    first_dense = f.int("first_k_dense_replace", minimum=0, default=0)
    freq = f.int("moe_layer_freq", default=1)
    moe_layers = tuple(i for i in layers if i >= first_dense and i % freq == 0)
    dense_layers = tuple(i for i in layers if i not in moe_layers)
    m = f"{p}mlp."
    dense_width = f.int("intermediate_size")
    if dense_layers:
        rows += _gated_mlp(m, dense_layers, hidden, dense_width)
    width = f.int("moe_intermediate_size")
    rows += _gated_mlp(f"{m}experts.{{expert}}.", moe_layers, hidden, width, group="expert", experts=experts)
    shared = f.int("n_shared_experts", minimum=0, default=0)
    if shared:
        rows += _gated_mlp(f"{m}shared_experts.", moe_layers, hidden, width * shared, group="shared_expert")
    rows.append(_t(f"{m}gate.weight", "router", (experts, hidden), moe_layers))
    if f.cfg.get("topk_method") == "noaux_tc":  # DeepSeek-V3's per-expert score correction
        rows.append(_t(f"{m}gate.e_score_correction_bias", "router_bias", (experts,), moe_layers))
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers)
    rows += _norms("model.", ("norm",), hidden, ())
    mtp = f.int("num_nextn_predict_layers", minimum=0, default=0)
    notes = (
        (f"{mtp} multi-token-prediction layer(s) stored in the checkpoint are not counted",) if mtp else ()
    )
    attention = tuple(
        LayerAttention(i, "full", None, kv_rank + rope, heads * (nope + rope), heads * v_dim) for i in layers
    )
    return dict(
        tensors=tuple(rows),
        attention=attention,
        n_heads=heads,
        n_kv_heads=heads,
        head_dim=nope + rope,
        intermediate_size=dense_width,
        q_lora_rank=q_rank,
        kv_lora_rank=kv_rank,
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=v_dim,
        n_mtp_layers=mtp,
        notes=notes,
        **_moe(experts, k, width, moe_layers, shared),
        **_common(f, hidden, vocab, tied),
    )


def _gpt_oss(f):
    hidden = f.int("hidden_size")
    n_layers = f.int("num_hidden_layers")
    heads = f.int("num_attention_heads")
    kv = _kv_heads(f, heads)
    head_dim = f.int("head_dim")
    vocab = f.int("vocab_size")
    tied = f.bool("tie_word_embeddings", False)
    bias = f.bool("attention_bias", True)
    experts = f.int("num_local_experts")
    k = f.int("num_experts_per_tok", default=f.cfg.get("experts_per_token"))
    _check_topk(experts, k)
    width = f.int("intermediate_size")
    layers, p = range(n_layers), "model.layers.{layer}."
    rows = _token_embeddings(vocab, hidden, tied, "model.embed_tokens.weight")
    rows += _gqa(p, layers, hidden, heads, kv, head_dim, qkv_bias=bias, o_bias=bias)
    rows.append(_t(f"{p}self_attn.sinks", "attention_sink", (heads,), layers))
    fused = "experts_in_out"  # fused experts: (experts, in, out) weights and (experts, out) biases
    rows += [
        _t(f"{p}mlp.router.weight", "router", (experts, hidden), layers),
        _t(f"{p}mlp.router.bias", "router_bias", (experts,), layers),
        _t(f"{p}mlp.experts.gate_up_proj", "expert", (experts, hidden, 2 * width), layers, layout=fused),
        _t(f"{p}mlp.experts.gate_up_proj_bias", "expert_bias", (experts, 2 * width), layers),
        _t(f"{p}mlp.experts.down_proj", "expert", (experts, width, hidden), layers, layout=fused),
        _t(f"{p}mlp.experts.down_proj_bias", "expert_bias", (experts, hidden), layers),
    ]
    rows += _norms(p, ("input_layernorm", "post_attention_layernorm"), hidden, layers)
    rows += _norms("model.", ("norm",), hidden, ())
    kinds = _alternating_kinds(f, n_layers, 2)
    return dict(
        tensors=tuple(rows),
        intermediate_size=width,
        **_heads(kinds, _window(f, kinds), heads, kv, head_dim),
        **_moe(experts, k, width, layers),
        **_common(f, hidden, vocab, tied),
    )


_BUILDERS: dict[str, Callable[[_Fields], dict]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "phi3": _phi3,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3_text": _gemma3_text,
    "gpt_oss": _gpt_oss,
    "olmo2": _olmo2,
    "granite": _granite,
    "starcoder2": _starcoder2,
}
assert set(_BUILDERS) == set(EXACT_FAMILIES) == set(FAMILY_NOTES)


# --------------------------------------------------------------------------------------
# The labelled estimate for any other decoder-only config
# --------------------------------------------------------------------------------------

_ALIASES = {
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
}


def _approximate(cfg: Mapping[str, Any], label: str, reason: str) -> ModelConfig:
    """A Llama-shaped estimate: GQA attention, gated MLP, two RMSNorms per layer, optional experts."""
    found = {}
    for key, aliases in _ALIASES.items():
        value = next((cfg[a] for a in aliases if cfg.get(a) is not None), None)
        if value is None:
            raise ValueError(
                f"approximate count needs config field {key!r} (or one of {list(aliases[1:])}) "
                f"for model_type {cfg.get('model_type')!r}"
            )
        found[key] = _whole(key, value, 1)
    assumptions = [
        f"not an exact family: {reason}",
        "Llama-shaped blocks: q/k/v/o projections without biases, a gated (3-matrix) MLP, "
        "two RMSNorms per layer and a final one",
        "no extra tensors (positional tables, adapters, vision towers) are counted",
    ]
    base = dict(found, model_type=cfg.get("model_type"))
    for key in (
        "num_key_value_heads",
        "head_dim",
        "max_position_embeddings",
        "sliding_window",
        "layer_types",
    ):
        if cfg.get(key) is not None:
            base[key] = cfg[key]
    hidden = found["hidden_size"]
    if cfg.get("intermediate_size") is not None:
        base["intermediate_size"] = _whole("intermediate_size", cfg["intermediate_size"], 1)
    else:
        base["intermediate_size"] = 4 * hidden
        assumptions.append("intermediate_size absent: taken as 4 * hidden_size")
    if cfg.get("sliding_window") is not None and cfg.get("layer_types") is None:
        del base["sliding_window"]
        assumptions.append(
            "sliding_window given without layer_types: every layer is taken as full attention "
            "(the KV may be overstated)"
        )
    tied = cfg.get("tie_word_embeddings")
    base["tie_word_embeddings"] = bool(tied)
    if tied is None:
        assumptions.append("tie_word_embeddings absent: an untied LM head is counted")
    f = _Fields(base, {})
    spec = _llama_like(f, tied_default=False)
    n_experts = next(
        (cfg[a] for a in ("num_local_experts", "num_experts", "n_routed_experts") if cfg.get(a)), 0
    )
    if n_experts:
        spec = _approx_experts(f, spec, cfg, _whole("experts", n_experts, 1), assumptions)
    spec["tensors"] = _drop_empty(spec["tensors"])
    return ModelConfig(
        name=label,
        model_type=str(cfg.get("model_type")),
        exact=False,
        torch_dtype=cfg.get("torch_dtype") or cfg.get("dtype"),
        assumptions=tuple(assumptions),
        **spec,
    )


def _approx_experts(f: _Fields, spec: dict, cfg: Mapping[str, Any], experts: int, assumptions: list) -> dict:
    k = cfg.get("num_experts_per_tok") or cfg.get("experts_per_token")
    if k is None:
        raise ValueError("approximate count of a mixture of experts needs config field 'num_experts_per_tok'")
    k = _whole("num_experts_per_tok", k, 1)
    _check_topk(experts, k)
    hidden, n_layers = f.int("hidden_size"), f.int("num_hidden_layers")
    width = cfg.get("moe_intermediate_size") or f.int("intermediate_size")
    width = _whole("moe_intermediate_size", width, 1)
    layers, p = range(n_layers), "model.layers.{layer}.mlp."
    rows = [t for t in spec["tensors"] if t.group != "mlp"]
    rows += _gated_mlp(f"{p}experts.{{expert}}.", layers, hidden, width, group="expert", experts=experts)
    rows.append(_t(f"{p}gate.weight", "router", (experts, hidden), layers))
    assumptions.append(
        f"every layer is a mixture of {experts} gated experts of width {width} "
        f"({k} per token) with a linear router; no shared experts"
    )
    return dict(spec, tensors=tuple(rows), **_moe(experts, k, width, layers))


__all__ = [
    "ModelConfig",
    "Tensor",
    "LayerAttention",
    "EXACT_FAMILIES",
    "FAMILY_NOTES",
    "GROUPS",
    "ROUTED_GROUPS",
    "MATMUL_GROUPS",
    "LAYOUTS",
]
