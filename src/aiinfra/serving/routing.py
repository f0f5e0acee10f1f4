"""Routing requests over replicas: round-robin, random, least-loaded, two choices, prefix-aware.

Chapter 7. A service runs ``n`` identical replicas of a model, each a
continuous-batching engine, and a router sends every arriving request to one
of them. The policy decides two things at once: how evenly the queues fill
(load balance), and whether a request lands where the KV cache of its prefix
already sits (cache affinity). The two pull apart: a router that always
follows the cache piles requests on a few replicas, and one that only
balances load scatters every conversation over all caches.

**The replica** (deliberately small, checkable by hand):

* ``slots`` requests run at once (the batch the KV memory allows). A request
  takes a slot when one is free, first come first served, and keeps it until
  its last token.
* Prefill runs one prompt at a time per replica (the prefill engine): a
  request's prefill starts when it holds a slot *and* the previous prefill on
  that replica has finished. Its first token comes out at the end of its
  prefill: ``TTFT = queueing + prefill``.
* Decode then takes a fixed time per request (``output_tokens - 1`` steps at
  the step time of a full batch; prefill is assumed not to slow the decode
  steps, as with disaggregated or well-chunked prefill).
* Each replica keeps the KV of at most ``cache_prefixes`` prefixes, least
  recently used evicted first. A request whose prefix is cached there
  prefills only its own suffix (``prefill_hit_s``), otherwise the whole
  prompt (``prefill_miss_s``). The cache is updated when the router places a
  request (the router's view, as SGLang's cache-aware router keeps it).

**The policies** (:data:`POLICIES`), each seeing the replicas' outstanding
requests (waiting or running) at the moment of arrival:

* ``round_robin``: replica ``i mod n`` for the ``i``-th request;
* ``random``: a uniformly random replica;
* ``least_loaded``: the replica with the fewest outstanding requests (join
  the shortest queue; ties go to the next replica in round-robin order);
* ``two_choices``: two distinct replicas at random, the less loaded of the
  two (Mitzenmacher's power of two choices);
* ``prefix_aware``: among the replicas that hold the request's prefix, the
  least loaded, unless it has more than ``max_imbalance`` requests more than
  the least-loaded replica overall; then (or if no replica holds the prefix)
  the least-loaded replica. This is the exploit/explore trade-off of
  SGLang's cache-aware router and of Preble.

:func:`simulate` runs every policy at every arrival rate in one pass over the
trace: the requests arrive in the same order at every rate (the unit-rate
arrival clock is scaled), the random draws are shared by all runs, and each
step of the loop advances all runs at once with numpy. Same seed, same
result. :func:`max_load` is the balls-into-bins experiment behind the power of
two choices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aiinfra import decode
from aiinfra.formula import check, choice, formula
from aiinfra.serving import prefix_cache

__all__ = [
    "POLICIES",
    "POLICY_LABELS",
    "RoutingTrace",
    "shared_prefix_trace",
    "Workload",
    "workload",
    "replica_capacity_per_s",
    "cache_prefixes_that_fit",
    "RoutingResult",
    "simulate",
    "max_load",
]

POLICIES = ("round_robin", "random", "least_loaded", "two_choices", "prefix_aware")
#: Short names for tables and figure legends.
POLICY_LABELS = {
    "round_robin": "round-robin",
    "random": "random",
    "least_loaded": "least-loaded",
    "two_choices": "two choices",
    "prefix_aware": "prefix-aware",
}


# --------------------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoutingTrace:
    """Requests in arrival order: arrival on a unit-rate clock, prefix, prompt and reply lengths.

    ``arrival[i]`` is the arrival time of request ``i`` in units of the mean
    gap between arrivals (a rate of ``r`` requests per second puts it at
    ``arrival[i] / r`` seconds). ``prefix_id[i]`` names the shared prefix it
    starts with (a conversation's history, an agent's tool list),
    ``prefix_tokens[i]`` its length, ``prompt_tokens[i]`` the whole prompt
    (prefix plus the new suffix) and ``output_tokens[i]`` the reply.
    """

    arrival: np.ndarray
    prefix_id: np.ndarray
    prefix_tokens: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival.size)

    @property
    def mean_context_tokens(self) -> int:
        """Context a request holds on average over its life: the mean of ``prompt + output / 2``, rounded."""
        return int(round(float(np.mean(self.prompt_tokens + self.output_tokens / 2))))

    @property
    def n_prefixes(self) -> int:
        """Number of distinct prefix ids the trace can name (``max id + 1``)."""
        return int(self.prefix_id.max()) + 1


def shared_prefix_trace(
    n_requests,
    n_prefixes,
    *,
    seed=0,
    zipf_exponent=1.0,
    prefix_tokens=4096,
    min_suffix_tokens=128,
    max_suffix_tokens=1024,
    mean_output_tokens=256,
    max_output_tokens=2048,
) -> RoutingTrace:
    """A reproducible trace of ``n_requests`` requests sharing ``n_prefixes`` prefixes.

    * Arrivals: a Poisson process of rate 1 (exponential gaps of mean 1).
    * Prefixes: prefix ``k`` (0-based) is chosen with probability
      proportional to ``(k + 1)^-s``, ``s = zipf_exponent`` (0 gives equal
      popularity); each is ``prefix_tokens`` long.
    * Suffixes: uniform whole numbers in ``[min_suffix_tokens, max_suffix_tokens]``.
    * Replies: geometric with mean ``mean_output_tokens``, clipped to
      ``[1, max_output_tokens]``.

    Same ``seed``, same trace.
    """
    n = check("n_requests", n_requests, "int>=1", scalar=True)
    k = check("n_prefixes", n_prefixes, "int>=1", scalar=True)
    s = check("seed", seed, "int>=0", scalar=True)
    zipf = check("zipf_exponent", zipf_exponent, ">=0", scalar=True)
    pre = check("prefix_tokens", prefix_tokens, "int>=1", scalar=True)
    smin = check("min_suffix_tokens", min_suffix_tokens, "int>=1", scalar=True)
    smax = check("max_suffix_tokens", max_suffix_tokens, "int>=1", scalar=True)
    if smax < smin:
        raise ValueError(
            f"max_suffix_tokens must be >= min_suffix_tokens ({smin}), got {max_suffix_tokens!r}"
        )
    mean_out = check("mean_output_tokens", mean_output_tokens, ">=1", scalar=True)
    max_out = check("max_output_tokens", max_output_tokens, "int>=1", scalar=True)
    rng = np.random.default_rng(s)
    arrival = np.cumsum(rng.exponential(1.0, size=n))
    arrival -= arrival[0]
    weights = np.arange(1, k + 1, dtype=float) ** -zipf
    prefix_id = rng.choice(k, size=n, p=weights / weights.sum())
    suffix = rng.integers(smin, smax + 1, size=n)
    out = np.clip(rng.geometric(1.0 / mean_out, size=n), 1, max_out)
    prefix = np.full(n, pre, dtype=np.int64)
    return RoutingTrace(arrival, prefix_id.astype(np.int64), prefix, prefix + suffix, out.astype(np.int64))


@dataclass(frozen=True)
class Workload:
    """A trace with what each request costs on one replica, in seconds.

    ``prefill_miss_s`` prefills the whole prompt, ``prefill_hit_s`` only the
    suffix after a cached prefix, ``decode_s`` is the time from the first
    token to the last. ``slots`` is the batch one replica runs.
    """

    trace: RoutingTrace
    slots: int
    prefill_miss_s: np.ndarray
    prefill_hit_s: np.ndarray
    decode_s: np.ndarray
    step_s: float

    @property
    def capacity_per_s(self) -> float:
        """Requests per second one replica sustains with no cache hit (:func:`replica_capacity_per_s`)."""
        return replica_capacity_per_s(
            self.slots, float(np.mean(self.prefill_miss_s)), float(np.mean(self.decode_s))
        )


def workload(trace: RoutingTrace, deployment, slots) -> Workload:
    """What each request of ``trace`` costs on one replica described by ``deployment``.

    Prefill: the roofline time of the prompt's FLOPs (``prefill_flops_with_prefix``
    with the model's coefficients, nothing cached or the prefix cached) and
    one read of the weights (:func:`aiinfra.decode.ttft_s`). Decode:
    ``output_tokens - 1`` steps of the deployment at a batch of ``slots``,
    every request at the trace's :attr:`~RoutingTrace.mean_context_tokens`.
    """
    if not isinstance(trace, RoutingTrace):
        raise ValueError(
            f"trace must be a RoutingTrace (see shared_prefix_trace), got {type(trace).__name__}"
        )
    b = check("slots", slots, "int>=1", scalar=True)
    d = deployment
    f, a = prefix_cache.model_prefill_coefficients(d.model)

    def prefill_s(cached):
        flops = prefix_cache.prefill_flops_with_prefix(trace.prompt_tokens.astype(float), cached, f, a)
        return decode.ttft_s(
            flops, d.weight_bytes_read, d.peak_flops_per_s, d.bandwidth_bytes_per_s, d.eta_f, d.eta_b
        )

    step = float(d.step(b, trace.mean_context_tokens).time_s)
    return Workload(
        trace,
        b,
        prefill_s(0.0),
        prefill_s(trace.prefix_tokens.astype(float)),
        (trace.output_tokens - 1) * step,
        step,
    )


@formula(
    "Min(B/(t_p + t_d), 1/t_p)",
    sample={"prefill_s": (0.01, 1.0), "decode_s": (0.0, 10.0)},
    slots="B int>=1",
    prefill_s="t_p >0",
    decode_s="t_d >=0",
)
def replica_capacity_per_s(slots, prefill_s, decode_s):
    """Requests per second one replica can sustain: ``min(B / (t_p + t_d), 1 / t_p)``.

    Two resources, the slower wins: ``B`` slots each held for a prefill and a
    decode (``t_p + t_d`` seconds), and one prefill engine that handles a
    prompt every ``t_p`` seconds. Use the mean times of a workload. Above this
    rate the queues grow without bound. Chapter 7.
    """
    return np.minimum(slots / (prefill_s + decode_s), 1.0 / prefill_s)


def cache_prefixes_that_fit(deployment, slots, context_tokens, prefix_tokens) -> int:
    """How many cached prefixes one replica keeps beside a full batch: ``floor((M_free - B S(n)) / S(c))``.

    ``M_free`` is the deployment's free memory (after weights and reserve),
    ``B S(n)`` the KV of ``slots`` running requests at ``context_tokens``
    each, ``S(c)`` the KV of one ``prefix_tokens``-token prefix. Raises
    ``ValueError`` when not even one prefix fits. Chapter 7.
    """
    b = check("slots", slots, "int>=1", scalar=True)
    n = check("context_tokens", context_tokens, "int>=1", scalar=True)
    c = check("prefix_tokens", prefix_tokens, "int>=1", scalar=True)
    # what a request's (and a prefix's) cache occupies across the GPUs: copies included (MLA under TP)
    room = deployment.free_bytes - b * deployment.kv_copies * deployment.kv_bytes(n)
    count = int(room // (deployment.kv_copies * deployment.kv_bytes(c))) if room > 0 else 0
    if count < 1:
        raise ValueError(
            f"slots must leave room for one cached prefix of {c:,} tokens beside {b} requests of "
            f"{n:,} tokens; got slots={slots!r}"
        )
    return count


# --------------------------------------------------------------------------------------
# The simulation
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoutingResult:
    """Per request (last axis) for every policy (first axis) at every rate (second axis).

    ``queue_s``: arrival to the start of its prefill; ``ttft_s``: arrival to
    its first token; ``hit``: its prefix was cached on its replica;
    ``replica``: where it ran.
    """

    policies: tuple
    rates_per_s: np.ndarray
    queue_s: np.ndarray
    ttft_s: np.ndarray
    hit: np.ndarray
    replica: np.ndarray

    def _index(self, policy):
        return self.policies.index(choice("policy", policy, set(self.policies)))

    @property
    def mean_queue_s(self) -> np.ndarray:
        """Mean queueing delay, shape (policies, rates)."""
        return self.queue_s.mean(axis=-1)

    @property
    def hit_rate(self) -> np.ndarray:
        """Share of requests whose prefix was cached where they ran, shape (policies, rates)."""
        return self.hit.mean(axis=-1)

    def ttft_percentile_s(self, q) -> np.ndarray:
        """The ``q``-th percentile (0-100) of TTFT, shape (policies, rates)."""
        qq = check("q", q, ">=0", scalar=True)
        if qq > 100:
            raise ValueError(f"q must lie in [0, 100], got {q!r}")
        return np.percentile(self.ttft_s, qq, axis=-1)

    def of(self, policy, metric):
        """One policy's row of a metric (``"mean_queue_s"``, ``"hit_rate"`` or ``"p99_ttft_s"``), over the rates."""
        i = self._index(policy)
        choice("metric", metric, {"mean_queue_s", "hit_rate", "p99_ttft_s"})
        rows = self.ttft_percentile_s(99) if metric == "p99_ttft_s" else getattr(self, metric)
        return rows[i]


def simulate(
    wl: Workload,
    rates_per_s,
    *,
    n_replicas,
    cache_prefixes,
    policies=POLICIES,
    seed=0,
    max_imbalance=None,
    load_window=None,
) -> RoutingResult:
    """Route ``wl``'s requests over ``n_replicas`` at each rate in ``rates_per_s``, under each policy.

    See the module docstring for the replica and the policies.
    ``cache_prefixes`` is how many prefixes one replica's KV cache keeps;
    ``max_imbalance`` (default: half the slots) is how many more outstanding
    requests the prefix-aware router accepts on a replica that holds the
    prefix than on the least-loaded one. ``load_window`` (default: twice the
    slots) is how many of its most recent requests a replica remembers when
    it counts the outstanding ones; a replica with more outstanding than that
    counts as full. Returns a :class:`RoutingResult`.
    """
    if not isinstance(wl, Workload):
        raise ValueError(f"wl must be a Workload (see workload()), got {type(wl).__name__}")
    rates = np.atleast_1d(check("rates_per_s", rates_per_s, ">0")).astype(float)
    n = check("n_replicas", n_replicas, "int>=1", scalar=True)
    cap = check("cache_prefixes", cache_prefixes, "int>=1", scalar=True)
    pols = tuple(choice("policies", p, set(POLICIES)) for p in policies)
    if not pols:
        raise ValueError("policies must name at least one policy, got an empty sequence")
    s = check("seed", seed, "int>=0", scalar=True)
    b = wl.slots
    imb = b // 2 if max_imbalance is None else check("max_imbalance", max_imbalance, "int>=0", scalar=True)
    window = 2 * b if load_window is None else check("load_window", load_window, "int>=1", scalar=True)

    tr = wl.trace
    n_req, n_pre = len(tr), tr.n_prefixes
    policy_idx = np.repeat([POLICIES.index(p) for p in pols], rates.size)
    scale = np.tile(1.0 / rates, len(pols))
    runs = scale.size
    rows = np.arange(runs)

    rng = np.random.default_rng(s)
    rnd = rng.integers(n, size=n_req)
    first = rng.integers(n, size=n_req)
    second = (first + rng.integers(1, max(n, 2), size=n_req)) % n  # a distinct second replica (n > 1)
    # tie-break of the least-loaded choices: prefer replica i mod n, then the next ones
    rotation = (np.arange(n)[None, :] - np.arange(n)[:, None]) % n / (n + 1.0)
    options = np.empty((len(POLICIES), runs), dtype=np.int64)

    slot_free = np.zeros((runs, n, b))
    prefill_free = np.zeros((runs, n))
    finish_log = np.full((runs, n, window), -np.inf)
    pointer = np.zeros((runs, n), dtype=np.int64)
    last_use = np.full((runs, n, n_pre), -1, dtype=np.int64)
    n_cached = np.zeros((runs, n), dtype=np.int64)
    queue = np.empty((runs, n_req))
    ttft = np.empty((runs, n_req))
    hit_out = np.empty((runs, n_req), dtype=bool)
    replica_out = np.empty((runs, n_req), dtype=np.int64)

    for i in range(n_req):
        t = tr.arrival[i] * scale
        load = (finish_log > t[:, None, None]).sum(axis=2)
        g = tr.prefix_id[i]
        holds = last_use[:, :, g] >= 0
        score = load + rotation[i % n]
        least = np.argmin(score, axis=1)
        c1, c2 = first[i], second[i]
        two = np.where(load[:, c2] < load[:, c1], c2, c1)
        best_holder = np.argmin(np.where(holds, score, np.inf), axis=1)
        follow = holds.any(axis=1) & (load[rows, best_holder] <= load[rows, least] + imb)
        pref = np.where(follow, best_holder, least)
        options[0], options[1], options[2], options[3], options[4] = i % n, rnd[i], least, two, pref
        r = options[policy_idx, rows]

        hit = holds[rows, r]
        t_pre = np.where(hit, wl.prefill_hit_s[i], wl.prefill_miss_s[i])
        free = slot_free[rows, r]
        slot = np.argmin(free, axis=1)
        start = np.maximum(t, free[rows, slot])
        begin = np.maximum(start, prefill_free[rows, r])
        first_token = begin + t_pre
        prefill_free[rows, r] = first_token
        done = first_token + wl.decode_s[i]
        slot_free[rows, r, slot] = done
        finish_log[rows, r, pointer[rows, r] % window] = done
        pointer[rows, r] += 1

        n_cached[rows, r] += ~(last_use[rows, r, g] >= 0)
        last_use[rows, r, g] = i
        over = n_cached[rows, r] > cap
        if over.any():
            ro, rr = rows[over], r[over]
            lru = np.where(last_use[ro, rr] >= 0, last_use[ro, rr], np.iinfo(np.int64).max)
            last_use[ro, rr, np.argmin(lru, axis=1)] = -1
            n_cached[ro, rr] -= 1

        queue[:, i] = begin - t
        ttft[:, i] = first_token - t
        hit_out[:, i] = hit
        replica_out[:, i] = r

    shape = (len(pols), rates.size, n_req)
    return RoutingResult(
        pols,
        rates,
        queue.reshape(shape),
        ttft.reshape(shape),
        hit_out.reshape(shape),
        replica_out.reshape(shape),
    )


# --------------------------------------------------------------------------------------
# Balls into bins
# --------------------------------------------------------------------------------------


def max_load(n_balls, n_bins, choices=1, *, trials=1000, seed=0) -> np.ndarray:
    """Fullest bin after placing ``n_balls`` one by one into ``n_bins``, in each of ``trials`` runs.

    ``choices=1``: each ball goes to a uniformly random bin. ``choices=2``:
    each ball looks at two distinct random bins and joins the less full one
    (the first on a tie); with one bin, both rules put every ball there.
    With ``n`` balls in ``n`` bins the fullest bin holds about
    ``ln n / ln ln n`` balls with one choice and ``ln ln n / ln 2`` with two
    (Mitzenmacher 2001). Returns the ``trials`` maxima (an int array).
    """
    m = check("n_balls", n_balls, "int>=1", scalar=True)
    n = check("n_bins", n_bins, "int>=1", scalar=True)
    d = check("choices", choices, "int>=1", scalar=True)
    if d > 2:
        raise ValueError(f"choices must be 1 or 2, got {choices!r}")
    k = check("trials", trials, "int>=1", scalar=True)
    s = check("seed", seed, "int>=0", scalar=True)
    rng = np.random.default_rng(s)
    bins = np.zeros((k, n), dtype=np.int64)
    rows = np.arange(k)
    for _ in range(m):
        a = rng.integers(n, size=k)
        if d == 2 and n > 1:
            b = (a + rng.integers(1, n, size=k)) % n
            a = np.where(bins[rows, b] < bins[rows, a], b, a)
        bins[rows, a] += 1
    return bins.max(axis=1)
