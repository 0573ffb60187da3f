"""A request trace named on the command line (`--trace FILE` and the upload options as flags),
read as an upload is: shared by `sim`, `sweep`, `diagnose` and `export`."""

from __future__ import annotations

import argparse

from servescope.cli import CliError
from servescope.core.request import RequestSpec
from servescope.traces.errors import TraceFormatError
from servescope.traces.load import read_requests
from servescope.traces.report import TraceReport
from servescope.traces.upload_options import FIELDS, OptionError, UploadOptions

MAX_TRACE_REQUESTS = 100_000_000  # the bound --limit and --sample-n are checked against


def add_trace_options(parser: argparse.ArgumentParser) -> None:
    """--format and the upload options (docs/trace-format.md), as flags."""
    group = parser.add_argument_group("trace options (with --trace)")
    for name, (kind, text) in FIELDS.items():
        group.add_argument("--" + name.replace("_", "-"), dest=f"trace_{name}",
                           metavar=name.upper() if kind is not str else "NAME", help=text)


def load_trace(args: argparse.Namespace) -> tuple[list[RequestSpec], TraceReport]:
    """The trace's requests with the options given as flags, and its report (errors name the
    option, or the line and field of the file)."""
    given = {name: getattr(args, f"trace_{name}") for name in FIELDS}
    try:
        options = UploadOptions.from_fields(
            {k: str(v) for k, v in given.items() if v is not None}, MAX_TRACE_REQUESTS)
        _, specs, report = read_requests(args.trace, options)
        return specs, report
    except OptionError as err:
        raise CliError(f"--{err.field.replace('_', '-')}: {err}") from err
    except (TraceFormatError, ValueError) as err:
        raise CliError(f"{args.trace}: {err}") from err
    except OSError as err:
        raise CliError(f"{args.trace}: {err.strerror}") from err
