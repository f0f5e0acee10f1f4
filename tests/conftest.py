"""Shared fixtures: the shipped model configs the tests pin numbers on."""
import pytest

from aiinfra.catalog import models


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
