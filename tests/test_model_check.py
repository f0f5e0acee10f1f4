"""Chapter 8's model check: the rows joining stored points with the model, their table and their figure."""

import dataclasses
import math

import pytest
from matplotlib.figure import Figure

from aiinfra import calibration, predict
from aiinfra.book import model_check
from aiinfra.book.figures import ch08
from aiinfra.catalog import measurements

ROWS = model_check.rows()


def test_one_row_per_stored_point_in_order():
    assert [r.id for r in ROWS] == [p.id for p in measurements.points()]
    assert [r.engine for r in ROWS] == [p.engine for p in measurements.points()]
    not_expressible = [r for r in ROWS if r.predicted is None]
    assert len(not_expressible) == 6 and all(r.bound is None and r.why_not for r in not_expressible)


def test_ratio_is_measured_over_predicted():
    r = next(r for r in ROWS if r.id == "seed-qwen3-8b-b1-tpot")
    assert r.measured == 12.1e-3
    assert r.ratio == pytest.approx(12.1e-3 / r.predicted)
    assert next(r for r in ROWS if r.id == "seed-qwen3-8b-b1-tpot-logging").ratio is None


def test_the_bound_is_faster_than_every_measurement():
    # the roofline at 100 % of peak: less time, or more tokens/s, than any engine reached
    for r in ROWS:
        if r.bound is not None:
            assert r.bound > r.measured if r.metric.endswith("tok_s") else r.bound < r.measured, r.id


def test_table_has_every_point_and_marks_the_inexpressible():
    text = model_check.markdown(ROWS)
    lines = text.splitlines()
    assert len(lines) == 2 + 55
    assert text.count("not expressible") == 6
    assert (
        "| seed-qwen3-8b-b1-tpot | seed | tpot_s | held-out | 8.63 ms |" in text
    )  # the seed's 8.62 ms bound


def test_parameter_table_lists_every_parameter_once():
    text = model_check.parameters_markdown(calibration.load())
    assert len(text.splitlines()) == 2 + len(dataclasses.fields(predict.Parameters))
    assert text.count("| fitted |") == len(calibration.FITTED)
    assert text.count("| stated |") == len(dataclasses.fields(predict.Parameters)) - len(calibration.FITTED)
    assert "| `prefill_chunk_tokens` | 8,192 |" in text


def _factor(r, column):
    v = r.predicted if column == "prediction" else r.bound
    return math.exp(abs(math.log(r.measured / v)))


@pytest.mark.parametrize("column, engine", [("prediction", "all"), ("bound", "gpt-fast")])
def test_figure_readouts_are_the_factors_of_the_points_in_colour(column, engine):
    fig, readouts = ch08.model_vs_measured(column, engine, rows=ROWS)
    assert isinstance(fig, Figure)
    shown = [r for r in ROWS if r.predicted is not None and engine in ("all", r.engine)]
    f = sorted(_factor(r, column) for r in shown)
    assert readouts["points in colour"] == str(len(shown)) == ("49" if engine == "all" else "16")
    assert readouts["worst factor off"] == f"x{f[-1]:.2f}"
    assert ch08.BANDS == (1.25, 2.0)
    assert readouts["within x1.25 / within x2"] == f"{sum(x <= 1.25 for x in f)} / {sum(x <= 2 for x in f)}"


def test_sliders_offer_both_columns_and_each_engine():
    column, engine = ch08.model_vs_measured_sliders(ROWS)
    assert tuple(column.values) == ("prediction", "bound")
    assert list(engine.values) == ["all", "TensorRT-LLM", "gpt-fast", "seed", "vLLM"]


@pytest.mark.parametrize(
    "kwargs, name", [({"column": "guess"}, "column"), ({"engine": "llama.cpp"}, "engine")]
)
def test_figure_refuses_bad_controls(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ch08.model_vs_measured(rows=ROWS, **kwargs)


def test_figure_refuses_rows_without_a_prediction():
    with pytest.raises(ValueError, match="rows"):
        ch08.model_vs_measured(rows=[r for r in ROWS if r.predicted is None])


def test_factor_off_is_symmetric_and_optimism_follows_the_unit():
    assert model_check.factor_off(2.0, 1.0) == model_check.factor_off(1.0, 2.0) == pytest.approx(2.0)
    assert model_check.optimistic("tpot_s", measured=1.0, model=0.5)  # less time than measured
    assert not model_check.optimistic("ttft_s", measured=1.0, model=2.0)
    assert model_check.optimistic("throughput_tok_s", measured=100.0, model=200.0)  # more tokens/s
    assert not model_check.optimistic("user_tok_s", measured=100.0, model=50.0)


def test_summary_counts_and_splits():
    s = model_check.summary(ROWS)
    assert (s["points"], s["expressible"]) == (55, 49)
    assert s["train_points"] + s["held_out_points"] == 49
    assert s["bound_optimistic"] == 49  # the bound is faster than every run
    assert s["within"] == [
        sum(_factor(r, "prediction") <= k for r in ROWS if r.predicted) for k in (1.25, 2.0)
    ]
    held = [r for r in ROWS if r.split == "held-out" and r.predicted is not None]
    assert s["held_out_worst_id"] == model_check.largest_misses(held, 1)[0].id
    assert s["held_out_worst"] == pytest.approx(max(_factor(r, "prediction") for r in held))
    # agrees with the calibration's own summary, which works in |ln| rather than factors
    c = calibration.summary(calibration.rows())
    assert s["held_out_median"] == pytest.approx(math.exp(c["held_out_median_abs_ln"]))
    assert s["train_worst"] == pytest.approx(math.exp(c["train_worst_abs_ln"]))


def test_largest_misses_come_furthest_first():
    worst = model_check.largest_misses(ROWS, 4)
    f = [_factor(r, "prediction") for r in worst]
    assert f == sorted(f, reverse=True) and len(worst) == 4
    assert f[-1] >= max(_factor(r, "prediction") for r in ROWS if r.predicted and r not in worst)
