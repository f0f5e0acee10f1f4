"""Chapter 1: bytes moved by one request (aiinfra.memory)."""

import math

import numpy as np
import pytest
import sympy as sp

from aiinfra import memory

QWEN3_8B_KV_PER_TOKEN = 147_456  # 2 * 36 layers * 8 KV heads * 128 * 2 B (NOTES.md)


def test_kv_written_is_prompt_plus_output_entries():
    assert memory._kv_bytes_written(QWEN3_8B_KV_PER_TOKEN, 2048, 0) == 2048 * QWEN3_8B_KV_PER_TOKEN
    # 2,048 tokens of Qwen3-8B KV is 288 MiB (NOTES.md)
    assert memory._kv_bytes_written(QWEN3_8B_KV_PER_TOKEN, 2048, 0) == 288 * 2**20
    assert memory._kv_bytes_written(100.0, 10, 5) == 1500.0


def test_kv_read_matches_explicit_sum():
    k, p, g = 7.0, 13, 29
    explicit = sum(k * (p + i) for i in range(g))
    assert memory.kv_bytes_read(k, p, g) == pytest.approx(explicit, rel=1e-15)


def test_kv_read_first_step_reads_prompt_only():
    assert memory.kv_bytes_read(10.0, 2048, 1) == 20480.0
    assert memory.kv_bytes_read(10.0, 2048, 0) == 0.0


def test_kv_read_grows_quadratically_weights_linearly():
    k = QWEN3_8B_KV_PER_TOKEN
    short, long_ = memory.kv_bytes_read(k, 0, 100), memory.kv_bytes_read(k, 0, 1000)
    # with no prompt, G(G-1)/2 grows ~100x when G grows 10x
    assert long_ / short == pytest.approx(1000 * 999 / (100 * 99))
    assert memory._weight_bytes_streamed(1e9, 1000) / memory._weight_bytes_streamed(1e9, 100) == 10.0


def test_arrays_are_accepted():
    g = np.array([1, 10, 100])
    out = memory.kv_bytes_read(2.0, 5, g)
    assert out.shape == (3,)
    assert out[0] == 10.0
    assert np.all(np.diff(out) > 0)


def test_activation_bytes_per_token_bf16():
    # Qwen3-8B hidden 4096 in BF16: 8 KiB per token per pipeline cut
    assert memory._activation_bytes_per_token(4096) == 8192.0
    assert memory._activation_bytes_per_token(8192, 1) == 8192.0


def test_request_traffic_table():
    t = memory.request_traffic(16.38e9, 15.14e9, QWEN3_8B_KV_PER_TOKEN, 4096, 2048, 100)
    assert t["weights_loaded"] == 16.38e9
    assert t["weights_streamed"] == pytest.approx(1514e9)
    assert t["kv_written"] == (2048 + 100) * QWEN3_8B_KV_PER_TOKEN
    assert t["steps"] == 100
    assert t["activation_per_token_per_cut"] == 8192.0
    # over 100 steps the weights stream ~92x their resident size
    assert t["weights_streamed"] / t["weights_loaded"] == pytest.approx(100 * 15.14 / 16.38)


def test_kv_read_twin_is_the_closed_form_sum():
    k, p, g, i = sp.symbols("k_tok P G i", positive=True)
    total = sp.summation(p + i, (i, 0, g - 1))
    expr = memory.kv_bytes_read.sym
    subs = {memory.kv_bytes_read.sym_args["kv_bytes_per_token"]: 1}
    assert (
        sp.simplify(
            expr.subs(subs)
            - total.subs(
                {
                    p: memory.kv_bytes_read.sym_args["prompt_tokens"],
                    g: memory.kv_bytes_read.sym_args["output_tokens"],
                }
            )
        )
        == 0
    )


@pytest.mark.parametrize(
    "fn,kwargs,name",
    [
        (
            memory._kv_bytes_written,
            dict(kv_bytes_per_token=0, prompt_tokens=1, output_tokens=1),
            "kv_bytes_per_token",
        ),
        (
            memory._kv_bytes_written,
            dict(kv_bytes_per_token=1, prompt_tokens=-1, output_tokens=1),
            "prompt_tokens",
        ),
        (
            memory.kv_bytes_read,
            dict(kv_bytes_per_token=1, prompt_tokens=1, output_tokens=1.5),
            "output_tokens",
        ),
        (
            memory.kv_bytes_read,
            dict(kv_bytes_per_token=math.nan, prompt_tokens=1, output_tokens=1),
            "kv_bytes_per_token",
        ),
        (
            memory._weight_bytes_streamed,
            dict(weight_bytes_per_step=-1, output_tokens=1),
            "weight_bytes_per_step",
        ),
        (memory._weight_bytes_streamed, dict(weight_bytes_per_step=1, output_tokens=True), "output_tokens"),
        (memory._activation_bytes_per_token, dict(hidden_size=0), "hidden_size"),
        (
            memory._activation_bytes_per_token,
            dict(hidden_size=10, bytes_per_element=math.inf),
            "bytes_per_element",
        ),
        (
            memory.request_traffic,
            dict(
                weight_bytes_resident=0,
                weight_bytes_per_step=1,
                kv_bytes_per_token=1,
                hidden_size=1,
                prompt_tokens=1,
                output_tokens=1,
            ),
            "weight_bytes_resident",
        ),
        (
            memory.request_traffic,
            dict(
                weight_bytes_resident=1,
                weight_bytes_per_step=1,
                kv_bytes_per_token=1,
                hidden_size=1,
                prompt_tokens=1,
                output_tokens=-2,
            ),
            "output_tokens",
        ),
    ],
)
def test_bad_input_names_the_argument(fn, kwargs, name):
    with pytest.raises(ValueError, match=name):
        fn(**kwargs)
