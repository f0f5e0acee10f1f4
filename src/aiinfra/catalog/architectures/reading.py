"""From a ``config.json`` to a counted model: reading, unwrapping, dispatch to the family record."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from aiinfra.catalog.architectures.approximate import _approximate
from aiinfra.catalog.architectures.blocks import _drop_empty
from aiinfra.catalog.architectures.core import ModelConfig, _BadValue
from aiinfra.catalog.architectures.family import Family
from aiinfra.catalog.architectures.fields import FOREIGN, _Fields
from aiinfra.catalog.architectures.registry import BY_ARCHITECTURE, BY_WRAPPER, FAMILIES


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
        model = _build_exact(cfg, _family(cfg), label)
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


def _unwrap(cfg: Mapping[str, Any]) -> dict:
    text = dict(cfg["text_config"])
    if not text.get("model_type"):
        wrapped = BY_WRAPPER.get(cfg.get("model_type", ""))
        if wrapped is None:
            raise ValueError(
                f"text_config of model_type {cfg.get('model_type')!r} does not name its model_type"
            )
        text["model_type"] = wrapped.model_type
    for key in ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings"):
        if key in cfg and key not in text:
            text[key] = cfg[key]
    return text


def _family(cfg: Mapping[str, Any]) -> Family:
    """The record counting this config: by ``model_type``, else by a class named in ``architectures``."""
    model_type = cfg.get("model_type")
    if model_type in FAMILIES:
        return FAMILIES[model_type]
    for name in cfg.get("architectures") or ():
        if isinstance(name, str) and name in BY_ARCHITECTURE:
            return BY_ARCHITECTURE[name]
    raise ValueError(
        f"cannot count model_type {model_type!r} exactly; exact families are {list(FAMILIES)} "
        f"(pass approximate=True, or --approximate, for a labelled estimate)"
    )


def _build_exact(cfg: Mapping[str, Any], family: Family, label: str) -> ModelConfig:
    model_type = family.model_type
    for key, what in FOREIGN.items():
        if key not in family.allowed and cfg.get(key):
            raise ValueError(f"cannot count model_type {model_type!r} exactly: field {key!r} ({what}) is set")
    # pretraining_tp splits matmuls during pretraining only; it never changes a stored shape.
    f = _Fields(dict(cfg, model_type=model_type), family.all_defaults)
    spec = family.build(f)
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
