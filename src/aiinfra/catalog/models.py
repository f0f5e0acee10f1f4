"""The model registry, and exact parameter counts summed over each model's tensor inventory.

:func:`load` builds a :class:`ModelConfig` from a shipped config
(``load("qwen3-8b")``), from a path to a Hugging Face ``config.json`` (or its
folder), or from a dict with the same keys. The model keeps the inventory of
every tensor its checkpoint stores (:mod:`aiinfra.catalog.architectures`
builds it, family by family), and every count below is a sum over that
inventory: exact for the ``model_type`` families in
:data:`SUPPORTED_MODEL_TYPES`. Any other config raises ``ValueError``, unless
``load(..., approximate=True)`` is asked for a labelled estimate
(``m.exact`` is False and ``m.assumptions`` lists what was guessed).

Conventions used throughout (chapters 1, 3, 4, 5 and 7):

* ``lm_head`` means the final vocabulary projection. :func:`lm_head_params`
  is its matmul size (``vocab * hidden``) even when the weights are tied to
  the embedding table; :func:`_stored_lm_head_params` is what the checkpoint
  stores for it (0 when tied).
* "Block linear" weights are the matrices inside the transformer blocks
  (attention projections, MLP and expert matrices, MoE routers); embeddings,
  the LM head, norms and biases are not block linears.
* "Active" is what a token computes with: in every MoE layer ``k`` of the
  ``E`` routed experts (weights and biases) run, and the input embedding
  table, of which a token only looks up one row, is left out unless it is
  tied to the LM head (:func:`active_params`).
* Multi-token-prediction (MTP) modules, such as DeepSeek-V3's one extra
  layer, are recorded in ``n_mtp_layers`` but not counted: the published
  671B total for DeepSeek-V3 excludes them, and they are not run when the
  model serves ordinary decoding.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Mapping
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from aiinfra.catalog.architectures import (
    EXACT_FAMILIES,
    FAMILIES,
    GROUPS,
    MATMUL_GROUPS,
    ROUTED_GROUPS,
    LayerAttention,
    ModelConfig,
    Tensor,
    _from_config,
)

#: ``model_type`` values whose parameter count this module computes exactly.
SUPPORTED_MODEL_TYPES: tuple[str, ...] = EXACT_FAMILIES

#: Shipped configs: name -> (file in ``catalog/configs``, the Hugging Face ``config.json`` it stands for),
#: from the family records (:mod:`aiinfra.catalog.architectures.family`).
SHIPPED: dict[str, tuple[str, str]] = {
    s.name: (f"{s.name}.json", s.url) for family in FAMILIES.values() for s in family.shipped
}

#: Shipped configs written from the published values, not copied byte for byte (no verbatim copy could be
#: consulted). Every field that changes a count or a cache size is pinned by the published count the tests
#: hold them to and by the oracle's count of the same file (``make oracle``); fields that change neither
#: (token ids, versions, auto_map) may differ from the release.
RECONSTRUCTED: frozenset[str] = frozenset(
    s.name for family in FAMILIES.values() for s in family.shipped if s.reconstructed
)

#: The family record of each shipped config.
FAMILY_OF: dict[str, str] = {s.name: t for t, family in FAMILIES.items() for s in family.shipped}

_ALIASES = {"mixtral-8x7b": "Mixtral-8x7B-v0.1", "mistral-7b": "Mistral-7B-v0.1"}

LINEAR_ROLES = MATMUL_GROUPS


class ContextLengthWarning(UserWarning):
    """A context longer than the model's ``max_position_embeddings`` was asked for."""


def _key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum() or ch == ".")


# --------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------


def shipped_names() -> list[str]:
    """Names accepted by :func:`load` without a path (case-insensitive)."""
    return sorted(SHIPPED, key=str.lower)


def load(x, approximate: bool = False) -> ModelConfig:
    """Build a :class:`ModelConfig`: the model, its exact inventory and where its config came from.

    ``x`` may be a shipped name (case-, space- and hyphen-insensitive, an
    ``org/`` prefix is ignored: ``"deepseek-ai/DeepSeek-V3"`` works), a path
    to a Hugging Face ``config.json`` or its folder (a ``str`` or ``Path``), a
    dict with the keys of such a file, or a ``ModelConfig`` (returned
    unchanged). A ``model_type`` outside :data:`SUPPORTED_MODEL_TYPES` raises
    ``ValueError`` unless ``approximate=True``, which returns a Llama-shaped
    estimate labelled ``exact=False`` with its ``assumptions``.
    """
    if not isinstance(approximate, bool):
        raise ValueError(f"approximate must be True or False, got {approximate!r}")
    if isinstance(x, ModelConfig):
        return x
    if isinstance(x, Mapping):
        return _from_config(x, approximate=approximate)
    if isinstance(x, Path):
        return _load_path(x, approximate)
    if isinstance(x, str):
        return _load_name_or_path(x, approximate)
    raise ValueError(
        f"model must be a shipped name, a path to config.json, a dict or a ModelConfig, got {type(x).__name__}"
    )


def shipped_config(name: str) -> dict:
    """The ``config.json`` of a shipped model, as a dict (a fresh copy to edit and pass to :func:`load`)."""
    if name not in SHIPPED:
        raise ValueError(f"name must be one of {shipped_names()}, got {name!r}")
    text = (
        resources.files("aiinfra.catalog").joinpath("configs", SHIPPED[name][0]).read_text(encoding="utf-8")
    )
    return json.loads(text)


@cache
def _load_shipped(name: str) -> ModelConfig:
    return _from_config(shipped_config(name), name=name, source=SHIPPED[name][1])


def _load_name_or_path(text: str, approximate: bool) -> ModelConfig:
    path = Path(text).expanduser()
    if path.is_file() or (path.is_dir() and (path / "config.json").is_file()):
        return _load_path(path, approximate)  # an existing local config wins over a shipped name
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


def _load_path(path: Path, approximate: bool) -> ModelConfig:
    file = path / "config.json" if path.is_dir() else path
    name = file.parent.name if file.name == "config.json" and file.parent.name else file.stem
    return _from_config(file, approximate=approximate, name=name, source=str(file))


def _as_model(m) -> ModelConfig:
    if isinstance(m, ModelConfig):
        return m
    if isinstance(m, (str, Path, Mapping)):
        return load(m)
    raise ValueError(f"m must be a ModelConfig (see aiinfra.catalog.models.load), got {type(m).__name__}")


def _with_kv_heads(m: ModelConfig, kv_heads: int) -> ModelConfig:
    """The same model caching ``kv_heads`` key/value heads of ``head_dim`` per layer (chapter 5's MHA baseline)."""
    if m.attention_kind == "mla":
        raise ValueError("kv_heads applies to MHA/GQA models, got a model with latent attention (MLA)")
    elements = 2 * kv_heads * m.head_dim
    layers = tuple(dataclasses.replace(a, kv_elements_per_token=elements) for a in m.attention)
    return dataclasses.replace(m, n_kv_heads=kv_heads, attention=layers, full_kv_elements_per_token=None)


def _check_context(m: ModelConfig, context_tokens) -> None:
    """Warn (:class:`ContextLengthWarning`) when a context exceeds the model's ``max_position_embeddings``."""
    limit = m.max_position_embeddings
    if limit is not None and np.any(np.asarray(context_tokens) > limit):
        warnings.warn(
            f"context_tokens {float(np.max(context_tokens)):,.0f} exceeds max_position_embeddings {limit:,} of "
            f"{m.name}: the model was not trained (or configured) for that length",
            ContextLengthWarning,
            stacklevel=3,
        )


# --------------------------------------------------------------------------------------
# Sums over the inventory
# --------------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _groups(m: ModelConfig) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in m.tensors:
        out[t.group] = out.get(t.group, 0) + t.params
    return out


def params_by_group(m) -> dict[str, int]:
    """Stored parameters per tensor group (``attention``, ``mlp``, ``expert``, ``norm``, ...), in a fixed order.

    Groups the model has no tensor in are left out; the values add up to
    :func:`total_params`.
    """
    g = _groups(_as_model(m))
    return {k: g[k] for k in GROUPS if k in g}


def _routed_params(m) -> int:
    """Every routed-expert weight and bias (what ``active`` scales by ``k / E``)."""
    g = _groups(_as_model(m))
    return sum(g.get(k, 0) for k in ROUTED_GROUPS)


def _per_token(m: ModelConfig, params: int) -> int:
    """``params`` of routed experts scaled to the ``k`` of ``E`` one token uses (exact: ``E`` equal slices)."""
    return params // m.n_routed_experts * m.n_experts_per_token


def total_params(m) -> int:
    """Every stored parameter: the sum of the inventory (MTP modules excluded, see the module docstring)."""
    return sum(_groups(_as_model(m)).values())


def active_params(m) -> int:
    """Parameters a token computes with: ``total - (1 - k/E) * routed - lookup tables`` (chapters 1, 3 and 7).

    The convention vendors use for a mixture of experts, and the one this library applies everywhere:
    a token runs ``k`` of the ``E`` routed experts in each MoE layer (routers and shared experts
    always), and it only *looks up* one row of the input embedding table (and of a learned position
    table), so those tables are not counted. A tied table is also the LM head every token multiplies,
    so it stays. gpt-oss-20b: 3,608,307,264, the "3.61B active" of its model card; DeepSeek-V3:
    36,625,618,432, its report's "37B activated". For a dense untied model the active count is the
    total minus the embedding table.
    """
    m = _as_model(m)
    routed = _routed_params(m)
    g = _groups(m)
    lookups = g.get("position_embedding", 0) + (g.get("embedding", 0) if "lm_head" in g else 0)
    return total_params(m) - routed + (_per_token(m, routed) if routed else 0) - lookups


def _two_n_params(m) -> int:
    """The ``N`` of the ``2N`` rule of thumb: every stored parameter but the routed experts a token skips.

    ``total - (1 - k/E) * routed``: the headline count people multiply by two, the embedding table
    included (chapter 3 shows what that table does to the rule). It is not the active count, which
    leaves the table out (:func:`active_params`).
    """
    m = _as_model(m)
    routed = _routed_params(m)
    return total_params(m) - routed + (_per_token(m, routed) if routed else 0)


def embedding_params(m) -> int:
    """Parameters of the input token-embedding table: ``vocab_size * hidden_size``."""
    m = _as_model(m)
    return m.vocab_size * m.hidden_size


def lm_head_params(m) -> int:
    """Weights of the LM-head matmul, ``vocab_size * hidden_size``, even when tied to the embedding."""
    m = _as_model(m)
    return m.vocab_size * m.hidden_size


def _stored_lm_head_params(m) -> int:
    """LM-head weights the checkpoint stores: 0 when tied to the embedding, else ``vocab * hidden``."""
    return _groups(_as_model(m)).get("lm_head", 0)


def _norm_params(m) -> int:
    """All norm weights (and LayerNorm biases): per layer, the final one, MLA's latent norms, q/k norms."""
    g = _groups(_as_model(m))
    return g.get("norm", 0) + g.get("qk_norm", 0)


def _block_linear_params(m) -> int:
    """All matmul weights inside the blocks, every expert included (attention, MLP, experts, routers)."""
    g = _groups(_as_model(m))
    return sum(g.get(k, 0) for k in MATMUL_GROUPS)


def block_linear_params_per_token(m) -> int:
    """Matmul weights one token multiplies inside the blocks.

    Dense models: equal to :func:`_block_linear_params`. MoE layers: the
    attention, the router, the shared experts and ``n_experts_per_token`` of
    the routed experts.
    """
    m = _as_model(m)
    g = _groups(m)
    experts = g.get("expert", 0)
    return _block_linear_params(m) - experts + (_per_token(m, experts) if experts else 0)


def decode_read_params(m) -> int:
    """Parameters read from memory by one decode step at batch 1 (chapter 4).

    The active parameters (:func:`active_params`: the matrices a token multiplies, the LM head
    included even when it is tied to the embedding) plus the one row of each lookup table (token,
    and learned position) the step reads. Multiply by bytes per parameter for the bytes of one step.
    """
    m = _as_model(m)
    rows = m.hidden_size * (1 + ("position_embedding" in _groups(m)))
    return active_params(m) + rows


def _one_width(m: ModelConfig, attr: str) -> int:
    widths = {getattr(a, attr) for a in m.attention if a.caches_tokens}
    if len(widths) != 1:
        raise ValueError(
            f"{m.name} has layers of different attention widths {sorted(widths)}; use m.attention"
        )
    return widths.pop()


def attention_qk_width(m) -> int:
    """Query/key channels of one layer: ``n_heads * head_dim`` (MHA/GQA), ``n_heads * (nope + rope)`` (MLA)."""
    return _one_width(_as_model(m), "qk_width")


def attention_v_width(m) -> int:
    """Value channels of one layer: ``n_heads * head_dim`` (MHA/GQA), ``n_heads * v_head_dim`` (MLA)."""
    return _one_width(_as_model(m), "v_width")


def _matrices(m) -> list[tuple[str, int, int, int]]:
    """Every matmul weight inside the blocks as ``(group, copies, out_features, in_features)``."""
    return [(t.group, *t.matrix) for t in _as_model(m).tensors if t.group in MATMUL_GROUPS]


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
    "ModelConfig",
    "Tensor",
    "LayerAttention",
    "ContextLengthWarning",
    "SUPPORTED_MODEL_TYPES",
    "SHIPPED",
    "RECONSTRUCTED",
    "load",
    "shipped_names",
    "shipped_config",
    "params_by_group",
    "total_params",
    "active_params",
    "embedding_params",
    "lm_head_params",
    "block_linear_params_per_token",
    "decode_read_params",
    "attention_qk_width",
    "attention_v_width",
    "param_breakdown",
]
