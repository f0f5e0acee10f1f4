"""Chapter 3 figure: the 2N rule against the exact count."""

import io

import pytest
from matplotlib.figure import Figure

from aiinfra import compute, units
from aiinfra.book.figures import ch03


def _png_bytes(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=56)
    return len(buf.getvalue())


def test_drift_readouts_match_the_library():
    fig, r = ch03.two_n_drift(2048)
    assert isinstance(fig, Figure)
    parts = compute.decode_flops_breakdown("Qwen3-8B", 2048)
    assert r["exact, one step"] == units.fmt_flops(parts["exact"]["total"]) == "16.34 GFLOPs"
    assert r["2N rule"] == "16.38 GFLOPs"
    assert r["exact / 2N"] == "0.998"  # 16.34 / 16.38, the source's quick reference
    # by hand: each context token adds 4 L H d_head = 4 x 36 x 32 x 128 = 589,824 FLOPs of attention, so the
    # exact count passes 1.1 x 2N at about 2,048 + (1.1 x 16.381 - 16.34) GFLOPs / 589,824 = 4,896 tokens
    assert r["2N is > 10% short beyond"] == "4,889 tokens"
    assert pytest.approx(4889, rel=0.005) == 2048 + (1.1 * 16.381e9 - 16.34e9) / 589_824
    assert _png_bytes(fig) < 120_000


def test_drift_grows_with_context():
    ratios = [float(ch03.two_n_drift(n)[1]["exact / 2N"]) for n in (1024, 32768)]
    assert ratios[0] < 1.1 < ratios[1]
    _, r = ch03.two_n_drift(4096, model="Llama-3.1-70B", tolerance=0.2)
    assert (
        r["2N is > 20% short beyond"]
        == f"{compute.context_where_two_n_is_off('Llama-3.1-70B', 0.2):,.0f} tokens"
    )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(context_tokens=-1), "context_tokens"),
        (dict(context_tokens=10.5), "context_tokens"),
        (dict(tolerance=0), "tolerance"),
        (dict(tolerance=1), "tolerance"),
    ],
)
def test_drift_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ch03.two_n_drift(**kwargs)


def test_slider_is_valid():
    (s,) = ch03.two_n_drift_sliders()
    assert s.default in s.values
    ch03.two_n_drift(s.values[-1])


def test_intensity_readouts_match_the_library():
    fig, r = ch03.decode_intensity(8192)
    assert isinstance(fig, Figure)
    assert r["ridge"] == "206 FLOP/B"  # 989.4 TFLOP/s / 4.8 TB/s
    assert r["Llama-3.1-70B, batch 256"] == "50 FLOP/B"  # by hand in tests/test_decode_attention.py
    assert _png_bytes(fig) < 120_000


def test_intensity_gqa_flattens_mla_climbs_with_context():
    _, short = ch03.decode_intensity(1024)
    _, long = ch03.decode_intensity(131072)
    gqa = [float(x["Llama-3.1-70B, batch 256"].split()[0]) for x in (short, long)]
    mla = [float(x["DeepSeek-V3, batch 256"].split()[0]) for x in (short, long)]
    assert gqa[1] < 12 < gqa[0]  # falls towards 8, its attention's intensity
    assert mla[1] > mla[0]  # rises towards 242


@pytest.mark.parametrize(
    "kwargs, match", [(dict(context_tokens=0), "context_tokens"), (dict(read_batch=0), "read_batch")]
)
def test_intensity_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ch03.decode_intensity(**kwargs)


def test_intensity_slider_is_valid():
    (s,) = ch03.decode_intensity_sliders()
    assert s.default in s.values
    ch03.decode_intensity(s.values[-1])
