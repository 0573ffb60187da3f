"""A sweep's workload: a request trace read once with its options (traces/load.py, as
`servescope sim --trace` and uploads read it)."""

from __future__ import annotations

from pathlib import Path

from servescope.core.request import RequestSpec
from servescope.traces.errors import TraceFormatError
from servescope.traces.load import read_requests
from servescope.traces.upload_options import OptionError, UploadOptions


class TraceError(ValueError):
    pass


def load_trace(path: Path, options: UploadOptions) -> list[RequestSpec]:
    """The trace's requests; TraceError names the option, or the line and field."""
    try:
        specs = read_requests(path, options)[1]
    except OptionError as err:
        raise TraceError(f"{err.field}: {err}") from err
    except (TraceFormatError, ValueError) as err:
        raise TraceError(f"{path}: {err}") from err
    except OSError as err:
        raise TraceError(f"{path}: {err.strerror}") from err
    if not specs:
        raise TraceError(f"{path}: no requests to simulate (after the options)")
    return specs
