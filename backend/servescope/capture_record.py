"""Turning a live vLLM scheduler's steps into ServeScope step records (no vLLM import here).

`StepRecorder` reads vLLM's objects by attribute only. One record is opened per non-empty
schedule(), completed by its update_from_output(), and written once the next schedule()
begins, so frees between steps (aborts) still land in the step that preceded them.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from typing import IO, Any

from servescope.capture_prefix import prefix_segments
from servescope.core.config import EngineConfig
from servescope.recording import FORMAT, VERSION


class StepRecorder:
    def __init__(self, path: str, config: dict[str, Any], placeholders_per_sample: int,
                 info: dict[str, Any]) -> None:
        self.path = path
        self.config = EngineConfig.from_dict(config).to_dict()
        self.info = info
        self.block_size = int(config["block_size"])
        self.num_usable_blocks = int(config["num_gpu_blocks"]) - 1
        self.placeholders_per_sample = placeholders_per_sample  # 1 under async scheduling
        self.step = 0  # a driver may set it before schedule() to keep its own step clock
        self.t0: float | None = None
        self.requests: dict[str, dict[str, Any]] = {}
        self.prompt_hashes: dict[str, list[bytes]] = {}
        self.arrivals: list[str] = []
        self.preempted: list[str] = []
        self.freed: list[int] = []
        self.events: list[dict[str, Any]] = []
        self.open_records: deque[dict[str, Any]] = deque()  # scheduled, not yet updated
        self.done_records: list[dict[str, Any]] = []  # updated, not yet written
        self.num_records = 0
        self._body_path = f"{path}.steps.tmp"
        self._body: IO[str] | None = None
        self.closed = False

    # --- events from the scheduler -------------------------------------------------------
    def on_add(self, request: Any) -> None:
        if self.t0 is None:
            self.t0 = min(time.time(), request.arrival_time)
        rid = request.request_id
        num_prompt = request.num_prompt_tokens
        self.requests[rid] = {"id": rid, "prompt_len": num_prompt,
                              "output_len": request.max_tokens, "arrival_step": self.step,
                              "arrival_s": round(request.arrival_time - self.t0, 6),
                              "priority": request.priority}
        hashes = request.block_hashes
        if hashes:
            self.prompt_hashes[rid] = list(hashes[: num_prompt // self.block_size])
        self.arrivals.append(rid)

    def on_free(self, blocks: list[Any]) -> None:
        self.freed.extend(b.block_id for b in blocks if not b.is_null and b.ref_cnt == 0)

    def on_stored(self, request: Any, blocks: list[Any]) -> None:
        ids = [b.block_id for b in blocks if not b.is_null]
        if ids:
            self.events.append({"type": "BlockStored", "block_ids": ids,
                                "req": request.request_id})

    def on_evicted(self, block: Any) -> None:
        self.events.append({"type": "BlockRemoved", "block_ids": [block.block_id], "req": None})

    def on_aborted(self, scheduler: Any, aborted: list[Any]) -> None:
        """Requests finished from outside (client aborts): freed between or during steps."""
        gone = [r.request_id for r in aborted if r.request_id in self.requests]
        for request in aborted:
            self._set_output_len(request)
        target = self.open_records[-1] if self.open_records else (
            self.done_records[-1] if self.done_records else None)
        if target is None:
            return
        target["finished"].extend(gone)
        target["released"].extend(gone)
        if target in self.done_records:
            self._settle(target, scheduler)

    # --- the step -------------------------------------------------------------------------
    def on_schedule(self, scheduler: Any, output: Any, started: float) -> None:
        self._write_done()
        if not output.total_num_scheduled_tokens and not output.preempted_req_ids:
            self.preempted.clear()
            return
        record = self._plan(scheduler, output)
        record["time_s"] = round(started - (self.t0 or started), 9)
        record["_started"] = started
        record["_requests"] = {rid: scheduler.requests[rid]
                               for rid in output.num_scheduled_tokens}
        self.open_records.append(record)
        self.step += 1

    def on_update(self, scheduler: Any, output: Any, engine_outputs: dict[Any, Any]) -> None:
        if not self.open_records or not (output.total_num_scheduled_tokens
                                         or output.preempted_req_ids):
            return
        record = self.open_records.popleft()
        finished = [o.request_id for outs in engine_outputs.values() for o in outs.outputs
                    if o.finish_reason is not None]
        scheduled = record.pop("_requests")  # finished ones have left scheduler.requests
        for rid in finished:
            if rid in scheduled:
                self._set_output_len(scheduled[rid])
        record["finished"] = finished
        record["released"] = list(finished)
        record["step_time_ms"] = round((time.time() - record.pop("_started")) * 1000.0, 6)
        self._settle(record, scheduler)
        self.done_records.append(record)

    def _settle(self, record: dict[str, Any], scheduler: Any) -> None:
        """Fold in what happened since the update: frees, cache events, the free count."""
        record["freed_blocks"].extend(self.freed)
        record["kv_events"].extend(self.events)
        self.freed, self.events = [], []
        free = scheduler.kv_cache_manager.block_pool.get_num_free_blocks()
        record["num_free_blocks"] = free
        record["kv_usage"] = round(1.0 - free / self.num_usable_blocks, 6)

    def _plan(self, scheduler: Any, output: Any) -> dict[str, Any]:
        starts, new_blocks = _starts_and_blocks(output)
        requests = scheduler.requests
        scheduled = []
        for rid, n in output.num_scheduled_tokens.items():
            request = requests[rid]
            sampled = not request.is_prefill_chunk
            pending = request.num_output_placeholders - (
                self.placeholders_per_sample if sampled else 0)
            start = starts[rid]
            prefill = n > 1 or start < request.num_tokens + pending - 1
            scheduled.append({"id": rid, "n": n, "start": start, "sampled": sampled,
                              "kind": "prefill" if prefill else "decode"})
        preempted_set = output.preempted_req_ids or set()
        preempted = [rid for rid in self.preempted if rid in preempted_set]
        preempted += sorted(preempted_set.difference(preempted))
        self.preempted.clear()
        new = [r.req_id for r in output.scheduled_new_reqs]
        resumed = [rid for rid in output.num_scheduled_tokens
                   if rid in output.scheduled_cached_reqs.resumed_req_ids]
        record = {
            "step": self.step, "iter": self.num_records, "time_s": 0.0, "step_time_ms": 0.0,
            "arrivals": self.arrivals, "scheduled": scheduled, "new": new, "resumed": resumed,
            "preempted": preempted, "finished": [], "released": [], "rejected": [],
            "new_blocks": new_blocks, "freed_blocks": self.freed, "kv_events": self.events,
            "num_cached_tokens": {rid: starts[rid] for rid in new + resumed},
            "running": [r.request_id for r in scheduler.running],
            "waiting": [r.request_id for q in (scheduler.kv_holding_waiting, scheduler.waiting)
                        for r in q],
            "num_free_blocks": 0, "num_usable_blocks": self.num_usable_blocks,
            "kv_usage": 0.0, "token_budget": scheduler.max_num_scheduled_tokens,
            "max_num_seqs": scheduler.max_num_running_reqs, "kv_waste": {},
        }
        self.arrivals, self.freed, self.events = [], [], []
        self.num_records += 1
        return record

    def _set_output_len(self, request: Any) -> None:
        row = self.requests.get(request.request_id)
        if row is not None:
            row["output_len"] = request.num_output_tokens

    # --- output ---------------------------------------------------------------------------
    def _write_done(self) -> None:
        if not self.done_records:
            return
        if self._body is None:
            self._body = open(self._body_path, "w", encoding="utf-8",  # noqa: SIM115
                              buffering=1 << 20)
        write = self._body.write
        for record in self.done_records:
            write(json.dumps(record, separators=(",", ":")) + "\n")
        self.done_records = []

    def header(self) -> dict[str, Any]:
        segments = prefix_segments(self.prompt_hashes, self.block_size)
        requests = []
        for rid, row in self.requests.items():
            row = dict(row)
            if segments.get(rid):
                row["prefix"] = [list(s) for s in segments[rid]]
            requests.append(row)
        return {"format": FORMAT, "version": VERSION, "source": "recorded",
                "config": self.config, "requests": requests, "recorder": self.info}

    def close(self) -> str | None:
        """Header first, then the steps: assembled under a temporary name, then renamed."""
        if self.closed:
            return None
        self.closed = True
        for record in self.open_records:  # scheduled but never updated (shutdown mid-step)
            record.pop("_started", None)
            record.pop("_requests", None)
            self.done_records.append(record)
        self.open_records.clear()
        self._write_done()
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(json.dumps(self.header(), separators=(",", ":")) + "\n")
            if self._body is not None:
                self._body.close()
                with open(self._body_path, encoding="utf-8") as body:
                    for line in body:
                        out.write(line)
        os.replace(tmp, self.path)
        if self._body is not None:
            os.unlink(self._body_path)
        return self.path


def _starts_and_blocks(output: Any) -> tuple[dict[str, int], dict[str, list[int]]]:
    """num_computed_tokens before the step, and the blocks appended to each table."""
    starts: dict[str, int] = {}
    blocks: dict[str, list[int]] = {}
    for req in output.scheduled_new_reqs:
        starts[req.req_id] = req.num_computed_tokens
        if req.block_ids and req.block_ids[0]:
            blocks[req.req_id] = list(req.block_ids[0])
    cached = output.scheduled_cached_reqs
    for rid, start, new in zip(cached.req_ids, cached.num_computed_tokens,
                               cached.new_block_ids, strict=True):
        starts[rid] = start
        if new and new[0]:
            blocks[rid] = list(new[0])
    return starts, blocks
