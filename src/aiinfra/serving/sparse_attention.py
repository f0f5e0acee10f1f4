"""Sparse and linear attention: what they do to the KV bytes a decode step reads and to its attention FLOPs.

Chapter 7. Dense attention makes every new token score all ``n`` earlier keys
in every layer: ``2 L n (w_qk + w_v)`` FLOPs, and a read of the whole cache.

*DeepSeek Sparse Attention* (DSA, DeepSeek-V3.2-Exp; also GLM-5) keeps the
full MLA cache but lets a small *lightning indexer* pick the ``k`` keys each
query attends to. The indexer scores all ``n`` keys with ``H_I`` heads of
width ``d_I`` over its own cached key (one ``d_I`` vector per token per
layer), then the main attention runs over ``min(n, k)`` keys:

    F_attn = 2 L min(n, k) (w_qk + w_v)  +  2 L n H_I d_I
    R_attn = L (min(n, k) kv_L  +  n d_I b_I)

with ``kv_L`` the cache bytes per token per layer of the main attention and
``b_I`` the indexer key's bytes per element. Both still grow with ``n``, but
with a coefficient one or two orders of magnitude smaller. Nothing is freed:
the cache grows by the indexer keys. Assumption: the indexer's weights,
score top-k and the gather are not counted.

*Hybrid linear-attention* models (Qwen3-Next, Nemotron-H) replace most
layers with a fixed-size recurrent state; only the remaining full-attention
layers cache per-token KV (:func:`aiinfra.memory.request_state_bytes`).
"""

from __future__ import annotations

import numpy as np

from aiinfra.formula import formula

__all__ = ["sparse_attention_flops_per_token", "sparse_attention_read_bytes_per_token"]


@formula(
    n_layers="L int>=1",
    qk_width="w_qk >0",
    v_width="w_v >0",
    context_tokens="n_ctx int>=0",
    topk_tokens="k int>=1",
    index_heads="H_I int>=0",
    index_head_dim="d_I int>=0",
)
def sparse_attention_flops_per_token(
    n_layers, qk_width, v_width, context_tokens, topk_tokens, index_heads, index_head_dim
):
    """Attention FLOPs of one query token under top-k sparse attention with an indexer.

    ``2 L min(n, k) (w_qk + w_v) + 2 L n H_I d_I``. With ``index_heads = 0``
    and ``topk_tokens >= n`` it is dense attention
    (:func:`aiinfra.compute.attention_flops_per_token`). Chapter 7.
    """
    kept = np.minimum(context_tokens, topk_tokens)
    return 2.0 * n_layers * (kept * (qk_width + v_width) + context_tokens * index_heads * index_head_dim)


@formula(
    n_layers="L int>=1",
    context_tokens="n_ctx int>=0",
    topk_tokens="k int>=1",
    kv_bytes_per_token_per_layer="kv_L >0",
    index_head_dim="d_I int>=0",
    index_bytes_per_element="b_I >0",
)
def sparse_attention_read_bytes_per_token(
    n_layers,
    context_tokens,
    topk_tokens,
    kv_bytes_per_token_per_layer,
    index_head_dim,
    index_bytes_per_element=1.0,
):
    """Cache bytes one query token reads under top-k sparse attention: ``L (min(n, k) kv_L + n d_I b_I)``.

    The main attention gathers ``min(n, k)`` cached entries per layer; the
    indexer reads every token's ``d_I``-wide key (FP8 by default:
    ``index_bytes_per_element = 1``; its scales are not counted). Chapter 7.
    """
    kept = np.minimum(context_tokens, topk_tokens)
    return n_layers * (
        kept * kv_bytes_per_token_per_layer + context_tokens * index_head_dim * index_bytes_per_element
    )
