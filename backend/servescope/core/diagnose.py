"""Diagnosis of a run: which limit dominates (an arrival burst beyond prefill capacity, KV
starvation, batch slots, token budget / prefill interference, decode floor, memory fit), with its
evidence, knobs by vLLM flag name and what to measure next. Pure: records + summary + config
(+ optional hardware numbers and the run's requests) -> plain dicts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.diagnose_burst import judge_burst, worst_backlog
from servescope.core.diagnose_evidence import measure
from servescope.core.diagnose_judges import (
    Hardware,
    judge_budget,
    judge_floor,
    judge_kv,
    judge_memory,
    judge_slots,
)
from servescope.core.diagnose_speculation import judge_speculation
from servescope.core.diagnose_verdict import plain
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec

VERDICTS = ("arrival_burst", "kv_starvation", "batch_slots", "token_budget", "decode_floor",
            "memory_fit", "speculation")
# On equal scores the more fundamental limit is named: the load comes before the engine;
# memory shapes KV pressure, which shapes admission, which shapes the mix of prefill and decode.
ROOT_CAUSE_ORDER = ("arrival_burst", "memory_fit", "kv_starvation", "batch_slots",
                    "token_budget", "decode_floor", "speculation")
MIN_SCORE = 0.25  # below this a verdict is reported as minor, and cannot be dominant


def diagnose(records: Iterable[StepRecord], summary: Mapping[str, Any], config: EngineConfig,
             hardware: Hardware | None = None,
             specs: Sequence[RequestSpec] = ()) -> dict[str, Any]:
    """{dominant, verdicts (score order), missing, stats}; every value plain JSON data. The
    records are read once, in order, and not kept (a stream of a long run's records will do).
    `specs` (their arrival_s and prompt_len) and hardware's prefill_tokens_per_s give the
    arrival-burst verdict.

    A verdict: {kind, title, score (0-1), explains: [latency], headline, evidence: [{name,
    value, text}], recommendations: [{flag, value, change (EngineConfig fields for a
    re-simulation), why, targets: [[metric, "down"|"up"]], expected: None until checked}],
    measure_next: [str]}.
    """
    hardware = hardware or {}
    stats = measure(records, summary, config)
    if "prefill_tokens_per_s" in hardware:
        stats.update(worst_backlog(specs, hardware["prefill_tokens_per_s"]) or {})
    missing = _missing(stats, summary, config, hardware)
    verdicts = []
    for judge, needs in JUDGES:
        verdict = judge(stats, config, hardware) if any(k in stats for k in needs) else None
        if verdict is not None:
            verdicts.append(verdict)
    verdicts.sort(key=lambda v: (-v["score"], ROOT_CAUSE_ORDER.index(v["kind"])))
    for verdict in verdicts:
        verdict["minor"] = verdict["score"] < MIN_SCORE
    dominant = verdicts[0]["kind"] if verdicts and not verdicts[0]["minor"] else None
    return {"dominant": dominant, "verdicts": verdicts, "missing": missing,
            "stats": {k: plain(v) for k, v in stats.items()}}


def _missing(stats: Mapping[str, Any], summary: Mapping[str, Any], config: EngineConfig,
             hardware: Hardware) -> list[dict[str, str]]:
    num_steps = stats["num_steps"]
    out = []
    if "burst_wait_s" not in stats:
        out.append({"metric": "arrival times (arrival_s) and prefill capacity (step times)",
                    "needed_for": "arrival_burst",
                    "still_concluded": "every engine limit; not whether the load outruns it"})
    if not num_steps:
        out.append({"metric": "per-step records (running, waiting, kv_usage, scheduled)",
                    "needed_for": "kv_starvation, batch_slots, token_budget",
                    "still_concluded": "TTFT/ITL tails and preemption count from the summary"})
    for key in ("p99_itl_ms", "median_itl_ms", "p99_ttft_ms", "median_ttft_ms"):
        if summary.get(key) is None:
            out.append({"metric": key, "needed_for": "token_budget, decode_floor",
                        "still_concluded": "blocking causes from the step records"})
    if "decode_floor_ms" not in hardware:
        out.append({"metric": "decode_floor_ms (a model and GPU for the roofline)",
                    "needed_for": "decode_floor",
                    "still_concluded": "every scheduling verdict; not whether ITL is at the floor"})
    if summary.get("total_input_tokens") is None or not (num_steps or config.num_gpu_blocks):
        out.append({"metric": "KV capacity and request lengths", "needed_for": "memory_fit",
                    "still_concluded": "KV pressure from usage and preemptions"})
    return out


Judge = Callable[[dict[str, Any], EngineConfig, Hardware], dict[str, Any] | None]
# Each judge, and the measures it needs at least one of: without them it is not asked.
JUDGES: tuple[tuple[Judge, tuple[str, ...]], ...] = (
    (judge_burst, ("burst_wait_s",)),
    (judge_kv, ("blocked_kv_share", "num_preemptions")),
    (judge_slots, ("blocked_slots_share",)),
    (judge_budget, ("blocked_budget_share", "itl_tail_ratio")),
    (judge_floor, ("median_itl_ms",)),
    (judge_memory, ("kv_fit_requests",)),
    (judge_speculation, ("decode_batch_mean",)))
