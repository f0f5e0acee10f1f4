"""Exercises 2-1 to 2-5: the hardware layers behind one request.

Every reference is a short function of the exercise namespace ``p`` that calls
:mod:`aiinfra`; the reference notebook shows their source as the worked
solution.
"""

from __future__ import annotations

from aiinfra import decode, deployment, memory, roofline, units
from aiinfra.catalog import hardware
from aiinfra.cluster import network
from aiinfra.course.exercises import Choice, Exercise, Free, Numeric, Param

# ---------------------------------------------------------------------------
# 2-1  Spec sheet to bytes per second per direction
# ---------------------------------------------------------------------------


def ref_2_1_a(p):
    return network.per_direction_bytes_per_s(p["nvlink_tb_s"], "TB/s", both_directions=True) / units.GB


def ref_2_1_b(p):
    return network.per_direction_bytes_per_s(p["nic_gbit_s"], "Gbit/s", both_directions=False) / units.GB


def ref_2_1_c(p):
    return network.per_direction_bytes_per_s(p["pcie_gb_s"], "GB/s", both_directions=True) / units.GB


def ref_2_1_d(p):
    return network.per_direction_bytes_per_s(p["switch_gbit_s"], "Gbit/s", both_directions=True) / units.GB


def ref_2_1_e(p):
    return float(network.misread_factor(printed_in_bits=True, printed_both_directions=True))


def ref_2_1_f(p):
    return ref_2_1_a(p) / ref_2_1_b(p)


EX_2_1 = Exercise(
    id="2-1",
    title="From a spec sheet to bytes per second, one direction",
    level="core",
    intro=(
        "Four figures from four spec sheets: NVLink 5 at {nvlink_tb_s} TB/s per GPU (both directions "
        "added, over all of the GPU's links); a network card at {nic_gbit_s} Gbit/s per port (one direction); PCIe "
        "Gen5 x16 at {pcie_gb_s} GB/s (both directions added); a switch port sold as "
        "{switch_gbit_s} Gbit/s counting both directions. Convert each to decimal GB/s ($10^9$ B/s) "
        "in one direction."
    ),
    params={
        "nvlink_tb_s": Param(1.8),
        "nic_gbit_s": Param(400, choices=(200, 400, 800)),
        "pcie_gb_s": Param(128),
        "switch_gbit_s": Param(800, choices=(800, 1600)),
    },
    parts=(
        Numeric(
            "a",
            "NVLink 5, per GPU, one direction.",
            ref_2_1_a,
            unit="GB/s",
            hint="TB/s to GB/s is x1000; then halve, since the sheet added both directions",
            slips=("per-direction-vs-both",),
        ),
        Numeric(
            "b",
            "The network card, one direction.",
            ref_2_1_b,
            unit="GB/s",
            hint="a byte is 8 bits; the port figure is already per direction",
            slips=("bits-vs-bytes", "per-direction-vs-both"),
        ),
        Numeric(
            "c",
            "PCIe Gen5 x16, one direction.",
            ref_2_1_c,
            unit="GB/s",
            hint="the printed figure counts both directions",
            slips=("per-direction-vs-both",),
        ),
        Numeric(
            "d",
            "The switch port, one direction.",
            ref_2_1_d,
            unit="GB/s",
            hint="two conversions: bits to bytes, and both directions to one",
            slips=("bits-vs-bytes", "per-direction-vs-both"),
        ),
        Numeric(
            "e",
            "By what factor is the switch figure too large if someone reads it as GB/s in one direction?",
            ref_2_1_e,
            unit="x",
            rel_tol=0.0,
            abs_tol=0.01,
            hint="multiply the two conversion factors",
        ),
        Numeric(
            "f",
            "How many times faster is NVLink 5 than the network card, per direction?",
            ref_2_1_f,
            unit="x",
            hint="divide the two per-direction rates from (a) and (b)",
        ),
    ),
    discussion=(
        "In one unit, NVLink 5 carries {a:.0f} GB/s each way and the card {b:.0f} GB/s: {f:.0f}x apart. "
        "Taken at face value the printed numbers would suggest a much smaller gap, and the switch figure "
        "would be {e:.0f}x too large."
    ),
)

# ---------------------------------------------------------------------------
# 2-2  The slowest link on a path
# ---------------------------------------------------------------------------


def given_2_2(p):
    nvlink = hardware.link(_path_one_server()[1]).bytes_per_s_per_direction
    return {
        "hbm_tb_s": hardware.link(_path_one_server()[0]).bytes_per_s_per_direction / units.TB,
        "pcie_both_gb_s": network.bidirectional_from_per_direction(
            hardware.link("PCIe Gen5 x16").bytes_per_s_per_direction
        )
        / units.GB,
        "nic_gbit_s": units.gbit_per_s_from_bytes_per_s(
            hardware.link("ConnectX-7 400 Gbit/s").bytes_per_s_per_direction
        ),
        "nvlink_both_gb_s": network.bidirectional_from_per_direction(nvlink) / units.GB,
        "w_gb": deployment.TEACHING_8B.weight_bytes_read / units.GB,
        "kv_gb_8b": deployment.TEACHING_8B.kv_bytes(deployment.TEACHING_PROMPT_TOKENS) / units.GB,
        "teach_tb_s": deployment.TEACHING_8B.bandwidth_bytes_per_s / units.TB,
        "teach_eta_b": deployment.TEACHING_8B.eta_b,
    }


def _path_two_servers():
    return ["HBM3 (H100 SXM)", "PCIe Gen5 x16", "ConnectX-7 400 Gbit/s", "PCIe Gen5 x16", "HBM3 (H100 SXM)"]


def _path_one_server():
    return ["HBM3 (H100 SXM)", "NVLink 4 (per GPU, 18 links)", "HBM3 (H100 SXM)"]


def ref_2_2_a(p):
    return network.bottleneck(_path_two_servers()).name


def ref_2_2_b(p):
    return network.path_transfer_time_s(p["kv_gb"] * units.GB, _path_two_servers()) / units.ms


def ref_2_2_c(p):
    return network.path_transfer_time_s(p["kv_gb"] * units.GB, _path_one_server()) / units.ms


def ref_2_2_d(p):
    return ref_2_2_b(p) / ref_2_2_c(p)


def ref_2_2_e(p):
    step = deployment.TEACHING_8B.step(1, deployment.TEACHING_PROMPT_TOKENS).time_s
    return network.path_transfer_time_s(p["kv_gb"] * units.GB, _path_two_servers()) / step


EX_2_2 = Exercise(
    id="2-2",
    title="Find the slowest link on a path",
    level="core",
    intro=(
        "A finished prefill leaves {kv_gb} GB (decimal) of KV cache in one H100's HBM, and a decode GPU "
        "must receive it. Path 1, to a GPU in another DGX H100: HBM, PCIe Gen5 x16 to the network card, "
        "one ConnectX-7 400 Gbit/s port, PCIe Gen5 x16 on the far side, HBM (GPUDirect RDMA, no CPU "
        "copy). Path 2, to a GPU in the same server: HBM, NVLink 4, HBM. The figures as printed: HBM3 "
        "{hbm_tb_s:.2f} TB/s; PCIe Gen5 x16 {pcie_both_gb_s:.0f} GB/s, both directions added; ConnectX-7 "
        "{nic_gbit_s:.0f} Gbit/s per direction; NVLink 4 {nvlink_both_gb_s:.0f} GB/s per GPU, both "
        "directions added (the catalog's per-direction rates: `aiinfra.catalog.hardware.link(name)`). "
        "Assume a pipelined transfer (the slowest link sets the rate) and ignore latency."
    ),
    params={"kv_gb": Param(1.0, choices=(0.5, 1.0, 2.0, 4.0))},
    given=given_2_2,
    parts=(
        Choice(
            "a",
            "Which link limits path 1?",
            ref_2_2_a,
            options=("HBM3 (H100 SXM)", "PCIe Gen5 x16", "ConnectX-7 400 Gbit/s"),
            hint="convert every link to bytes per second in one direction, then take the minimum",
        ),
        Numeric(
            "b",
            "How long does path 1 take?",
            ref_2_2_b,
            unit="ms",
            hint="size over the slowest rate",
            slips=("bits-vs-bytes", "per-direction-vs-both"),
        ),
        Numeric(
            "c",
            "How long does path 2 take?",
            ref_2_2_c,
            unit="ms",
            hint="the headline NVLink figure counts both directions; a transfer uses one",
            slips=("per-direction-vs-both",),
        ),
        Numeric("d", "How many times longer is path 1?", ref_2_2_d, unit="x", hint="ratio of (b) to (c)"),
        Numeric(
            "e",
            "One decode step of the chapter's 8B request at batch 1 reads {w_gb:.0f} GB of weights and "
            "{kv_gb_8b} GB of KV at {teach_eta_b:.0%} of {teach_tb_s:g} TB/s (memory-bound). How many such "
            "steps fit in the path-1 transfer time?",
            ref_2_2_e,
            unit="steps",
            hint="transfer time over the step time of the worked example",
        ),
    ),
    discussion=(
        "The network card is the bottleneck: {b:.0f} ms against {c:.2f} ms over NVLink. Shipping KV between "
        "servers costs about {e:.0f} decode steps, which is why disaggregated serving overlaps the transfer "
        "with other work and prefers fast links."
    ),
)

# ---------------------------------------------------------------------------
# 2-3  The 8B request under other assumptions (per-student variants)
# ---------------------------------------------------------------------------


def _worked(p):
    """The teaching deployment with this student's bandwidth and efficiencies."""
    gpu = hardware.custom_gpu(
        base=deployment.TEACHING_8B.gpu, memory_bandwidth_bytes_per_s=p["bandwidth_tb_s"] * units.TB
    )
    return deployment.TEACHING_8B.replace(gpu=gpu, eta_b=p["eta_b"], eta_f=p["eta_f"])


def given_2_3(p):
    d = deployment.TEACHING_8B
    return {
        "n_params": d.model.n_params,
        "prompt": deployment.TEACHING_PROMPT_TOKENS,
        "weights_gb": d.weight_bytes / units.GB,
        "kv_gb": d.kv_bytes(deployment.TEACHING_PROMPT_TOKENS) / units.GB,
        "pflops": d.peak_flops_per_s / units.PETA,
    }


def ref_2_3_a(p):
    return _worked(p).prefill(deployment.TEACHING_PROMPT_TOKENS).time_s / units.ms


def ref_2_3_b(p):
    return _worked(p).step(1, deployment.TEACHING_PROMPT_TOKENS).time_s / units.ms


def ref_2_3_c(p):
    return _worked(p).step(p["batch"], deployment.TEACHING_PROMPT_TOKENS).time_s / units.ms


def ref_2_3_d(p):
    return _worked(p).step(p["batch"], deployment.TEACHING_PROMPT_TOKENS).tokens_per_s


def ref_2_3_e(p):
    d = _worked(p)
    return (
        d.step(p["batch"], deployment.TEACHING_PROMPT_TOKENS).tokens_per_s
        / d.step(1, deployment.TEACHING_PROMPT_TOKENS).tokens_per_s
    )


def ref_2_3_f(p):
    return _worked(p).step(p["batch"], deployment.TEACHING_PROMPT_TOKENS).bound


EX_2_3 = Exercise(
    id="2-3",
    title="The 8B request, reworked",
    level="core",
    intro=(
        "Rework the chapter's request: a model of $N$ = {n_params:,.0f} parameters in BF16 ({weights_gb:.0f} "
        "GB, all read once per pass), a {prompt:,}-token prompt, {kv_gb} GB of KV read per request per decode "
        "step, $2N$ FLOPs per token in every pass (a prefill of $P$ tokens does $2NP$). The GPU peaks at "
        "{pflops:g} PFLOP/s dense and {bandwidth_tb_s} TB/s; kernels reach {eta_f:.0%} of the compute and "
        "{eta_b:.0%} of the bandwidth; reads and arithmetic overlap. {batch} requests decode together."
    ),
    params={
        "bandwidth_tb_s": Param(3.0, choices=(2.0, 3.0, 4.8)),
        "eta_b": Param(0.7, choices=(0.6, 0.7, 0.8)),
        "eta_f": Param(0.5, choices=(0.4, 0.5)),
        "batch": Param(32, choices=(16, 32, 64)),
    },
    given=given_2_3,
    parts=(
        Numeric(
            "a",
            "Prefill time (no queueing).",
            ref_2_3_a,
            unit="ms",
            hint="2NP FLOPs at the achieved compute rate, against one weight read; take the larger",
        ),
        Numeric(
            "b",
            "One decode step at batch 1.",
            ref_2_3_b,
            unit="ms",
            hint="weights plus one request's KV, over the achieved bandwidth",
        ),
        Numeric(
            "c",
            "One decode step at batch {batch}.",
            ref_2_3_c,
            unit="ms",
            hint="one weight read plus one KV read per request; check that compute is still smaller",
        ),
        Numeric(
            "d", "Tokens per second of the whole batch.", ref_2_3_d, unit="tok/s", hint="B tokens per step"
        ),
        Numeric(
            "e",
            "Throughput gain over batch 1.",
            ref_2_3_e,
            unit="x",
            hint="aggregate tokens per second at batch B over those at batch 1",
        ),
        Choice(
            "f",
            "Is the batched step memory-bound or compute-bound?",
            ref_2_3_f,
            options=("memory-bound", "compute-bound"),
            hint="compare B x 2N / (eta_F Pi) with (weights + B x KV) / (eta_B beta)",
        ),
    ),
    discussion=(
        "The prefill takes {a:.1f} ms; a step takes {b:.2f} ms alone and {c:.2f} ms for the batch, so the batch "
        "buys {e:.1f}x the throughput ({d:,.0f} tok/s) for a modest rise in each user's wait. The step is {f}."
    ),
)

# ---------------------------------------------------------------------------
# 2-4  Find the flaw: tokens per second from the FLOP rate
# ---------------------------------------------------------------------------


def given_2_4(p):
    h100 = hardware.gpu("H100 SXM")
    n = deployment.TEACHING_8B.model.n_params
    sparse = 2 * h100.bf16_dense_flops_per_s
    claim = sparse / (2 * n)
    return {
        "sparse_tflops": sparse / units.TERA,
        "dense_tflops": h100.bf16_dense_flops_per_s / units.TERA,
        "n_params": n,
        "n_b": n / units.GIGA,
        "gflops_tok": 2 * n / units.GIGA,
        "claim": claim,
        "hbm_tb_s": h100.memory_bandwidth_bytes_per_s / units.TB,
    }


def ref_2_4_a(p):
    h100 = hardware.gpu("H100 SXM")
    return h100.bf16_dense_flops_per_s / (2 * deployment.TEACHING_8B.model.n_params)


def ref_2_4_b(p):
    h100 = hardware.gpu("H100 SXM")
    return decode.memory_bound_tokens_per_s(
        deployment.TEACHING_8B.weight_bytes, h100.memory_bandwidth_bytes_per_s
    )


def ref_2_4_c(p):
    return p["claim"] / ref_2_4_b(p)


def ref_2_4_d(p):
    h100 = hardware.gpu("H100 SXM")
    return decode.critical_batch_size(
        units.bytes_per_param("bf16"), h100.bf16_dense_flops_per_s, h100.memory_bandwidth_bytes_per_s
    )


EX_2_4 = Exercise(
    id="2-4",
    title="Find the flaw: a chat speed from the FLOP rate",
    level="core",
    intro=(
        'A colleague writes: "The H100 does {sparse_tflops:,.0f} TFLOP/s in BF16. One token of an '
        "{n_b:.0f}B model costs {gflops_tok:.0f} GFLOPs. So one user can get {claim:,.0f} tokens per "
        "second.\" The model has $N$ = {n_params:,.0f} parameters stored in BF16; the H100's HBM delivers "
        "{hbm_tb_s:.2f} TB/s."
    ),
    given=given_2_4,
    parts=(
        Numeric(
            "a",
            "The printed figure is the peak with 2:4 sparsity. Redo the colleague's compute-only "
            "estimate with the dense BF16 peak, {dense_tflops:.1f} TFLOP/s.",
            ref_2_4_a,
            unit="tok/s",
            hint="the printed figure assumes 2:4 sparsity; dense is half",
        ),
        Numeric(
            "b",
            "The memory bound at batch 1: every token reads all weights once, at 100% bandwidth.",
            ref_2_4_b,
            unit="tok/s",
            hint="bandwidth over weight bytes",
        ),
        Numeric(
            "c",
            "How many times too optimistic was the colleague?",
            ref_2_4_c,
            unit="x",
            hint="the claim over the memory bound",
        ),
        Numeric(
            "d",
            "At what batch size would the arithmetic of a step take as long as the weight read "
            "(dense peak, 100% of both)?",
            ref_2_4_d,
            unit="requests",
            hint="solve 2BN / Pi = 2N / beta for B, with the dense peak",
        ),
        Free(
            "e",
            "Name the two flaws in the estimate and say which one matters more for a single chat user.",
            sample=(
                "It uses the 2:4-sparse peak (2x too high; dense gives {a:,.0f} tok/s) and it ignores that "
                "every token must stream the weights from HBM, which caps one user at {b:.0f} tok/s. The "
                "memory bound matters far more: the claim is {c:,.0f}x too high. Only a batch of about "
                "{d:.0f} requests would make the FLOP rate the limit, and then for the batch, not for one user."
            ),
        ),
    ),
    discussion="Compute peaks say what a full batch could reach; one user's speed is set by bytes per token.",
)

# ---------------------------------------------------------------------------
# 2-5  HBM arithmetic across generations
# ---------------------------------------------------------------------------


def given_2_5(p):
    g = hardware.gpu(p["gpu"])
    return {
        "tb_s": g.memory_bandwidth_bytes_per_s / units.TB,
        "stacks": g.hbm_stacks,
        "bits_per_stack": memory.HBM_BITS_PER_STACK,
        "weights_gb": deployment.TEACHING_8B.weight_bytes / units.GB,
        "nic_gb_s": hardware.link("cx7").bytes_per_s_per_direction / units.GB,
    }


def ref_2_5_a(p):
    return float(p["stacks"] * memory.HBM_BITS_PER_STACK)


def ref_2_5_b(p):
    g = hardware.gpu(p["gpu"])
    width_bits = p["stacks"] * memory.HBM_BITS_PER_STACK
    return memory.bus_transfer_rate_per_s(g.memory_bandwidth_bytes_per_s, width_bits) / units.GIGA


def ref_2_5_c(p):
    g = hardware.gpu(p["gpu"])
    return (
        roofline.memory_time_s(deployment.TEACHING_8B.weight_bytes, g.memory_bandwidth_bytes_per_s) / units.ms
    )


def ref_2_5_d(p):
    g = hardware.gpu(p["gpu"])
    return network.transfer_time_s(
        deployment.TEACHING_8B.weight_bytes, hardware.link("cx7").bytes_per_s_per_direction
    ) / (roofline.memory_time_s(deployment.TEACHING_8B.weight_bytes, g.memory_bandwidth_bytes_per_s))


EX_2_5 = Exercise(
    id="2-5",
    title="Where a memory bandwidth comes from",
    level="extension",
    intro=(
        "The {gpu} reaches {tb_s:.2f} TB/s from {stacks} HBM stacks of {bits_per_stack:,} data bits each. "
        "The chapter's 8B model in BF16 ({weights_gb:.0f} GB) must be read once per decode step."
    ),
    params={"gpu": Param("H200 SXM", choices=("H100 SXM", "H200 SXM", "B200"))},
    given=given_2_5,
    parts=(
        Numeric(
            "a",
            "How wide is the memory interface?",
            ref_2_5_a,
            unit="bits",
            rel_tol=0.0,
            abs_tol=0.5,
            hint="stacks times bits per stack",
        ),
        Numeric(
            "b",
            "What data rate must each data pin sustain, in gigabits per second?",
            ref_2_5_b,
            unit="Gbit/s",
            hint="8 x bandwidth / bus width",
        ),
        Numeric(
            "c",
            "The floor on one batch-1 decode step of the 8B model on this GPU.",
            ref_2_5_c,
            unit="ms",
            hint="weight bytes over bandwidth",
        ),
        Numeric(
            "d",
            "How many times longer would the same read take through one ConnectX-7 port "
            "({nic_gb_s:.0f} GB/s per direction)?",
            ref_2_5_d,
            unit="x",
            hint="the same bytes over the NIC's per-direction rate, divided by (c)",
        ),
    ),
    discussion=(
        "A {a:.0f}-bit bus at {b:.2f} Gbit/s per pin gives the bandwidth; the step floor is {c:.2f} ms, and the "
        "network would be {d:.0f}x slower. This is why weights live in HBM and never stream over the network."
    ),
)

EXERCISES = (EX_2_1, EX_2_2, EX_2_3, EX_2_4, EX_2_5)
