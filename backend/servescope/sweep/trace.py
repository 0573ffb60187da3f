"""A sweep's workload: a trace file read once through the trace adapters, with the options an
upload takes (a window, the first N, a sample, scaling)."""

from __future__ import annotations

from pathlib import Path

from servescope.api.trace_workload import TooManyRequests, read_trace
from servescope.api.upload_options import OptionError, UploadOptions
from servescope.core.request import RequestSpec
from servescope.traces.errors import TraceFormatError


class TraceError(ValueError):
    pass


def load_trace(path: Path, options: UploadOptions) -> list[RequestSpec]:
    """The trace's requests; TraceError names the line and field, or the option."""
    try:
        _, workload, report = read_trace(path, options)
    except (TraceFormatError, OptionError, TooManyRequests) as err:
        raise TraceError(f"{path}: {err}") from err
    except OSError as err:
        raise TraceError(f"{path}: {err.strerror}") from err
    if report.kind != "requests":
        raise TraceError(f"{path}: a {report.format} file is a recorded run; a sweep needs a "
                         "request trace (arrivals and lengths) to simulate")
    if not workload.specs:
        raise TraceError(f"{path}: no requests to simulate (after the options)")
    return workload.specs
