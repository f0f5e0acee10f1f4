"""Check a count against the checkpoint itself: a downloaded model folder's safetensors files.

:func:`compare` reads ``config.json`` in a model folder (a Hugging Face
snapshot such as ``~/.cache/huggingface/hub/models--org--name/snapshots/<rev>/``),
predicts every stored tensor from the model's inventory
(:mod:`aiinfra.catalog.architectures`), and compares
the prediction with what the folder holds:

* the safetensors **headers** when the weight files are present: names,
  shapes and dtypes of every tensor (only the header is read, never tensor
  data; the header length is bounded, see :func:`read_safetensors_header`);
* otherwise ``model.safetensors.index.json``: the tensor names of its
  ``weight_map`` and the bytes of ``metadata.total_size``.

The :class:`CheckpointReport` says ``exact match`` or lists the differences
group by group (missing tensors, unexpected tensors, other shapes, other
dtypes). Tensors that are stored but are not parameters are reported apart
and do not spoil a match: causal-mask buffers (GPT-2, Pythia), quantization
scales, multi-token-prediction layers (DeepSeek-V3) and, for multimodal
wrappers, the vision tower. This is how a reader learns whether to trust a
count (chapter 1, "count your own model").

Quantized releases are predicted as stored: ``mxfp4`` experts (gpt-oss) as
``*_blocks`` of two 4-bit values per byte plus one ``*_scales`` byte per 32
values; ``fp8`` block quantization (DeepSeek-V3) as ``F8_E4M3`` matrices with
an ``F32`` ``weight_scale_inv`` per 128 x 128 block.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from math import ceil, prod
from pathlib import Path

from aiinfra.catalog import models
from aiinfra.catalog.architectures import GROUPS, ModelConfig, _from_config, _read_config

#: Largest safetensors header read, in bytes (the safetensors library refuses more than 100 MB too).
MAX_HEADER_BYTES: int = 100_000_000

#: Bytes per element of each safetensors dtype.
DTYPE_BYTES: dict[str, int] = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "I64": 8,
    "U64": 8,
    "F64": 8,
}

#: ``torch_dtype`` of a config -> safetensors dtype.
TORCH_TO_SAFETENSORS: dict[str, str] = {
    "float32": "F32",
    "float": "F32",
    "bfloat16": "BF16",
    "float16": "F16",
    "half": "F16",
    "float64": "F64",
}

INDEX_FILE = "model.safetensors.index.json"

#: Published ``model.safetensors.index.json`` files shipped in ``catalog/checkpoints/NAME/`` (no weights), for
#: worked checks: shipped model name -> where the index was published. Copied byte for byte from a snapshot
#: of the repository (github.com/mauer4/Attention-From-Scratch at 381a295, weights/allenai/OLMo-2-1124-13B).
PUBLISHED_INDEXES: dict[str, str] = {
    "OLMo-2-1124-13B": "https://huggingface.co/allenai/OLMo-2-1124-13B/blob/main/model.safetensors.index.json",
}

# Stored names differ from the model's own by a wrapper prefix; both sides drop it before matching.
_PREFIXES = (
    "language_model.model.",
    "model.language_model.",
    "language_model.",
    "model.",
    "transformer.",
    "gpt_neox.",
)
_BUFFER_SUFFIXES = (
    ".attn.bias",
    ".attn.masked_bias",
    ".attention.bias",
    ".attention.masked_bias",
    ".rotary_emb.inv_freq",
)
_QUANT_SUFFIXES = (
    "_scale_inv",
    ".weight_scale",
    ".input_scale",
    "_scales",
    ".scales",
    ".qzeros",
    ".g_idx",
    ".absmax",
    ".quant_map",
)
_VISION_PREFIXES = (
    "vision_tower.",
    "multi_modal_projector.",
    "vision_model.",
    "model.vision_tower.",
    "model.multi_modal_projector.",
    "visual.",
    "model.visual.",
)
_QUANTIZED_GROUPS = ("attention", "mlp", "expert", "shared_expert")


# --------------------------------------------------------------------------------------
# Reading what is stored
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredTensor:
    """One tensor as a safetensors header (or an index) describes it."""

    name: str
    dtype: str | None
    shape: tuple[int, ...] | None
    file: str

    @property
    def numel(self) -> int | None:
        return None if self.shape is None else prod(self.shape)

    @property
    def nbytes(self) -> int | None:
        if self.shape is None or self.dtype is None:
            return None
        return prod(self.shape) * DTYPE_BYTES[self.dtype]


def read_safetensors_header(path, max_header_bytes: int = MAX_HEADER_BYTES) -> dict[str, StoredTensor]:
    """The tensors a ``.safetensors`` file declares, read from its header alone.

    The format is an 8-byte little-endian header length ``n``, ``n`` bytes
    of JSON (``name -> {dtype, shape, data_offsets}``, plus an optional
    ``__metadata__``), then the data. Raises ``ValueError`` for a header
    longer than ``max_header_bytes`` or than the file, malformed JSON, an
    unknown dtype, or offsets that disagree with dtype and shape.
    """
    path = Path(path)
    if isinstance(max_header_bytes, bool) or not isinstance(max_header_bytes, int) or max_header_bytes < 2:
        raise ValueError(f"max_header_bytes must be a whole number >= 2, got {max_header_bytes!r}")
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise ValueError(
                    f"{path.name}: {size} bytes is too short for a safetensors file "
                    f"(the header length alone takes 8)"
                )
            (n,) = struct.unpack("<Q", head)
            if n > max_header_bytes:
                raise ValueError(
                    f"{path.name}: header of {n:,} bytes exceeds the bound of {max_header_bytes:,} "
                    f"(max_header_bytes); refusing to read it"
                )
            if n > size - 8:
                raise ValueError(
                    f"{path.name}: header of {n:,} bytes is longer than the file ({size:,} bytes)"
                )
            raw = fh.read(n)
    except OSError as exc:
        raise ValueError(f"safetensors file {str(path)!r} cannot be read: {exc}") from None
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name}: header is not valid JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ValueError(f"{path.name}: header must be a JSON object, got {type(header).__name__}")
    data_bytes = size - 8 - n
    return {
        name: _entry(path.name, name, spec, data_bytes)
        for name, spec in header.items()
        if name != "__metadata__"
    }


def _entry(file: str, name: str, spec, data_bytes: int) -> StoredTensor:
    if not isinstance(spec, dict):
        raise ValueError(f"{file}: entry {name!r} must be an object, got {spec!r}")
    dtype, shape, offsets = spec.get("dtype"), spec.get("shape"), spec.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise ValueError(
            f"{file}: tensor {name!r} has dtype {dtype!r}; known dtypes are {sorted(DTYPE_BYTES)}"
        )
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise ValueError(
            f"{file}: tensor {name!r} has shape {shape!r}; a shape is a list of whole numbers >= 0"
        )
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
    ):
        raise ValueError(f"{file}: tensor {name!r} has data_offsets {offsets!r}; expected [begin, end]")
    begin, end = offsets
    expected = prod(shape) * DTYPE_BYTES[dtype]
    if not 0 <= begin <= end <= data_bytes or end - begin != expected:
        raise ValueError(
            f"{file}: tensor {name!r} data_offsets {offsets} do not hold {expected:,} bytes "
            f"of {dtype} {tuple(shape)} inside {data_bytes:,} data bytes"
        )
    return StoredTensor(name, dtype, tuple(shape), file)


@dataclass(frozen=True)
class Stored:
    """What a model folder holds: tensors from headers, or names from the index."""

    tensors: dict[str, StoredTensor]
    source: str
    index_total_size: int | None = None
    files: tuple[str, ...] = ()
    missing_files: tuple[str, ...] = ()


def _read_checkpoint(folder, max_header_bytes: int = MAX_HEADER_BYTES) -> Stored:
    """Read the index and every safetensors header of a model folder (no tensor data)."""
    folder = _folder(folder)
    index = folder / INDEX_FILE
    weight_map: dict[str, str] = {}
    total: int | None = None
    if index.is_file():
        weight_map, total = _read_index(index)
        names = sorted(set(weight_map.values()))
    else:
        names = [p.name for p in _weight_files(folder)]
        if not names:
            raise ValueError(f"folder {str(folder)!r} holds no {INDEX_FILE} and no .safetensors file")
    present = [n for n in names if (folder / n).is_file()]
    missing = tuple(n for n in names if n not in present)
    if missing:  # shards not downloaded: the index alone can be compared
        return Stored(
            {k: StoredTensor(k, None, None, f) for k, f in weight_map.items()},
            "index",
            total,
            tuple(names),
            missing,
        )
    tensors: dict[str, StoredTensor] = {}
    for name in present:
        for key, t in read_safetensors_header(folder / name, max_header_bytes).items():
            if key in tensors:
                raise ValueError(f"tensor {key!r} is stored twice ({tensors[key].file} and {name})")
            tensors[key] = t
    if weight_map and set(weight_map) != set(tensors):
        raise ValueError(
            f"{INDEX_FILE} lists {len(weight_map)} tensors but the headers hold {len(tensors)}; "
            "the folder is inconsistent"
        )
    return Stored(tensors, "safetensors headers", total, tuple(names), ())


def published_index_folder(name: str) -> Path:
    """The folder holding the published index of a shipped model (:data:`PUBLISHED_INDEXES`), without weights.

    ``compare(published_index_folder(name), config=name)`` checks the count
    against the index's tensor names and ``metadata.total_size``.
    """
    if name not in PUBLISHED_INDEXES:
        raise ValueError(f"name must be one of {sorted(PUBLISHED_INDEXES)}, got {name!r}")
    return Path(str(resources.files("aiinfra.catalog").joinpath("checkpoints", name)))


def _folder(folder) -> Path:
    if not isinstance(folder, (str, Path)):
        raise ValueError(f"folder must be a path to a model folder, got {type(folder).__name__}")
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise ValueError(f"folder {str(path)!r} is not a directory")
    return path


def _folder_label(path: Path) -> str:
    """``org/name`` for a Hugging Face cache snapshot (``models--org--name/snapshots/<rev>``), else the folder name."""
    path = path.resolve()
    if path.parent.name == "snapshots" and path.parent.parent.name.startswith("models--"):
        return path.parent.parent.name[len("models--") :].replace("--", "/")
    return path.name


def _weight_files(folder: Path) -> list[Path]:
    single = folder / "model.safetensors"
    if single.is_file():
        return [single]
    return sorted(folder.glob("model*.safetensors")) or sorted(folder.glob("*.safetensors"))


def _read_index(path: Path) -> tuple[dict[str, str], int | None]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path.name} is not valid JSON: {exc}") from None
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not all(
        isinstance(v, str) and "/" not in v and "\\" not in v for v in weight_map.values()
    ):
        raise ValueError(f"{path.name} must hold a weight_map of tensor name -> file name in this folder")
    total = (data.get("metadata") or {}).get("total_size")
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
        raise ValueError(f"{path.name}: metadata.total_size must be a whole number of bytes, got {total!r}")
    return weight_map, total


# --------------------------------------------------------------------------------------
# What the config predicts is stored
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """One tensor the config predicts: ``params`` is 0 for quantization metadata (scales)."""

    name: str
    group: str
    shape: tuple[int, ...]
    dtype: str | None
    params: int

    @property
    def nbytes(self) -> int | None:
        return None if self.dtype is None else prod(self.shape) * DTYPE_BYTES[self.dtype]


def _expected_tensors(m: ModelConfig) -> dict[str, tuple[str, tuple[int, ...]]]:
    """Every checkpoint name the inventory predicts, mapped to ``(group, shape)``."""
    return {name: (t.group, t.shape) for t in m.tensors for name in t.names()}


def _expected_storage(
    arch: ModelConfig, config: Mapping | None = None, dtype: str | None = None
) -> dict[str, Expected]:
    """Every tensor the checkpoint should store, keyed by its name without a wrapper prefix.

    ``dtype`` is a safetensors dtype (``"BF16"``) or a ``torch_dtype``
    (``"bfloat16"``); by default the config's ``torch_dtype``. ``mxfp4`` and
    ``fp8`` block quantization (``config["quantization_config"]``) change
    the stored form of the quantized matrices, see the module docstring.
    """
    dtype = _safetensors_dtype(dtype if dtype is not None else arch.torch_dtype)
    config = config or {}
    quant = config.get("quantization_config") or {}
    if config.get("text_config") and not quant:
        quant = config["text_config"].get("quantization_config") or {}
    method = quant.get("quant_method") if isinstance(quant, Mapping) else None
    out: dict[str, Expected] = {}
    for name, (group, shape) in _expected_tensors(arch).items():
        for e in _stored_forms(name, group, shape, dtype, method, quant):
            out[_canonical(e.name)] = e
    return out


#: Tensors a model creates in float32 whatever its torch_dtype (DeepSeek-V3's router score correction).
_FLOAT32_TENSORS = (".e_score_correction_bias",)


def _stored_forms(name, group, shape, dtype, method, quant) -> list[Expected]:
    params = prod(shape)
    if dtype is not None and name.endswith(_FLOAT32_TENSORS):
        dtype = "F32"
    if method == "mxfp4" and group == "expert" and len(shape) == 3:
        experts, n_in, n_out = shape  # stored transposed: (experts, out, in / 32 blocks, 16 bytes)
        if n_in % 32:
            raise ValueError(f"mxfp4 needs the input width of {name} ({n_in}) to be a multiple of 32")
        return [
            Expected(f"{name}_blocks", group, (experts, n_out, n_in // 32, 16), "U8", params),
            Expected(f"{name}_scales", group, (experts, n_out, n_in // 32), "U8", 0),
        ]
    if method == "fp8" and group in _QUANTIZED_GROUPS and len(shape) == 2 and name.endswith(".weight"):
        block = quant.get("weight_block_size") or [128, 128]
        scale_shape = (ceil(shape[0] / block[0]), ceil(shape[1] / block[1]))
        return [
            Expected(name, group, shape, "F8_E4M3", params),
            Expected(f"{name}_scale_inv", group, scale_shape, "F32", 0),
        ]
    return [Expected(name, group, shape, dtype, params)]


def _safetensors_dtype(dtype) -> str | None:
    if dtype is None:
        return None
    if dtype in DTYPE_BYTES:
        return dtype
    if dtype in TORCH_TO_SAFETENSORS:
        return TORCH_TO_SAFETENSORS[dtype]
    raise ValueError(
        f"dtype must be a safetensors dtype {sorted(DTYPE_BYTES)} or a torch_dtype "
        f"{sorted(TORCH_TO_SAFETENSORS)}, got {dtype!r}"
    )


def _canonical(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


# --------------------------------------------------------------------------------------
# The comparison
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupDiff:
    """Predicted against stored, for one tensor group."""

    group: str
    predicted_params: int
    stored_params: int | None
    missing: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    shape_mismatches: tuple[tuple[str, tuple[int, ...], tuple[int, ...]], ...] = ()
    dtype_mismatches: tuple[tuple[str, str, str], ...] = ()

    @property
    def matches(self) -> bool:
        return not (
            self.missing or self.unexpected or self.shape_mismatches or self.dtype_mismatches
        ) and self.stored_params in (None, self.predicted_params)


@dataclass(frozen=True)
class CheckpointReport:
    """The verdict of :func:`compare`: ``exact`` or the differences, group by group."""

    name: str
    source: str
    exact: bool
    predicted_params: int
    stored_params: int | None
    predicted_bytes: dict[str, int]
    stored_bytes: dict[str, int]
    groups: tuple[GroupDiff, ...]
    extras: dict[str, tuple[int, int]] = field(default_factory=dict)
    index_total_size: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def differences(self) -> tuple[GroupDiff, ...]:
        return tuple(g for g in self.groups if not g.matches)

    def summary(self) -> str:
        """``exact match: ...`` or one line per group that differs."""
        head = (
            f"{self.name}: exact match ({self.predicted_params:,} parameters, compared with the "
            f"{self.source})"
            if self.exact
            else f"{self.name}: differs from the {self.source}"
        )
        lines = [head]
        for g in self.differences:
            lines.append(_describe(g))
        if not self.exact and self.index_total_size is not None and self.source == "index":
            predicted = sum(self.predicted_bytes.values())
            if predicted != self.index_total_size:
                lines.append(
                    f"  bytes: index total_size {self.index_total_size:,} vs predicted {predicted:,} "
                    f"({self.index_total_size - predicted:+,})"
                )
        for kind, (count, nbytes) in sorted(self.extras.items()):
            lines.append(f"  not parameters: {count} {kind} tensor(s), {nbytes:,} bytes")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _describe(g: GroupDiff) -> str:
    parts = []
    if g.missing:
        parts.append(f"{len(g.missing)} missing (e.g. {g.missing[0]})")
    if g.unexpected:
        parts.append(f"{len(g.unexpected)} unexpected (e.g. {g.unexpected[0]})")
    if g.shape_mismatches:
        n, want, got = g.shape_mismatches[0]
        parts.append(
            f"{len(g.shape_mismatches)} with another shape (e.g. {n}: {got} stored, {want} predicted)"
        )
    if g.dtype_mismatches:
        n, want_dtype, got_dtype = g.dtype_mismatches[0]
        parts.append(
            f"{len(g.dtype_mismatches)} in another dtype (e.g. {n}: {got_dtype} stored, {want_dtype} predicted)"
        )
    stored = "?" if g.stored_params is None else f"{g.stored_params:,}"
    return f"  {g.group}: predicted {g.predicted_params:,} parameters, stored {stored}; " + "; ".join(parts)


def compare(
    folder,
    *,
    config=None,
    approximate: bool = False,
    dtype: str | None = None,
    max_header_bytes: int = MAX_HEADER_BYTES,
) -> CheckpointReport:
    """Compare the count a config gives with the tensors a model folder stores (chapter 1, "count your own model").

    ``folder`` holds the safetensors files and/or ``model.safetensors.index.json``.
    ``config`` is ``folder/config.json`` by default; a shipped model name, a
    path to a ``config.json`` or a dict may be given instead. ``dtype``
    overrides the config's ``torch_dtype`` as the predicted storage dtype.
    ``approximate`` is passed to :func:`aiinfra.catalog.models.load` (an
    estimate rarely matches). Returns a :class:`CheckpointReport`; its
    ``summary()`` reads "exact match" or lists the differences by tensor group.
    """
    path = _folder(folder)
    name = _folder_label(path)
    if config is None:
        config = _read_config(path)
    elif isinstance(config, str) and not Path(config).expanduser().exists():
        shipped = next(
            (n for n in models.SHIPPED if models._key(n) == models._key(config.rsplit("/", 1)[-1])), None
        )
        if shipped is None:
            raise ValueError(
                f"config must be a shipped model name {models.shipped_names()} or a path, got {config!r}"
            )
        name = shipped
        config = models.shipped_config(shipped)
    else:
        config = _read_config(config)
    arch = _from_config(config, approximate=approximate, name=name)
    stored = _read_checkpoint(path, max_header_bytes)
    expected = _expected_storage(arch, config, dtype)
    return _compare(arch, expected, stored)


def _compare(arch: ModelConfig, expected: dict[str, Expected], stored: Stored) -> CheckpointReport:
    by_canonical = {_canonical(n): t for n, t in stored.tensors.items()}
    extras: dict[str, list[StoredTensor]] = {}
    unexpected = []
    for key, t in sorted(by_canonical.items()):
        if key not in expected:
            kind = _extra_kind(arch, t.name, key)
            if kind:
                extras.setdefault(kind, []).append(t)
            else:
                unexpected.append(t)
    headers = stored.source == "safetensors headers"
    groups = []
    for group in _ordered_groups(expected):
        rows = [e for e in expected.values() if e.group == group]
        missing: list[str] = []
        shapes: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = []
        dtypes: list[tuple[str, str, str]] = []
        params = 0
        for e in rows:
            found = by_canonical.get(_canonical(e.name))
            if found is None:
                missing.append(e.name)
                continue
            if found.shape is not None and found.dtype is not None:  # a header: an index lists names only
                if found.shape != e.shape:
                    shapes.append((found.name, e.shape, found.shape))
                if e.dtype is not None and found.dtype != e.dtype:
                    dtypes.append((found.name, e.dtype, found.dtype))
                params += e.params if found.shape == e.shape else prod(found.shape)
        groups.append(
            GroupDiff(
                group,
                sum(e.params for e in rows),
                params if headers else None,
                tuple(missing),
                (),
                tuple(shapes),
                tuple(dtypes),
            )
        )
    if unexpected:
        groups.append(
            GroupDiff(
                "unexpected",
                0,
                _known_sum(t.numel for t in unexpected) if headers else None,
                unexpected=tuple(t.name for t in unexpected),
            )
        )
    predicted_bytes = _bytes_by_dtype(expected.values())
    stored_bytes = _bytes_by_dtype(t for t in stored.tensors.values()) if headers else {}
    extra_summary = {k: (len(v), sum(t.nbytes or 0 for t in v)) for k, v in extras.items()}
    notes = list(arch.notes)
    if not arch.exact:
        notes.append("approximate count: " + "; ".join(arch.assumptions))
    if stored.missing_files:
        held = (
            "none"
            if len(stored.missing_files) == len(stored.files)
            else f"{len(stored.files) - len(stored.missing_files)}"
        )
        notes.append(
            f"{held} of the {len(stored.files)} weight files listed in the index are in the folder; "
            f"compared with the index only"
        )
    if any(e.dtype is None for e in expected.values()):
        notes.append(
            "the config names no torch_dtype: dtypes and bytes were not predicted "
            "(pass dtype, e.g. 'bfloat16')"
        )
    exact = all(g.matches for g in groups) and arch.exact
    if not headers:
        total = sum(predicted_bytes.values())
        exact = exact and stored.index_total_size is not None and stored.index_total_size == total
    stored_params = _known_sum(g.stored_params for g in groups) if headers else None
    return CheckpointReport(
        name=arch.name,
        source=stored.source,
        exact=exact,
        predicted_params=models.total_params(arch),
        stored_params=stored_params,
        predicted_bytes=predicted_bytes,
        stored_bytes=stored_bytes,
        groups=tuple(groups),
        extras=extra_summary,
        index_total_size=stored.index_total_size,
        notes=tuple(notes),
    )


def _known_sum(counts: Iterable[int | None]) -> int | None:
    """The sum of the counts, or None if one is unknown (a tensor listed by an index, which gives no shape)."""
    total = 0
    for n in counts:
        if n is None:
            return None
        total += n
    return total


def _ordered_groups(expected: dict[str, Expected]) -> list[str]:
    present = {e.group for e in expected.values()}
    return [g for g in GROUPS if g in present]


def _bytes_by_dtype(tensors) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in tensors:
        if t.dtype is not None:
            out[t.dtype] = out.get(t.dtype, 0) + t.nbytes
    return out


_LAYER = re.compile(r"^layers\.(\d+)\.")


def _extra_kind(arch: ModelConfig, name: str, key: str) -> str | None:
    """Why a stored tensor the inventory does not list is not a parameter, or None if it should be one."""
    if key.endswith(_BUFFER_SUFFIXES):
        return "buffer (attention mask or RoPE table)"
    if key.endswith(_QUANT_SUFFIXES):
        return "quantization scale"
    m = _LAYER.match(key)
    if arch.n_mtp_layers and m and int(m.group(1)) >= arch.n_layers:
        return "multi-token-prediction layer"
    if arch.wrapper_model_type and name.startswith(_VISION_PREFIXES):
        return "vision tower / projector (not counted)"
    return None


__all__ = [
    "CheckpointReport",
    "DTYPE_BYTES",
    "Expected",
    "GroupDiff",
    "INDEX_FILE",
    "MAX_HEADER_BYTES",
    "Stored",
    "StoredTensor",
    "TORCH_TO_SAFETENSORS",
    "PUBLISHED_INDEXES",
    "compare",
    "published_index_folder",
    "read_safetensors_header",
]
