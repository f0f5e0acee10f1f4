"""The calibration: fitted on the training split, stored as data, judged on the held-out split."""

import json
import math

import pytest

from aiinfra import calibration, predict
from aiinfra.catalog import measurements


@pytest.fixture(scope="module")
def table():
    return calibration.rows()


def test_the_stored_calibration_is_what_a_refit_gives():
    stored = calibration.load()
    refit = calibration.fit()
    for name in calibration.FITTED:
        assert getattr(refit.parameters, name) == pytest.approx(
            getattr(stored.parameters, name), rel=1e-4, abs=1e-9
        )
    assert refit.provenance["training_ids"] == stored.provenance["training_ids"]
    assert refit.provenance["held_out_ids"] == stored.provenance["held_out_ids"]


def test_the_file_records_every_parameter_with_its_range_meaning_and_source():
    text = (
        calibration.Path(calibration.__file__).parent / "catalog" / "data" / "calibration.json"
    ).read_text()
    data = json.loads(text)
    assert set(data["parameters"]) == set(predict.PARAMETER_SPECS)
    for name, entry in data["parameters"].items():
        assert (
            entry["domain"] == predict.PARAMETER_SPECS[name].domain and entry["source"] and entry["meaning"]
        )
        assert entry["fitted"] == (name in calibration.FITTED)
    assert data["provenance"]["split"] and data["provenance"]["training_ids"]


def test_held_out_error_meets_the_issue_and_is_pinned(table):
    s = calibration.summary(table)
    held_out = [r for r in table if r.split == "held-out" and r.predicted is not None]
    assert all(0.5 <= r.ratio <= 2.0 for r in held_out)
    assert s["held_out_points"] == 15
    assert s["held_out_median_abs_ln"] <= math.log(1.25) and s["held_out_worst_abs_ln"] <= math.log(2.0)
    assert s["held_out_median_abs_ln"] == pytest.approx(0.1181, abs=5e-4)
    assert s["held_out_worst_abs_ln"] == pytest.approx(0.5751, abs=5e-4)


def test_every_expressible_point_is_within_its_band(table):
    for r in table:
        if r.predicted is not None:
            assert 1 / calibration.BAND_FACTOR <= r.ratio <= calibration.BAND_FACTOR, r.id


def test_no_prediction_beats_its_bound(table):
    for r in table:
        if r.predicted is None:
            continue
        faster_is_smaller = r.metric in ("ttft_s", "tpot_s", "step_s", "latency_s")
        assert (r.predicted >= r.bound) if faster_is_smaller else (r.predicted <= r.bound), r.id


def test_unexpressible_points_are_listed_with_their_reason_never_fitted(table):
    dropped = [r for r in table if r.predicted is None]
    assert dropped and all(r.why_not for r in dropped)
    stored = calibration.load().provenance
    assert set(stored["unexpressible"]) == {r.id for r in dropped}
    # the stored list is the records' own: every point marked inexpressible, with its reason word for word
    records = {m.id: m.why_not for m in measurements.points() if not m.expressible}
    assert stored["unexpressible"] == records and len(records) == 6
    assert not set(stored["unexpressible"]) & set(stored["training_ids"] + stored["held_out_ids"])


def test_the_split_is_a_fixed_hash_of_the_id():
    # sha256("gptfast-7b-tp1-int8")[0] = 0x.. is a multiple of 3; the split never depends on the other points
    assert calibration._is_held_out("gptfast-7b-tp1-int8")
    assert not calibration._is_held_out("gptfast-7b-tp1-bf16")
    ids = [m.id for m in measurements.points()]
    assert 0.2 < sum(map(calibration._is_held_out, ids)) / len(ids) < 0.45


def test_a_fit_needs_training_points():
    held = [m for m in measurements.points() if calibration._is_held_out(m.id)]
    with pytest.raises(ValueError, match="points"):
        calibration.fit(held)


def test_pipeline_parallel_points_are_refused():
    m = measurements.points()[0]
    with pytest.raises(ValueError, match="pp"):
        calibration.setup_of(measurements.from_dict({**m.__dict__, "pp": 2}))
