"""The family record: everything the calculator knows about one ``model_type``, in one place.

Every list about families is derived from these records: the exact families
(:data:`aiinfra.catalog.architectures.EXACT_FAMILIES`), their notes (the
docs table, the CLI's ``family`` line, the book's "Count your own model"
page), the shipped configs (:data:`aiinfra.catalog.models.SHIPPED`), which
of those were reconstructed, and the test fixtures. Adding a family is one
:class:`Family` in a family module, its config in ``catalog/configs`` and its
pinned count in the tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Shipped:
    """One config shipped with the library: its name, the Hugging Face repository, how it was written.

    ``reconstructed`` is True when the file was written from the published
    values rather than copied byte for byte from the release (every field that
    changes a count or a cache size is pinned by the tests and the oracle).
    """

    name: str
    repo: str
    reconstructed: bool = False

    @property
    def url(self) -> str:
        return f"https://huggingface.co/{self.repo}/blob/main/config.json"


@dataclass(frozen=True)
class Family:
    """One exact family: how its inventory is built and what is special about it.

    ``build`` turns a config's fields into the inventory; ``notes`` says what
    the count does differently from the Llama block; ``tied`` is the
    ``transformers`` class default of ``tie_word_embeddings`` (used when a config
    leaves it out, by the exact count and by ``--approximate`` alike);
    ``defaults`` holds the other class defaults a released config may omit;
    ``allowed`` lists the tensor-adding fields (:data:`FOREIGN`) this family
    reads; ``architectures`` names the ``transformers`` classes whose checkpoints
    it counts (dispatch reads them when the ``model_type`` is another's);
    ``wrappers`` are the ``model_type`` values of multimodal wrappers whose
    ``text_config`` is this family's text model without naming it;
    ``shipped`` are its shipped configs, the first one its example.
    """

    model_type: str
    build: Callable[..., dict]
    notes: str
    shipped: tuple[Shipped, ...]
    tied: bool = False
    defaults: Mapping[str, Any] = field(default_factory=dict)
    allowed: frozenset[str] = frozenset()
    architectures: tuple[str, ...] = ()
    wrappers: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.shipped:
            raise ValueError(f"family {self.model_type!r} must ship at least one config")

    @property
    def all_defaults(self) -> dict[str, Any]:
        """The class defaults, the tying default included."""
        return {"tie_word_embeddings": self.tied, **self.defaults}
