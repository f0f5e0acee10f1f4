"""Every family record, collected from the family modules; the one place the lists are derived from."""

from __future__ import annotations

from aiinfra.catalog.architectures import dense, gemma, gpt, hybrid, latent, moe
from aiinfra.catalog.architectures.family import Family

#: model_type -> record, in the order the family modules list them.
FAMILIES: dict[str, Family] = {
    f.model_type: f for module in (dense, gemma, gpt, moe, latent, hybrid) for f in module.FAMILIES
}
#: transformers class name -> record, for configs whose model_type is not a family's (a renamed release).
BY_ARCHITECTURE: dict[str, Family] = {name: f for f in FAMILIES.values() for name in f.architectures}
#: multimodal wrapper model_type -> the record of its text model, for a ``text_config`` that does not name it.
BY_WRAPPER: dict[str, Family] = {name: f for f in FAMILIES.values() for name in f.wrappers}
