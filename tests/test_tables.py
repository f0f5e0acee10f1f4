"""The computed Markdown tables of aiinfra.book.tables."""

import pytest

from aiinfra.book import tables
from aiinfra.book.tables import ch01, ch02, ch06, ch07
from aiinfra.catalog import hardware, reference
from aiinfra.deployment import SERVING_70B, SERVING_CONTEXT_TOKENS, SERVING_TPOT_S


def test_markdown_table_shape_and_escaping():
    md = tables.markdown_table(["a", "b"], [[1, "x|y"], ["z", 2.5]])
    lines = md.splitlines()
    assert lines[0] == "| a | b |"
    assert lines[1] == "|:--|--:|"
    assert "x\\|y" in lines[2]
    assert len(lines) == 4


@pytest.mark.parametrize(
    "kw,name",
    [
        (dict(headers=[], rows=[]), "headers"),
        (dict(headers=["a"], rows=[[1, 2]]), "rows"),
        (dict(headers=["a", "b"], rows=[], align="l"), "align"),
        (dict(headers=["a", "b"], rows=[], align="lx"), "align"),
    ],
)
def test_markdown_table_rejects_bad_input(kw, name):
    with pytest.raises(ValueError, match=name):
        tables.markdown_table(**kw)


def test_gpu_rows_pin_the_source_table():
    # first-encounter quick reference: 0.99, 0.49 and 0.30 ms to read 1 GB
    for name, ms in [("RTX 4090", 0.99), ("A100 80GB SXM", 0.49), ("H100 SXM", 0.30)]:
        row = ch01.gpu_row(hardware.gpu(name))
        assert round(row.time_to_read_1gb_s * 1e3, 2) == ms
    h100 = ch01.gpu_row(hardware.gpu("H100 SXM"))
    assert h100.ridge_flops_per_byte == pytest.approx(295.3, abs=0.1)
    md = ch01.gpu_quick_reference_markdown([hardware.gpu("H100 SXM")])
    assert "| H100 SXM | 80 | 3.35 | 989.4 | 0.30 | 295 |" in md


def test_gpu_row_rejects_gpu_without_bf16_and_non_gpus():
    with pytest.raises(ValueError, match="bf16_dense_flops_per_s"):
        ch01.gpu_row(hardware.gpu("V100 SXM2 32GB"))
    with pytest.raises(ValueError, match="gpu"):
        ch01.gpu_row("H100")
    with pytest.raises(ValueError, match="gpus"):
        ch01.gpu_quick_reference_markdown([])


def test_layer_table_has_every_row_in_order():
    md = ch02.layer_table_markdown()
    lines = md.splitlines()
    assert len(lines) == 2 + len(reference.table("layers"))
    assert lines[2].startswith("| 9 | product |")
    assert lines[-1].startswith("| 1 | fab |")
    assert all(line.count("|") == lines[0].count("|") for line in lines)
    assert ch02.layer_table_markdown(top_down=False).splitlines()[2].startswith("| 1 | fab |")
    with pytest.raises(ValueError, match="top_down"):
        ch02.layer_table_markdown(top_down="yes")


def test_decode_walk_lists_each_layer_once_product_first():
    rows = ch02.decode_walk_markdown().splitlines()[2:]
    assert [r.split("|")[1].strip() for r in rows] == [
        lay.name for lay in reversed(reference.table("layers"))
    ]


def test_scheduler_table():
    md = ch02.scheduler_table_markdown()
    assert "Slurm" in md and "Kubernetes" in md and "nvidia.com/gpu" in md
    assert len(md.splitlines()) == 2 + len(reference.table("schedulers"))


def test_propagation_table_shape_and_links():
    md = ch01.propagation_table_markdown()
    lines = md.splitlines()
    assert len(lines) == 2 + len(reference.table("shifts"))
    assert all(line.count("|") == 5 for line in lines)
    assert "beyond this book" in md
    assert "[6](ch6)" in ch01.propagation_table_markdown(link=lambda c: f"[{c}](ch{c})")
    with pytest.raises(ValueError, match="link"):
        ch01.propagation_table_markdown(link="Ch.")


def test_latency_rows_in_any_unit():
    assert dict(ch01.latency_table_rows("ns"))["L1 cache reference"] == pytest.approx(0.5)
    assert dict(ch01.latency_table_rows("ms"))["Disk seek"] == pytest.approx(10.0)
    with pytest.raises(ValueError, match="unit"):
        ch01.latency_table_rows("hours")


def test_hierarchy_table_has_every_level_and_the_power_column():
    md = ch06.hierarchy_table_markdown()
    assert len(md.splitlines()) == 2 + 5 and "50.00 GB/s" in md
    with_power = ch06.hierarchy_table_markdown(watts_per_gpu=1275.0, pue=1.2)
    # 24,576 GPUs x 1,275 W x 1.2 = 37.6 MW
    assert "37.6 MW" in with_power.splitlines()[-1]


def test_a_price_in_a_table_is_a_dollar_no_notebook_client_takes_for_math():
    """A literal dollar reaches JupyterLab and Colab as tables.DOLLAR; ``$...$`` stays mathematics."""
    layers = ch02.layer_table_markdown()
    assert "per 1e6 tokens" in layers and "$" not in layers.replace(tables.DOLLAR, "")
    md = tables.markdown_table(["cost", "message $S$"], [["\\$5.00", "$S$"]])
    assert md.count(tables.DOLLAR) == 1 and md.count("$S$") == 2 and "\\$" not in md


def test_chapter_6_page_4_values_count_deepseek_v3_slots_and_calls():
    values = ch06.inference_across_chips_values()
    # DeepSeek-V3: 256 routed experts, 8 per token, 61 layers of which the first 3 are dense
    assert (values["E"], values["k"], values["L"], values["moe"]) == (256, 8, 61, 58)
    assert values["calls"] == 116  # one dispatch and one combine per MoE layer
    # 256 experts + 32 redundant = 288 slots over 72 GPUs: 4 per GPU, 3 without the redundant ones
    assert (values["slots"], values["per"], values["lo"]) == (288, 4, 3)
    assert values["nvl_all"] == (values["nvl_b"] * 72, ",")


def test_chapter_7_page_7_values_chain_draft_of_four():
    values = ch07.serving_techniques_values(SERVING_70B, SERVING_CONTEXT_TOKENS, SERVING_TPOT_S)
    # alpha = 0.8, gamma = 4: E = (1 - 0.8**5) / (1 - 0.8) = 3.3616 tokens per pass; a chain verifies 5
    assert values["E"] == (pytest.approx(3.3616), ".2f") and values["T"] == 5
    assert values["gamma"] == 4 and values["batch"] == 64 and values["prompt"] == (8192, ",")
