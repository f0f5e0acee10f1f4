"""FLOP counts of a transformer forward pass: per token, per decode step, per prefill, per request.

Counting rules (a multiply-add is 2 FLOPs; Kaplan et al. 2020, section 2.1):

* every matrix weight a token passes through costs 2 FLOPs: the linear
  layers inside the blocks (for MoE only the routed experts it uses) and the
  lm_head (vocab x hidden, counted even when tied to the embedding);
* the embedding lookup is a memory read, 0 FLOPs;
* attention for one query over ``n`` keys costs ``2 n w_qk`` for the scores
  ``QK^T`` plus ``2 n w_v`` for the weighted sum of values, per layer, where
  ``w_qk`` and ``w_v`` are the query-head widths (heads x head_dim). With
  ``w_qk = w_v = heads x head_dim`` that is ``4 n heads head_dim``; grouped
  KV heads (GQA) do not reduce it, since every query head still attends;
* norms, activations, softmax and rotary embeddings are left out (they are
  O(hidden) per token, well under 1% here).

Prefill of ``P`` tokens is **causal** by default: position ``i`` attends to
``i`` keys (itself and the ``i - 1`` before it), so attention sums to
``P (P + 1) / 2`` query-key pairs instead of ``P^2``. Only the last prompt
token needs logits to pick the first output token, so by default the lm_head
runs once, not ``P`` times.

The scalar cores take plain numbers; :func:`flops_per_token`,
:func:`decode_flops`, :func:`prefill_flops` and :func:`request_flops` take a
``ModelConfig`` from :mod:`aiinfra.catalog.models`; their attention is window-aware layer by layer.

Serves: Chapters 1 (quick-reference numbers), 2 (one request by hand) and 3 (the 2N rule against the exact count).
"""

from __future__ import annotations

import math

import numpy as np

from aiinfra.catalog import models
from aiinfra.formula import check, choice, formula

__all__ = [
    "decode_flops_breakdown",
    "two_n_ratio",
    "context_where_two_n_is_off",
    "request_two_n_ratio",
    "tokens_to_match_training",
    "attention_flops_per_token",
    "request_step_flops",
    "approx_flops_2n",
    "approx_prefill_flops_2n",
    "approx_decode_flops_2n",
    "kaplan_attention_flops_per_token",
    "flops_per_token",
    "decode_flops",
    "decode_attention_widths",
    "prefill_flops",
    "request_flops",
]


@formula(_block_linear_params="N_lin >=0", lm_head_params="N_head >=0")
def _forward_flops_per_token(_block_linear_params, lm_head_params):
    """Matrix FLOPs of one token through the model, attention scores excluded: ``2 (N_lin + N_head)``.

    ``_block_linear_params``: matmul weights the token touches inside the
    blocks (active experts only); ``lm_head_params``: vocab x hidden.
    """
    return 2.0 * (_block_linear_params + lm_head_params)


@formula(
    n_layers="L int>=1",
    qk_width="w_qk >0",
    v_width="w_v >0",
    context_tokens="n_ctx int>=0",
)
def attention_flops_per_token(n_layers, qk_width, v_width, context_tokens):
    """Attention FLOPs of one query token over ``context_tokens`` keys: ``2 L n (w_qk + w_v)``.

    ``qk_width`` and ``v_width`` are per-layer query widths (e.g. heads x
    head_dim); for standard attention this is ``4 L n heads head_dim``.
    """
    return 2.0 * n_layers * context_tokens * (qk_width + v_width)


@formula(
    _block_linear_params="N_lin >=0",
    lm_head_params="N_head >=0",
    n_layers="L int>=1",
    qk_width="w_qk >0",
    v_width="w_v >0",
    context_tokens="n_ctx int>=0",
)
def _decode_step_flops(_block_linear_params, lm_head_params, n_layers, qk_width, v_width, context_tokens):
    """FLOPs of one decode step for one request: ``2 (N_lin + N_head) + 2 L n (w_qk + w_v)``.

    ``context_tokens`` is the number of keys the new token attends to.
    """
    return _forward_flops_per_token(_block_linear_params, lm_head_params) + attention_flops_per_token(
        n_layers, qk_width, v_width, context_tokens
    )


@formula(
    n_layers="L int>=1",
    qk_width="w_qk >0",
    v_width="w_v >0",
    prompt_tokens="P int>=1",
)
def _causal_prefill_attention_flops(n_layers, qk_width, v_width, prompt_tokens):
    """Attention FLOPs of a causal prefill over ``P`` tokens: ``L (w_qk + w_v) P (P + 1)``.

    Position ``i`` attends to ``i`` keys, so there are ``P (P + 1) / 2``
    query-key pairs per layer, each costing ``2 (w_qk + w_v)``.
    """
    p = prompt_tokens
    return n_layers * (qk_width + v_width) * p * (p + 1.0)


@formula(
    n_layers="L int>=1",
    qk_width="w_qk >0",
    v_width="w_v >0",
    prompt_tokens="P int>=1",
)
def _full_prefill_attention_flops(n_layers, qk_width, v_width, prompt_tokens):
    """Attention FLOPs of a non-causal (bidirectional) prefill: ``2 L (w_qk + w_v) P^2``.

    Every token sees all ``P``; this is also what a kernel that computes the
    whole square score matrix and then masks it executes.
    """
    p = prompt_tokens
    return 2.0 * n_layers * (qk_width + v_width) * p * p


def _prefill_attention_flops(n_layers, qk_width, v_width, prompt_tokens, causal=True):
    """Attention FLOPs of a prefill: :func:`_causal_prefill_attention_flops` or, with
    ``causal=False``, :func:`_full_prefill_attention_flops`."""
    choice("causal", causal, {True, False})
    fn = _causal_prefill_attention_flops if causal else _full_prefill_attention_flops
    return fn(n_layers, qk_width, v_width, prompt_tokens)


@formula(
    _block_linear_params="N_lin >=0",
    lm_head_params="N_head >=0",
    prompt_tokens="P int>=1",
    lm_head_tokens="P_head int>=1",
)
def _prefill_matmul_flops(_block_linear_params, lm_head_params, prompt_tokens, lm_head_tokens=1):
    """Matrix FLOPs of a prefill: ``2 N_lin P + 2 N_head P_head``.

    Every prompt token passes through the blocks; only ``lm_head_tokens``
    positions need logits: 1 for generation (the last one picks the first
    output token), ``P`` for scoring every position. ``lm_head_tokens`` must
    lie in [1, P].
    """
    if np.any(lm_head_tokens > prompt_tokens):
        raise ValueError(
            f"lm_head_tokens must be <= prompt_tokens, got {lm_head_tokens!r} > {prompt_tokens!r}"
        )
    return 2.0 * _block_linear_params * prompt_tokens + 2.0 * lm_head_params * lm_head_tokens


@formula(
    _block_linear_params="N_lin >=0",
    lm_head_params="N_head >=0",
    n_layers="L int>=1",
    qk_width="w_qk >0",
    v_width="w_v >0",
    prompt_tokens="P int>=1",
)
def _prefill_step_flops(_block_linear_params, lm_head_params, n_layers, qk_width, v_width, prompt_tokens):
    """FLOPs of prefilling ``P`` prompt tokens for generation: ``2 N_lin P + 2 N_head + L (w_qk + w_v) P (P+1)``.

    Causal attention and the lm_head on the last prompt token only, the
    case of serving. For the other cases combine :func:`_prefill_matmul_flops`
    with :func:`_full_prefill_attention_flops`, or use
    :func:`prefill_flops` with its flags on a model config.
    """
    return _prefill_matmul_flops(
        _block_linear_params, lm_head_params, prompt_tokens, 1
    ) + _causal_prefill_attention_flops(n_layers, qk_width, v_width, prompt_tokens)


@formula(
    "2*N_lin*(P + G - 1) + 2*N_head*G + L*(w_qk + w_v)*(P + G - 1)*(P + G)",
    sample={"n_layers": (1, 128), "prompt_tokens": (1, 100_000), "generated_tokens": (1, 10_000)},
    _block_linear_params="N_lin >=0",
    lm_head_params="N_head >=0",
    n_layers="L int>=1",
    qk_width="w_qk >0",
    v_width="w_v >0",
    prompt_tokens="P int>=1",
    generated_tokens="G int>=1",
)
def request_step_flops(
    _block_linear_params, lm_head_params, n_layers, qk_width, v_width, prompt_tokens, generated_tokens
):
    """Exact FLOPs of a whole request: a causal prefill of ``P`` tokens, then ``G - 1`` decode steps.

    The prefill's last position yields output token 1; output tokens 2..G
    each need one decode step, in which the previous token (at position
    ``P + j``) attends to ``P + j`` keys. The last output token is never fed
    back. In total the blocks see ``P + G - 1`` tokens, the lm_head runs
    ``G`` times and causal attention covers ``(P+G-1)(P+G)/2`` query-key
    pairs. Compare with :func:`approx_flops_2n`, which charges ``2N`` for each
    of ``P + G`` tokens and no attention.
    """
    seen = prompt_tokens + generated_tokens - 1.0
    return (
        2.0 * _block_linear_params * seen
        + 2.0 * lm_head_params * generated_tokens
        + n_layers * (qk_width + v_width) * seen * (seen + 1.0)
    )


@formula(
    "2*N*(P + G)",
    sample={"prompt_tokens": (0, 100_000), "generated_tokens": (0, 100_000)},
    n_params="N >=0",
    prompt_tokens="P int>=0",
    generated_tokens="G int>=0",
)
def approx_flops_2n(n_params, prompt_tokens, generated_tokens):
    """The ``2N (P + G)`` rule of thumb for a request: 2 FLOPs per parameter per token, no attention.

    A 70e9-parameter model with 500 prompt and 500 generated tokens:
    7e13 + 7e13 = 1.4e14 FLOPs. Use :func:`request_flops` for the exact count.
    """
    return 2.0 * n_params * (prompt_tokens + generated_tokens)


@formula(n_params="N >=0", prompt_tokens="P int>=0")
def approx_prefill_flops_2n(n_params, prompt_tokens):
    """Prefill share of the rule of thumb: ``2 N P`` (one parallel pass over ``P`` tokens)."""
    return approx_flops_2n(n_params, prompt_tokens, 0)


@formula(n_params="N >=0", generated_tokens="G int>=0")
def approx_decode_flops_2n(n_params, generated_tokens):
    """Decode share of the rule of thumb: ``2 N G`` (``G`` sequential passes)."""
    return approx_flops_2n(n_params, 0, generated_tokens)


@formula(
    n_layers="L int>=1",
    context_tokens="n_ctx int>=0",
    d_attn="d >0",
)
def kaplan_attention_flops_per_token(n_layers, context_tokens, d_attn):
    """Kaplan et al.'s (2020, Table 1) context term ``2 n_layer n_ctx d_attn`` per token.

    It counts the score product ``QK^T`` only; :func:`attention_flops_per_token`
    also counts the value product and is twice as large for ``w_qk = w_v``.
    The rule of thumb compares it with ``2N`` to decide whether attention can
    be dropped (1.6% for an 8B model at 1,000 tokens of context).
    """
    return 2.0 * n_layers * context_tokens * d_attn


# --- config-level wrappers ---------------------------------------------------
#
# Layers are grouped by their attention: full layers attend to the whole context, a
# sliding-window layer (Mistral-7B-v0.1: every layer, 4,096; Gemma 2 and gpt-oss: every other
# layer) to at most ``window`` keys, so each group's context is capped at its own window.


def _shape(model):
    """The model, its per-token matmul weights, its LM head and its attention groups.

    Groups are ``(layers, qk_width, v_width, window)``, full-attention groups first. Layers that
    attend to no cached tokens (the linear-attention and Mamba layers of a hybrid) form no group:
    their per-token work is in the matmul weights.
    """
    m = models.load(model)
    counts: dict[tuple, int] = {}
    for a in m.attention:
        if not a.caches_tokens:
            continue
        key = (a.window is not None, a.window or 0, a.qk_width, a.v_width)
        counts[key] = counts.get(key, 0) + 1
    groups = [
        (n, float(qk), float(v), w if sliding else None) for (sliding, w, qk, v), n in sorted(counts.items())
    ]
    return m, float(models.block_linear_params_per_token(m)), float(models.lm_head_params(m)), groups


def _causal_pairs(tokens, window=None):
    """Query-key pairs of causal attention over ``tokens`` positions: ``sum_i min(i, window)``."""
    n = np.asarray(tokens, dtype=float)
    if window is None:
        return n * (n + 1.0) / 2.0
    w = float(window)
    inside = np.minimum(n, w)
    return inside * (inside + 1.0) / 2.0 + np.maximum(n - w, 0.0) * w


@formula(None, model="label")
def flops_per_token(model):
    """Matrix FLOPs per token of ``model`` (no attention scores): ``2 (block linear + lm_head)``.

    The embedding lookup costs 0 FLOPs; for MoE only the active experts count.
    Qwen3-8B: 15.14e9.
    """
    _, n_lin, n_head, _ = _shape(model)
    return _forward_flops_per_token(n_lin, n_head)


def decode_attention_widths(model) -> tuple[float, float]:
    """The query widths ``(w_qk, w_v)`` of one layer as a decode token's attention multiplies them.

    MHA and GQA: ``heads x head_dim`` each (:func:`aiinfra.catalog.models.attention_qk_width`).
    MLA decodes in the absorbed form: the up-projections fold into the query
    and the output projection (DeepSeek-V2 report, section 2.1.2; FlashMLA),
    so each of the ``h`` heads scores the cached latent and rotary key,
    ``w_qk = h (r_kv + d_rope)``, and sums the latent, ``w_v = h r_kv``:
    DeepSeek-V3, 128 x 576 and 128 x 512. The matrix FLOPs do not change,
    since the folded products have the parameters of the up-projection they
    replace. Prefill runs the expanded form (per-head keys and values), as
    engines do. Chapters 3 and 7.
    """
    m = models.load(model)
    if m.attention_kind == "mla":
        r, rope = m.kv_lora_rank or 0, m.qk_rope_head_dim or 0  # an MLA config always has both (models.load)
        return float(m.n_heads * (r + rope)), float(m.n_heads * r)
    return float(models.attention_qk_width(m)), float(models.attention_v_width(m))


def _decode_groups(m, groups):
    """The attention groups as decode runs them: MLA absorbed (:func:`decode_attention_widths`), others as they are."""
    if m.attention_kind != "mla":
        return groups
    qk, v = decode_attention_widths(m)
    return [(n, qk, v, window) for n, _, _, window in groups]


@formula(None, model="label", context_tokens="int>=0")
def decode_flops(model, context_tokens):
    """FLOPs of one decode step of ``model`` with ``context_tokens`` keys in the cache.

    :func:`flops_per_token` plus attention ``2 n (w_qk + w_v)`` per layer,
    ``n`` capped at the layer's window in sliding-window layers. MLA layers
    count the absorbed form engines decode with (:func:`decode_attention_widths`;
    DeepSeek-V3: 2 x 128 x 1,088 FLOPs per cached token and layer, 3.4 times
    the expanded form's 2 x 128 x 320), the form of
    :func:`aiinfra.roofline.mla_decode_attention_intensity_flops_per_byte`.
    Contexts past the model's ``max_position_embeddings`` are computed as
    asked (a curve may run past them); the KV of such a request warns
    (:func:`aiinfra.memory.kv_bytes_per_request`). Qwen3-8B at 2,048 tokens:
    16.34e9. Accepts an array of contexts.
    """
    m, n_lin, n_head, groups = _shape(model)
    ctx = context_tokens
    total = np.asarray(_forward_flops_per_token(n_lin, n_head)) + np.zeros_like(ctx)
    for n, wq, wv, window in _decode_groups(m, groups):
        total = total + attention_flops_per_token(
            n, wq, wv, ctx if window is None else np.minimum(ctx, window)
        )
    return total


@formula(None, model="label", prompt_tokens="int>=1", causal="bool", lm_head_last_token_only="bool")
def prefill_flops(model, prompt_tokens, causal=True, lm_head_last_token_only=True):
    """FLOPs of prefilling ``prompt_tokens`` through ``model`` (causal, lm_head on the last token by default).

    Qwen3-8B at 2,048 tokens: 29.69e12. ``causal=False`` counts every token
    attending to all ``P``; ``lm_head_last_token_only=False`` computes logits
    at every position. Sliding-window layers count ``sum_i min(i, window)``
    pairs when causal, ``P min(P, window)`` when not.
    """
    m, n_lin, n_head, groups = _shape(model)
    p = prompt_tokens
    total = np.asarray(_prefill_matmul_flops(n_lin, n_head, p, 1 if lm_head_last_token_only else p))
    for n, wq, wv, window in groups:
        if window is None:
            total = total + np.asarray(_prefill_attention_flops(n, wq, wv, p, causal))
        else:
            pairs = _causal_pairs(p, window) if causal else p * np.minimum(p, window)
            total = total + 2.0 * n * (wq + wv) * pairs
    return total


@formula(None, model="label", prompt_tokens="int>=1", generated_tokens="int>=1")
def request_flops(model, prompt_tokens, generated_tokens):
    """Exact FLOPs of one request on ``model``: causal prefill plus ``G - 1`` decode steps.

    See :func:`request_step_flops`; set it beside
    ``approx_flops_2n(models.total_params(model), P, G)``. Sliding-window
    layers count ``sum_i min(i, window)`` query-key pairs. The prefill's
    attention is expanded, the decode steps' absorbed for MLA
    (:func:`decode_flops`), so the total is :func:`prefill_flops` plus the
    ``G - 1`` decode steps.
    """
    m, n_lin, n_head, groups = _shape(model)
    p, g = prompt_tokens, generated_tokens
    seen = p + g - 1.0
    full = [x for x in groups if x[3] is None]
    if full:  # the first full group carries the matmuls, as in the closed form
        n, wq, wv, _ = full[0]
        total = np.asarray(request_step_flops(n_lin, n_head, n, wq, wv, p, g))
    else:
        total = 2.0 * n_lin * seen + 2.0 * n_head * g
    for n, wq, wv, window in groups[1:] if full else groups:
        total = total + 2.0 * n * (wq + wv) * _causal_pairs(seen, window)
    for (n, wq, wv, window), (_, aq, av, _) in zip(groups, _decode_groups(m, groups)):
        # decode steps attend in their own form (absorbed MLA): P + j keys at step j = 1 .. G - 1
        keys = _causal_pairs(seen, window) - _causal_pairs(p, window)
        total = total + 2.0 * n * (aq + av - wq - wv) * keys
    return total


# --- the 2N rule against the exact count (chapter 3) ------------------------
#
# The rule of thumb charges ``2N`` FLOPs per token, ``N`` being every stored parameter
# (Kaplan et al. 2020). The exact count differs in three places: the embedding table is a
# lookup (0 FLOPs) although its parameters are part of ``N``; the lm_head multiplies every
# output position by a vocab x hidden matrix (tied models reuse the embedding, so ``N``
# counts the table once); attention over the context costs ``2 n (w_qk + w_v)`` per layer, a
# term ``N`` does not contain. At short contexts the over-counted embedding and the missing
# attention roughly cancel; as the context grows attention wins.

_MAX_CONTEXT = 1 << 40


def _two_n_flops_per_token(model) -> float:
    """The rule of thumb for one token: ``2 N``, ``N`` = the parameters a token uses.

    For a dense model that is every stored parameter; for a mixture of
    experts, all but the routed experts it skips (:func:`aiinfra.catalog.models._two_n_params`).
    """
    return approx_flops_2n(models._two_n_params(models.load(model)), 1, 0)


def decode_flops_breakdown(model, context_tokens) -> dict:
    """The exact FLOPs of one decode step, by piece, next to what ``2N`` charges for the same pieces.

    Returns a dict with ``exact`` (``blocks``, ``lm_head``, ``attention``,
    ``embedding`` = 0, ``total``) and ``two_n`` (``blocks`` incl. norms,
    ``lm_head`` (0 when tied), ``embedding``, ``attention`` = 0, ``total``),
    each a dict of FLOPs. ``context_tokens`` is the number of keys the new
    token attends to. Scalars only.
    """
    m = models.load(model)
    ctx = check("context_tokens", context_tokens, "int>=0", scalar=True)
    matrices = flops_per_token(m)
    head = _forward_flops_per_token(0, models.lm_head_params(m))
    total = decode_flops(m, ctx)
    exact = {
        "blocks": matrices - head,
        "lm_head": head,
        "attention": total - matrices,
        "embedding": 0.0,
        "total": total,
    }
    n_embed = models.embedding_params(m)
    n_head_stored = models._stored_lm_head_params(m)
    n_total = models._two_n_params(m)
    two = {
        "blocks": approx_flops_2n(n_total - n_embed - n_head_stored, 1, 0),
        "lm_head": approx_flops_2n(n_head_stored, 1, 0),
        "attention": 0.0,
        "embedding": approx_flops_2n(n_embed, 1, 0),
        "total": approx_flops_2n(n_total, 1, 0),
    }
    return {"exact": exact, "two_n": two}


@formula(None, model="label", context_tokens="int>=0")
def two_n_ratio(model, context_tokens):
    """Exact decode-step FLOPs over ``2N``: 1 means the rule is exact, 1.1 means 10 % short.

    ``context_tokens`` may be an integer array (for a curve). Qwen3-8B: about
    1.0 at 2,048 tokens, where the free embedding and the attention cancel.
    """
    return decode_flops(model, context_tokens) / _two_n_flops_per_token(model)


def context_where_two_n_is_off(model, tolerance=0.1) -> float:
    """The smallest context (tokens) at which the exact decode step exceeds ``2N`` by more than ``tolerance``.

    Exact FLOPs grow with the context (attention), so the answer is found by
    bisection on :func:`two_n_ratio`. Returns ``math.inf`` if the ratio
    never passes ``1 + tolerance`` (e.g. every layer has a short sliding
    window), and 0 if it is already past at an empty context. The rule can
    also be off on the *low* side at short contexts (a large embedding
    table counted in ``N`` but free at run time); check ``two_n_ratio(model, 0)``.
    """
    tol = check("tolerance", tolerance, ">0", scalar=True)
    target = 1.0 + tol
    if two_n_ratio(model, 0) > target:
        return 0.0
    if two_n_ratio(model, _MAX_CONTEXT) <= target:
        return math.inf
    lo, hi = 0, _MAX_CONTEXT  # ratio(lo) <= target < ratio(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if two_n_ratio(model, mid) > target:
            hi = mid
        else:
            lo = mid
    return float(hi)


def request_two_n_ratio(model, prompt_tokens, generated_tokens) -> float:
    """Exact FLOPs of a whole request (causal prefill + ``G - 1`` decode steps) over ``2N (P + G)``.

    ``N`` as in :func:`_two_n_flops_per_token` (:func:`aiinfra.catalog.models._two_n_params`).
    """
    m = models.load(model)
    exact = request_flops(m, prompt_tokens, generated_tokens)
    return exact / approx_flops_2n(models._two_n_params(m), prompt_tokens, generated_tokens)


@formula("3*D", training_tokens="D >0")
def tokens_to_match_training(training_tokens):
    """Tokens served whose forward FLOPs equal the training run's: ``6 N D / (2 N) = 3 D``.

    Training costs about ``6N`` FLOPs per training token (forward 2N plus
    backward 4N, Kaplan et al. 2020); inference about ``2N`` per token, so
    ``N`` cancels. Llama 3 (about 15e12 training tokens) matches its training
    compute after about 45e12 served tokens. Accepts arrays.
    """
    return 3.0 * training_tokens
