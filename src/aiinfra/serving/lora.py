"""Multi-LoRA serving: many fine-tuned adapters over one copy of the base weights.

Chapter 7. A LoRA adapter (Hu et al., 2021) adds ``B A`` to a weight ``W``
(``d_out x d_in``), with ``A`` of shape ``r x d_in`` and ``B`` of shape
``d_out x r``. It stores ``r (d_in + d_out)`` parameters per adapted matrix, so
an adapter over matrices whose in- plus out-widths sum to ``w`` holds

    M_a = r w b_W bytes        and costs 2 r w FLOPs per token.

A server such as S-LoRA (Sheng et al., MLSys 2024) or Punica (Chen et al.,
MLSys 2024) keeps one base model and many adapters, and batches requests for
different adapters into one step: the base matmul runs once for the whole
batch, and a gathered low-rank kernel (Punica's SGMV) applies each request's
own ``A`` and ``B``. Each distinct adapter in the batch is read once per
step, so the step reads ``R_W + n_a M_a`` bytes.
"""

from __future__ import annotations

from aiinfra.catalog import models
from aiinfra.formula import formula

__all__ = ["adapted_width_sum", "lora_adapter_bytes", "lora_flops_per_token", "multi_lora_step_bytes"]

#: The matrices a LoRA adapter usually covers: every attention and dense-MLP projection.
ADAPTED_GROUPS = ("attention", "mlp")


def adapted_width_sum(model, groups=ADAPTED_GROUPS) -> int:
    """``w``: the sum of ``d_in + d_out`` over every matrix of ``groups``, in every layer (experts excluded).

    Llama-3.1-70B, attention and MLP: 80 layers x 161,792 = 12,943,360. Chapter 7.
    """
    m = models.load(model)
    total = 0
    for t in m.tensors:
        if t.group in groups and len(t.shape) == 2 and not t.experts:
            copies, n_out, n_in = t.matrix
            total += copies * (n_out + n_in)
    if total == 0:
        raise ValueError(
            f"groups must name matmul groups of {m.name} (e.g. {ADAPTED_GROUPS}), got {groups!r}"
        )
    return total


@formula(rank="r int>=1", width_sum="w >0", bytes_per_param="b_W >0")
def lora_adapter_bytes(rank, width_sum, bytes_per_param=2.0):
    """Bytes of one adapter of rank ``r`` over matrices with widths summing to ``w``: ``r w b_W``. Chapter 7."""
    return rank * width_sum * bytes_per_param


@formula(rank="r int>=1", width_sum="w >0")
def lora_flops_per_token(rank, width_sum):
    """Extra FLOPs one token pays for its adapter: ``2 r w`` (``x A`` then ``(x A) B``). Chapter 7."""
    return 2.0 * rank * width_sum


@formula(
    weight_bytes="R_W >0",
    distinct_adapters="n_a int>=0",
    adapter_bytes="M_a >0",
)
def multi_lora_step_bytes(weight_bytes, distinct_adapters, adapter_bytes):
    """Bytes one batched decode step reads: the base weights once plus each distinct adapter once.

    ``R_W + n_a M_a``. KV reads are left out (they do not change with the
    adapters). Chapter 7.
    """
    return weight_bytes + distinct_adapters * adapter_bytes
