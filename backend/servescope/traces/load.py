"""A request trace read with its options (window, sample or first N, scaling): the request list
both an upload's session and `servescope sim --trace` run, with what the options did noted."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator
from pathlib import Path

from servescope.core.request import RequestSpec
from servescope.traces import registry
from servescope.traces.errors import TooManyRequests
from servescope.traces.options import TraceOptions, apply_options
from servescope.traces.report import TraceReport
from servescope.traces.upload_options import UploadOptions, describe


def open_with_options(path: Path, options: UploadOptions, max_requests: int | None = None
                      ) -> tuple[str, TraceReport, Iterator]:
    """(format, report, stream): the format detected unless the options name one; OptionError
    for an option that does not apply to it. A format that generates its requests (a load
    profile) counts them first and raises TooManyRequests over `max_requests`."""
    fmt = options.format or registry.detect(path)
    options.check_kind(fmt)
    params = {**options.adapter_params(fmt),
              **registry.count_params(fmt, max_requests, options.trace_options().window_s)}
    report, stream = registry.open_trace(path, fmt, **params)
    return fmt, report, stream


def read_requests(path: Path, options: UploadOptions | None = None,
                  max_requests: int | None = None) -> tuple[str, list[RequestSpec], TraceReport]:
    """A request trace's requests with the options applied (TraceFormatError names the line and
    field; a step recording is refused with a ValueError)."""
    options = options or UploadOptions()
    fmt, report, stream = open_with_options(path, options, max_requests)
    if registry.FORMATS[fmt].kind != "requests":
        raise ValueError(f"{path}: a {fmt} file is a recorded run (steps), not requests to "
                         "simulate; upload it to the explorer to replay it")
    return fmt, requests_from(stream, report, options, max_requests), report


def requests_from(stream: Iterator[RequestSpec], report: TraceReport, options: UploadOptions,
                  max_requests: int | None) -> list[RequestSpec]:
    """The options applied in TraceOptions' order, counting what the window keeps; a trace
    over the limit is counted to its end but not held."""
    trace_options = options.trace_options()
    windowed = _Counted(apply_options(stream, TraceOptions(window_s=trace_options.window_s)))
    shaped = apply_options(windowed, dataclasses.replace(trace_options, window_s=None))
    specs = list(shaped if max_requests is None else itertools.islice(shaped, max_requests + 1))
    if max_requests is not None and len(specs) > max_requests:
        for _ in shaped:
            pass
        last = specs[max_requests - 1].arrival_s  # rebased and scaled: back to file seconds
        fits = None if last is None else \
            (options.window_start_s or 0.0) + last / options.arrival_scale
        raise TooManyRequests(windowed.count, max_requests, fits,
                              trace_options.window_s is not None)
    note = describe(options, report.format, windowed.count, len(specs))
    if note:
        report.note(note)
    return specs


class _Counted:
    def __init__(self, items: Iterable[RequestSpec]) -> None:
        self.items, self.count = items, 0

    def __iter__(self) -> Iterator[RequestSpec]:
        for item in self.items:
            self.count += 1
            yield item
