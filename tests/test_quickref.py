"""Chapter 1 quick-reference tables (aiinfra.quickref)."""
import pytest

from aiinfra import hardware, quickref


def test_markdown_table_shape_and_escaping():
    md = quickref.markdown_table(["a", "b"], [[1, "x|y"], ["z", 2.5]])
    lines = md.splitlines()
    assert lines[0] == "| a | b |"
    assert lines[1] == "|:--|--:|"
    assert "x\\|y" in lines[2]
    assert len(lines) == 4


@pytest.mark.parametrize("kw,name", [
    (dict(headers=[], rows=[]), "headers"),
    (dict(headers=["a"], rows=[[1, 2]]), "rows"),
    (dict(headers=["a", "b"], rows=[], align="l"), "align"),
    (dict(headers=["a", "b"], rows=[], align="lx"), "align"),
])
def test_markdown_table_rejects_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        quickref.markdown_table(**kw)


def test_gpu_rows_pin_the_source_table():
    # first-encounter quick reference: 0.99, 0.49 and 0.30 ms to read 1 GB
    for name, ms in [("RTX 4090", 0.99), ("A100 80GB SXM", 0.49), ("H100 SXM", 0.30)]:
        row = quickref.gpu_row(hardware.gpu(name))
        assert round(row.time_to_read_1gb_s * 1e3, 2) == ms
    h100 = quickref.gpu_row(hardware.gpu("H100 SXM"))
    assert h100.ridge_flops_per_byte == pytest.approx(295.3, abs=0.1)
    md = quickref.gpu_quick_reference_markdown([hardware.gpu("H100 SXM")])
    assert "| H100 SXM | 80 | 3.35 | 989.4 | 0.30 | 295 |" in md


def test_gpu_row_rejects_gpu_without_bf16_and_non_gpus():
    with pytest.raises(ValueError, match="bf16_dense_flops_per_s"):
        quickref.gpu_row(hardware.gpu("V100 SXM2 32GB"))
    with pytest.raises(ValueError, match="gpu"):
        quickref.gpu_row("H100")
    with pytest.raises(ValueError, match="gpus"):
        quickref.gpu_quick_reference_markdown([])


def test_qwen3_8b_needs_pin_the_notes():
    n = quickref.model_step_needs("Qwen3-8B")
    assert n.weight_bytes == 2 * 8_190_735_360                 # 16.38 GB
    assert n.kv_bytes_per_token == 147_456                     # 144 KiB
    assert n.kv_bytes_context == 288 * 2**20                   # 288 MiB at 2,048 tokens
    assert n.decode_weight_bytes_read == 15_136_819_200        # 15.14 GB
    assert round(n.prefill_flops / 1e12, 2) == 29.69           # causal prefill
    assert round(n.decode_flops / 1e9, 2) == 16.34
    # the chapter's lower bounds on the RTX PRO 6000: 58.9 ms, 0.0324 ms, 8.62 ms
    g = hardware.gpu("RTX PRO 6000 Blackwell Workstation")
    assert round(n.prefill_flops / g.bf16_dense_flops_per_s * 1e3, 1) == 58.9
    assert round(n.decode_flops / g.bf16_dense_flops_per_s * 1e3, 4) == 0.0324
    reads = n.decode_weight_bytes_read + n.decode_kv_bytes_read
    assert round(reads / g.memory_bandwidth_bytes_per_s * 1e3, 2) == 8.62


@pytest.mark.parametrize("kw,name", [
    (dict(prompt_tokens=0), "prompt_tokens"), (dict(context_tokens=-1), "context_tokens"),
    (dict(precision="fp7"), "precision"),
])
def test_model_step_needs_rejects_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        quickref.model_step_needs("Qwen3-8B", **kw)
