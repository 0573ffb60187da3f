"""Following a live vLLM scheduler step by step for a ServeScope recording (no vLLM import).

On the scheduler's thread `StepRecorder` only takes snapshots (references to vLLM's immutable
SchedulerOutput, copies of the queue lists, counters); a writer thread turns them into JSON.
A snapshot opens at a non-empty schedule(), completes at its update_from_output(), and goes to
the writer when the next schedule() begins, so frees between steps (aborts) still land in the
step before them.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from servescope.capture.prefix import prefix_segments
from servescope.capture.writer import StepWriter
from servescope.core.config import EngineConfig
from servescope.traces.recording import FORMAT, VERSION


class StepRecorder:
    def __init__(self, path: str, config: dict[str, Any], info: dict[str, Any]) -> None:
        self.path = path
        self.config = EngineConfig.from_dict(config).to_dict()
        self.info = info
        self.block_size = int(config["block_size"])
        self.step = 0  # a driver may set it before schedule() to keep its own step clock
        self.num_records = 0
        self.t0: float | None = None
        self.requests: dict[str, dict[str, Any]] = {}  # header rows
        self.live: dict[str, Any] = {}  # vLLM Request objects not yet finished
        self.prompt_hashes: dict[str, list[Any]] = {}
        self.arrivals: list[str] = []
        self.preempted: list[str] = []
        self.freed: list[int] = []
        self.events: list[dict[str, Any]] = []
        self.seen: set[str] = set()  # scheduled at least once and not finished
        self.open: deque[dict[str, Any]] = deque()  # scheduled, not yet updated
        self.done: list[dict[str, Any]] = []  # updated, not yet handed to the writer
        self.writer = StepWriter(path, lambda rid: self.requests[rid]["prompt_len"],
                                 int(config["num_gpu_blocks"]) - 1)
        self.closed = False

    # --- hooks ----------------------------------------------------------------------------
    def on_add(self, request: Any) -> None:
        if self.t0 is None:
            self.t0 = min(time.time(), request.arrival_time)
        rid = request.request_id
        num_prompt = request.num_prompt_tokens
        self.requests[rid] = {"id": rid, "prompt_len": num_prompt,
                              "output_len": request.max_tokens, "arrival_step": self.step,
                              "arrival_s": round(request.arrival_time - self.t0, 6),
                              "priority": request.priority}
        self.live[rid] = request
        if request.block_hashes:
            self.prompt_hashes[rid] = list(request.block_hashes[: num_prompt // self.block_size])
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

    def on_schedule(self, scheduler: Any, output: Any, started: float) -> None:
        for snap in self.done:
            self.writer.put(snap)
        self.done = []
        if not output.total_num_scheduled_tokens and not output.preempted_req_ids:
            self.preempted.clear()
            return
        preempted_set = output.preempted_req_ids or set()
        preempted = [rid for rid in self.preempted if rid in preempted_set]
        preempted += sorted(preempted_set.difference(preempted))
        self.open.append({
            **self._new_rows(output),
            "output": output, "step": self.step, "iter": self.num_records,
            "time_s": round(started - (self.t0 or started), 9), "started": started,
            "arrivals": self.arrivals, "preempted": preempted,
            "running": list(scheduler.running),
            "waiting": [*scheduler.kv_holding_waiting, *scheduler.waiting],
            "freed": self.freed, "events": self.events,
            "token_budget": scheduler.max_num_scheduled_tokens,
            "max_num_seqs": scheduler.max_num_running_reqs,
        })
        self.arrivals, self.preempted, self.freed, self.events = [], [], [], []
        self.num_records += 1
        self.step += 1

    def _new_rows(self, output: Any) -> dict[str, Any]:
        """Model Runner V2 sends a resumed request as a new one (Scheduler.schedule,
        "if self.use_v2_model_runner: scheduled_new_reqs.extend(scheduled_resumed_reqs)")
        with its tokens so far (prefill_token_ids, a live list: measured now). Those seen
        scheduled before are resumed; their num_tokens before the step is that length."""
        resumed, totals = [], {}
        for req in output.scheduled_new_reqs:
            if req.prefill_token_ids is not None:
                totals[req.req_id] = len(req.prefill_token_ids)
            if req.req_id in self.seen:
                resumed.append(req.req_id)
        self.seen.update(output.num_scheduled_tokens)
        return {"resumed_as_new": resumed, "new_totals": totals}

    def on_update(self, scheduler: Any, output: Any, engine_outputs: dict[Any, Any],
                  accepted: dict[str, int] | None = None) -> None:
        if not self.open or self.open[0]["output"] is not output:
            return  # an empty step: nothing was recorded for it
        snap = self.open.popleft()
        if "speculative_config" in self.config and self.config["speculative_config"]:
            snap["accepted"] = accepted or {}
            self._note_verifies(output, snap["accepted"])
        finished = [o.request_id for outs in engine_outputs.values() for o in outs.outputs
                    if o.finish_reason is not None]
        for rid in finished:
            self._set_output_len(self.live.pop(rid, None))
            self.seen.discard(rid)
        aborted = snap.get("finished", [])  # aborted while the step was in flight
        snap["finished"], snap["released"] = finished + aborted, finished + aborted
        snap["step_time_ms"] = round((time.time() - snap.pop("started")) * 1000.0, 6)
        self._settle(snap, scheduler)
        self.done.append(snap)

    def on_aborted(self, scheduler: Any, aborted: list[Any]) -> None:
        """Requests finished from outside (client aborts): freed between or during steps."""
        for request in aborted:
            self.live.pop(request.request_id, None)
            self.seen.discard(request.request_id)
            self._set_output_len(request)
        target = self.open[-1] if self.open else (self.done[-1] if self.done else None)
        if target is None:
            return
        gone = [r.request_id for r in aborted if r.request_id in self.requests]
        target.setdefault("finished", []).extend(gone)
        target.setdefault("released", []).extend(gone)
        if "num_free_blocks" in target:
            self._settle(target, scheduler)

    def _settle(self, snap: dict[str, Any], scheduler: Any) -> None:
        """Fold in what happened since the schedule: frees, cache events, the free count."""
        snap["freed"] = snap["freed"] + self.freed
        snap["events"] = snap["events"] + self.events
        self.freed, self.events = [], []
        snap["num_free_blocks"] = scheduler.kv_cache_manager.block_pool.get_num_free_blocks()

    def _note_verifies(self, output: Any, accepted: dict[str, int]) -> None:
        """Each verify step's accepted count onto its request's spec_accepted (issue #34):
        steps with real drafts whose output was applied; padded admissions (new or resumed
        with drafts) are not verify steps."""
        padded = {r.req_id for r in output.scheduled_new_reqs}
        padded |= set(output.scheduled_cached_reqs.resumed_req_ids)
        for rid, drafts in output.scheduled_spec_decode_tokens.items():
            if drafts and rid in accepted and rid not in padded and rid in self.requests:
                self.requests[rid].setdefault("spec_accepted", []).append(accepted[rid])

    def _set_output_len(self, request: Any) -> None:
        if request is not None and request.request_id in self.requests:
            self.requests[request.request_id]["output_len"] = request.num_output_tokens

    # --- output ---------------------------------------------------------------------------
    def header(self) -> dict[str, Any]:
        segments = prefix_segments(self.prompt_hashes, self.block_size,
                                   self.info.get("num_hash_lookahead_tokens", 0))
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
        for snap in self.open:  # scheduled but never updated (shutdown mid-step)
            snap.pop("started", None)
            snap.setdefault("finished", [])
            snap.setdefault("released", [])
            snap.update(step_time_ms=0.0, num_free_blocks=0)
            self.done.append(snap)
        self.open.clear()
        for snap in self.done:
            self.writer.put(snap)
        self.done = []
        return self.writer.finish(self.header())
