"""The recorder's writer thread: step snapshots become to_dict()-shaped JSON lines off the
scheduler's thread, in a buffered body file; `finish` puts the header in front, atomically."""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Callable
from typing import Any


class StepWriter:
    def __init__(self, path: str, prompt_len: Callable[[str], int],
                 num_usable_blocks: int) -> None:
        self.path = path
        self.body_path = f"{path}.steps.tmp"
        self.prompt_len = prompt_len
        self.num_usable_blocks = num_usable_blocks
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def put(self, snapshot: dict[str, Any]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="servescope-capture",
                                            daemon=True)
            self._thread.start()
        self._queue.put(snapshot)

    def _run(self) -> None:
        with open(self.body_path, "w", encoding="utf-8", buffering=1 << 20) as body:
            while (snapshot := self._queue.get()) is not None:
                try:
                    body.write(json.dumps(self.to_dict(snapshot), separators=(",", ":")))
                    body.write("\n")
                except Exception as exc:  # keep serving vLLM; report at finish
                    self.error = self.error or exc

    def finish(self, head: dict[str, Any]) -> str:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(json.dumps(head, separators=(",", ":")) + "\n")
            if self._thread is not None:
                with open(self.body_path, encoding="utf-8") as body:
                    for line in body:
                        out.write(line)
        os.replace(tmp, self.path)
        if self._thread is not None:
            os.unlink(self.body_path)
        if self.error is not None:
            raise RuntimeError(f"servescope capture: a step could not be written: {self.error}")
        return self.path

    def to_dict(self, snap: dict[str, Any]) -> dict[str, Any]:
        output = snap["output"]
        starts, totals, new_blocks = self._per_request(output)
        totals.update(snap.get("new_totals", {}))
        scheduled = []
        accepted = snap.get("accepted")  # present only with speculative decoding
        for rid, n in output.num_scheduled_tokens.items():
            start, total = starts[rid], totals[rid]
            drafts = len(output.scheduled_spec_decode_tokens.get(rid, ()))
            row = {"id": rid, "n": n, "start": start, "sampled": start + n >= total,
                   "kind": "prefill" if n - drafts > 1 or start < total - 1 else "decode"}
            if accepted is not None:
                row.update(drafts=drafts, accepted=accepted.get(rid, -1))
            scheduled.append(row)
        resumed_set = {*output.scheduled_cached_reqs.resumed_req_ids,
                       *snap.get("resumed_as_new", ())}
        new = [r.req_id for r in output.scheduled_new_reqs if r.req_id not in resumed_set]
        resumed = [rid for rid in output.num_scheduled_tokens if rid in resumed_set]
        free = snap["num_free_blocks"]
        return {
            "step": snap["step"], "iter": snap["iter"], "time_s": snap["time_s"],
            "step_time_ms": snap["step_time_ms"], "arrivals": snap["arrivals"],
            "scheduled": scheduled, "new": new, "resumed": resumed,
            "preempted": snap["preempted"], "finished": snap["finished"],
            "released": snap["released"], "rejected": [], "new_blocks": new_blocks,
            "freed_blocks": snap["freed"], "kv_events": snap["events"],
            "num_cached_tokens": {rid: starts[rid] for rid in new + resumed},
            "running": [r.request_id for r in snap["running"]],
            "waiting": [r.request_id for r in snap["waiting"]],
            "num_free_blocks": free, "num_usable_blocks": self.num_usable_blocks,
            "kv_usage": round(1.0 - free / self.num_usable_blocks, 6),
            "token_budget": snap["token_budget"], "max_num_seqs": snap["max_num_seqs"],
            "kv_waste": {},
        }

    def _per_request(self, output: Any) -> tuple[dict[str, int], dict[str, int],
                                                  dict[str, list[int]]]:
        """Per request: num_computed_tokens before the step, num_tokens (placeholders of
        in-flight async steps included) before the step, and the blocks appended."""
        starts: dict[str, int] = {}
        totals: dict[str, int] = {}
        blocks: dict[str, list[int]] = {}
        for req in output.scheduled_new_reqs:
            starts[req.req_id] = req.num_computed_tokens
            totals[req.req_id] = self.prompt_len(req.req_id)
            if req.block_ids and req.block_ids[0]:
                blocks[req.req_id] = list(req.block_ids[0])
        cached = output.scheduled_cached_reqs
        for rid, start, num_output, new in zip(cached.req_ids, cached.num_computed_tokens,
                                               cached.num_output_tokens, cached.new_block_ids,
                                               strict=True):
            starts[rid] = start
            totals[rid] = self.prompt_len(rid) + num_output
            if new and new[0]:
                blocks[rid] = list(new[0])
        return starts, totals, blocks
