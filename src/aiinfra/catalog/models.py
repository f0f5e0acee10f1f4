"""Model architectures read from Hugging Face ``config.json`` files, and exact parameter counts.

A :class:`ModelConfig` holds every field that changes a parameter count or a
KV-cache size, under one explicit name each. :func:`load` builds one from a
shipped config (``load("qwen3-8b")``), from a path to a ``config.json``, or
from a dict with the same keys.

The counting functions return Python ``int``s and are exact for the
architectures listed in :data:`SUPPORTED_MODEL_TYPES`: every weight matrix,
bias, norm and router is enumerated by :func:`_linear_shapes` and
:func:`_vector_params`, the same inventory a checkpoint's safetensors index
would list. A config of any other ``model_type``, or one that sets a field
this module cannot account for, raises ``ValueError`` instead of returning a
count that might be wrong.

Conventions used throughout (chapters 1, 3, 4, 5 and 7):

* ``lm_head`` means the final vocabulary projection. :func:`lm_head_params`
  is its matmul size (``vocab * hidden``) even when the weights are tied to
  the embedding table; :func:`_stored_lm_head_params` is what the checkpoint
  stores for it (0 when tied).
* "Block linear" weights are the matrices inside the transformer blocks
  (attention projections, MLP or expert matrices, MoE routers); embeddings,
  the LM head, norms and biases are not block linears.
* Multi-token-prediction (MTP) modules, such as DeepSeek-V3's one extra
  layer, are recorded in ``n_mtp_layers`` but not counted: the published
  671B total for DeepSeek-V3 excludes them, and they are not run when the
  model serves ordinary decoding.
"""
from __future__ import annotations

import json
import numbers
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from aiinfra.formula import check, choice

#: ``model_type`` values whose parameter count this module computes exactly.
SUPPORTED_MODEL_TYPES: tuple[str, ...] = (
    "llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "deepseek_v3",
)

#: Shipped configs: name -> (file in aiinfra/configs, Hugging Face repository it was copied from).
SHIPPED: dict[str, tuple[str, str]] = {
    "Qwen3-8B": ("Qwen3-8B.json", "https://huggingface.co/Qwen/Qwen3-8B/blob/main/config.json"),
    "Qwen3-30B-A3B": ("Qwen3-30B-A3B.json", "https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json"),
    "Llama-3.1-8B": ("Llama-3.1-8B.json", "https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json"),
    "Llama-3.1-70B": ("Llama-3.1-70B.json", "https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json"),
    "Llama-3.2-3B": ("Llama-3.2-3B.json", "https://huggingface.co/meta-llama/Llama-3.2-3B/blob/main/config.json"),
    "DeepSeek-R1-Distill-Llama-70B": (
        "DeepSeek-R1-Distill-Llama-70B.json",
        "https://huggingface.co/deepseek-ai/DeepSeek-R1-Distill-Llama-70B/blob/main/config.json",
    ),
    "Mistral-7B-v0.1": ("Mistral-7B-v0.1.json", "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json"),
    "Mixtral-8x7B-v0.1": (
        "Mixtral-8x7B-v0.1.json",
        "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json",
    ),
    "DeepSeek-V3": ("DeepSeek-V3.json", "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json"),
}

_ALIASES = {"mixtral-8x7b": "Mixtral-8x7B-v0.1", "mistral-7b": "Mistral-7B-v0.1"}

LINEAR_ROLES = ("attention", "mlp", "expert", "shared_expert", "router")


def _key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum() or ch == ".")


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a decoder-only transformer, as far as counts and KV sizes need it.

    Attention: ``n_heads`` query heads of width ``head_dim``, ``n_kv_heads``
    key/value heads (``n_kv_heads == n_heads`` is MHA, fewer is GQA). When
    ``kv_lora_rank`` is set the layer is multi-head latent attention (MLA,
    DeepSeek-V2/V3): queries go through ``q_lora_rank`` (None means a direct
    projection), keys and values are rebuilt from a ``kv_lora_rank`` latent,
    and each head has ``qk_nope_head_dim + qk_rope_head_dim`` query/key
    channels and ``v_head_dim`` value channels.

    Biases: ``attention_bias`` is the q/k/v projection biases (Qwen2 has
    them), ``o_proj_bias`` the output projection's, ``mlp_bias`` the MLP's.
    ``qk_norm`` adds an RMSNorm of size ``head_dim`` on queries and on keys in
    every layer (Qwen3).

    Mixture of experts: layers listed in ``moe_layers`` replace the dense MLP
    by ``n_routed_experts`` experts of width ``moe_intermediate_size`` (each a
    gated MLP), ``n_experts_per_token`` of which run per token, plus
    ``n_shared_experts`` always-on experts and a linear router.
    ``first_dense_layers`` is DeepSeek's ``first_k_dense_replace``.
    ``router_score_bias`` is DeepSeek-V3's per-expert correction bias.

    Sliding window: layers in ``sliding_window_layers`` attend to (and cache)
    at most ``sliding_window`` past tokens.

    For MLA models ``head_dim`` is the query/key width of one head
    (``qk_nope_head_dim + qk_rope_head_dim``) and ``n_kv_heads == n_heads``;
    the KV cache size comes from the latent, not from these.
    """

    name: str
    model_type: str
    n_layers: int
    hidden_size: int
    intermediate_size: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool = False
    qk_norm: bool = False
    attention_bias: bool = False
    o_proj_bias: bool = False
    mlp_bias: bool = False
    n_routed_experts: int = 0
    n_experts_per_token: int = 0
    n_shared_experts: int = 0
    moe_intermediate_size: int = 0
    first_dense_layers: int = 0
    moe_layers: tuple[int, ...] | None = None
    router_score_bias: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    sliding_window: int | None = None
    sliding_window_layers: tuple[int, ...] = ()
    n_mtp_layers: int = 0
    source: str = field(default="", compare=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        choice("model_type", self.model_type, set(SUPPORTED_MODEL_TYPES))
        for f in ("n_layers", "hidden_size", "n_heads", "n_kv_heads", "head_dim", "vocab_size"):
            _strict_int(f, getattr(self, f), 1)
        for f in ("intermediate_size", "n_routed_experts", "n_experts_per_token", "n_shared_experts",
                  "moe_intermediate_size", "first_dense_layers", "n_mtp_layers"):
            _strict_int(f, getattr(self, f), 0)
        for f in ("tie_word_embeddings", "qk_norm", "attention_bias", "o_proj_bias", "mlp_bias",
                  "router_score_bias"):
            if not isinstance(getattr(self, f), bool):
                raise ValueError(f"{f} must be True or False, got {getattr(self, f)!r}")
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads, got n_kv_heads={self.n_kv_heads}"
            )
        # --- MoE ---
        if self.n_routed_experts:
            if not 1 <= self.n_experts_per_token <= self.n_routed_experts:
                raise ValueError(
                    f"n_experts_per_token must lie in [1, n_routed_experts={self.n_routed_experts}], "
                    f"got {self.n_experts_per_token}"
                )
            _strict_int("moe_intermediate_size", self.moe_intermediate_size, 1)
            if self.first_dense_layers > self.n_layers:
                raise ValueError(
                    f"first_dense_layers must lie in [0, n_layers={self.n_layers}], got {self.first_dense_layers}"
                )
            layers = self.moe_layers
            if layers is None:
                layers = tuple(range(self.first_dense_layers, self.n_layers))
            object.__setattr__(self, "moe_layers", _layer_tuple("moe_layers", layers, self.n_layers))
        else:
            if self.n_experts_per_token or self.n_shared_experts or self.moe_layers:
                raise ValueError(
                    "n_experts_per_token, n_shared_experts and moe_layers must be 0/empty when "
                    f"n_routed_experts is 0, got {self.n_experts_per_token}, {self.n_shared_experts}, {self.moe_layers}"
                )
            if self.router_score_bias:
                raise ValueError("router_score_bias must be False when n_routed_experts is 0")
            object.__setattr__(self, "moe_layers", ())
        dense_needed = self.n_layers - len(self.moe_layers)
        if dense_needed and self.intermediate_size < 1:
            raise ValueError(f"intermediate_size must be >= 1 when a layer has a dense MLP, got {self.intermediate_size}")
        # --- MLA ---
        mla = (self.kv_lora_rank, self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim)
        if self.kv_lora_rank is not None:
            for f in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
                _strict_int(f, getattr(self, f), 1)
            if self.q_lora_rank is not None:
                _strict_int("q_lora_rank", self.q_lora_rank, 1)
            if self.n_kv_heads != self.n_heads:
                raise ValueError(
                    f"n_kv_heads must equal n_heads ({self.n_heads}) for MLA, got {self.n_kv_heads}"
                )
            if any((self.attention_bias, self.o_proj_bias, self.qk_norm)):
                raise ValueError("attention_bias, o_proj_bias and qk_norm are not supported together with MLA")
        elif any(v is not None for v in mla[1:]) or self.q_lora_rank is not None:
            raise ValueError("q_lora_rank, qk_nope_head_dim, qk_rope_head_dim and v_head_dim need kv_lora_rank (MLA)")
        # --- sliding window ---
        if self.sliding_window is not None:
            _strict_int("sliding_window", self.sliding_window, 1)
            object.__setattr__(
                self, "sliding_window_layers",
                _layer_tuple("sliding_window_layers", self.sliding_window_layers, self.n_layers),
            )
        elif self.sliding_window_layers:
            raise ValueError("sliding_window_layers must be empty when sliding_window is None")

    # --- derived descriptions -------------------------------------------------
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
        """Indices of the layers with a dense MLP."""
        moe = set(self.moe_layers)
        return tuple(i for i in range(self.n_layers) if i not in moe)


def _strict_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def _layer_tuple(name: str, layers, n_layers: int) -> tuple[int, ...]:
    try:
        out = tuple(sorted(set(layers)))
    except TypeError:
        raise ValueError(f"{name} must be a collection of layer indices, got {layers!r}") from None
    for i in out:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < n_layers:
            raise ValueError(f"{name} entries must be whole numbers in [0, {n_layers - 1}], got {i!r}")
    return tuple(int(i) for i in out)


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------

def shipped_names() -> list[str]:
    """Names accepted by :func:`load` without a path (case-insensitive)."""
    return sorted(SHIPPED)


def load(x) -> ModelConfig:
    """Build a :class:`ModelConfig`.

    ``x`` may be a shipped name (case-, space- and hyphen-insensitive, an
    ``org/`` prefix is ignored: ``"deepseek-ai/DeepSeek-V3"`` works), a path
    to a Hugging Face ``config.json`` (a ``str`` or ``Path``), a dict with the
    keys of such a file, or a ``ModelConfig`` (returned unchanged).
    """
    if isinstance(x, ModelConfig):
        return x
    if isinstance(x, Mapping):
        return _from_hf_dict(x)
    if isinstance(x, Path):
        return _load_path(x)
    if isinstance(x, str):
        return _load_name_or_path(x)
    raise ValueError(
        f"model must be a shipped name, a path to config.json, a dict or a ModelConfig, got {type(x).__name__}"
    )


@lru_cache(maxsize=None)
def _load_shipped(name: str) -> ModelConfig:
    filename, url = SHIPPED[name]
    text = resources.files("aiinfra.catalog").joinpath("configs", filename).read_text(encoding="utf-8")
    return _from_hf_dict(json.loads(text), name=name, source=url)


def _load_name_or_path(text: str) -> ModelConfig:
    path = Path(text).expanduser()
    if path.is_file() or (path.is_dir() and (path / "config.json").is_file()):
        return _load_path(path)  # an existing local config wins over a shipped name
    wanted = _key(text.rsplit("/", 1)[-1])
    for name in SHIPPED:
        if _key(name) == wanted:
            return _load_shipped(name)
    for alias, name in _ALIASES.items():
        if _key(alias) == wanted:
            return _load_shipped(name)
    raise ValueError(
        f"model {text!r} is neither a shipped name {shipped_names()} nor an existing config.json path"
    )


def _load_path(path: Path) -> ModelConfig:
    if path.is_dir():
        path = path / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"config path {str(path)!r} does not exist") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"config path {str(path)!r} is not valid JSON: {exc}") from None
    name = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    return _from_hf_dict(data, name=name, source=str(path))


def _get_int(cfg: Mapping[str, Any], key: str, default=None, minimum: int = 0):
    value = cfg.get(key, default)
    if value is None:
        if default is None:
            raise ValueError(f"config field {key!r} is required for model_type {cfg.get('model_type')!r}")
        value = default
    return _strict_int(key, value, minimum)


def _get_bool(cfg: Mapping[str, Any], key: str, default: bool) -> bool:
    value = cfg.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"config field {key!r} must be true or false, got {value!r}")
    return value


def _unsupported(cfg: Mapping[str, Any], reason: str):
    raise ValueError(
        f"cannot count model_type {cfg.get('model_type')!r} exactly: {reason}; "
        f"supported model types are {list(SUPPORTED_MODEL_TYPES)}"
    )


# Fields that, when set on a model type that does not use them, would change the count.
_FOREIGN_FIELDS = {
    "num_local_experts": "experts", "num_experts": "experts", "n_routed_experts": "experts",
    "n_shared_experts": "shared experts", "kv_lora_rank": "latent attention",
    "q_lora_rank": "latent attention", "shared_expert_intermediate_size": "shared experts",
    "num_nextn_predict_layers": "multi-token prediction layers",
}


def _from_hf_dict(cfg: Mapping[str, Any], name: str | None = None, source: str = "") -> ModelConfig:
    """Translate the keys of a Hugging Face ``config.json`` into a :class:`ModelConfig`.

    Raises ``ValueError`` naming the ``model_type`` and the supported list
    for architectures (or options) that this module cannot count exactly.
    """
    if not isinstance(cfg, Mapping):
        raise ValueError(f"cfg must be a dict from config.json, got {type(cfg).__name__}")
    model_type = cfg.get("model_type")
    if model_type not in SUPPORTED_MODEL_TYPES:
        _unsupported(cfg, "unknown architecture")
    if "text_config" in cfg:
        _unsupported(cfg, "nested text_config (multimodal wrapper)")
    allowed_foreign = {
        "mixtral": {"num_local_experts"},
        "qwen3_moe": {"num_experts"},
        "deepseek_v3": {"n_routed_experts", "n_shared_experts", "kv_lora_rank", "q_lora_rank",
                        "num_nextn_predict_layers"},
    }.get(model_type, set())
    for key, what in _FOREIGN_FIELDS.items():
        if key not in allowed_foreign and cfg.get(key):
            _unsupported(cfg, f"field {key!r} ({what}) is set")

    hidden = _get_int(cfg, "hidden_size", minimum=1)
    n_heads = _get_int(cfg, "num_attention_heads", minimum=1)
    n_layers = _get_int(cfg, "num_hidden_layers", minimum=1)
    n_kv = _get_int(cfg, "num_key_value_heads", default=n_heads, minimum=1)
    if cfg.get("head_dim") is not None:
        head_dim = _get_int(cfg, "head_dim", minimum=1)
    else:
        if hidden % n_heads:
            _unsupported(cfg, f"no head_dim and hidden_size {hidden} is not a multiple of {n_heads} heads")
        head_dim = hidden // n_heads
    fields: dict[str, Any] = dict(
        name=name or cfg.get("_name_or_path") or str(model_type),
        model_type=model_type,
        n_layers=n_layers,
        hidden_size=hidden,
        intermediate_size=_get_int(cfg, "intermediate_size", minimum=1),
        n_heads=n_heads,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        vocab_size=_get_int(cfg, "vocab_size", minimum=1),
        tie_word_embeddings=_get_bool(cfg, "tie_word_embeddings", False),
        source=source,
    )
    if cfg.get("pretraining_tp", 1) not in (1, None):
        _unsupported(cfg, "pretraining_tp != 1 is a training detail this module does not model")

    if model_type == "llama":
        bias = _get_bool(cfg, "attention_bias", False)
        fields.update(attention_bias=bias, o_proj_bias=bias, mlp_bias=_get_bool(cfg, "mlp_bias", False))
    elif model_type in ("mistral", "mixtral"):
        if cfg.get("attention_bias") or cfg.get("mlp_bias"):
            _unsupported(cfg, "attention_bias/mlp_bias on a Mistral-family model")
        window = cfg.get("sliding_window")
        if window is not None:
            fields.update(sliding_window=_get_int(cfg, "sliding_window", minimum=1),
                          sliding_window_layers=tuple(range(n_layers)))
        if model_type == "mixtral":
            experts = _get_int(cfg, "num_local_experts", minimum=1)
            fields.update(
                n_routed_experts=experts,
                n_experts_per_token=_get_int(cfg, "num_experts_per_tok", minimum=1),
                moe_intermediate_size=fields["intermediate_size"],
                moe_layers=tuple(range(n_layers)),
            )
    elif model_type in ("qwen2", "qwen3", "qwen3_moe"):
        if model_type == "qwen2":
            # Qwen2 always has q/k/v biases and no o_proj bias (modeling_qwen2).
            fields.update(attention_bias=True)
        else:
            bias = _get_bool(cfg, "attention_bias", False)
            fields.update(attention_bias=bias, o_proj_bias=bias, qk_norm=True)
        fields.update(_qwen_sliding(cfg, n_layers))
        if model_type == "qwen3_moe":
            experts = _get_int(cfg, "num_experts", minimum=1)
            step = _get_int(cfg, "decoder_sparse_step", default=1, minimum=1)
            dense_only = set(cfg.get("mlp_only_layers") or [])
            fields.update(
                n_routed_experts=experts,
                n_experts_per_token=_get_int(cfg, "num_experts_per_tok", minimum=1),
                moe_intermediate_size=_get_int(cfg, "moe_intermediate_size", minimum=1),
                moe_layers=tuple(i for i in range(n_layers) if i not in dense_only and (i + 1) % step == 0),
            )
    elif model_type == "deepseek_v3":
        if cfg.get("attention_bias"):
            _unsupported(cfg, "attention_bias on MLA projections")
        first_dense = _get_int(cfg, "first_k_dense_replace", default=0)
        freq = _get_int(cfg, "moe_layer_freq", default=1, minimum=1)
        q_rank = cfg.get("q_lora_rank")
        fields.update(
            n_kv_heads=n_heads,
            head_dim=_get_int(cfg, "qk_nope_head_dim", minimum=1) + _get_int(cfg, "qk_rope_head_dim", minimum=1),
            n_routed_experts=_get_int(cfg, "n_routed_experts", minimum=1),
            n_experts_per_token=_get_int(cfg, "num_experts_per_tok", minimum=1),
            n_shared_experts=_get_int(cfg, "n_shared_experts", default=0),
            moe_intermediate_size=_get_int(cfg, "moe_intermediate_size", minimum=1),
            first_dense_layers=first_dense,
            moe_layers=tuple(i for i in range(n_layers) if i >= first_dense and i % freq == 0),
            router_score_bias=cfg.get("topk_method") == "noaux_tc",
            q_lora_rank=None if q_rank is None else _get_int(cfg, "q_lora_rank", minimum=1),
            kv_lora_rank=_get_int(cfg, "kv_lora_rank", minimum=1),
            qk_nope_head_dim=_get_int(cfg, "qk_nope_head_dim", minimum=1),
            qk_rope_head_dim=_get_int(cfg, "qk_rope_head_dim", minimum=1),
            v_head_dim=_get_int(cfg, "v_head_dim", minimum=1),
            n_mtp_layers=_get_int(cfg, "num_nextn_predict_layers", default=0),
        )
    return ModelConfig(**fields)


def _qwen_sliding(cfg: Mapping[str, Any], n_layers: int) -> dict:
    """Sliding-window layers of a Qwen2/Qwen3 config, following the transformers rules."""
    layer_types = cfg.get("layer_types")
    window = cfg.get("sliding_window")
    if layer_types is not None:
        if len(layer_types) != n_layers:
            raise ValueError(f"layer_types must list {n_layers} entries, got {len(layer_types)}")
        sliding = tuple(i for i, t in enumerate(layer_types) if t == "sliding_attention")
        unknown = set(layer_types) - {"sliding_attention", "full_attention"}
        if unknown:
            _unsupported(cfg, f"unknown layer_types {sorted(unknown)}")
    elif cfg.get("use_sliding_window") and window is not None:
        start = cfg.get("max_window_layers", 0) or 0
        sliding = tuple(range(start, n_layers))
    else:
        sliding = ()
    if not sliding:
        return {}
    if window is None:
        raise ValueError("layer_types marks sliding layers but sliding_window is null")
    return {"sliding_window": _strict_int("sliding_window", window, 1), "sliding_window_layers": sliding}


# --------------------------------------------------------------------------------------
# The inventory: every weight matrix and every vector parameter
# --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Linear:
    """``count`` copies of a weight matrix of shape ``(out_features, in_features)``."""

    name: str
    role: str
    out_features: int
    in_features: int
    count: int

    @property
    def params(self) -> int:
        return self.out_features * self.in_features * self.count


def _as_model(m) -> ModelConfig:
    if isinstance(m, ModelConfig):
        return m
    if isinstance(m, (str, Path, Mapping)):
        return load(m)
    raise ValueError(f"m must be a ModelConfig (see aiinfra.catalog.models.load), got {type(m).__name__}")


def _attention_linears(m: ModelConfig, n: int) -> list[Linear]:
    h = m.hidden_size
    if m.attention_kind == "mla":
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        out = []
        if m.q_lora_rank is None:
            out.append(Linear("q_proj", "attention", m.n_heads * qk, h, n))
        else:
            out += [Linear("q_a_proj", "attention", m.q_lora_rank, h, n),
                    Linear("q_b_proj", "attention", m.n_heads * qk, m.q_lora_rank, n)]
        out += [
            Linear("kv_a_proj_with_mqa", "attention", m.kv_lora_rank + m.qk_rope_head_dim, h, n),
            Linear("kv_b_proj", "attention", m.n_heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, n),
            Linear("o_proj", "attention", h, m.n_heads * m.v_head_dim, n),
        ]
        return out
    q, kv = m.n_heads * m.head_dim, m.n_kv_heads * m.head_dim
    return [
        Linear("q_proj", "attention", q, h, n),
        Linear("k_proj", "attention", kv, h, n),
        Linear("v_proj", "attention", kv, h, n),
        Linear("o_proj", "attention", h, q, n),
    ]


def _gated_mlp(prefix: str, role: str, width: int, hidden: int, count: int) -> list[Linear]:
    return [
        Linear(f"{prefix}gate_proj", role, width, hidden, count),
        Linear(f"{prefix}up_proj", role, width, hidden, count),
        Linear(f"{prefix}down_proj", role, hidden, width, count),
    ]


@lru_cache(maxsize=256)
def _linears(m: ModelConfig) -> tuple[Linear, ...]:
    h, L = m.hidden_size, m.n_layers
    n_moe = len(m.moe_layers)
    n_dense = L - n_moe
    out = _attention_linears(m, L)
    if n_dense:
        out += _gated_mlp("mlp.", "mlp", m.intermediate_size, h, n_dense)
    if n_moe:
        out += _gated_mlp("experts.", "expert", m.moe_intermediate_size, h, n_moe * m.n_routed_experts)
        if m.n_shared_experts:
            out += _gated_mlp("shared_experts.", "shared_expert", m.moe_intermediate_size * m.n_shared_experts,
                              h, n_moe)
        out.append(Linear("router", "router", m.n_routed_experts, h, n_moe))
    return tuple(x for x in out if x.count)


@lru_cache(maxsize=256)
def _vectors(m: ModelConfig) -> dict[str, int]:
    """Non-matrix parameters inside and after the blocks, grouped by kind."""
    h, L = m.hidden_size, m.n_layers
    norms = 2 * h * L + h  # input and post-attention RMSNorm per layer, final norm
    if m.attention_kind == "mla":
        norms += m.kv_lora_rank * L + (m.q_lora_rank or 0) * L
    if m.qk_norm:
        norms += 2 * m.head_dim * L
    biases = 0
    if m.attention_bias:
        biases += (m.n_heads + 2 * m.n_kv_heads) * m.head_dim * L
    if m.o_proj_bias:
        biases += h * L
    if m.mlp_bias:
        n_dense = L - len(m.moe_layers)
        biases += (2 * m.intermediate_size + h) * n_dense
    router_bias = m.n_routed_experts * len(m.moe_layers) if m.router_score_bias else 0
    return {"norm": norms, "bias": biases, "router_bias": router_bias}


def _linear_shapes(m) -> list[Linear]:
    """Every weight matrix inside the blocks, as :class:`Linear` rows (name, role, out, in, count)."""
    return list(_linears(_as_model(m)))


def _vector_params(m) -> dict[str, int]:
    """Norm weights, biases and router score biases, as a dict of exact counts."""
    return dict(_vectors(_as_model(m)))


# --------------------------------------------------------------------------------------
# Public counts
# --------------------------------------------------------------------------------------

def embedding_params(m) -> int:
    """Parameters of the input embedding table: ``vocab_size * hidden_size``."""
    m = _as_model(m)
    return m.vocab_size * m.hidden_size


def lm_head_params(m) -> int:
    """Weights of the LM-head matmul, ``vocab_size * hidden_size``, even when tied to the embedding."""
    m = _as_model(m)
    return m.vocab_size * m.hidden_size


def _stored_lm_head_params(m) -> int:
    """LM-head weights the checkpoint stores: 0 when tied to the embedding, else ``vocab * hidden``."""
    m = _as_model(m)
    return 0 if m.tie_word_embeddings else lm_head_params(m)


def _norm_params(m) -> int:
    """All RMSNorm weights: two per layer, the final one, plus MLA's latent norms and Qwen3's q/k norms."""
    return _vectors(_as_model(m))["norm"]


def _block_linear_params(m) -> int:
    """All matmul weights inside the blocks, every expert included (attention, MLP, experts, routers)."""
    return sum(x.params for x in _linears(_as_model(m)))


def block_linear_params_per_token(m) -> int:
    """Matmul weights one token multiplies inside the blocks.

    Dense models: equal to :func:`_block_linear_params`. MoE layers: the
    attention, the router, the shared experts and ``n_experts_per_token`` of
    the routed experts.
    """
    m = _as_model(m)
    total = 0
    for x in _linears(m):
        if x.role == "expert":
            total += x.params // m.n_routed_experts * m.n_experts_per_token
        else:
            total += x.params
    return total


def _non_linear_params(m: ModelConfig) -> int:
    v = _vectors(m)
    return embedding_params(m) + _stored_lm_head_params(m) + v["norm"] + v["bias"] + v["router_bias"]


def total_params(m) -> int:
    """Every stored parameter (MTP modules excluded, see the module docstring)."""
    m = _as_model(m)
    return _block_linear_params(m) + _non_linear_params(m)


def active_params(m) -> int:
    """Parameters a token uses: for MoE, shared + ``k`` routed experts + router, plus everything outside
    the experts (embedding table included); equal to :func:`total_params` for dense models."""
    m = _as_model(m)
    return block_linear_params_per_token(m) + _non_linear_params(m)


def decode_read_params(m) -> int:
    """Parameters read from memory by one decode step at batch 1.

    The active parameters (all of them for a dense model), with the
    embedding table replaced by the single row the token looks up:
    ``block_linear_params_per_token + norms + biases + lm_head_params +
    hidden_size``. A tied LM head still reads the whole table as the head's
    matrix, so for tied models this is ``active_params + hidden_size``.
    Multiply by bytes per parameter for the bytes of one step (chapter 4).
    """
    m = _as_model(m)
    v = _vectors(m)
    return (block_linear_params_per_token(m) + v["norm"] + v["bias"] + v["router_bias"]
            + lm_head_params(m) + m.hidden_size)


def attention_qk_width(m) -> int:
    """Query/key channels per layer: ``n_heads * head_dim`` (MHA/GQA), ``n_heads * (nope + rope)`` (MLA)."""
    m = _as_model(m)
    if m.attention_kind == "mla":
        return m.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim)
    return m.n_heads * m.head_dim


def attention_v_width(m) -> int:
    """Value channels per layer: ``n_heads * head_dim`` (MHA/GQA), ``n_heads * v_head_dim`` (MLA)."""
    m = _as_model(m)
    if m.attention_kind == "mla":
        return m.n_heads * m.v_head_dim
    return m.n_heads * m.head_dim


def _params_by_role(m) -> dict[str, int]:
    """Stored parameters split by role: attention, mlp, expert, shared_expert, router, embedding,
    lm_head, norm, bias, router_bias."""
    m = _as_model(m)
    out = {role: 0 for role in LINEAR_ROLES}
    for x in _linears(m):
        out[x.role] += x.params
    out.update(embedding=embedding_params(m), lm_head=_stored_lm_head_params(m), **_vectors(m))
    return out


def param_breakdown(m) -> dict[str, int]:
    """All the counts of this module in one dict, for tables."""
    m = _as_model(m)
    return {
        "total": total_params(m),
        "active": active_params(m),
        "embedding": embedding_params(m),
        "lm_head": lm_head_params(m),
        "stored_lm_head": _stored_lm_head_params(m),
        "norms": _norm_params(m),
        "block_linear": _block_linear_params(m),
        "block_linear_per_token": block_linear_params_per_token(m),
        "decode_read": decode_read_params(m),
        "attention_qk_width": attention_qk_width(m),
        "attention_v_width": attention_v_width(m),
    }


__all__ = [
    "ModelConfig", "Linear", "SUPPORTED_MODEL_TYPES", "SHIPPED", "load", "shipped_names", "embedding_params", "lm_head_params", "block_linear_params_per_token", "total_params",
    "active_params", "decode_read_params", "attention_qk_width", "attention_v_width",
    "param_breakdown",
]
