"""Static versus continuous batching, simulated one decode step at a time (chapter 5).

The model is deliberately small, so that a chapter can run it in milliseconds
and a reader can check it by hand:

* Time advances in **decode steps**. In one step every running request emits
  exactly one token. A request that wants ``G`` output tokens therefore holds
  a batch slot for ``G`` consecutive steps. Its first token comes out of its
  first step (prefill is folded into that step; its extra cost is ignored).
* The engine has ``max_batch`` slots: at most that many requests run in one
  step. Waiting requests are admitted first come, first served.
* **Static** batching admits requests only when the engine is empty. The batch
  then runs until its *longest* member finishes; slots of members that finished
  early stay idle. This is what a plain ``generate(batch)`` loop does.
* **Continuous** batching (iteration-level scheduling, Yu et al. 2022, Orca)
  refills a slot at the very next step after its request finishes.
* When no request is running and none has arrived, the clock jumps to the next
  arrival; those steps are idle and are not counted as busy steps.

Arrivals are given in steps, so one clock serves both the trace and the
engine. To turn steps into seconds, multiply by a step time (for example
:func:`aiinfra.decode.batched_decode_step_time_s` at the batch the engine
runs): :meth:`ScheduleResult.latency_s` does that.

Two quantities compare the policies:

* **slot utilization** ``U = tokens / (busy_steps * max_batch)``: the share of
  batch slots that did useful work while the GPU was running;
* the **latency distribution**: for each request, steps from its arrival to its
  last token (end-to-end), to its first token (TTFT), and its queueing wait.

Everything is deterministic: :func:`synthetic_trace` draws from
``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from aiinfra.formula import check, choice

__all__ = [
    "POLICIES",
    "Trace",
    "synthetic_trace",
    "ScheduleResult",
    "compare_policies",
    "saturated_requests_per_step",
    "summary_rows",
]

POLICIES = ("static", "continuous")


@dataclass(frozen=True)
class Trace:
    """A list of requests, sorted by arrival step.

    ``arrival_step[i]`` is the step at which request ``i`` becomes available;
    ``prompt_tokens[i]`` its prompt length (used only for memory accounting,
    for example by :mod:`aiinfra.serving.paging`); ``output_tokens[i] >= 1`` the
    tokens it generates. All three are int64 arrays of the same length.
    """

    arrival_step: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray

    def __len__(self) -> int:
        return int(self.arrival_step.size)

    @property
    def total_output_tokens(self) -> int:
        """Sum of output tokens over the trace: the work every policy must do."""
        return int(self.output_tokens.sum())

    @property
    def final_context_tokens(self) -> np.ndarray:
        """Prompt plus output tokens: the context each request holds at its end."""
        return self.prompt_tokens + self.output_tokens

    @property
    def mid_reply_context_tokens(self) -> int:
        """Mean context a request holds halfway through its reply: the mean of ``P + G / 2``, to a whole token.

        The context at which a typical decode step of the trace reads its KV
        (chapter 5 times one step there).
        """
        return int(np.rint(np.mean(self.prompt_tokens + self.output_tokens / 2)))

    @property
    def arrival_rate_per_step(self) -> float:
        """Requests arriving per decode step: ``(n - 1) / (last arrival - first arrival)``.

        The measured rate of the trace (for a Poisson trace, close to
        ``1 / mean_interarrival_steps``); infinite when every request arrives
        at the same step.
        """
        span = int(self.arrival_step[-1] - self.arrival_step[0])
        return float("inf") if span == 0 else (len(self) - 1) / span


def _int_array(name: str, value, minimum: int) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(check(name, value, f"int>={minimum}"))).astype(np.int64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional sequence of whole numbers, got shape {arr.shape}")
    return arr


def _make_trace(arrival_step, prompt_tokens, output_tokens) -> Trace:
    """Build a :class:`Trace` from three equal-length sequences, checking them.

    ``arrival_step`` must be whole numbers >= 0 and non-decreasing (the order
    is the first-come-first-served order); ``prompt_tokens`` whole numbers
    >= 0; ``output_tokens`` whole numbers >= 1. At least one request.
    """
    arr = _int_array("arrival_step", arrival_step, 0)
    prm = _int_array("prompt_tokens", prompt_tokens, 0)
    out = _int_array("output_tokens", output_tokens, 1)
    if arr.size == 0:
        raise ValueError("arrival_step must hold at least one request, got an empty sequence")
    if not (arr.size == prm.size == out.size):
        raise ValueError(
            "arrival_step, prompt_tokens and output_tokens must have the same length, "
            f"got {arr.size}, {prm.size} and {out.size}"
        )
    if np.any(np.diff(arr) < 0):
        raise ValueError("arrival_step must be non-decreasing (sorted by arrival), got a decrease")
    return Trace(arr, prm, out)


def synthetic_trace(
    n_requests,
    *,
    seed=0,
    mean_output_tokens=128,
    max_output_tokens=1024,
    mean_interarrival_steps=0.0,
    min_prompt_tokens=128,
    max_prompt_tokens=2048,
) -> Trace:
    """A reproducible trace of ``n_requests`` requests with varied lengths.

    * Output lengths are geometric with mean ``mean_output_tokens`` (a
      memoryless stop: every new token ends the reply with the same
      probability), clipped to ``[1, max_output_tokens]``. Real chat traces
      are similarly skewed: many short replies, a long tail.
    * Prompt lengths are uniform integers in ``[min_prompt_tokens, max_prompt_tokens]``.
    * Arrivals form a Poisson process with mean gap ``mean_interarrival_steps``
      (floored to whole steps); ``0`` puts every request at step 0.

    Same ``seed``, same trace.
    """
    n = check("n_requests", n_requests, "int>=1", scalar=True)
    s = check("seed", seed, "int>=0", scalar=True)
    mean_out = check("mean_output_tokens", mean_output_tokens, ">=1.0")
    max_out = check("max_output_tokens", max_output_tokens, "int>=1", scalar=True)
    gap = check("mean_interarrival_steps", mean_interarrival_steps, ">=0")
    pmin = check("min_prompt_tokens", min_prompt_tokens, "int>=0", scalar=True)
    pmax = check("max_prompt_tokens", max_prompt_tokens, "int>=0", scalar=True)
    if pmax < pmin:
        raise ValueError(f"max_prompt_tokens must be >= min_prompt_tokens ({pmin}), got {pmax}")
    rng = np.random.default_rng(s)
    out = np.clip(rng.geometric(1.0 / mean_out, size=n), 1, max_out)
    prompt = rng.integers(pmin, pmax + 1, size=n)
    if gap > 0:
        gaps = rng.exponential(gap, size=n)
        gaps[0] = 0.0  # the first request opens the trace at step 0
        arrival = np.floor(np.cumsum(gaps)).astype(np.int64)
    else:
        arrival = np.zeros(n, dtype=np.int64)
    return _make_trace(arrival, prompt, out)


@dataclass(frozen=True)
class ScheduleResult:
    """What one policy did with one trace.

    Per step (index = step number, idle steps included): ``active`` requests
    that emitted a token. Per request (trace order): ``start_step`` (its first
    step, which emits its first token) and ``finish_step`` (the step that
    emits its last token). With a KV budget, ``reserved_tokens`` holds the KV
    token slots reserved during each step (zeros without one).
    """

    policy: str
    max_batch: int
    trace: Trace
    active: np.ndarray
    start_step: np.ndarray
    finish_step: np.ndarray
    reserved_tokens: np.ndarray | None = None
    kv_budget_tokens: int | None = None

    @property
    def total_steps(self) -> int:
        """Steps from step 0 until the last token (the makespan), idle steps included."""
        return int(self.active.size)

    @property
    def busy_steps(self) -> int:
        """Steps in which at least one request ran: the steps the GPU paid for."""
        return int(np.count_nonzero(self.active))

    @property
    def generated_tokens(self) -> int:
        """Tokens emitted, summed over all steps; equals the trace's output tokens."""
        return int(self.active.sum())

    @property
    def slot_utilization(self) -> float:
        """``tokens / (busy_steps * max_batch)``: the share of busy slots doing useful work."""
        return self.generated_tokens / (self.busy_steps * self.max_batch)

    @property
    def mean_batch(self) -> float:
        """Average number of running requests over the busy steps."""
        return self.generated_tokens / self.busy_steps

    @property
    def tokens_per_step(self) -> float:
        """Aggregate throughput over the whole makespan, in tokens per step."""
        return self.generated_tokens / self.total_steps

    @property
    def queue_steps(self) -> np.ndarray:
        """Steps each request waited after arriving before its first step."""
        return self.start_step - self.trace.arrival_step

    @property
    def ttft_steps(self) -> np.ndarray:
        """Steps from arrival to the end of the step that emits the first token."""
        return self.start_step + 1 - self.trace.arrival_step

    @property
    def latency_steps(self) -> np.ndarray:
        """Steps from arrival to the end of the step that emits the last token."""
        return self.finish_step + 1 - self.trace.arrival_step

    @property
    def stretch(self) -> np.ndarray:
        """Latency divided by the request's own length: 1 means it never waited for anyone."""
        return self.latency_steps / self.trace.output_tokens

    def latency_s(self, step_time_s) -> np.ndarray:
        """End-to-end latency of each request in seconds, at a fixed ``step_time_s``."""
        return self.latency_steps * check("step_time_s", step_time_s, ">0")

    def percentile_latency_steps(self, q) -> float:
        """The ``q``-th percentile (0-100) of end-to-end latency in steps (linear interpolation)."""
        qq = check("q", q, ">=0.0")
        if qq > 100:
            raise ValueError(f"q must lie in [0, 100], got {q!r}")
        return float(np.percentile(self.latency_steps, qq))


def _simulate(
    trace: Trace, max_batch, policy: str = "continuous", kv_budget_tokens=None, reserve_tokens=None
) -> ScheduleResult:
    """Run ``trace`` through an engine with ``max_batch`` slots under ``policy``.

    ``policy`` is ``"static"`` (admit only when the engine is empty; the batch
    runs until its longest member ends) or ``"continuous"`` (refill any free
    slot at the next step). Requests are admitted in trace order. See the
    module docstring for the step model. The loop jumps from event to event
    (an arrival or a finish), so a trace of a few hundred requests takes
    milliseconds whatever its length in steps.

    Optionally the KV cache limits admission too: with ``kv_budget_tokens``
    (token slots of KV memory) and ``reserve_tokens`` (one entry per request,
    at least its prompt plus output), a request is admitted only if its
    reservation fits beside those of the running requests, and it keeps the
    reservation until it finishes. The queue is strictly first come, first
    served: a request that does not fit blocks the ones behind it.
    :func:`aiinfra.serving.paging.simulate_with_kv_budget` builds the reservations of
    the contiguous and the paged scheme.
    """
    if not isinstance(trace, Trace):
        raise ValueError(
            f"trace must be an aiinfra.serving.batching.Trace (use synthetic_trace), got {type(trace).__name__}"
        )
    cap = check("max_batch", max_batch, "int>=1", scalar=True)
    choice("policy", policy, set(POLICIES))
    n = len(trace)
    if (kv_budget_tokens is None) != (reserve_tokens is None):
        raise ValueError("kv_budget_tokens and reserve_tokens must be given together (or neither)")
    if kv_budget_tokens is None:
        budget = None
        reserve = np.zeros(n, dtype=np.int64)
    else:
        budget = check("kv_budget_tokens", kv_budget_tokens, "int>=1", scalar=True)
        reserve = _int_array("reserve_tokens", reserve_tokens, 0)
        if reserve.size != n:
            raise ValueError(f"reserve_tokens must hold one entry per request ({n}), got {reserve.size}")
        if np.any(reserve < trace.final_context_tokens):
            raise ValueError("reserve_tokens must be >= each request's prompt plus output tokens")
        if np.any(reserve > budget):
            raise ValueError(
                f"reserve_tokens must each be <= kv_budget_tokens ({budget}): a larger request could never run, "
                f"got a reservation of {int(reserve.max())}"
            )
    arrival = trace.arrival_step
    remaining = trace.output_tokens.copy()
    start = np.full(n, -1, dtype=np.int64)
    finish = np.full(n, -1, dtype=np.int64)
    # run-length logs: (count, active, reserved) for stretches in which nothing changes
    runs: list[tuple[int, int, int]] = []
    held = 0
    waiting: deque[int] = deque()
    running: list[int] = []
    next_arrival = 0
    step = 0
    done = 0
    while done < n:
        while next_arrival < n and arrival[next_arrival] <= step:
            waiting.append(next_arrival)
            next_arrival += 1
        if not running and not waiting:
            idle = int(arrival[next_arrival]) - step
            runs.append((idle, 0, 0))
            step += idle
            continue
        if policy == "continuous" or not running:
            while waiting and len(running) < cap:
                if budget is not None and held + reserve[waiting[0]] > budget:
                    break
                i = waiting.popleft()
                start[i] = step
                held += int(reserve[i])
                running.append(i)
        # nothing changes until the next finish or the next arrival: take those steps at once
        jump = min(int(remaining[i]) for i in running)
        if next_arrival < n:
            jump = min(jump, int(arrival[next_arrival]) - step)
        jump = max(jump, 1)
        runs.append((jump, len(running), held))
        last = step + jump - 1
        still = []
        for i in running:
            remaining[i] -= jump
            if remaining[i] == 0:
                finish[i] = last
                held -= int(reserve[i])
                done += 1
            else:
                still.append(i)
        running = still
        step += jump
    counts = np.array([r[0] for r in runs], dtype=np.int64)
    active_log = np.repeat(np.array([r[1] for r in runs], dtype=np.int64), counts)
    reserved_log = np.repeat(np.array([r[2] for r in runs], dtype=np.int64), counts)
    return ScheduleResult(policy, cap, trace, active_log, start, finish, reserved_log, budget)


def compare_policies(
    trace: Trace, max_batch, kv_budget_tokens=None, reserve_tokens=None
) -> dict[str, ScheduleResult]:
    """Run the same ``trace`` (and KV budget, if any) under every policy in :data:`POLICIES`."""
    return {p: _simulate(trace, max_batch, p, kv_budget_tokens, reserve_tokens) for p in POLICIES}


def saturated_requests_per_step(trace: Trace, max_batch, policy: str = "continuous") -> float:
    """Requests a policy completes per step when it never runs dry: its service capacity.

    The trace's requests are all queued at step 0 (same lengths, same order)
    and run under ``policy`` with ``max_batch`` slots; the rate is requests
    over steps. A policy whose capacity is below the trace's
    :attr:`Trace.arrival_rate_per_step` falls behind: its queue, and with it
    every latency percentile, grows with the length of the trace (chapter 5).
    """
    if not isinstance(trace, Trace):
        raise ValueError(
            f"trace must be an aiinfra.serving.batching.Trace (use synthetic_trace), got {type(trace).__name__}"
        )
    queued = _make_trace(np.zeros(len(trace), dtype=np.int64), trace.prompt_tokens, trace.output_tokens)
    return len(trace) / _simulate(queued, max_batch, policy).total_steps


def summary_rows(
    results: dict[str, ScheduleResult], step_time_s=None, percentiles=(50, 90, 99)
) -> list[dict]:
    """One dict per policy, ready for a table: utilization, mean batch, makespan, latency percentiles.

    Latency percentiles are in steps, or in seconds when ``step_time_s`` is given.
    """
    if not isinstance(results, dict) or not results:
        raise ValueError("results must be a non-empty dict of policy name -> ScheduleResult")
    scale = 1.0 if step_time_s is None else check("step_time_s", step_time_s, ">0")
    rows = []
    for name, res in results.items():
        if not isinstance(res, ScheduleResult):
            raise ValueError(f"results[{name!r}] must be a ScheduleResult, got {type(res).__name__}")
        row = {
            "policy": name,
            "slot_utilization": res.slot_utilization,
            "mean_batch": res.mean_batch,
            "busy_steps": res.busy_steps,
            "tokens_per_step": res.tokens_per_step,
        }
        for q in percentiles:
            row[f"p{q:g}_latency"] = res.percentile_latency_steps(q) * scale
        rows.append(row)
    return rows
