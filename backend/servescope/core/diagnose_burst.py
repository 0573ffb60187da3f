r"""Arrival bursts against prefill capacity: the largest backlog of prompt tokens the arrivals
build when prefill runs flat out (a fluid queue), and the window of arrivals that built it.

  backlog (s of prefill)
    ^        /|
    |       / |\        each arrival adds prompt_len / capacity seconds of work;
    |  /|  /  | \       the queue drains at one second a second between arrivals
    | / |\/   |  \
    +---------+------> arrival_s
    start     peak      window = peak - start; backlog = tokens / capacity - window
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from servescope.core.config import EngineConfig
from servescope.core.diagnose_verdict import ev, knob, num, verdict
from servescope.core.request import RequestSpec
from servescope.core.step_time import StepTimeFn


def prefill_tokens_per_s(step_time: StepTimeFn, budget: int) -> float:
    """Prompt tokens a second when every step is one full-budget chunk of a fresh prompt: the
    most prefill the step-time function lets this engine do (decodes only take from it)."""
    step_ms = float(step_time(np.array([budget], np.int64), np.array([0], np.int64)))
    return budget / step_ms * 1000.0 if step_ms > 0 else float("inf")


def worst_backlog(specs: Sequence[RequestSpec], tokens_per_s: float) -> dict[str, Any] | None:
    """{burst_start_s, burst_window_s, burst_requests, burst_prompt_tokens, burst_backlog_s,
    burst_wait_s, prefill_tokens_per_s}: the arrivals from the moment the fluid queue was last
    empty up to the arrival that waits longest behind the others (burst_wait_s of prefill
    queued ahead of it; burst_backlog_s with its own). None without wall-clock arrivals."""
    timed = sorted((s.arrival_s, s.prompt_len) for s in specs if s.arrival_s is not None)
    if not timed or not tokens_per_s > 0:
        return None
    return _peak(timed, tokens_per_s)


def _peak(timed: Iterable[tuple[float, int]], tokens_per_s: float) -> dict[str, Any]:
    backlog, last_s = 0.0, None
    start_s, requests, tokens = 0.0, 0, 0
    best: dict[str, Any] = {"burst_wait_s": -1.0}
    for arrival_s, prompt_len in timed:
        drained = backlog - (arrival_s - last_s) if last_s is not None else 0.0
        if drained <= 0.0:  # the queue emptied before this arrival: a new busy period
            drained, start_s, requests, tokens = 0.0, arrival_s, 0, 0
        own_s = prompt_len / tokens_per_s
        backlog, last_s = drained + own_s, arrival_s
        requests, tokens = requests + 1, tokens + prompt_len
        if drained > best["burst_wait_s"]:
            best = {"burst_start_s": start_s, "burst_window_s": arrival_s - start_s,
                    "burst_requests": requests, "burst_prompt_tokens": tokens,
                    "burst_backlog_s": backlog, "burst_wait_s": drained}
    best["prefill_tokens_per_s"] = tokens_per_s
    return best


def judge_burst(stats: dict[str, Any], config: EngineConfig,
                hardware: Mapping[str, float]) -> dict[str, Any] | None:
    """Score: the share of p99 TTFT that the burst's longest wait for prefill explains (1.0:
    the prefill capacity alone makes the tail, whatever the scheduler does)."""
    wait_s, p99_ms = stats.get("burst_wait_s"), stats.get("p99_ttft_ms")
    if wait_s is None or not p99_ms:
        return None
    requests, tokens = stats["burst_requests"], stats["burst_prompt_tokens"]
    window_s, capacity = stats["burst_window_s"], stats["prefill_tokens_per_s"]
    headline = (f"{requests} requests with {num(tokens)} prompt tokens arrived within "
                f"{num(window_s)} s (from {num(stats['burst_start_s'])} s) against "
                f"{num(capacity)} prompt tokens/s of prefill: the last waited {num(wait_s)} s "
                f"behind the others (p99 TTFT {num(p99_ms / 1000)} s)")
    evidence = [
        ev("burst_requests", requests, "requests in the burst"),
        ev("burst_prompt_tokens", tokens, "their prompt tokens"),
        ev("burst_window_s", window_s, f"seconds they arrived within, from "
           f"{num(stats['burst_start_s'])} s"),
        ev("prefill_tokens_per_s", capacity, "prompt tokens a second at full-budget prefill "
           f"steps ({config.max_num_batched_tokens} tokens) under this run's step times"),
        ev("burst_wait_s", wait_s, "prefill queued ahead of the burst's last request"),
        ev("p99_ttft_ms", p99_ms, "p99 time to first token"),
    ]
    tp = config.tensor_parallel_size * 2
    recs = [knob("--tensor-parallel-size", tp, {"tensor_parallel_size": tp},
                 "prefill split over twice the GPUs: more prompt tokens a second",
                 [("p99_ttft_ms", "down")])]
    return verdict("arrival_burst", "Arrival burst beyond prefill capacity", wait_s * 1000 / p99_ms,
                   evidence, recs, [
                       "arrivals per second and prompt tokens per second around the burst "
                       "(the trace's own timestamps)",
                       "vllm:num_requests_waiting and vllm:request_queue_time_seconds during it",
                       "more replicas (a sweep over data_parallel_size) or admission control "
                       "upstream: no scheduler knob adds prefill capacity"],
                   explains=("ttft", "e2el"), headline=headline)
