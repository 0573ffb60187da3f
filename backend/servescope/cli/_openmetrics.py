"""`servescope export --openmetrics`: engines' views written as an OpenMetrics file (an
engine's, a fleet's replicas', or a P/D fleet's pools'), a bad option a one-line CLI error."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from servescope.cli import CliError
from servescope.observability.families import EngineView
from servescope.observability.openmetrics import ExportError, default_epoch, openmetrics
from servescope.traces.recording import atomic_writer


def write_openmetrics(args: argparse.Namespace, views: Sequence[EngineView]) -> None:
    start = args.epoch if args.epoch is not None else default_epoch(views)
    try:
        chunks = openmetrics(views, start, args.interval_s)
        with atomic_writer(Path(args.openmetrics)) as out:
            for chunk in chunks:
                out.write(chunk)
    except ExportError as err:
        raise CliError(f"--{err.field.replace('_', '-')}: {err}") from err
