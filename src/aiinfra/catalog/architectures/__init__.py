"""How a Hugging Face ``config.json`` becomes a model: the exact inventory of every stored tensor.

:func:`_from_config` reads a config (a dict, or a path to the file or its
folder) and builds a :class:`ModelConfig`: the model's shape (layers, heads,
experts, latent ranks), its per-layer token mixer (full, sliding or chunked
attention with what one cached token costs; linear attention or Mamba-2 with
the fixed state a request keeps) and the list of every tensor its checkpoint
stores, with name (``{layer}`` and ``{expert}`` placeholders), group, shape
and copies. Every count in :mod:`aiinfra.catalog.models` is a sum over that
list, so it is exact for each family in :data:`EXACT_FAMILIES`;
:mod:`aiinfra.catalog.checkpoint` compares the same list with a downloaded
model's safetensors files, and ``make oracle`` with ``transformers`` itself.

One module per family group (:mod:`.dense`, :mod:`.gemma`, :mod:`.gpt`,
:mod:`.moe`, :mod:`.latent`, :mod:`.hybrid`), each ending in its
:class:`~.family.Family` records: builder, notes, class defaults, allowed
fields, tying default and shipped configs in one place. :mod:`.registry`
collects them, and every list below is derived from it.

A config is dispatched by its ``model_type``, else by a class named in its
``architectures``; a multimodal wrapper (``text_config``) is counted as its
language model and says so in :attr:`ModelConfig.notes`. Any other config
raises ``ValueError`` unless ``approximate=True``: then a labelled estimate is
returned with ``exact=False`` and its assumptions in :attr:`ModelConfig.assumptions`.
"""

from __future__ import annotations

from aiinfra.catalog.architectures.core import (
    GROUPS,
    LAYER_KINDS,
    LAYOUTS,
    MATMUL_GROUPS,
    ROUTED_GROUPS,
    STATE_KINDS,
    LayerAttention,
    ModelConfig,
    Tensor,
)
from aiinfra.catalog.architectures.family import Family, Shipped
from aiinfra.catalog.architectures.reading import _from_config, _read_config
from aiinfra.catalog.architectures.registry import BY_ARCHITECTURE, FAMILIES

#: ``model_type`` values counted exactly (multimodal wrappers count their ``text_config``).
EXACT_FAMILIES: tuple[str, ...] = tuple(FAMILIES)
#: What makes each family's count differ from the Llama block (the docs table, the CLI, the book).
FAMILY_NOTES: dict[str, str] = {t: f.notes for t, f in FAMILIES.items()}

__all__ = [
    "ModelConfig",
    "Tensor",
    "LayerAttention",
    "Family",
    "Shipped",
    "FAMILIES",
    "BY_ARCHITECTURE",
    "EXACT_FAMILIES",
    "FAMILY_NOTES",
    "GROUPS",
    "ROUTED_GROUPS",
    "MATMUL_GROUPS",
    "LAYOUTS",
    "LAYER_KINDS",
    "STATE_KINDS",
    "_from_config",
    "_read_config",
]
