"""The chapter-2 layer table: order, completeness, the libraries it must name."""
import pytest

from aiinfra import layers


def test_nine_layers_bottom_up():
    assert layers.LAYER_NAMES == (
        "fab",
        "chip",
        "GPU",
        "server",
        "cluster and scheduler",
        "kernels and libraries",
        "framework",
        "serving engine",
        "product",
    )
    assert layers.layers_top_down()[0].name == "product"
    assert layers.layers_top_down()[-1].name == "fab"


def test_every_field_filled():
    for lay in layers.LAYERS:
        for field in ("name", "does", "check_first", "unit", "read_with", "in_decode_step"):
            assert getattr(lay, field).strip(), (lay.name, field)
        assert lay.software and all(s.strip() for s in lay.software)


def test_names_the_real_libraries():
    kernels = layers.layer("kernels and libraries").software
    for lib in ("cuBLAS", "cuDNN", "NCCL", "Triton"):
        assert lib in kernels
    sched = " ".join(layers.layer("cluster and scheduler").software)
    assert "Slurm" in sched and "nvidia.com/gpu" in sched


def test_lookup_is_case_insensitive():
    assert layers.layer("gpu") is layers.layer("GPU")
    assert layers.layer("Serving Engine").name == "serving engine"


@pytest.mark.parametrize("bad", ["network", "", 3, None])
def test_lookup_rejects_unknown(bad):
    with pytest.raises(ValueError, match="name must be one of"):
        layers.layer(bad)


def test_layer_table_has_every_row_in_order():
    md = layers.layer_table_markdown()
    lines = md.splitlines()
    assert len(lines) == 2 + len(layers.LAYERS)
    assert lines[2].startswith("| 9 | product |")
    assert lines[-1].startswith("| 1 | fab |")
    assert all(line.count("|") == lines[0].count("|") for line in lines)
    bottom_up = layers.layer_table_markdown(top_down=False).splitlines()
    assert bottom_up[2].startswith("| 1 | fab |")


def test_layer_table_rejects_non_bool():
    with pytest.raises(ValueError, match="top_down"):
        layers.layer_table_markdown(top_down="yes")


def test_decode_walk_lists_each_layer_once():
    md = layers.decode_walk_markdown()
    rows = md.splitlines()[2:]
    assert [r.split("|")[1].strip() for r in rows] == [lay.name for lay in layers.layers_top_down()]


def test_scheduler_table():
    md = layers.scheduler_table_markdown()
    assert "Slurm" in md and "Kubernetes" in md and "nvidia.com/gpu" in md
    assert len(md.splitlines()) == 2 + len(layers.SCHEDULERS)


def test_pipe_in_text_is_escaped():
    assert layers._cell("a|b") == "a\\|b"
