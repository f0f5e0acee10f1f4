"""Published serving measurements: what real engines achieved, with the conditions each source states.

Every record is one number a public source printed (an engine's benchmark page, a launch note, a cloud
vendor's blog, the book's own seed run), converted to SI: seconds for ``ttft_s``, ``tpot_s``, ``step_s`` and
``latency_s``, tokens per second for ``throughput_tok_s`` (all GPUs of all replicas together) and
``user_tok_s`` (one request's stream). The conditions are recorded as the source gives them; where it is
silent the field says so (``graph_capture`` and ``kv_precision`` may be ``None``, ``batch`` 0 means "as many
concurrent requests as fit", the engine's choice, and ``prompt_tokens`` 0 means the source states no
prompt length). A point the step model cannot express carries
``expressible=False`` and the reason in ``why_not``; it is kept, never adjusted.

Chapter 8 ("How good is the model?") compares every point with the bound and the prediction; the
calibration fits on a split of these points. The data lives in ``catalog/data/measurements.json``.
"""

from __future__ import annotations

import json
import numbers
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources

#: What a point may measure, and the unit of its ``value``.
METRICS: dict[str, str] = {
    "ttft_s": "s",
    "tpot_s": "s",
    "step_s": "s",
    "latency_s": "s",
    "throughput_tok_s": "tokens/s",
    "user_tok_s": "tokens/s",
}
ENGINES = frozenset({"TensorRT-LLM", "vLLM", "SGLang", "gpt-fast", "MLPerf", "seed"})
WEIGHT_PRECISIONS = frozenset({"fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"})
KV_PRECISIONS = frozenset({"fp32", "bf16", "fp16", "fp8"})
COMPUTE_PRECISIONS = frozenset({"bf16", "fp16", "fp8", "fp4"})


@dataclass(frozen=True)
class Measurement:
    """One published measurement and its conditions (see the module docstring for units and conventions)."""

    id: str
    source: str  # key in book/references.bib
    url: str | None  # None only for the seed's run, which has no public page
    engine: str
    graph_capture: bool | None
    model: str  # a shipped catalog model name
    gpu: str  # a catalog GPU name
    tp: int
    pp: int
    replicas: int
    weight_precision: str
    kv_precision: str | None
    compute_precision: str
    batch: int  # concurrent requests; 0: as many as fit, not stated
    prompt_tokens: int
    output_tokens: int
    metric: str
    value: float
    expressible: bool
    why_not: str | None
    notes: str

    def __post_init__(self):
        for f in fields(self):
            _check_field(self, f.name, getattr(self, f.name))
        if self.expressible == (self.why_not is not None):
            raise ValueError(
                f"why_not must be a reason exactly when expressible is False (point {self.id!r}), "
                f"got expressible={self.expressible!r}, why_not={self.why_not!r}"
            )
        if (self.url is None) != (self.engine == "seed"):
            raise ValueError(f"url must be an https address unless engine is 'seed' (point {self.id!r})")

    @property
    def n_gpus(self) -> int:
        """GPUs the run used: ``tp * pp * replicas``."""
        return self.tp * self.pp * self.replicas


def _fail(point, name: str, what: str, value) -> None:
    raise ValueError(f"{name} must be {what} (point {getattr(point, 'id', '?')!r}), got {value!r}")


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _check_field(point, name: str, v) -> None:
    text = {"id", "source", "engine", "model", "gpu", "notes"}
    minimum = {"tp": 1, "pp": 1, "replicas": 1, "batch": 0, "prompt_tokens": 0, "output_tokens": 1}
    sets = {
        "engine": ENGINES,
        "metric": set(METRICS),
        "weight_precision": WEIGHT_PRECISIONS,
        "compute_precision": COMPUTE_PRECISIONS,
    }
    if name in text and not (isinstance(v, str) and (v.strip() or name == "notes")):
        _fail(point, name, "a non-empty string", v)
    if name in sets and v not in sets[name]:
        _fail(point, name, f"one of {sorted(sets[name])}", v)
    if name == "kv_precision" and v is not None and v not in KV_PRECISIONS:
        _fail(point, name, f"None (not stated) or one of {sorted(KV_PRECISIONS)}", v)
    if name in minimum and not (_is_int(v) and v >= minimum[name]):
        _fail(point, name, f"an integer >= {minimum[name]}", v)
    if name == "value" and not (_is_real(v) and 0 < v < float("inf")):
        _fail(point, name, "a finite number > 0 in SI units", v)
    if name == "graph_capture" and v not in (True, False, None):
        _fail(point, name, "True, False or None (not stated)", v)
    if name == "expressible" and not isinstance(v, bool):
        _fail(point, name, "True or False", v)
    if name == "why_not" and v is not None and not (isinstance(v, str) and v.strip()):
        _fail(point, name, "None or a non-empty reason", v)
    if name == "url" and v is not None and not (isinstance(v, str) and v.startswith("https://")):
        _fail(point, name, "None or an https:// address", v)


def from_dict(d) -> Measurement:
    """One :class:`Measurement` from a dict with exactly the record's keys; a bad field raises ``ValueError``."""
    if not isinstance(d, dict):
        raise ValueError(f"point must be a dict of the Measurement fields, got {type(d).__name__}")
    names = [f.name for f in fields(Measurement)]
    missing, extra = set(names) - set(d), set(d) - set(names)
    if missing or extra:
        raise ValueError(
            f"point {d.get('id')!r} must have exactly the fields {names}: "
            f"missing {sorted(missing)}, unknown {sorted(extra)}"
        )
    return Measurement(**d)


@cache
def points() -> tuple[Measurement, ...]:
    """Every stored measurement, in the order shipped; ids are unique."""
    text = (
        resources.files("aiinfra.catalog").joinpath("data", "measurements.json").read_text(encoding="utf-8")
    )
    out = tuple(from_dict(d) for d in json.loads(text)["points"])
    ids = [p.id for p in out]
    if len(set(ids)) != len(ids):
        raise ValueError(f"id must be unique, got duplicates {sorted({i for i in ids if ids.count(i) > 1})}")
    return out


def point(id: str) -> Measurement:
    """The stored measurement called ``id``."""
    by_id = {p.id: p for p in points()}
    if id not in by_id:
        raise ValueError(f"id must be one of the {len(by_id)} stored points, got {id!r}")
    return by_id[id]


def sources() -> list[str]:
    """The bibliography keys of the sources, sorted."""
    return sorted({p.source for p in points()})


__all__ = [
    "METRICS",
    "ENGINES",
    "WEIGHT_PRECISIONS",
    "KV_PRECISIONS",
    "COMPUTE_PRECISIONS",
    "Measurement",
    "from_dict",
    "points",
    "point",
    "sources",
]
