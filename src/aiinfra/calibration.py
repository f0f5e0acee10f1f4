"""Calibration: fit the prediction's few parameters on published runs, and say how well it does on others.

The stored measurements (:mod:`aiinfra.catalog.measurements`) are split once,
by a hash of each point's id (:func:`_is_held_out`: about one in three is held
out, and adding a point never moves another). The parameters of
:class:`aiinfra.predict.Parameters` marked in :data:`FITTED` are fitted on the
training split's expressible points, one set for all engines, by minimising
``sum ln(measured / predicted)^2`` (:func:`fit`: cyclic golden-section search
inside each parameter's range, deterministic). Points the model cannot express
are listed with their reason (:func:`rows`), never fitted and never bent.

The result is data: ``catalog/data/calibration.json`` holds the fitted values
with the fit's provenance (which points, which loss, the held-out error), and
:func:`load` reads it; ``tests/test_calibration.py`` refits and checks that
the stored file is reproduced. Regenerate it with ``python -m aiinfra.calibration``.

Serves: chapter 8 ("How good is the model?") and every prediction of
:mod:`aiinfra.predict`.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from aiinfra import predict, units

__all__ = [
    "FITTED",
    "SEARCH_RANGES",
    "BAND_FACTOR",
    "Calibration",
    "Row",
    "setup_of",
    "rows",
    "fit",
    "summary",
    "load",
]

#: The parameters a fit moves; the others keep their stated values (:data:`aiinfra.predict.PARAMETER_SPECS`).
FITTED = (
    "eta_b_decode",
    "eta_b_kv",
    "eta_f_decode",
    "eta_b_prefill",
    "eta_f_prefill",
    "layer_overhead_graph_s",
    "layer_overhead_eager_s",
)
#: Where the search looks for each fitted parameter (inside its allowed range).
SEARCH_RANGES = {
    "eta_b_decode": (0.05, 1.0),
    "eta_b_kv": (0.05, 1.0),
    "eta_f_decode": (0.05, 1.0),
    "eta_b_prefill": (0.05, 1.0),
    "eta_f_prefill": (0.05, 1.0),
    "layer_overhead_graph_s": (0.0, 5e-4),
    "layer_overhead_eager_s": (0.0, 5e-4),
}
#: Every expressible stored point, training or held out, is predicted within this factor of its measurement.
BAND_FACTOR = 2.0
#: Starting point of the search (the stated values of the fixed parameters ride along).
_START = predict.Parameters(0.7, 0.5, 0.7, 0.5, 3e-5, 1e-4, eta_b_kv=0.7)
_SWEEPS = 6
_GOLDEN_STEPS = 25


def _kv_default(compute_precision: str) -> str:
    """The KV format assumed where a source does not state it: FP8 when the math runs in FP8 or FP4, else BF16."""
    return "fp8" if compute_precision in ("fp8", "fp4") else "bf16"


@dataclass(frozen=True)
class Calibration:
    """A named parameter set and where it came from (``provenance``: the fit's record, or a note)."""

    name: str
    parameters: predict.Parameters
    provenance: dict


@dataclass(frozen=True)
class Row:
    """One stored point beside the model: ``bound``, ``predicted``, ``measured`` in the metric's SI unit.

    ``ratio`` is measured over predicted; ``split`` is ``"train"`` or
    ``"held-out"``; for a point the model cannot express, ``bound`` and
    ``predicted`` are None and ``why_not`` says why.
    """

    id: str
    metric: str
    split: str
    measured: float
    bound: float | None
    predicted: float | None
    why_not: str | None

    @property
    def ratio(self) -> float | None:
        return None if self.predicted is None else self.measured / self.predicted

    @property
    def abs_ln_error(self) -> float | None:
        return None if self.predicted is None else abs(math.log(self.measured / self.predicted))


def _is_held_out(point_id: str) -> bool:
    """Whether a point belongs to the held-out split: the first byte of ``sha256(id)`` mod 3 is 0."""
    return hashlib.sha256(point_id.encode("utf-8")).digest()[0] % 3 == 0


@cache
def setup_of(m) -> predict.Setup:
    """The :class:`aiinfra.predict.Setup` of a stored point.

    An unstated KV precision is FP8 when the math runs in FP8 or FP4 (the
    engines that quantise the math quantise the cache), else BF16; an unstated
    graph capture is on (every engine's default). Pipeline parallelism is not
    modelled.
    """
    if m.pp != 1:
        raise ValueError(f"pp must be 1 (pipeline parallelism is not modelled), got {m.pp} for {m.id!r}")
    return predict.Setup(
        m.model,
        m.gpu,
        tp=m.tp,
        replicas=m.replicas,
        weight_precision=m.weight_precision,
        kv_bytes_per_element=units.bytes_per_param(m.kv_precision or _kv_default(m.compute_precision)),
        compute_precision=m.compute_precision,
        graph_capture=True if m.graph_capture is None else m.graph_capture,
    )


def _value(m, p: predict.Parameters, setup) -> float:
    prompt = max(m.prompt_tokens, 1)
    batch = m.batch or predict.max_batch(setup, p, prompt, m.output_tokens) * m.replicas
    return getattr(predict._speeds(setup, p, max(batch, 1), prompt, m.output_tokens), m.metric)


def _predicted_value(m, p: predict.Parameters) -> float:
    """The prediction of a point's metric under ``p`` (batch 0: the largest batch that fits under ``p``)."""
    return _value(m, p, setup_of(m))


def _bound_value(m) -> float:
    """The bound of a point's metric (:data:`aiinfra.predict.IDEAL`; batch 0 at the bound's own largest batch)."""
    return _value(m, predict.IDEAL, setup_of(m))


def _loss(points, p) -> float:
    return float(sum(math.log(m.value / _predicted_value(m, p)) ** 2 for m in points))


def _golden(f, lo, hi):
    g = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = lo, hi
    c, d = b - g * (b - a), a + g * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(_GOLDEN_STEPS):
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - g * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + g * (b - a)
            fd = f(d)
    return c if fc <= fd else d


def _stored():
    from aiinfra.catalog import measurements

    return measurements.points()


def _training(points=None):
    pts = _stored() if points is None else points
    return [m for m in pts if m.expressible and not _is_held_out(m.id)]


def fit(points=None) -> Calibration:
    """Fit :data:`FITTED` on the expressible training points of ``points`` (default: every stored point).

    Cyclic coordinate search: each sweep minimises the loss along one
    parameter at a time by golden-section search inside
    :data:`SEARCH_RANGES`, :data:`_SWEEPS` sweeps from a fixed start.
    Returns a :class:`Calibration` whose provenance records the points, the
    loss and the held-out summary.
    """
    train = _training(points)
    if not train:
        raise ValueError("points must include at least one expressible training point")
    values = _START.as_dict()
    for _ in range(_SWEEPS):
        for name in FITTED:
            lo, hi = SEARCH_RANGES[name]

            def along(x, name=name):
                return _loss(train, predict.Parameters(**{**values, name: x}))

            values[name] = float(f"{_golden(along, lo, hi):.6g}")
    params = predict.Parameters(**values)
    table = rows(params, points)
    provenance = {
        "method": "least squares of ln(measured/predicted) over the training split; cyclic golden-section "
        f"search, {_SWEEPS} sweeps of {_GOLDEN_STEPS} steps, from {_START.as_dict()}",
        "split": "held out when sha256(id)[0] % 3 == 0",
        "training_ids": sorted(m.id for m in train),
        "held_out_ids": sorted(r.id for r in table if r.split == "held-out" and r.predicted is not None),
        "unexpressible": {r.id: r.why_not for r in table if r.predicted is None},
        "training_loss": round(_loss(train, params), 6),
        **{k: round(v, 6) for k, v in summary(table).items()},
    }
    return Calibration("fit-all-engines", params, provenance)


def rows(p: predict.Parameters | None = None, points=None) -> list[Row]:
    """Every stored point beside its bound and its prediction under ``p`` (default: the stored calibration)."""
    params = load().parameters if p is None else p
    out = []
    for m in _stored() if points is None else points:
        split = "held-out" if _is_held_out(m.id) else "train"
        if not m.expressible:
            out.append(Row(m.id, m.metric, split, m.value, None, None, m.why_not))
            continue
        out.append(Row(m.id, m.metric, split, m.value, _bound_value(m), _predicted_value(m, params), None))
    return out


def summary(table: list[Row]) -> dict:
    """Median and worst ``|ln(measured / predicted)|`` of the training and the held-out split."""
    out: dict[str, int | float] = {}
    for split, key in (("train", "train"), ("held-out", "held_out")):
        errs = [e for r in table if r.split == split and (e := r.abs_ln_error) is not None]
        out[f"{key}_points"] = len(errs)
        out[f"{key}_median_abs_ln"] = float(np.median(errs)) if errs else float("nan")
        out[f"{key}_worst_abs_ln"] = float(max(errs)) if errs else float("nan")
    return out


def _to_json(c: Calibration) -> str:
    """The calibration file's text: parameters (with unit, range, meaning, source) and provenance."""
    params = {
        name: {"value": value, **predict.PARAMETER_SPECS[name].__dict__, "fitted": name in FITTED}
        for name, value in c.parameters.as_dict().items()
    }
    return json.dumps({"name": c.name, "parameters": params, "provenance": c.provenance}, indent=1) + "\n"


def load(path=None) -> Calibration:
    """The stored calibration (``catalog/data/calibration.json``), or the one at ``path``."""
    if path is None:
        text = resources.files("aiinfra.catalog").joinpath("data", "calibration.json").read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    d = json.loads(text)
    values = {k: v["value"] for k, v in d["parameters"].items()}
    return Calibration(d["name"], predict.Parameters(**values), d["provenance"])


if __name__ == "__main__":  # pragma: no cover - the regeneration entry point
    out = Path(__file__).parent / "catalog" / "data" / "calibration.json"
    out.write_text(_to_json(fit()), encoding="utf-8")
    print(f"wrote {out}")
