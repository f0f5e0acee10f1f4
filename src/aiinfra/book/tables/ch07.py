"""Chapter 7's tables: users per TPOT target, model bytes, speculation, capacity cases, routing."""

from __future__ import annotations

from aiinfra import calibration, compute, memory, predict, units
from aiinfra.book.tables import markdown_table
from aiinfra.catalog import hardware, models
from aiinfra.formula import check
from aiinfra.serving import batching, capacity, lora, slo
from aiinfra.serving import chunked_prefill as cp
from aiinfra.serving import disaggregation as dis
from aiinfra.serving import prefix_cache as pc
from aiinfra.serving import sparse_attention as sa
from aiinfra.serving import speculation as spec


def tpot_capacity_table_markdown(deployment, targets_s, context_tokens) -> str:
    """Users one replica holds at each TPOT target, what binds, its step time and tokens/s there.

    :meth:`aiinfra.deployment.Deployment.max_users` and
    :meth:`~aiinfra.deployment.Deployment.step` at that many users.
    """
    rows = []
    for tpot in targets_s:
        users, limiting = deployment.max_users(tpot, context_tokens)
        if users:
            step = deployment.step(users, context_tokens)
            rows.append(
                [
                    units.fmt_time(tpot, digits=0),
                    f"{users:,}",
                    limiting,
                    units.fmt_time(step.time_s),
                    f"{step.tokens_per_s:,.0f}",
                ]
            )
        else:
            rows.append([units.fmt_time(tpot, digits=0), "0", limiting, "not reachable", "0"])
    return markdown_table(
        ["TPOT target", "users per replica", "what binds", "step time at that load", "tokens/s per replica"],
        rows,
        align="rrlrr",
    )


def model_bytes_table_markdown(rows) -> str:
    """Stored and active parameters and the bytes one decode step reads, one row per model.

    ``rows``: ``(model name, precision label, stored bytes, bytes read per token)``;
    the parameter counts come from :mod:`aiinfra.catalog.models`.
    """
    from aiinfra.catalog import models

    out = []
    for name, label, stored, read in rows:
        m = models.load(name)
        out.append(
            [
                name,
                label,
                f"{models.total_params(m) / units.GIGA:,.1f}B",
                f"{models.active_params(m) / units.GIGA:,.1f}B",
                units.fmt_bytes(stored),
                units.fmt_bytes(read),
            ]
        )
    return markdown_table(
        ["model", "weights as stored", "parameters", "active per token", "stored", "read per token, batch 1"],
        out,
        align="llrrrr",
    )


def speculation_table_markdown(alphas, gammas, draft_cost_ratio) -> str:
    """Speedup of speculative decoding for each acceptance rate (rows) and draft length (columns)."""
    from aiinfra.serving import speculation

    rows = [
        [f"{a:.1f}", *(f"{speculation.speculative_speedup(a, g, draft_cost_ratio):.2f}x" for g in gammas)]
        for a in alphas
    ]
    return markdown_table(["acceptance $\\alpha$", *(f"$\\gamma$ = {g}" for g in gammas)], rows)


def capacity_cases_table_markdown(cases, watts_per_gpu, pue, usd_per_gpu_hour) -> str:
    """One row per ``(label, CapacityPlan)``: GPUs, replica size and load, what binds, power and price.

    Power and price come from :func:`aiinfra.serving.capacity.fleet_economics`.
    """
    from aiinfra.serving import capacity

    rows = []
    for label, p in cases:
        e = capacity.fleet_economics(p, watts_per_gpu, pue, usd_per_gpu_hour)
        rows.append(
            [
                label,
                f"{p.gpus_total:,}",
                f"{p.gpus_per_replica}",
                f"{p.users_per_replica}",
                p.limiting,
                units.fmt_power(e.power_w, digits=2),
                f"\\${e.usd_per_million_tokens:.2f}",
            ]
        )
    return markdown_table(
        [
            "case",
            "GPUs",
            "GPUs per replica",
            "users per replica",
            "binds",
            "facility power",
            "\\$ per million tokens",
        ],
        rows,
        align="lrrrlrr",
    )


def routing_table_markdown(result, rate_index) -> str:
    """Each routing policy at one arrival rate of a :class:`aiinfra.serving.routing.RoutingResult`.

    Columns: KV-cache hit rate, mean queueing delay, median and 99th-percentile TTFT.
    """
    from aiinfra.serving import routing

    k = check("rate_index", rate_index, "int>=0", scalar=True)
    if k >= result.rates_per_s.size:
        raise ValueError(f"rate_index must be < {result.rates_per_s.size}, got {rate_index!r}")
    p50, p99 = result.ttft_percentile_s(50)[:, k], result.ttft_percentile_s(99)[:, k]
    rows = [
        [
            routing.POLICY_LABELS[p],
            f"{result.hit_rate[i, k]:.0%}",
            units.fmt_time(result.mean_queue_s[i, k]),
            units.fmt_time(p50[i]),
            units.fmt_time(p99[i]),
        ]
        for i, p in enumerate(result.policies)
    ]
    return markdown_table(["policy", "KV-cache hit rate", "mean queueing", "median TTFT", "p99 TTFT"], rows)


def serving_techniques_values(
    server,
    context_tokens: int,
    tpot_slo_s: float,
    prompt_tokens: int = 8192,
    batch: int = 64,
    ttft_slo_s: float = 0.5,
    chunk_tokens: int = 512,
    rate_per_s: float = 2.0,
    alpha: float = 0.8,
    gamma: int = 4,
    width: int = 2,
    mtp_alpha: float = 0.85,
    mtp_hi: float = 0.90,
    mtp_speedup: float = 1.8,
    lora_rank: int = 16,
    adapters: int = 8,
    many_adapters: int = 1000,
    long_context_tokens: int = 32_768,
) -> dict:
    """Every number chapter 7's page 7 ("Serving techniques, sized") glues, as ``name: (value, spec)``.

    ``server`` is the chapter's replica (``deployment.SERVING_70B``) at ``context_tokens`` and a TPOT
    target ``tpot_slo_s``; one prompt of ``prompt_tokens`` is prefilled beside ``batch`` decodes in
    chunks of ``chunk_tokens``, against a TTFT target ``ttft_slo_s`` at ``rate_per_s`` requests/s.
    ``alpha``, ``gamma`` are page 2's acceptance rate and draft length, ``width`` the tree's;
    ``mtp_alpha`` to ``mtp_hi`` and ``mtp_speedup`` DeepSeek-V3's reported MTP acceptance and
    speed-up; ``lora_rank``, ``adapters`` and ``many_adapters`` size multi-LoRA; the sparse and hybrid
    attention rows run at ``long_context_tokens``. The page calls ``glue("ch07_t", **values)``.
    """
    CTX, TPOT, PROMPT, BATCH, CHUNK, TTFT_SLO, RATE = (
        context_tokens,
        tpot_slo_s,
        prompt_tokens,
        batch,
        chunk_tokens,
        ttft_slo_s,
        rate_per_s,
    )
    ALPHA, GAMMA, WIDTH, MTP_ALPHA, MTP_HI, MTP_TPS = alpha, gamma, width, mtp_alpha, mtp_hi, mtp_speedup
    RANK, ADAPTERS, MANY, LONG = lora_rank, adapters, many_adapters, long_context_tokens
    m, L, cal = server.model, server.model.n_layers, calibration.load().parameters
    qk, v, nic, pcie = (
        models.attention_qk_width(m),
        models.attention_v_width(m),
        hardware.link("ConnectX-7 400 Gbit/s"),
        hardware.link("PCIe Gen5 x16"),
    )
    bnd, prd = cp.chunk_step_times_s(server, [0, CHUNK, PROMPT], BATCH, CTX)
    prompts = batching.synthetic_trace(1000, max_prompt_tokens=PROMPT).prompt_tokens
    att = {
        c: slo.slo_attainment(cp.chunked_ttft_s(prompts, c, t), t, TTFT_SLO, TPOT)
        for c, t in zip((256, CHUNK, 1024), cp.chunk_step_times_s(server, [256, CHUNK, 1024], BATCH, CTX)[1])
    }
    E, T = spec.expected_tokens_per_target_pass(ALPHA, GAMMA), spec.tree_verified_tokens(GAMMA, 1)
    Et, Tt, plain = (
        spec.tree_expected_tokens_per_pass(ALPHA, GAMMA, WIDTH),
        spec.tree_verified_tokens(GAMMA, WIDTH),
        compute.attention_flops_per_token(L, qk, v, CTX),
    )

    def ver(t, e):
        return (spec.verification_attention_flops(L, qk, v, CTX, t) / e / plain, ".2f")

    ds = models.load("DeepSeek-V3")
    t_p, t_kv = (
        capacity.prefill_time_per_request_s(server, PROMPT, eta_f=cal.eta_f_prefill),
        dis.kv_handoff_time_s(PROMPT, server.kv_bytes_per_token, nic.bytes_per_s_per_direction),
    )
    f_tok, kv = pc.model_prefill_coefficients(m)[0], server.kv_bytes_per_token
    even = pc.reload_breakeven_bandwidth_bytes_per_s(f_tok, server.peak_flops_per_s, kv, cal.eta_f_prefill)

    def reload(bw):
        return (pc.reload_speedup(f_tok, server.peak_flops_per_s, kv, bw, cal.eta_f_prefill), ".1f")

    w = lora.adapted_width_sum(m)
    Ma = lora.lora_adapter_bytes(RANK, w)
    g, gcfg = models.load("GLM-5"), models.shipped_config("GLM-5")
    kv_l, topk, h_i, d_i = (
        memory.mla_kv_bytes_per_token_formula(1, g.kv_lora_rank, g.qk_rope_head_dim, 2),
        gcfg["index_topk"],
        gcfg["index_n_heads"],
        g.index_head_dim,
    )
    gq, gv = compute.decode_attention_widths(g)

    def attn(n):
        return compute.decode_flops_breakdown(n, LONG)["exact"]["attention"]

    hyb, full = models.load("Qwen3-Next-80B-A3B-Instruct"), models.load("Qwen3-30B-A3B")
    return dict(
        model=m.name,
        tp=server.n_gpus,
        prompt=(PROMPT, ","),
        batch=BATCH,
        chunk=(CHUNK, ","),
        ctx=(CTX, ","),
        tpot_slo=(TPOT, "s ms 0"),
        ttft_slo=(TTFT_SLO, "s ms 0"),
        rate=(RATE, ".0f"),
        step0_b=(bnd[0], "s ms 1"),
        step0_p=(prd[0], "s ms 1"),
        stepc_b=(bnd[1], "s ms 1"),
        stepc_p=(prd[1], "s ms 1"),
        stepw_b=(bnd[2], "s ms 0"),
        stepw_p=(prd[2], "s ms 0"),
        ttftc_b=(cp.chunked_ttft_s(PROMPT, CHUNK, bnd[1]), "s ms 0"),
        ttftc_p=(cp.chunked_ttft_s(PROMPT, CHUNK, prd[1]), "s ms 0"),
        ttftw_p=(prd[2], "s ms 0"),
        eta_fp=(cal.eta_f_prefill, ".0%"),
        eta_bd=(cal.eta_b_decode, ".0%"),
        eta_kv=(cal.eta_b_kv, ".0%"),
        fix=(predict.step_overhead_s(server, cal, BATCH + CHUNK), "s ms 1"),
        att256=(att[256], ".0%"),
        attc=(att[CHUNK], ".0%"),
        att1k=(att[1024], ".0%"),
        good=(slo.goodput_per_s(RATE, att[CHUNK]), ".2f"),
        alpha=(ALPHA, ".1f"),
        gamma=GAMMA,
        width=WIDTH,
        E=(E, ".2f"),
        T=T,
        Et=(Et, ".2f"),
        Tt=Tt,
        aw=(spec.tree_level_acceptance(ALPHA, WIDTH), ".2f"),
        ver_chain=ver(T, E),
        ver_tree=ver(Tt, Et),
        plain=(plain, "FLOPs"),
        free_chain=(spec.free_verification_batch(server.critical_batch, T - 1), ".0f"),
        free_tree=(spec.free_verification_batch(server.critical_batch, Tt - 1), ".0f"),
        bcrit=(server.critical_batch, ".0f"),
        mtp_alpha=(MTP_ALPHA, ".0%"),
        mtp_E=(spec.expected_tokens_per_target_pass(MTP_ALPHA, 1), ".2f"),
        ds_layers=ds.n_layers,
        mtp_speed=(spec.speculative_speedup(MTP_ALPHA, 1, 1 / ds.n_layers), ".2f"),
        mtp_tps=(MTP_TPS, ".1f"),
        kv_req=(PROMPT * kv, "B GB 2"),
        nic=(nic.bytes_per_s_per_direction, "B/s GB 0"),
        t_p=(t_p, "s ms 0"),
        t_kv=(t_kv, "s ms 1"),
        exposed=(dis.layerwise_kv_exposed_s(t_p, t_kv, L), "s ms 2"),
        layers=L,
        even=(even, "B/s GB 1"),
        pcie=(pcie.bytes_per_s_per_direction, "B/s GB 0"),
        pcie_all=(server.n_gpus * pcie.bytes_per_s_per_direction, "B/s GB 0"),
        ssd=(pcie.bytes_per_s_per_direction / 4, "B/s GB 0"),
        r_pcie=reload(server.n_gpus * pcie.bytes_per_s_per_direction),
        r_ssd=reload(pcie.bytes_per_s_per_direction / 4),
        r_nic=reload(nic.bytes_per_s_per_direction),
        rank=RANK,
        w=(w, ","),
        Ma=(Ma, "B MB 0"),
        adapters=ADAPTERS,
        weights=(server.weight_bytes, "B GB 0"),
        lora_extra=(
            lora.multi_lora_step_bytes(server.weight_bytes, ADAPTERS, Ma) / server.weight_bytes - 1,
            ".1%",
        ),
        lora_flops=(lora.lora_flops_per_token(RANK, w) / compute.decode_flops(m, CTX), ".2%"),
        many=(MANY, ","),
        many_bytes=(MANY * Ma, "B GB 0"),
        hbm=(server.capacity_bytes, "B GB 0"),
        long=(LONG, ","),
        glm=g.name,
        topk=(topk, ","),
        h_i=h_i,
        d_i=d_i,
        glm_layers=g.n_layers,
        dense_f=(attn(g), "FLOPs"),
        dsa_f=(sa.sparse_attention_flops_per_token(g.n_layers, gq, gv, LONG, topk, h_i, d_i), "FLOPs"),
        dense_r=(sa.sparse_attention_read_bytes_per_token(g.n_layers, LONG, LONG, kv_l, 0), "B GB 2"),
        dsa_r=(sa.sparse_attention_read_bytes_per_token(g.n_layers, LONG, topk, kv_l, d_i), "B GB 2"),
        glm_kv=(memory.kv_bytes_per_token(g), "B KiB 1"),
        hyb=hyb.name,
        full=full.name,
        hyb_full=len(hyb.attention) - len(hyb.state_layers),
        hyb_layers=hyb.n_layers,
        c256=256,
        c1k=(1024, ","),
        mtp_hi=(MTP_HI, ".0%"),
        hyb_kv=(memory.kv_bytes_per_token(hyb), "B KiB 0"),
        full_kv=(memory.kv_bytes_per_token(full), "B KiB 0"),
        hyb_state=(memory.state_bytes_per_request(hyb), "B MB 0"),
        hyb_req=(memory.request_state_bytes(hyb, LONG), "B GB 2"),
        full_req=(memory.request_state_bytes(full, LONG), "B GB 2"),
        hyb_f=(attn(hyb), "FLOPs"),
        full_f=(attn(full), "FLOPs"),
    )
