"""Reading a config's fields, with the family's ``transformers`` class defaults recorded when used."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from aiinfra.catalog.architectures.core import _BadValue, _whole

#: Fields that add tensors; a family whose record does not allow them refuses a config that sets them.
FOREIGN: dict[str, str] = {
    "num_local_experts": "experts",
    "num_experts": "experts",
    "n_routed_experts": "experts",
    "top_k_experts": "experts",
    "n_shared_experts": "shared experts",
    "shared_expert_intermediate_size": "shared experts",
    "kv_lora_rank": "latent attention",
    "q_lora_rank": "latent attention",
    "index_head_dim": "a sparse-attention indexer",
    "linear_num_value_heads": "linear attention",
    "mamba_num_heads": "state-space layers",
}


class _Fields:
    """Reads config fields; a missing one takes the family default (recorded) or raises."""

    def __init__(self, cfg: dict[str, Any], defaults: Mapping[str, Any]):
        self.cfg, self.defaults = cfg, defaults
        self.used: list[str] = []
        self.model_type = cfg.get("model_type")

    def _raw(self, key: str):
        # An absent field takes the class default; an explicit null is passed on (transformers then derives
        # the value, e.g. num_key_value_heads = num_attention_heads, head_dim = hidden_size // heads).
        value = self.cfg.get(key)
        if key not in self.cfg and key in self.defaults:
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

    def list(self, key: str) -> list | None:
        value = self._raw(key)
        if value is not None and not isinstance(value, list):
            raise _BadValue(f"config field {key!r} must be a list, got {value!r}")
        return value


__all__ = ["FOREIGN", "_Fields", "_BadValue", "_whole"]
