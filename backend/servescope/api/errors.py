"""The server's exceptions that cross modules, in one place: each wing raises them, and the
route layer maps them to HTTP by their code (routes/_lookup.py `http_error`). A module's own
control-flow exceptions (edge's NotFinite, outflow's Stalled, work's TooLarge) stay with it."""

from __future__ import annotations

from typing import Any


class SessionError(Exception):
    """A request or message a session refuses: `code` says why (bad_message, not_found, ...),
    `field` names the offending field where there is one."""

    def __init__(self, message: str, field: str | None = None, code: str = "bad_message") -> None:
        super().__init__(message)
        self.field = field
        self.code = code


class BuildError(Exception):
    """A config or workload that cannot be built into tracks (HTTP 422, or its `code`)."""

    def __init__(self, message: str, field: str | None = None, code: str = "config") -> None:
        super().__init__(message)
        self.field = field
        self.code = code


class JobError(SessionError):
    """Refused, too slow or too big: the route answers 503 (busy, memory) or 413 (too_large)."""

    def __init__(self, message: str, code: str = "busy") -> None:
        super().__init__(message, None, code)


class WorkerError(Exception):
    """The job failed in its worker: `kind` memory (over its budget), died, or failed."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class StorageError(Exception):
    """The data directory cannot hold a run: full (HTTP 507) or not writable (500)."""

    def __init__(self, message: str, full: bool) -> None:
        super().__init__(message)
        self.full = full


class RecordLimitError(Exception):
    """The run has more records than the server keeps for a session."""


class UploadError(Exception):
    """An upload refused with HTTP `status`; `detail` names the line and field where known."""

    def __init__(self, status: int, message: str, **where: Any) -> None:
        super().__init__(message)
        self.status = status
        self.detail = {"message": message, **where}


class SweepBusy(Exception):
    """A sweep is already running on this server (HTTP 409, retry after `retry_after_s`)."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DriverDied(Exception):
    """The sweep driver process ended while a sweep ran (its message says how)."""
