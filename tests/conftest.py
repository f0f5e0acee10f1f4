"""Shared fixtures: the shipped model configs the tests pin numbers on; the hypothesis profiles.

Property tests run derandomized (the same examples every run, no example
database) under CI and in ``make test``: profile ``ci``, chosen by
``HYPOTHESIS_PROFILE=ci`` or by the ``CI`` environment variable. Plain
``pytest`` uses profile ``dev`` (random examples) unless told otherwise.
"""

import os

import pytest
from hypothesis import settings

from aiinfra.catalog import models

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(scope="session")
def r1_70b():
    return models.load("DeepSeek-R1-Distill-Llama-70B")


@pytest.fixture(scope="session")
def qwen3_8b():
    return models.load("Qwen3-8B")


@pytest.fixture(scope="session")
def mixtral():
    return models.load("Mixtral-8x7B-v0.1")


@pytest.fixture(scope="session")
def deepseek_v3():
    return models.load("DeepSeek-V3")
