"""Folds one engine's step records (to_dict() form) into what vLLM's stat loggers record:
per-record gauges and cumulative counters, and histogram observations stamped with the
record that made them, so that any playback position can be read back. Kept as columns
(observability/columns.py): at a million requests the run has tens of millions of records and
hundreds of millions of inter-token latencies. A server's meter spills them to a file
(observability/spill.py): its memory stays bounded however long the run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any, Protocol

from servescope.observability.columns import Changes, PerRecord, Repeats
from servescope.observability.spec_decode import SpecDecodeCounts, kept_tokens
from servescope.observability.spill import Column, Spill

# One row per record: the gauges after the step, then the counters up to and including it.
# vLLM samples its gauges where update_from_output() ends (Scheduler.make_stats in
# vllm/v1/core/sched/scheduler.py): the requests finished in the step have left the running
# list and freed their blocks, and the ones preempted in its schedule are waiting again.
GAUGES = ("num_requests_running", "num_requests_waiting", "kv_cache_usage_perc")
COUNTERS = ("num_preemptions", "prompt_tokens", "generation_tokens", "prefix_cache_queries",
            "prefix_cache_hits", "request_success", "prompt_tokens_local_compute",
            "prompt_tokens_local_cache_hit", "prompt_tokens_external_kv_transfer",
            "prompt_tokens_cached")
ROW = GAUGES + COUNTERS
DENSE = "generation_tokens"  # the counter that moves on almost every record: a column

# Observations, each made when vLLM makes it: per first token (TTFT), per later token
# (ITL), per engine step (iteration tokens), per finished request (the rest). A ServeScope
# request samples one sequence (n = 1): vLLM's ParentRequest.observe_finished_request then
# observes its own generation tokens as the maximum over its sequences, and n as 1.
HISTOGRAMS = ("time_to_first_token", "inter_token_latency", "iteration_tokens",
              "e2e_request_latency", "request_queue_time", "request_inference_time",
              "request_prefill_time", "request_decode_time", "request_time_per_output_token",
              "request_prompt_tokens", "request_generation_tokens", "request_params_n",
              "request_prefill_kv_computed_tokens")


class _Request:
    __slots__ = ("arrival_s", "cached", "first_token_s", "last_token_s", "num_output",
                 "output_len", "prompt_len", "scheduled_s")

    def __init__(self, prompt_len: int, arrival_s: float, output_len: int | None) -> None:
        self.prompt_len = prompt_len
        self.output_len = output_len  # a verify's tokens stop here (its max_tokens)
        self.arrival_s = arrival_s
        self.scheduled_s: float | None = None
        self.first_token_s: float | None = None
        self.last_token_s = 0.0
        self.num_output = 0
        self.cached = 0


class Requests(Protocol):
    """What the meter reads of the run's requests (core's RequestTable; the wing imports no
    other, so it names only what it needs)."""

    def prompt_len_of(self, rid: str) -> int: ...
    def output_len_of(self, rid: str) -> int | None: ...
    def arrival_s_of(self, rid: str) -> float | None: ...


class Meter:
    def __init__(self, requests: Requests, enable_prefix_caching: bool,
                 spill: Spill | None = None, external: Mapping[str, int] | None = None) -> None:
        """`external`: the prompt tokens each request loaded through a KV connector (vLLM's
        num_external_computed_tokens; a P/D decode replica's, observability/pd.py)."""
        self.requests = requests  # shared, not copied
        self.external: Mapping[str, int] = external if external is not None else {}
        self.enable_prefix_caching = enable_prefix_caching
        self.running = Column("I", spill)  # per record: len(running), len(waiting), kv_usage
        self.waiting = Column("I", spill)
        self.kv_usage = Column("d", spill)
        self.generation_tokens = Column("d", spill)  # cumulative, per record
        self.changes = {name: Changes(spill) for name in COUNTERS if name != DENSE}
        self.start_s = Column("d", spill)  # time_s of each record
        self.last_end_s = 0.0  # time_s + step_time of the last record (the run's end)
        self.histograms: dict[str, Repeats | PerRecord] = {
            h: PerRecord(spill) if h == "iteration_tokens" else Repeats(spill) for h in HISTOGRAMS}
        self.spec_decode = SpecDecodeCounts(spill)
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
            arrival, rq = self.requests.arrival_s_of(rid), self.requests
            self._live[rid] = _Request(rq.prompt_len_of(rid), t0 if arrival is None
                                       else float(arrival), rq.output_len_of(rid))
        self._admit(rec, t0, delta)
        num_prompt, num_generation = self._sample(rec, it, t1, delta)
        self.spec_decode.observe(it, rec.get("scheduled", ()))
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
            if name != DENSE:
                self.changes[name].set(it, self._totals[k])
        self.running.append(num_running_after(rec))
        self.waiting.append(len(rec.get("waiting", ())))
        self.kv_usage.append(float(rec.get("kv_usage", 0.0)))
        self.generation_tokens.append(self._totals[COUNTERS.index(DENSE)])
        self.start_s.append(t0)
        self.last_end_s = t1

    def observe_decodes(self, ids: Sequence[str], start_s: Sequence[float],
                        step_time_ms: Sequence[float], kv_usage: Sequence[float],
                        finished: Sequence[str]) -> None:
        """observe() over steps in which each of `ids` decodes one token and nothing else
        happens but `finished` in the last (a decode stretch: api/records/stretch_pack.py), in
        bulk: each step's inter-token latencies after the first are one run."""
        live = [req for req in map(self._live.get, ids) if req is not None]
        num_steps = len(start_s)
        if num_steps and (not ids or any(req.first_token_s is None for req in live)):
            last = num_steps == 1  # a first token counts its prompt: that step as a record
            self.observe({"time_s": start_s[0], "step_time_ms": step_time_ms[0],
                          "scheduled": [{"id": rid, "sampled": True} for rid in ids],
                          "running": ids, "kv_usage": kv_usage[0],
                          "finished": finished if last else ()})
            if not last:
                self.observe_decodes(ids, start_s[1:], step_time_ms[1:], kv_usage[1:], finished)
            return
        if not num_steps:
            return
        it, n = self.num_records, len(live)
        end_s = [t0 + ms / 1000.0 for t0, ms in zip(start_s, step_time_ms, strict=True)]
        itl, tokens = self.histograms["inter_token_latency"], self.histograms["iteration_tokens"]
        for req in live:
            itl.add(it, end_s[0] - req.last_token_s)
            req.last_token_s, req.num_output = end_s[-1], req.num_output + num_steps
        assert isinstance(itl, Repeats) and isinstance(tokens, PerRecord)
        itl.add_steps(it + 1, [b - a for a, b in pairwise(end_s)], n)
        tokens.add_steps(it, n, num_steps)
        self._finish_many(finished, it + num_steps - 1, end_s[-1])
        self._decode_rows(len(ids), len(set(finished) & set(ids)), n, start_s, kv_usage)
        self.last_end_s = end_s[-1]

    def _finish_many(self, finished: Sequence[str], it: int, t1: float) -> None:
        k = COUNTERS.index("request_success")
        for rid in finished:
            req = self._live.pop(rid, None)
            if req is not None and req.first_token_s is not None:
                self._finish(req, it, t1)
                self._totals[k] += 1
        self.changes["request_success"].set(it, self._totals[k])

    def _decode_rows(self, num_running: int, num_finished: int, n: int,
                     start_s: Sequence[float], kv_usage: Sequence[float]) -> None:
        """The rows of decode steps: `n` more tokens each, nobody waiting, `num_finished`
        gone from the running list after the last."""
        k = COUNTERS.index(DENSE)
        total = self._totals[k]
        cumulative = []
        for _ in start_s:  # (added one by one: the same float sums as observe())
            total += n
            cumulative.append(total)
        self._totals[k] = total
        self.generation_tokens.extend(cumulative)
        self.running.extend([num_running] * (len(start_s) - 1))
        self.running.append(num_running - num_finished)
        self.waiting.extend([0] * len(start_s))
        self.kv_usage.extend([float(x) for x in kv_usage])
        self.start_s.extend([float(t) for t in start_s])

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
            req = self._live.get(entry["id"])
            if req is None or (num_new := kept_tokens(entry, req.num_output, req.output_len)) <= 0:
                continue
            num_generation += num_new
            if req.first_token_s is None:
                req.first_token_s = t1
                num_prompt += req.prompt_len
                count_prompt_sources(delta, req.prompt_len, req.cached,
                                     self.external.get(entry["id"], 0))
                self._obs("time_to_first_token", it, t1 - req.arrival_s)
            else:
                self._obs("inter_token_latency", it, t1 - req.last_token_s)
            req.last_token_s = t1
            req.num_output += num_new
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
                ("request_generation_tokens", req.num_output),
                ("request_params_n", 1),
                ("request_prefill_kv_computed_tokens", req.prompt_len - req.cached)):
            self._obs(name, it, value)

    def _obs(self, name: str, it: int, value: float) -> None:
        self.histograms[name].add(it, value)

    def observations(self, name: str) -> tuple[list[int], list[float]]:
        """(record, value) of each observation of a histogram, in the order they were made."""
        return self.histograms[name].expand()

    def row(self, pos: int) -> dict[str, float]:
        """Gauges and counters after record `pos` (-1: before the first, all zero)."""
        if pos < 0:
            return dict.fromkeys(ROW, 0.0)
        if pos >= self.num_records:
            raise IndexError(f"record {pos} not folded yet ({self.num_records} are)")
        out = {"num_requests_running": float(self.running[pos]),
               "num_requests_waiting": float(self.waiting[pos]),
               "kv_cache_usage_perc": self.kv_usage[pos]}
        for name in COUNTERS:
            out[name] = self.generation_tokens[pos] if name == DENSE \
                else self.changes[name].at(pos)
        return out

    def index_at_time(self, t: float) -> int:
        return self.start_s.bisect_right(t) - 1


def count_prompt_sources(delta: dict[str, float], prompt_len: int, num_cached: int,
                         num_external: int) -> None:
    """A request's prompt tokens by source when its prefill ends, as vLLM 0.33's
    PromptTokenStats.update_from_output counts them (vllm/v1/metrics/stats.py): num_cached is
    the request's num_cached_tokens (its num_computed_tokens when first scheduled: local hit
    plus loaded KV, less the one token recomputed when the whole prompt was there), and a
    prompt cached but for its last token counts that token as a cache hit too (recomputed)."""
    recomputed = 1 if num_cached + 1 == prompt_len else 0
    delta["prompt_tokens_local_compute"] += prompt_len - num_cached
    delta["prompt_tokens_local_cache_hit"] += num_cached + recomputed - num_external
    delta["prompt_tokens_external_kv_transfer"] += num_external
    delta["prompt_tokens_cached"] += num_cached


def num_running_after(rec: dict[str, Any]) -> int:
    """vllm:num_requests_running as vLLM samples it: the step's running list (after its
    schedule) less the requests that finished in the step."""
    finished = set(rec.get("finished", ()))
    return sum(1 for rid in rec.get("running", ()) if rid not in finished)
