"""`servescope traces list | fetch NAME | inspect FILE`: the public trace catalog and a quick
look at any trace file ServeScope reads."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from servescope.cli import CliError
from servescope.traces import catalog, registry
from servescope.traces.errors import TraceDependencyError, TraceFormatError
from servescope.traces.inspect import summarize_requests, summarize_steps
from servescope.traces.options import TraceOptions

HELP = "public trace catalog; inspect trace files"
DESCRIPTION = ("List and fetch public LLM serving traces, or "
               "summarize a trace file in any format.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="traces_command", required=True)
    listing = sub.add_parser("list", help="the catalog, and which traces are downloaded")
    listing.add_argument("--json", action="store_true", help="print JSON")
    fetch = sub.add_parser("fetch", help="download one catalogued trace and verify it")
    fetch.add_argument("name")
    fetch.add_argument("--allow-unverified", action="store_true",
                       help="accept a file whose upstream pins no checksum")
    inspect = sub.add_parser("inspect", help="detect a file's format and summarize it")
    inspect.add_argument("file", type=Path)
    inspect.add_argument("--format", choices=sorted(registry.FORMATS),
                         help="override format detection")
    inspect.add_argument("--window", metavar="START:END",
                         help="seconds after the first arrival (END may be empty)")
    inspect.add_argument("--arrival-scale", type=float, default=1.0)
    inspect.add_argument("--length-scale", type=float, default=1.0)
    inspect.add_argument("--limit", type=int, help="first N requests")
    inspect.add_argument("--sample", type=int, help="uniform random N requests")
    inspect.add_argument("--seed", type=int, default=0)
    inspect.add_argument("--json", action="store_true", help="print JSON")
    for p in (listing, fetch):
        p.add_argument("--data-dir", type=Path, help="data directory (default $SERVESCOPE_"
                                                     "DATA_DIR or <repo>/data)")
        p.add_argument("--catalog", type=Path, help="catalog JSON (default traces/catalog.json)")


def run(args: argparse.Namespace) -> int:
    try:
        return {"list": _list, "fetch": _fetch, "inspect": _inspect}[args.traces_command](args)
    except catalog.CatalogError as err:
        raise CliError(str(err)) from err
    except TraceFormatError as err:
        raise CliError(f"{getattr(args, 'file', '')}: {err}") from err
    except (TraceDependencyError, ValueError, OSError) as err:
        raise CliError(str(err)) from err


def _list(args: argparse.Namespace) -> int:
    entries = catalog.load_catalog(args.catalog)
    rows = [{"name": e.name, "format": e.format, "bytes": e.bytes, "licence": e.licence,
             "verified": e.verifiable, "cached": catalog.cached_path(e, args.data_dir).is_file(),
             "title": e.title} for e in entries]
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    print(f"{'name':<24} {'format':<15} {'size':>10} {'licence':<11} {'cached':<6} title")
    for row in rows:
        size = f"{row['bytes'] / 1e6:.1f} MB" if row["bytes"] else "?"
        mark = "yes" if row["cached"] else ""
        pin = "" if row["verified"] else " (no checksum upstream)"
        print(f"{row['name']:<24} {row['format']:<15} {size:>10} {row['licence']:<11} "
              f"{mark:<6} {row['title']}{pin}")
    return 0


def _fetch(args: argparse.Namespace) -> int:
    entry = catalog.find(catalog.load_catalog(args.catalog), args.name)
    path, found = catalog.fetch(entry, args.data_dir, allow_unverified=args.allow_unverified)
    print(path)
    print(f"sha256 {found['sha256']}", file=sys.stderr)
    print(f"licence {entry.licence}; attribution: {entry.attribution}", file=sys.stderr)
    return 0


def _inspect(args: argparse.Namespace) -> int:
    options = TraceOptions(window_s=_window(args.window), arrival_scale=args.arrival_scale,
                           length_scale=args.length_scale, limit=args.limit,
                           sample_n=args.sample, seed=args.seed)
    report, stream = registry.open_trace(args.file, args.format, options)
    summary = (summarize_requests(stream, args.seed) if report.kind == "requests"
               else summarize_steps(stream))
    result = {**report.to_dict(), "summary": summary}
    result["meta"] = {k: v for k, v in result["meta"].items() if k not in ("requests", "config")}
    if args.json:
        json.dump(result, sys.stdout, indent=1, default=str)
        print()
        return 0
    print(f"{args.file}: {report.format} ({report.kind})")
    for key, value in {**summary, "skipped": result["skipped"], **result["meta"]}.items():
        print(f"  {key}: {value}")
    for note in report.notes:
        print(f"  note: {note}")
    return 0


def _window(text: str | None) -> tuple[float, float | None] | None:
    if not text:
        return None
    start, sep, end = text.partition(":")
    if not sep:
        raise CliError("--window takes START:END (seconds; END may be empty)")
    try:
        return float(start or 0), float(end) if end else None
    except ValueError as err:
        raise CliError(f"--window: {err}") from err
