"""Writing a run as ServeScope's step-recording JSONL: a header line, then one record per step.

Files are written to a temporary name beside the target and renamed when complete, so an
interrupted run never leaves a half-written recording behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from servescope.core.config import EngineConfig
from servescope.core.records import StepRecord
from servescope.core.request import RequestSpec

FORMAT = "servescope-steps"
VERSION = 1


def header(config: EngineConfig, specs: Iterable[RequestSpec], source: str) -> dict[str, Any]:
    return {
        "format": FORMAT, "version": VERSION, "source": source, "config": config.to_dict(),
        "requests": request_rows(specs),
    }


def request_rows(specs: Iterable[RequestSpec]) -> list[dict[str, Any]]:
    """Request specs as workload-JSON rows (a recording header's `requests`)."""
    return [{"id": s.id, "prompt_len": s.prompt_len, "output_len": s.output_len,
             "arrival_step": s.arrival_step, "arrival_s": s.arrival_s,
             "prefix": [list(segment) for segment in s.prefix], "priority": s.priority,
             **({} if s.spec_accepted is None else {"spec_accepted": list(s.spec_accepted)}),
             **({} if s.session_id is None else {"session_id": s.session_id})}
            for s in specs]


@contextmanager
def atomic_writer(path: Path) -> Iterator[IO[str]]:
    """A text file that appears at `path` only once the block completes without error."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_recording(path: Path, head: dict[str, Any], records: Iterable[StepRecord]) -> int:
    count = 0
    with atomic_writer(path) as out:
        out.write(json.dumps(head, separators=(",", ":")) + "\n")
        for record in records:
            out.write(json.dumps(record.to_dict(), separators=(",", ":")) + "\n")
            count += 1
    return count
