"""Recording a live vLLM scheduler step by step, and checking our engine against a recording.

`vllm serve MODEL --scheduler-cls servescope.capture.RecordingScheduler` (or
RecordingAsyncScheduler) works as before: the classes are looked up lazily in `scheduler`, so
importing this package loads no vLLM.
"""

from __future__ import annotations

from typing import Any

from servescope.capture.scheduler import CLASS_NAMES, PATH_ENV, capture_path, engine_config

__all__ = ["CLASS_NAMES", "PATH_ENV", "capture_path", "engine_config"]


def __getattr__(name: str) -> Any:
    from servescope.capture import scheduler

    return getattr(scheduler, name)
