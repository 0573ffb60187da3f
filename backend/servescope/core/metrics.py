"""Per-request latencies and a run summary with the keys and units of `vllm bench serve`."""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np

from servescope.core.request import FinishedRequest


def since_arrival_ms(at_s: float, arrival_s: float, frontend_ms: float = 0.0) -> float:
    """A latency as vLLM's clients measure it (TTFT, E2E): from the request's arrival to `at_s`,
    plus `frontend_ms`, the API server's time outside the engine."""
    return (at_s - arrival_s) * 1000.0 + frontend_ms


def request_metrics(request: FinishedRequest, frontend_ms: float = 0.0) -> dict[str, Any]:
    """`frontend_ms`, the API server's time outside the engine, is added to TTFT and E2E. A
    speculating run's row also carries `drafts` and `accepted` (what the exports read)."""
    times = request.token_times
    first = times[0] if times else None
    finish = request.finish_time
    itl = np.diff(np.asarray(times)) * 1000.0 if len(times) > 1 else np.zeros(0)
    arrival = request.arrival_time
    ttft = since_arrival_ms(first, arrival, frontend_ms) if first is not None else None
    e2el = since_arrival_ms(finish, arrival, frontend_ms) if finish is not None else None
    tpot = None
    if ttft is not None and e2el is not None and len(times) > 1:
        tpot = (e2el - ttft) / (len(times) - 1)
    queued = None
    if request.first_scheduled_time is not None:
        queued = (request.first_scheduled_time - request.arrival_time) * 1000.0
    row = {
        "id": request.id, "prompt_len": request.prompt_len, "output_len": request.output_len,
        "arrival_s": request.arrival_time, "ttft_ms": ttft, "tpot_ms": tpot,
        "itl_ms": [float(x) for x in itl], "e2el_ms": e2el, "queue_ms": queued,
        "num_preemptions": request.num_preemptions,
        "num_cached_tokens": max(request.num_cached_tokens, 0),
    }
    drafts = getattr(request, "drafts", None)  # a live Request has none until it finishes
    if drafts is not None:  # a speculating run: draft tokens and accepted drafts
        row.update(drafts=drafts, accepted=request.accepted)
    return row


def latency_stats(prefix: str, values: Sequence[float] | np.ndarray) -> dict[str, float]:
    """mean/median/std/p90/p99 of `values` in ms, under `vllm bench serve`'s keys (numpy's
    percentile, as vLLM uses); zeros when there are none."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        arr = np.zeros(1)
    return _keyed(prefix, float(arr.mean()), float(np.median(arr)), float(arr.std()),
                  float(np.percentile(arr, 90)), float(np.percentile(arr, 99)))


def _keyed(prefix: str, mean: float, median: float, std: float, p90: float,
           p99: float) -> dict[str, float]:
    return {f"mean_{prefix}_ms": mean, f"median_{prefix}_ms": median,
            f"std_{prefix}_ms": std, f"p90_{prefix}_ms": p90, f"p99_{prefix}_ms": p99}


def waste_shares(totals: dict[str, int]) -> dict[str, float]:
    """Each Fig. 2 category's share of the KV memory in use, averaged over the run's steps."""
    in_use = sum(totals.values())
    return {f"kv_{k}_share": (v / in_use if in_use else 0.0) for k, v in totals.items()}


Clock = tuple[Sequence[float], np.ndarray, np.ndarray]  # step end times, runs' starts, stops


class Intervals(NamedTuple):
    """Inter-token intervals (ms) as distinct places and how many intervals each holds: the
    gaps between two runs of a request (one each), and for each clock its steps, each
    holding one interval for every token stretch that spans it (a run starting at step s with c
    tokens spans steps s .. s + c - 2). Memory grows with the runs, not the steps nor the
    tokens: a clock's step times and span counts are made a chunk at a time as they are read
    (at a million requests a clock has 21M steps: whole-array copies, a sort and its gathers
    made the summary a 1M-request server's peak, 700 MiB over the run's own memory)."""

    arrays: list[tuple[np.ndarray, np.ndarray]]  # (places, counts) given whole
    clocks: list[Clock]  # starts and stops sorted

    def size(self) -> int:
        """How many places there are."""
        return (sum(len(values) for values, _ in self.arrays)
                + sum(len(ends) - 1 for ends, _, _ in self.clocks))

    def kept(self) -> Intervals:
        """The same places, made once and kept when they fit in a chunk (read several times,
        a clock's chunk is made again each time)."""
        if self.size() > CHUNK:
            return self
        return Intervals([(np.asarray(v), np.asarray(c)) for v, c in self.chunks()], [])

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(places, counts) CHUNK places at a time, in one order whenever read."""
        for values, counts in self.arrays:
            for lo in range(0, len(values), CHUNK):
                yield values[lo:lo + CHUNK], counts[lo:lo + CHUNK]
        for ends, starts, stops in self.clocks:
            carry, num_steps = 0, len(ends) - 1
            for lo in range(0, num_steps, CHUNK):
                hi = min(lo + CHUNK, num_steps)
                part = np.asarray(ends[lo:hi + 1], np.float64)  # (an array's slice: a copy)
                step_ms = (part[1:] - part[:-1]) * 1000.0
                spans = np.zeros(hi - lo, np.int64)
                for runs, sign in ((starts, 1), (stops, -1)):
                    a, b = np.searchsorted(runs, (lo, hi))
                    spans += sign * np.bincount(runs[a:b] - lo, minlength=hi - lo)
                spans = np.cumsum(spans, out=spans)
                spans += carry
                carry = int(spans[-1])
                yield step_ms, spans


CHUNK = 1 << 20  # places read at a time


def token_intervals(done: Sequence[FinishedRequest]) -> tuple[np.ndarray, np.ndarray, Intervals]:
    """Each request's token count, its first token's time (nan: none) and every inter-token
    interval in ms: request_metrics' values, built from the token stretches and each clock's
    step times."""
    clocks: dict[int, tuple[Sequence[float], array[int], array[int]]] = {}  # one an engine
    counts = np.zeros(len(done), np.int64)
    first = np.full(len(done), np.nan)
    gaps: list[float] = []
    for k, request in enumerate(done):
        runs = request.all_token_stretches
        if not runs:
            continue
        clock = clocks.setdefault(id(request.step_end_s),
                                  (request.step_end_s, array("q"), array("q")))
        ends, starts, stops = clock
        first[k] = ends[runs[0][0]]
        last = -1
        for start, count in runs:
            if last >= 0:  # the gap between two runs (a preemption, a stall)
                gaps.append((ends[start] - ends[last]) * 1000.0)
            starts.append(start)
            stops.append(start + count - 1)
            last = start + count - 1
        counts[k] = sum(count for _, count in runs)
    return counts, first, Intervals(
        [(np.array(gaps), np.ones(len(gaps), np.int64))],
        [(ends, np.sort(np.frombuffer(starts, np.int64)), np.sort(np.frombuffer(stops, np.int64)))
         for ends, starts, stops in clocks.values()])


def interval_stats(prefix: str, intervals: Intervals) -> dict[str, float]:
    """latency_stats of every interval, from the places and their counts: the median and
    percentiles exactly as numpy's (the "linear" method on the sorted intervals), the mean and
    std to the last bits (a sum in another order). Reads the places a chunk at a time: the
    count, sum and buckets (see _at_ranks) in one pass, the std in a second."""
    intervals = intervals.kept()
    n, total, weight = 0, 0.0, np.zeros(1 << 20, np.int64)
    for v, c in intervals.chunks():
        n += int(c.sum())
        total += float(v @ c.astype(np.float64))
        weight += np.bincount((_keys(v) >> BUCKET_SHIFT) + (1 << 19), c, 1 << 20).astype(np.int64)
    if not n:
        return latency_stats(prefix, [])
    mean = total / n
    std = float(np.sqrt(sum(float(np.square(v - mean) @ c.astype(np.float64))
                            for v, c in intervals.chunks()) / n))

    def ranks(q: float) -> tuple[int, int, float]:
        index = (n - 1) * (q / 100)
        return int(index), min(int(index) + 1, n - 1), index - int(index)

    wanted = {n // 2, max(n // 2 - 1, 0)} | {r for q in (90, 99) for r in ranks(q)[:2]}
    at = _at_ranks(intervals, weight, sorted(wanted))

    def percentile(q: float) -> float:
        lo, hi, t = ranks(q)
        a, b = at[lo], at[hi]
        return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t  # numpy's _lerp

    median = at[n // 2] if n % 2 else (at[n // 2 - 1] + at[n // 2]) / 2
    return _keyed(prefix, mean, median, std, percentile(90), percentile(99))


def _keys(values: np.ndarray) -> np.ndarray:
    """int64 keys in the floats' order (the sign flips the rest of the bits), for buckets."""
    bits = values.view(np.int64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


BUCKET_SHIFT = 44  # keys' top 20 bits: sign, exponent and 8 mantissa bits (1/256 of a binade)


def _at_ranks(intervals: Intervals, weight: np.ndarray, ranks: list[int]) -> dict[int, float]:
    """The interval of each rank (0-based) in sorted order: the places are bucketed by their
    keys' top bits (`weight`: the intervals in each bucket), and only the buckets holding a
    wanted rank are sorted."""
    below = np.cumsum(weight) - weight  # intervals in the buckets before each
    bounds = below + weight  # and up to each one's last
    bucket = {rank: int(np.searchsorted(bounds, rank, "right")) for rank in ranks}
    picked = sorted(set(bucket.values()))
    wanted = np.array(picked, np.int64) - (1 << 19)
    parts = [(v[mask], c[mask]) for v, c in intervals.chunks()
             for mask in [np.isin(_keys(v) >> BUCKET_SHIFT, wanted)]]
    places = np.concatenate([v for v, _ in parts])
    order = np.argsort(places, kind="stable")
    places = places[order]
    ends = np.cumsum(np.concatenate([c for _, c in parts]).astype(np.int64)[order])
    out: dict[int, float] = {}
    for rank, b in bucket.items():  # its rank among the picked buckets' intervals
        inside = rank - int(below[b]) + sum(int(weight[p]) for p in picked if p < b)
        out[rank] = float(places[int(np.searchsorted(ends, inside, "right"))])
    return out


def summarize(done: Sequence[FinishedRequest], duration_s: float, rejected: list[tuple[str, str]],
              waste_totals: dict[str, int], frontend_ms: float = 0.0) -> dict[str, Any]:
    """The run's summary over `done`, with request_metrics' arithmetic done on columns."""
    counts, first, itl = token_intervals(done)
    has = counts > 0
    arrival = np.array([r.arrival_time for r in done], np.float64)
    finish = np.array([np.nan if r.finish_time is None else r.finish_time for r in done])
    ttft_all = (first - arrival) * 1000.0 + frontend_ms
    ttft = ttft_all[has]
    e2el_all = (finish - arrival) * 1000.0 + frontend_ms
    e2el = e2el_all[~np.isnan(finish)]
    tpot = ((e2el_all - ttft_all) / (counts - 1).clip(1))[(counts > 1) & ~np.isnan(finish)]
    input_tokens = sum(r.prompt_len for r in done)
    output_tokens = int(counts.sum())
    duration = max(duration_s, 1e-12)
    summary: dict[str, Any] = {
        "completed": len(done),
        "failed": len(rejected),
        "duration": duration_s,
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
        "request_throughput": len(done) / duration,
        "output_throughput": output_tokens / duration,
        "total_token_throughput": (input_tokens + output_tokens) / duration,
    }
    summary.update(latency_stats("ttft", ttft))
    summary.update(latency_stats("tpot", tpot))
    summary.update(interval_stats("itl", itl))
    summary.update(latency_stats("e2el", e2el))
    summary["num_preemptions"] = sum(r.num_preemptions for r in done)
    summary.update(waste_shares(waste_totals))
    return summary
