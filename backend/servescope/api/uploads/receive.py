"""Receiving a trace upload: stream the multipart body's `file` field to a temporary file under a
size limit, inflate it if it is gzip (the limit holds for the inflated bytes too, with a cap on
the ratio), keep its small option fields (traces/upload_options.py), parse the file with them, and
only then commit it to the store."""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from python_multipart.multipart import MultipartParser, parse_options_header

from servescope.api.errors import UploadError
from servescope.api.uploads.store import GZIP_MAGIC, Store, is_gzip, writable
from servescope.api.uploads.trace_workload import read_trace, remember
from servescope.traces.errors import TooManyRequests, TraceDependencyError, TraceFormatError, shown
from servescope.traces.upload_options import OptionError, UploadOptions

log = logging.getLogger(__name__)
MAX_FIELD_BYTES = 1024
MAX_FIELDS = 32
CHUNK = 1 << 20  # inflated bytes per step
INPUT_CHUNK = 1 << 16



class _Body:
    """Collects the `file` field of a multipart body into `path`, counting bytes, and every
    other field's text into `fields`."""

    def __init__(self, path: Path, limit: int) -> None:
        self.path, self.limit = path, limit
        self.handle = path.open("wb")
        self.size = 0
        self.filename: str | None = None
        self.found = False
        self.fields: dict[str, str] = {}
        self._header: list[bytes] = [b"", b""]
        self._in_file = False
        self._part: str | None = None  # the option field being read
        self._value = bytearray()

    def callbacks(self) -> dict[str, Any]:
        return {"on_header_field": self._on_field, "on_header_value": self._on_value,
                "on_header_end": self._header_end, "on_part_data": self._data,
                "on_part_end": self._part_end}

    def _on_field(self, data: bytes, start: int, end: int) -> None:
        self._header[0] += data[start:end]

    def _on_value(self, data: bytes, start: int, end: int) -> None:
        self._header[1] += data[start:end]

    def _header_end(self) -> None:
        name, value = self._header
        self._header = [b"", b""]
        if name.lower() != b"content-disposition":
            return
        _, params = parse_options_header(value)
        field = params.get(b"name", b"").decode("utf-8", "replace")
        if field == "file":  # a second file part is ignored
            self._in_file = not self.found
            if self._in_file:
                self.found = True
                self.filename = params.get(b"filename", b"upload").decode("utf-8", "replace")
            return
        if field in self.fields or len(self.fields) >= MAX_FIELDS:
            raise UploadError(400, f"field {shown(field)} given twice, or too many fields",
                              line=0, field=field)
        self._part = field
        self._value.clear()

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._in_file:
            self.size += end - start
            if self.size > self.limit:
                raise UploadError(413, f"upload larger than the limit of {self.limit} bytes")
            self.handle.write(data[start:end])
        elif self._part is not None:
            self._value += data[start:end]
            if len(self._value) > MAX_FIELD_BYTES:
                raise UploadError(400, f"field {shown(self._part)} is longer than "
                                       f"{MAX_FIELD_BYTES} bytes", line=0, field=self._part)

    def _part_end(self) -> None:
        if self._part is not None:
            self.fields[self._part] = self._value.decode("utf-8", "replace")
        self._in_file, self._part = False, None


def inflate(path: Path, out: Path, limit: int, max_ratio: float) -> bool:
    """Writes the gzip file at `path` (any number of members) inflated to `out`, a chunk at a
    time; a 413 as soon as it passes `limit` bytes or `max_ratio` times the gzip bytes read so
    far (after a first MiB), so a bomb stops within megabytes. False when `path` is not gzip."""
    with path.open("rb") as src, out.open("wb") as dst:
        if src.read(2) != GZIP_MAGIC:
            return False
        src.seek(0)
        size = taken = 0
        inflater, pending, in_member = zlib.decompressobj(wbits=31), b"", False
        while True:
            if not pending:
                pending = src.read(INPUT_CHUNK)
                taken += len(pending)
                if not pending and in_member:
                    raise UploadError(400, "damaged gzip file: it ends inside a member",
                                      line=0, field="file")
                if not pending:
                    return True
            in_member = True
            try:
                data = inflater.decompress(pending, CHUNK)
            except zlib.error as err:
                raise UploadError(400, f"damaged gzip file: {err}", line=0, field="file") from err
            if inflater.eof:  # another member may follow
                pending, inflater = inflater.unused_data, zlib.decompressobj(wbits=31)
                in_member = bool(pending)
            else:
                pending = inflater.unconsumed_tail
            size += len(data)
            if size > limit or size > max_ratio * (taken - len(pending)) + CHUNK:
                raise UploadError(413, f"the upload inflates past its limit ({limit} bytes, "
                                       f"and {max_ratio:g}x the gzip's own size)")
            dst.write(data)


Parse = Callable[[Path, UploadOptions, int, str], Awaitable[tuple[str, Any]]]


async def in_thread(path: Path, options: UploadOptions, max_requests: int,
                    name: str) -> tuple[str, Any]:
    """parse_upload on a thread: the runner where there is no job pool (the server's route
    runs it in a worker process with a memory budget and a deadline, api/jobs/pool.py)."""
    return await asyncio.to_thread(parse_upload, path, options, max_requests, name)


async def receive(chunks: AsyncIterator[bytes], content_type: str, store: Store,
                  limit: int, max_requests: int, max_ratio: float = 100.0,
                  parse: Parse = in_thread, *, owner: str) -> dict[str, Any]:
    """Stream, inflate (once, bounded), parse (through `parse`) and commit one upload as
    `owner`'s (an owner digest: api/uploads/owner.py);
    returns the stored trace's description."""
    kind, params = parse_options_header(content_type)
    if kind != b"multipart/form-data" or b"boundary" not in params:
        raise UploadError(415, "send the trace as multipart/form-data with a `file` field")
    body = _Body(store.temp_path(), limit)
    try:
        parser = MultipartParser(params[b"boundary"], body.callbacks())  # type: ignore[arg-type]
        async for chunk in chunks:
            parser.write(chunk)
        parser.finalize()
        body.handle.close()
        if not body.found:
            raise UploadError(400, "no `file` field in the upload", line=0, field="file")
        try:
            options = UploadOptions.from_fields(body.fields, max_requests)
        except OptionError as err:
            raise UploadError(400, str(err), line=0, field=err.field) from err
        await asyncio.to_thread(_inflate_once, store, body.path, limit, max_ratio)
        outcome, value = await parse(body.path, options, max_requests, body.filename or "")
        if outcome == "error":
            status, detail = value
            raise UploadError(status, **detail)
        return await asyncio.to_thread(_commit, store, body, options, value, owner)
    except UploadError:
        raise
    except ValueError as err:  # the multipart parser's own errors
        raise UploadError(400, f"malformed multipart body: {err}") from err
    finally:
        body.handle.close()
        body.path.unlink(missing_ok=True)


def _inflate_once(store: Store, path: Path, limit: int, max_ratio: float) -> None:
    inflated = store.temp_path()
    try:
        if inflate(path, inflated, limit, max_ratio):
            inflated.replace(path)
            if is_gzip(path):  # inflated once, and only once
                raise UploadError(400, "a gzip file inside a gzip file: inflate it once and "
                                       "upload that", line=0, field="file")
    finally:
        inflated.unlink(missing_ok=True)


def parse_upload(path: Path, options: UploadOptions, max_requests: int,
                 name: str) -> tuple[str, Any]:
    """("ok", (format, workload, report)), or ("error", (status, detail)) for a file that is
    not a trace this server takes: plain values, so a worker process can send them back."""
    try:
        return "ok", _read(path, options, max_requests, name)
    except UploadError as err:
        return "error", (err.status, err.detail)


def _read(path: Path, options: UploadOptions, max_requests: int, name: str) -> Any:
    try:
        return read_trace(path, options, max_requests)
    except OptionError as err:  # an option the file's format does not take
        raise UploadError(400, str(err), line=0, field=err.field) from err
    except TooManyRequests as err:
        raise UploadError(413, f"{name}: {err}", line=0, field="",
                          num_requests=err.num_requests, max_requests=err.max_requests,
                          fits_end_s=err.fits_end_s) from err
    except TraceFormatError as err:
        raise UploadError(400, f"{name}: {err}", line=err.line, field=err.field) from err
    except (UnicodeDecodeError, OSError, ValueError) as err:
        raise UploadError(400, f"{name}: not a trace this server reads ({err})",
                          line=0, field="") from err
    except TraceDependencyError as err:  # the server lacks a reader's optional package
        raise UploadError(501, f"{name}: this server cannot read that format: {err}",
                          line=0, field="") from err
    except Exception as err:  # an adapter bug must not become a 5xx or lose the session
        log.exception("reading upload %s", name)
        raise UploadError(400, f"{name}: could not read the trace ({type(err).__name__})",
                          line=0, field="") from err


def _commit(store: Store, body: _Body, options: UploadOptions, parsed: Any,
            owner: str) -> dict[str, Any]:
    fmt, workload, report = parsed
    name = body.filename
    if not workload.specs and not workload.records:
        what = "after the upload options" if options.given() else "in the trace"
        raise UploadError(400, f"{name}: no requests {what}", line=0, field="")
    bad = next((k for k, spec in enumerate(workload.specs) if not writable(spec.id)), None)
    if bad is not None:  # every page and socket that lists the requests would fail on it
        raise UploadError(400, f"{name}: request {bad}'s id holds an unpaired surrogate "
                          "(\\ud800-\\udfff), which is not Unicode text", line=0, field="id")
    summary = _summary(workload)
    stored = store.commit_trace(body.path, name or "upload", fmt, len(workload.specs),
                                {**summary, "report": report.to_dict()}, options.to_dict(),
                                owner=owner)
    try:  # its first session need not read it again; it is stored, so this must not fail it
        remember(store, stored["trace_id"], workload)
    except Exception:
        log.exception("caching upload %s", stored["trace_id"])
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
