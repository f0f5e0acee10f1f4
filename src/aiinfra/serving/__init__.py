"""Serving at scale: what an engine does with many requests on a deployment.

* :mod:`~aiinfra.serving.batching`: static vs continuous batching, simulated step by step;
* :mod:`~aiinfra.serving.paging`: contiguous vs paged KV reservation;
* :mod:`~aiinfra.serving.speculation`: speculative decoding and its break-even points;
* :mod:`~aiinfra.serving.moe`: what a mixture of experts reads per token and per batch;
* :mod:`~aiinfra.serving.prefix_cache`: reusing a cached prompt prefix;
* :mod:`~aiinfra.serving.disaggregation`: separate prefill and decode pools;
* :mod:`~aiinfra.serving.routing`: requests over replicas, load balance against cache affinity;
* :mod:`~aiinfra.serving.capacity`: GPUs for a load, cost per token, the price of context;
* :mod:`~aiinfra.serving.chunked_prefill`: prompt chunks sharing steps with decodes, TTFT against TPOT;
* :mod:`~aiinfra.serving.slo`: SLO attainment and goodput;
* :mod:`~aiinfra.serving.lora`: multi-LoRA serving, adapter bytes and FLOPs;
* :mod:`~aiinfra.serving.sparse_attention`: top-k sparse attention with an indexer, FLOPs and bytes.

The one-replica questions (bytes, batch, step time) belong to :class:`aiinfra.deployment.Deployment`.
"""
