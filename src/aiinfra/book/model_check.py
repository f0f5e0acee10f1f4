"""Chapter 8's check of the model against published runs: one row per stored point, and its table.

:func:`rows` joins every stored measurement (:mod:`aiinfra.catalog.measurements`) with its bound and its
calibrated prediction (:func:`aiinfra.calibration.rows`); :func:`markdown` prints them as the page's table,
:func:`parameters_markdown` the calibration's parameters.
The figure of the same rows is :func:`aiinfra.book.figures.ch08.model_vs_measured`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from aiinfra import calibration, predict, units
from aiinfra.book.tables import markdown_table
from aiinfra.catalog import measurements


@dataclass(frozen=True)
class ModelCheckRow:
    """A stored point beside the model: its engine and split, and measured, bound and predicted values (SI)."""

    id: str
    engine: str
    metric: str
    split: str
    measured: float
    bound: float | None
    predicted: float | None
    why_not: str | None

    @property
    def ratio(self) -> float | None:
        """Measured over predicted (None for a point the model cannot express)."""
        return None if self.predicted is None else self.measured / self.predicted


def rows() -> list[ModelCheckRow]:
    """Every stored point, in the order shipped, with its bound and the stored calibration's prediction."""
    engine = {p.id: p.engine for p in measurements.points()}
    return [
        ModelCheckRow(r.id, engine[r.id], r.metric, r.split, r.measured, r.bound, r.predicted, r.why_not)
        for r in calibration.rows()
    ]


def factor_off(measured: float, model: float) -> float:
    """How far a model value is from a measurement, as a factor >= 1: ``exp|ln(measured / model)|``."""
    return math.exp(abs(math.log(measured / model)))


def optimistic(metric: str, measured: float, model: float) -> bool:
    """Whether ``model`` promises more speed than was measured: less time, or more tokens per second."""
    return model > measured if metric.endswith("tok_s") else model < measured


def _known(row: ModelCheckRow, col: str) -> float:
    """The row's ``bound`` or ``predicted`` value; ``ValueError`` when the row is not expressible (``None``)."""
    v = getattr(row, col)
    if v is None:
        raise ValueError(f"row {row.id!r} has no {col} value (not expressible)")
    return v


def largest_misses(table: list[ModelCheckRow], n: int) -> list[ModelCheckRow]:
    """The ``n`` expressible rows whose prediction is furthest from the measurement, furthest first."""
    ok = [r for r in table if r.predicted is not None]
    return sorted(ok, key=lambda r: -factor_off(r.measured, _known(r, "predicted")))[:n]


def summary(table: list[ModelCheckRow], bands=(1.25, 2.0)) -> dict:
    """The page's numbers: per column (``bound``, ``prediction``) the median and worst factor off over the
    expressible rows and how many are optimistic; the prediction's count within each of ``bands``; per split
    (``train``, ``held_out``) the prediction's median and worst factor, point count and worst point."""
    ok = [r for r in table if r.predicted is not None]
    out: dict[str, int | float | str | list[int]] = {"points": len(table), "expressible": len(ok)}
    for col in ("bound", "prediction"):
        attr = "predicted" if col == "prediction" else col
        f = [factor_off(r.measured, _known(r, attr)) for r in ok]
        out[f"{col}_median"], out[f"{col}_worst"] = float(np.median(f)), max(f)
        out[f"{col}_optimistic"] = sum(optimistic(r.metric, r.measured, _known(r, attr)) for r in ok)
    out["within"] = [sum(factor_off(r.measured, _known(r, "predicted")) <= k for r in ok) for k in bands]
    for split, key in (("train", "train"), ("held-out", "held_out")):
        part = [r for r in ok if r.split == split]
        f = [factor_off(r.measured, _known(r, "predicted")) for r in part]
        out[f"{key}_points"], out[f"{key}_median"], out[f"{key}_worst"] = (
            len(part),
            float(np.median(f)),
            max(f),
        )
        out[f"{key}_worst_id"] = largest_misses(part, 1)[0].id
    return out


def _value(metric: str, v: float | None) -> str:
    if v is None:
        return "-"
    if measurements.METRICS[metric] == "s":
        return units.fmt_time(v, digits=2)
    return f"{v:,.0f} tok/s" if v >= 100 else f"{v:.3g} tok/s"


def markdown(table: list[ModelCheckRow]) -> str:
    """The page's table: point, engine, metric, split, bound, prediction, measured, measured/predicted."""
    body = [
        [
            r.id,
            r.engine,
            r.metric,
            r.split,
            _value(r.metric, r.bound),
            _value(r.metric, r.predicted),
            _value(r.metric, r.measured),
            "not expressible" if r.ratio is None else f"{r.ratio:.2f}",
        ]
        for r in table
    ]
    headers = [
        "point",
        "engine",
        "metric",
        "split",
        "bound",
        "prediction",
        "measured",
        "measured / predicted",
    ]
    return markdown_table(headers, body, align="llllrrrr")


def parameters_markdown(c: calibration.Calibration) -> str:
    """The calibration's parameters: name, value, unit, allowed range, fitted or stated, and meaning."""
    body = []
    for name, value in c.parameters.as_dict().items():
        spec = predict.PARAMETER_SPECS[name]
        shown = (
            units.fmt_time(value, digits=1)
            if spec.unit == "s"
            else f"{value:,}"
            if isinstance(value, int)
            else f"{value:.3g}"
        )
        kind = "fitted" if name in calibration.FITTED else "stated"
        body.append([f"`{name}`", shown, spec.domain, kind, spec.meaning])
    return markdown_table(["parameter", "value", "range", "", "meaning"], body, align="lrlll")


__all__ = [
    "ModelCheckRow",
    "rows",
    "factor_off",
    "optimistic",
    "largest_misses",
    "summary",
    "markdown",
    "parameters_markdown",
]
