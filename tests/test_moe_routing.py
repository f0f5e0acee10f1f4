"""Tests for aiinfra.moe_routing (chapter 7)."""

import numpy as np
import pytest

from aiinfra.catalog import models
from aiinfra.serving import moe as mr


def test_fraction_one_token_and_limit():
    assert mr.expected_expert_fraction(1, 2, 8) == pytest.approx(0.25)
    assert mr.expected_expert_fraction(1, 8, 256) == pytest.approx(8 / 256)
    assert mr.expected_expert_fraction(10_000, 2, 8) == pytest.approx(1.0)
    b = np.arange(1, 200)
    f = mr.expected_expert_fraction(b, 8, 256)
    assert np.all(np.diff(f) > 0) and np.all(f <= 1)


def test_fraction_by_simulation():
    rng = np.random.default_rng(0)
    k, e, b = 8, 256, 32
    touched = []
    for _ in range(400):
        picks = {int(x) for _ in range(b) for x in rng.choice(e, size=k, replace=False)}
        touched.append(len(picks) / e)
    assert np.mean(touched) == pytest.approx(mr.expected_expert_fraction(b, k, e), abs=0.01)


def test_step_read_at_batch_one_is_decode_read():
    for name in ("Mixtral-8x7B-v0.1", "DeepSeek-V3"):
        m = models.load(name)
        assert mr.step_read_params(m, 1) == pytest.approx(models.decode_read_params(m))
    dense = models.load("Llama-3.1-70B")
    assert mr.step_read_params(dense, 64) == models.decode_read_params(dense)


def test_step_read_tends_to_all_experts():
    m = models.load("DeepSeek-V3")
    big = mr.step_read_params(m, 100_000)
    expected = (
        models.decode_read_params(m)
        - models.params_by_group(m)["expert"] * 8 / 256
        + models.params_by_group(m)["expert"]
    )
    assert big == pytest.approx(expected)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: mr.expected_expert_fraction(0, 2, 8), "tokens"),
        (lambda: mr.expected_expert_fraction(4, 0, 8), "experts_per_token"),
        (lambda: mr.expected_expert_fraction(4, 9, 8), "experts_per_token"),
        (lambda: mr.expected_expert_fraction(4, 2, 0), "n_experts"),
        (lambda: mr.step_read_params("Llama-3.1-8B", 0), "tokens"),
    ],
)
def test_rejections(call, name):
    with pytest.raises(ValueError, match=name):
        call()
