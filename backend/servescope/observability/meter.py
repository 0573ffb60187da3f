"""Folds one engine's step records (to_dict() form) into what vLLM's stat loggers record:
per-record gauges and cumulative counters, and histogram observations stamped with the
record that made them, so that any playback position can be read back."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

import numpy as np

# One row per record: the gauges after the step, then the counters up to and including it.
GAUGES = ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc")
COUNTERS = ("num_preemptions", "prompt_tokens", "generation_tokens", "prefix_cache_queries",
            "prefix_cache_hits", "request_success", "prompt_tokens_local_compute",
            "prompt_tokens_local_cache_hit")
ROW = GAUGES + COUNTERS
COLUMN = {name: k for k, name in enumerate(ROW)}

# Observations, each made when vLLM makes it: per first token (TTFT), per later token
# (ITL), per engine step (iteration tokens), per finished request (the rest).
HISTOGRAMS = ("time_to_first_token", "inter_token_latency", "iteration_tokens",
              "e2e_request_latency", "request_queue_time", "request_inference_time",
              "request_prefill_time", "request_decode_time", "request_time_per_output_token",
              "request_prompt_tokens", "request_generation_tokens")


class _Request:
    __slots__ = ("arrival_s", "cached", "first_token_s", "last_token_s", "num_output",
                 "prompt_len", "scheduled_s")

    def __init__(self, prompt_len: int, arrival_s: float) -> None:
        self.prompt_len = prompt_len
        self.arrival_s = arrival_s
        self.scheduled_s: float | None = None
        self.first_token_s: float | None = None
        self.last_token_s = 0.0
        self.num_output = 0
        self.cached = 0


class Meter:
    def __init__(self, requests: Sequence[dict[str, Any]], enable_prefix_caching: bool) -> None:
        self.prompt_len = {r["id"]: int(r["prompt_len"]) for r in requests}
        self.arrival_s = {r["id"]: r.get("arrival_s") for r in requests}
        self.enable_prefix_caching = enable_prefix_caching
        self.rows = array("d")
        self.start_s = array("d")  # time_s of each record
        self.end_s = array("d")  # time_s + step_time of each record
        self.obs_iter = {h: array("q") for h in HISTOGRAMS}
        self.obs_value = {h: array("d") for h in HISTOGRAMS}
        self._live: dict[str, _Request] = {}
        self._totals = [0.0] * len(COUNTERS)

    @property
    def num_records(self) -> int:
        return len(self.start_s)

    def observe(self, rec: dict[str, Any]) -> None:
        """Fold the next record; its outputs count as made at the end of the step."""
        it = self.num_records
        t0 = float(rec["time_s"])
        t1 = t0 + float(rec.get("step_time_ms", 0.0)) / 1000.0
        delta = dict.fromkeys(COUNTERS, 0.0)
        for rid in rec.get("arrivals", ()):
            arrival = self.arrival_s.get(rid)
            self._live[rid] = _Request(self.prompt_len.get(rid, 0),
                                       t0 if arrival is None else float(arrival))
        self._admit(rec, t0, delta)
        num_prompt, num_generation = self._sample(rec, it, t1, delta)
        if rec.get("scheduled"):
            self._obs("iteration_tokens", it, num_prompt + num_generation)
        delta["num_preemptions"] = len(rec.get("preempted", ()))
        for rid in rec.get("finished", ()):
            req = self._live.pop(rid, None)
            if req is not None and req.first_token_s is not None:
                self._finish(req, it, t1)
                delta["request_success"] += 1
        for k, name in enumerate(COUNTERS):
            self._totals[k] += delta[name]
        self.rows.extend((len(rec.get("running", ())), len(rec.get("waiting", ())),
                          float(rec.get("kv_usage", 0.0)), *self._totals))
        self.start_s.append(t0)
        self.end_s.append(t1)

    def observe_decodes(self, ids: Sequence[str], start_s: list[float],
                        step_time_ms: list[float], kv_usage: list[float],
                        finished: Sequence[str]) -> None:
        """observe() over steps in which each of `ids` decodes one token and nothing else
        happens but `finished` in the last (a decode run: api/run_pack.py), in bulk."""
        live = [req for req in map(self._live.get, ids) if req is not None]
        num_steps = len(start_s)
        if num_steps and any(req.first_token_s is None for req in live):
            # A prefill that stopped one token short ends in a run's first step: observe() it.
            self.observe({"time_s": start_s[0], "step_time_ms": step_time_ms[0],
                          "scheduled": [{"id": rid, "sampled": True} for rid in ids],
                          "running": ids, "kv_usage": kv_usage[0],
                          "finished": finished if num_steps == 1 else ()})
            start_s, step_time_ms, kv_usage = start_s[1:], step_time_ms[1:], kv_usage[1:]
            num_steps -= 1
        if not num_steps or not ids:
            return
        it, n = self.num_records, len(live)
        end_s = np.array(start_s) + np.array(step_time_ms) / 1000.0
        iters = np.arange(it, it + num_steps)
        self._obs_many("inter_token_latency", np.repeat(iters, n), np.concatenate((
            [end_s[0] - req.last_token_s for req in live], np.repeat(np.diff(end_s), n))))
        self._obs_many("iteration_tokens", iters, np.full(num_steps, float(n)))
        for req in live:
            req.last_token_s = float(end_s[-1])
            req.num_output += num_steps
        num_success = 0
        for rid in finished:
            req = self._live.pop(rid, None)
            if req is not None and req.first_token_s is not None:
                self._finish(req, it + num_steps - 1, float(end_s[-1]))
                num_success += 1
        self._append_decode_rows(len(ids), n, num_success, start_s, end_s, kv_usage)

    def _append_decode_rows(self, num_running: int, num_generation: int, num_success: int,
                            start_s: list[float], end_s: np.ndarray,
                            kv_usage: list[float]) -> None:
        """observe_decodes' rows: `num_generation` tokens a step, `num_success` at the end."""
        num_steps = len(start_s)
        totals = np.tile(np.array(self._totals), (num_steps, 1))
        totals[:, COUNTERS.index("generation_tokens")] += num_generation * np.arange(
            1, num_steps + 1)
        totals[-1, COUNTERS.index("request_success")] += num_success
        rows = np.column_stack((np.full(num_steps, float(num_running)), np.zeros(num_steps),
                                kv_usage, totals))
        self.rows.frombytes(rows.tobytes())
        self._totals = totals[-1].tolist()
        self.start_s.extend(start_s)
        self.end_s.frombytes(end_s.tobytes())

    def _obs_many(self, name: str, iters: np.ndarray, values: np.ndarray) -> None:
        self.obs_iter[name].frombytes(iters.astype(np.int64).tobytes())
        self.obs_value[name].frombytes(values.astype(np.float64).tobytes())

    def _admit(self, rec: dict[str, Any], t0: float, delta: dict[str, float]) -> None:
        """New and resumed requests look up the prefix cache (vLLM counts queried tokens)."""
        hits = rec.get("num_cached_tokens", {})
        for rid in (*rec.get("new", ()), *rec.get("resumed", ())):
            req = self._live.get(rid)
            if req is None:
                continue
            if req.scheduled_s is None:
                req.scheduled_s = t0
                req.cached = int(hits.get(rid, 0))
            if self.enable_prefix_caching:
                delta["prefix_cache_queries"] += req.prompt_len + req.num_output
                delta["prefix_cache_hits"] += int(hits.get(rid, 0))

    def _sample(self, rec: dict[str, Any], it: int, t1: float,
                delta: dict[str, float]) -> tuple[int, int]:
        """Tokens emitted this step. A request's first token counts its whole prompt, as
        vLLM's IterationStats do (num_prompt_tokens is added once, when prefill ends)."""
        num_prompt = num_generation = 0
        for entry in rec.get("scheduled", ()):
            if not entry.get("sampled"):
                continue
            req = self._live.get(entry["id"])
            if req is None:
                continue
            num_generation += 1
            if req.first_token_s is None:
                req.first_token_s = t1
                num_prompt += req.prompt_len
                delta["prompt_tokens_local_cache_hit"] += req.cached
                delta["prompt_tokens_local_compute"] += req.prompt_len - req.cached
                self._obs("time_to_first_token", it, t1 - req.arrival_s)
            else:
                self._obs("inter_token_latency", it, t1 - req.last_token_s)
            req.last_token_s = t1
            req.num_output += 1
        delta["prompt_tokens"] = num_prompt
        delta["generation_tokens"] = num_generation
        return num_prompt, num_generation

    def _finish(self, req: _Request, it: int, t1: float) -> None:
        scheduled = req.scheduled_s if req.scheduled_s is not None else req.arrival_s
        first = req.first_token_s if req.first_token_s is not None else t1
        decode = req.last_token_s - first
        for name, value in (
                ("e2e_request_latency", t1 - req.arrival_s),
                ("request_queue_time", scheduled - req.arrival_s),
                ("request_inference_time", req.last_token_s - scheduled),
                ("request_prefill_time", first - scheduled),
                ("request_decode_time", decode),
                ("request_time_per_output_token",
                 decode / (req.num_output - 1) if req.num_output > 1 else 0.0),
                ("request_prompt_tokens", req.prompt_len),
                ("request_generation_tokens", req.num_output)):
            self._obs(name, it, value)

    def _obs(self, name: str, it: int, value: float) -> None:
        self.obs_iter[name].append(it)
        self.obs_value[name].append(value)

    def observations(self, name: str) -> tuple[list[int], list[float]]:
        """(record, value) of each observation of a histogram, in the order they were made."""
        return self.obs_iter[name].tolist(), self.obs_value[name].tolist()

    def row(self, pos: int) -> dict[str, float]:
        """Gauges and counters after record `pos` (-1: before the first, all zero)."""
        if pos < 0:
            return dict.fromkeys(ROW, 0.0)
        if pos >= self.num_records:
            raise IndexError(f"record {pos} not folded yet ({self.num_records} are)")
        n = len(ROW)
        return dict(zip(ROW, self.rows[pos * n:(pos + 1) * n], strict=True))

    def index_at_time(self, t: float) -> int:
        return bisect_right(self.start_s, t) - 1


class HistogramCursor:
    """Bucket counts of one histogram's observations up to a record, moved by deltas in
    either direction (playback mostly moves forward a little between scrapes)."""

    def __init__(self, meter: Meter, name: str, buckets: Sequence[float]) -> None:
        self.iters = meter.obs_iter[name]
        self.values = meter.obs_value[name]
        self.buckets = list(buckets)
        self.counts = [0] * (len(self.buckets) + 1)  # the last one is +Inf only
        self.sum = 0.0
        self.k = 0  # observations folded in

    def at(self, pos: int) -> tuple[list[int], float, int]:
        """(cumulative count per bucket and +Inf, sum, count) after record `pos`."""
        k = bisect_right(self.iters, pos)
        sign = 1 if k >= self.k else -1
        for value in self.values[min(k, self.k):max(k, self.k)]:
            self.counts[bisect_left(self.buckets, value)] += sign  # Prometheus' le
            self.sum += sign * value
        self.k = k
        if k == 0:
            self.sum = 0.0
        cumulative, total = [], 0
        for c in self.counts:
            total += c
            cumulative.append(total)
        return cumulative, self.sum, k

