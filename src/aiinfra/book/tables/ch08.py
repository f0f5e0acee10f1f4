"""Chapter 8's tables: the ceilings and the build machine."""

from __future__ import annotations

from aiinfra import roofline, units
from aiinfra.book.tables import markdown_table
from aiinfra.catalog import hardware


def ceilings_table_markdown(ceilings, gpus=("RTX PRO 6000 Blackwell Workstation", "H100 SXM", "B200")) -> str:
    """This machine's measured ceilings (a :class:`aiinfra.measure.Ceilings`) next to GPUs' dense BF16 datasheet peaks."""
    rows = [
        [
            "this machine (measured, float32)",
            units.fmt_rate_bytes(ceilings.bandwidth_bytes_per_s),
            units.fmt_flops_rate(ceilings.flops_per_s),
            f"{ceilings.ridge_flops_per_byte:,.1f}",
        ]
    ]
    for name in gpus:
        g = hardware.gpu(name)
        pi = g.dense_flops_per_s("bf16")
        rows.append(
            [
                f"{g.name} (datasheet, dense BF16)",
                units.fmt_rate_bytes(g.memory_bandwidth_bytes_per_s),
                units.fmt_flops_rate(pi),
                f"{roofline.ridge_point_flops_per_byte(pi, g.memory_bandwidth_bytes_per_s):,.0f}",
            ]
        )
    return markdown_table(["machine", "bandwidth", "compute", "ridge (FLOP/B)"], rows)


def build_machine_table_markdown(ceilings, call_s, description) -> str:
    """What chapter 8 measured on the machine that ran it: ceilings, ridge, knee and the cost of one call."""
    from aiinfra import measure

    rows = [
        (
            "memory bandwidth (best of copy and sum)",
            units.fmt_rate_bytes(ceilings.bandwidth_bytes_per_s, "GB", 1),
        ),
        ("float32 matrix-multiply rate", units.fmt_flops_rate(ceilings.flops_per_s)),
        ("ridge point", f"{ceilings.ridge_flops_per_byte:.1f} FLOP/B"),
        ("knee of a float32 decode step", f"{measure.predicted_knee_batch(4, ceilings):.1f}"),
        ("one tiny call", units.fmt_time(call_s)),
    ]
    return (
        f"**The build machine** ({description}), measured when this page was built; run the page to see yours:\n\n"
        + markdown_table(["quantity", "measured"], rows)
    )
