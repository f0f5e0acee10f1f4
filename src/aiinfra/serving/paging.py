"""KV-cache allocation: contiguous max-length reservation versus pages (chapter 5).

Two ways to give a request room for its KV cache:

* **Contiguous reservation.** The server does not know how long a reply will
  be, so it reserves one block big enough for the longest allowed context,
  ``n_max`` tokens, when the request is admitted. A request that ends after
  ``n`` tokens wastes ``n_max - n`` token slots for its whole life.
* **Paging** (PagedAttention, Kwon et al. 2023). The cache is cut into pages
  of ``p`` tokens; a request takes a new page only when its last one is full.
  It holds ``ceil(n / p) * p`` token slots, so it wastes fewer than ``p``:
  at most one partly filled page per request.

With ``k`` bytes of KV per token (:attr:`aiinfra.deployment.Deployment.kv_bytes_per_token`)
and a budget of ``M`` bytes for the cache, the contiguous scheme admits
``floor(M / (n_max k))`` requests whatever their real lengths, while paging
admits as many as their rounded-up real lengths allow.

Token counts are whole numbers; bytes are floats (SI). Functions accept numpy
arrays of context lengths. :func:`kv_usage_over_time` replays a schedule from
:mod:`aiinfra.serving.batching` and reports, step by step, the KV in use and what
each scheme holds reserved.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aiinfra.formula import check, choice, formula

__all__ = [
    "paged_reserved_tokens",
    "paged_waste_tokens",
    "KVFootprint",
    "kv_footprint",
    "max_batch_contiguous",
    "max_batch_paged",
    "KVUsage",
    "kv_usage_over_time",
    "SCHEMES",
    "simulate_with_kv_budget",
]

#: The two allocation schemes compared in chapter 5.
SCHEMES = ("contiguous", "paged")


@formula(
    "ceiling(n/p)*p",
    out=int,
    sample={"context_tokens": (0, 100_000), "page_tokens": (1, 100_000)},
    context_tokens="n int>=0",
    page_tokens="p int>=1",
)
def paged_reserved_tokens(context_tokens, page_tokens):
    """Token slots a request holds under paging: ``ceil(n / p) * p``.

    ``context_tokens`` (``n``, whole, >= 0; array allowed) is what the request
    has stored so far; ``page_tokens`` (``p``, whole, >= 1) the page size in
    tokens (vLLM's default block is 16 tokens).
    """
    return -(-context_tokens // page_tokens) * page_tokens


@formula(
    out=int,
    context_tokens="n int>=0",
    page_tokens="p int>=1",
)
def paged_waste_tokens(context_tokens, page_tokens):
    """Unused slots in a request's last page: ``ceil(n / p) * p - n``, always ``< p``."""
    return paged_reserved_tokens(context_tokens, page_tokens) - context_tokens


@formula(
    out=int,
    context_tokens="n int>=0",
    max_context_tokens="n_max int>=1",
)
def _contiguous_waste_tokens(context_tokens, max_context_tokens):
    """Unused slots in a max-length reservation: ``n_max - n``.

    ``context_tokens`` must not exceed ``max_context_tokens``: a longer
    request would not have been admitted.
    """
    if np.any(context_tokens > max_context_tokens):
        raise ValueError(
            f"context_tokens must be <= max_context_tokens ({int(max_context_tokens)}), "
            f"got {context_tokens!r}"
        )
    return max_context_tokens - context_tokens


@dataclass(frozen=True)
class KVFootprint:
    """KV memory of a set of requests under both schemes, in bytes."""

    used_bytes: float
    contiguous_bytes: float
    paged_bytes: float
    n_requests: int

    @property
    def contiguous_waste_fraction(self) -> float:
        """Share of the contiguous reservation that holds no token: ``1 - used / reserved``."""
        return 1.0 - self.used_bytes / self.contiguous_bytes

    @property
    def paged_waste_fraction(self) -> float:
        """Share of the paged reservation that holds no token (0 when nothing is stored)."""
        return 0.0 if self.paged_bytes == 0 else 1.0 - self.used_bytes / self.paged_bytes


def kv_footprint(context_tokens, max_context_tokens, page_tokens, kv_bytes_per_token) -> KVFootprint:
    """KV bytes used and reserved by requests of the given lengths.

    ``used = k * sum(n)``, ``contiguous = k * n_max * count``,
    ``paged = k * sum(ceil(n / p) * p)``, with ``k = kv_bytes_per_token``.
    """
    n = np.atleast_1d(check("context_tokens", context_tokens, "int>=0"))
    m = check("max_context_tokens", max_context_tokens, "int>=1", scalar=True)
    k = check("kv_bytes_per_token", kv_bytes_per_token, ">0")
    if n.size == 0:
        raise ValueError("context_tokens must hold at least one request")
    _contiguous_waste_tokens(n, m)  # rejects lengths above the maximum
    paged = np.asarray(paged_reserved_tokens(n, page_tokens))
    return KVFootprint(float(k * n.sum()), float(k * m * n.size), float(k * paged.sum()), int(n.size))


@formula(
    out=int,
    kv_budget_bytes="M_KV >=0",
    max_context_tokens="n_max int>=1",
    kv_bytes_per_token="k >0",
)
def max_batch_contiguous(kv_budget_bytes, max_context_tokens, kv_bytes_per_token):
    """Requests that fit when each reserves ``n_max`` tokens: ``floor(M / (n_max k))``.

    The same count as :func:`aiinfra.decode.max_batch_from_kv_budget` with a
    per-request KV of ``n_max k``; independent of the real lengths.
    """
    # a relative nudge keeps exact ratios computed as 3.9999999 from losing one
    return np.floor(kv_budget_bytes / (max_context_tokens * kv_bytes_per_token) * (1 + 1e-12))


def max_batch_paged(context_tokens, kv_budget_bytes, page_tokens, kv_bytes_per_token) -> int:
    """How many of the requests, taken in order, fit at their full length under paging.

    The largest ``B`` with ``k p sum_{i<B} ceil(n_i / p) <= M``. Pass the
    lengths the requests reach at their end (prompt plus output) to get the
    batch that never has to evict anyone.
    """
    n = np.atleast_1d(check("context_tokens", context_tokens, "int>=0"))
    m = check("kv_budget_bytes", kv_budget_bytes, ">=0")
    k = check("kv_bytes_per_token", kv_bytes_per_token, ">0")
    if n.size == 0:
        raise ValueError("context_tokens must hold at least one request")
    need = np.cumsum(np.asarray(paged_reserved_tokens(n, page_tokens), dtype=float) * k)
    return int(np.searchsorted(need, m * (1 + 1e-12), side="right"))


@dataclass(frozen=True)
class KVUsage:
    """Per-step KV token counts over a schedule (index = step)."""

    used_tokens: np.ndarray
    contiguous_tokens: np.ndarray
    paged_tokens: np.ndarray

    @property
    def peak_used_tokens(self) -> int:
        return int(self.used_tokens.max())

    @property
    def peak_contiguous_tokens(self) -> int:
        return int(self.contiguous_tokens.max())

    @property
    def peak_paged_tokens(self) -> int:
        return int(self.paged_tokens.max())

    def mean_waste_fraction(self, scheme: str) -> float:
        """Reserved-but-empty share, averaged over steps with any reservation, for ``scheme``."""
        choice("scheme", scheme, {"contiguous", "paged"})
        res = self.contiguous_tokens if scheme == "contiguous" else self.paged_tokens
        busy = res > 0
        if not np.any(busy):
            return 0.0
        return float(np.mean(1.0 - self.used_tokens[busy] / res[busy]))


def kv_usage_over_time(result, page_tokens, max_context_tokens) -> KVUsage:
    """Replay a :class:`aiinfra.serving.batching.ScheduleResult` and count KV tokens per step.

    During step ``s`` a running request that started at ``s0`` holds its
    prompt plus the ``s - s0 + 1`` tokens emitted so far (the KV of the token
    being generated is written in this step). Contiguous reservation holds
    ``max_context_tokens`` for it; paging holds that count rounded up to
    ``page_tokens``. Every request's final context must fit in
    ``max_context_tokens``.
    """
    from aiinfra.serving.batching import ScheduleResult

    if not isinstance(result, ScheduleResult):
        raise ValueError(
            f"result must be an aiinfra.serving.batching.ScheduleResult, got {type(result).__name__}"
        )
    p = check("page_tokens", page_tokens, "int>=1", scalar=True)
    m = check("max_context_tokens", max_context_tokens, "int>=1", scalar=True)
    tr = result.trace
    if np.any(tr.final_context_tokens > m):
        raise ValueError(
            f"max_context_tokens must cover every request's prompt plus output "
            f"(longest is {int(tr.final_context_tokens.max())}), got {m}"
        )
    steps = result.total_steps
    start = np.asarray(result.start_step, dtype=np.int64)
    lengths = np.asarray(result.finish_step, dtype=np.int64) - start + 1
    # one row per (request, step it runs): every request's steps laid end to end
    request = np.repeat(np.arange(lengths.size), lengths)
    offset = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    held = np.asarray(tr.prompt_tokens, dtype=np.int64)[request] + offset + 1
    step = start[request] + offset
    used = _sum_by_step(step, held, steps)
    paged = _sum_by_step(step, np.asarray(paged_reserved_tokens(held, p), dtype=np.int64), steps)
    return KVUsage(used, result.active * m, paged)


def _sum_by_step(step: np.ndarray, tokens: np.ndarray, steps: int) -> np.ndarray:
    """Exact integer sum of ``tokens`` per step index (``0 .. steps - 1``)."""
    out = np.zeros(steps, dtype=np.int64)
    np.add.at(out, step, tokens)
    return out


def _reservation_tokens(final_context_tokens, scheme, page_tokens, max_context_tokens):
    """KV token slots each request holds from admission to its end, under ``scheme``.

    ``"contiguous"``: ``max_context_tokens`` for every request. ``"paged"``:
    its final context rounded up to whole pages, ``ceil(n / p) * p``. The
    paged figure assumes the scheduler knows each request's final length; an
    engine that allocates pages on demand (vLLM) holds fewer early on and
    preempts a request when it runs out, so this is the steady-state share,
    not an exact replay of such an engine.
    """
    choice("scheme", scheme, set(SCHEMES))
    n = np.atleast_1d(check("final_context_tokens", final_context_tokens, "int>=0"))
    m = check("max_context_tokens", max_context_tokens, "int>=1", scalar=True)
    _contiguous_waste_tokens(n, m)  # every request must fit in the maximum
    if scheme == "contiguous":
        check("page_tokens", page_tokens, "int>=1", scalar=True)
        return np.full(n.size, m, dtype=np.int64)
    return np.asarray(paged_reserved_tokens(n, page_tokens), dtype=np.int64)


def simulate_with_kv_budget(
    trace,
    max_batch,
    kv_budget_bytes,
    kv_bytes_per_token,
    scheme,
    page_tokens=16,
    max_context_tokens=8192,
    policy="continuous",
):
    """Schedule ``trace`` when the KV cache, not only the slot count, limits the batch.

    The budget of ``kv_budget_bytes`` holds ``floor(M / k)`` token slots
    (``k = kv_bytes_per_token``); each request reserves
    :func:`_reservation_tokens` under ``scheme`` when admitted and frees them
    when it ends (:func:`aiinfra.serving.batching.compare_policies` with a KV budget).
    Returns the :class:`aiinfra.serving.batching.ScheduleResult`; its
    ``reserved_tokens`` trace and ``mean_batch`` show what each scheme allows.
    """
    from aiinfra.serving import batching

    if not isinstance(trace, batching.Trace):
        raise ValueError(f"trace must be an aiinfra.serving.batching.Trace, got {type(trace).__name__}")
    m = check("kv_budget_bytes", kv_budget_bytes, ">0")
    k = check("kv_bytes_per_token", kv_bytes_per_token, ">0")
    budget_tokens = int(np.floor(m / k * (1 + 1e-12)))
    if budget_tokens < 1:
        raise ValueError(f"kv_budget_bytes must hold at least one token ({k} B), got {kv_budget_bytes!r}")
    reserve = _reservation_tokens(trace.final_context_tokens, scheme, page_tokens, max_context_tokens)
    if int(reserve.max()) > budget_tokens:
        raise ValueError(
            f"kv_budget_bytes must hold at least one request's reservation ({int(reserve.max()) * k:,.0f} B "
            f"under {scheme!r}), got {m:,.0f} B"
        )
    return batching._simulate(trace, max_batch, policy, budget_tokens, reserve)
