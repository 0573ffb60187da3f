"""Receiving a trace upload: stream the multipart body's `file` field to a temporary file under a
size limit, parse it, and only then commit it to the store."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from python_multipart.multipart import MultipartParser, parse_options_header

from servescope.api.store import Store
from servescope.api.workloads import read_trace
from servescope.traces.errors import TraceDependencyError, TraceFormatError

log = logging.getLogger(__name__)


class UploadError(Exception):
    def __init__(self, status: int, message: str, **where: Any) -> None:
        super().__init__(message)
        self.status = status
        self.detail = {"message": message, **where}


class _FilePart:
    """Collects the `file` field of a multipart body into `path`, counting bytes."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit = path, limit
        self.handle = path.open("wb")
        self.size = 0
        self.filename: str | None = None
        self.found = False
        self._header: list[bytes] = [b"", b""]
        self._in_file = False

    def callbacks(self) -> dict[str, Any]:
        return {"on_header_field": self._field, "on_header_value": self._value,
                "on_header_end": self._header_end, "on_part_data": self._data,
                "on_part_end": self._part_end}

    def _field(self, data: bytes, start: int, end: int) -> None:
        self._header[0] += data[start:end]

    def _value(self, data: bytes, start: int, end: int) -> None:
        self._header[1] += data[start:end]

    def _header_end(self) -> None:
        name, value = self._header
        self._header = [b"", b""]
        if name.lower() == b"content-disposition":
            _, params = parse_options_header(value)
            self._in_file = params.get(b"name") == b"file" and not self.found
            if self._in_file:
                self.found = True
                self.filename = params.get(b"filename", b"upload").decode("utf-8", "replace")

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            self.size += end - start
            if self.size > self.limit:
                raise UploadError(413, f"upload larger than the limit of {self.limit} bytes")
            self.handle.write(data[start:end])

    def _part_end(self) -> None:
        self._in_file = False


async def receive(chunks: AsyncIterator[bytes], content_type: str, store: Store,
                  limit: int) -> dict[str, Any]:
    """Stream, parse and commit one upload; returns the stored trace's description."""
    kind, params = parse_options_header(content_type)
    if kind != b"multipart/form-data" or b"boundary" not in params:
        raise UploadError(415, "send the trace as multipart/form-data with a `file` field")
    part = _FilePart(store.temp_path(), limit)
    try:
        parser = MultipartParser(params[b"boundary"], part.callbacks())  # type: ignore[arg-type]
        async for chunk in chunks:
            parser.write(chunk)
        parser.finalize()
        part.handle.close()
        if not part.found:
            raise UploadError(400, "no `file` field in the upload")
        return await asyncio.to_thread(_parse_and_commit, store, part)
    except UploadError:
        raise
    except ValueError as err:  # the multipart parser's own errors
        raise UploadError(400, f"malformed multipart body: {err}") from err
    finally:
        part.handle.close()
        part.path.unlink(missing_ok=True)


def _parse_and_commit(store: Store, part: _FilePart) -> dict[str, Any]:
    try:
        fmt, workload, report = read_trace(part.path)
    except TraceFormatError as err:
        raise UploadError(400, f"{part.filename}: {err}", line=err.line, field=err.field) from err
    except (UnicodeDecodeError, OSError, ValueError) as err:
        raise UploadError(400, f"{part.filename}: not a trace this server reads ({err})",
                          line=0, field="") from err
    except TraceDependencyError as err:  # the server lacks a reader's optional package
        raise UploadError(501, f"{part.filename}: this server cannot read that format: {err}",
                          line=0, field="") from err
    except Exception as err:  # an adapter bug must not become a 5xx or lose the session
        log.exception("reading upload %s", part.filename)
        raise UploadError(400, f"{part.filename}: could not read the trace ({type(err).__name__})",
                          line=0, field="") from err
    if not workload.specs and not workload.records:
        raise UploadError(400, f"{part.filename}: no requests in the trace", line=0, field="")
    summary = _summary(workload)
    stored = store.commit_trace(part.path, part.filename or "upload", fmt, len(workload.specs),
                                {**summary, "report": report.to_dict()})
    return stored


def _summary(workload: Any) -> dict[str, Any]:
    specs = workload.specs
    prompts = sorted(s.prompt_len for s in specs) or [0]
    outputs = sorted(s.output_len for s in specs) or [0]
    times = [s.arrival_s for s in specs if s.arrival_s is not None]
    return {
        "num_requests": len(specs), "num_records": len(workload.records or []),
        "total_prompt_tokens": sum(prompts), "total_output_tokens": sum(outputs),
        "median_prompt_len": prompts[len(prompts) // 2],
        "median_output_len": outputs[len(outputs) // 2],
        "duration_s": (max(times) - min(times)) if times else None,
        "measured": (workload.trace or {}).get("measured"),
    }
