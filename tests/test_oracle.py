"""The calculator against the oracle's record (``make oracle``: transformers on the meta device).

``src/aiinfra/catalog/data/oracle.json`` holds, for every shipped config, what ``transformers``
counts when it builds the model on the meta device (parameters plus persistent buffers, by tensor
group, with a name classifier of its own) and the bytes its own cache object holds after a forward
pass over 1, 100 and 5,000 tokens. The exact counter must agree with every number, so the totals
pinned in test_architectures.py and test_models.py cannot drift from the oracle's either.
"""

import json
from importlib import resources

import pytest

from aiinfra import memory
from aiinfra.catalog import models

ORACLE = json.loads(resources.files("aiinfra.catalog").joinpath("data", "oracle.json").read_text("utf-8"))
ROWS = ORACLE["configs"]


def test_the_oracle_covers_every_shipped_config_with_no_difference():
    assert set(ROWS) == set(models.shipped_names())
    assert all(r["group_differences"] == {} for r in ROWS.values())
    assert ORACLE["transformers"] and ORACLE["contexts"] == [1, 100, 5000]


@pytest.mark.parametrize("name", sorted(ROWS))
def test_counts_agree_with_the_oracle_group_by_group(name):
    m, row = models.load(name), ROWS[name]
    assert models.total_params(m) == row["total"]
    assert models.active_params(m) == row["active"]
    assert models.params_by_group(m) == {g: n for g, n in row["groups"].items() if n}
    assert m.model_type == row["model_type"]


def _between_steps(m, n: int) -> float:
    """transformers keeps ``window - 1`` tokens in a full sliding layer (the next token brings the last one)."""
    return sum(a.kv_elements_per_token * 2 for a in m.attention if a.window is not None and n >= a.window)


@pytest.mark.filterwarnings("ignore::aiinfra.catalog.models.ContextLengthWarning")
@pytest.mark.parametrize("name", sorted(ROWS))
def test_cache_bytes_agree_with_the_models_own_cache(name):
    m, row = models.load(name), ROWS[name]
    for n, cached in row["cache_bytes_bf16"].items():
        n = int(n)
        expected = memory.request_state_bytes(m, n) - _between_steps(m, n)
        assert cached == expected, (name, n)
