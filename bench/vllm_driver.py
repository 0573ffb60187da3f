"""Replays a workload through vLLM 0.33's own V1 scheduler on a CPU (run with a Python that
has vLLM). Reads {config, requests, skip_steps} as JSON on stdin; prints one JSON line with
request_steps, seconds (schedule() + update_from_output() after skip_steps), steps, decisions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend"))

from servescope.capture.driver import (  # noqa: E402
    RequestFactory,
    build_scheduler,
    drive,
    effective_max_model_len,
)


def main() -> None:
    job = json.load(sys.stdin)
    config, requests, skip = job["config"], job["requests"], int(job.get("skip_steps", 0))
    scheduler = build_scheduler(config, effective_max_model_len(config, requests))
    factory = RequestFactory(scheduler.cache_config.enable_prefix_caching, scheduler.block_size)
    request_steps = steps = 0
    seconds = 0.0
    decisions = []
    for index, seen in enumerate(drive(scheduler, requests, factory, observe=False)):
        if index < skip:
            continue
        plan = seen.output.num_scheduled_tokens
        decisions.append([[rid, n] for rid, n in plan.items()])
        request_steps += len(plan)
        steps += 1
        seconds += seen.seconds
    print(json.dumps({"request_steps": request_steps, "seconds": seconds, "steps": steps,
                      "decisions": decisions}))


if __name__ == "__main__":
    main()
