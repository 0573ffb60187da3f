"""`servescope traces list | fetch NAME | inspect FILE | generate NAME`: the public trace
catalog, a quick look at any trace file ServeScope reads, and synthetic workloads."""

from __future__ import annotations

import argparse
import dataclasses
import inspect as signature
import json
import sys
from pathlib import Path
from typing import Any

from servescope.cli import CliError
from servescope.exports import write_json
from servescope.traces import catalog, registry, synthetic
from servescope.traces.errors import TraceDependencyError, TraceFormatError
from servescope.traces.inspect import summarize_requests, summarize_steps
from servescope.traces.options import TraceOptions
from servescope.traces.recording import request_rows

HELP = "public trace catalog; inspect trace files"
DESCRIPTION = ("List and fetch public LLM serving traces, summarize a trace file in any "
               "format, or write a synthetic workload as workload JSON.")
GENERATORS = ("lesson", *synthetic.GENERATORS)


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
    inspect.add_argument("--rate-per-s", type=float,
                         help="sharegpt-stats: Poisson arrivals at this rate (default: all at 0); "
                              "--sample or --limit there sets how many requests are drawn")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    _add_generate(sub)
    for p in (listing, fetch):
        p.add_argument("--data-dir", type=Path, help="data directory (default $SERVESCOPE_"
                                                     "DATA_DIR or <repo>/data)")
        p.add_argument("--catalog", type=Path, help="catalog JSON (default traces/catalog.json)")


def run(args: argparse.Namespace) -> int:
    try:
        commands = {"list": _list, "fetch": _fetch, "inspect": _inspect, "generate": _generate}
        return commands[args.traces_command](args)
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
    fmt = args.format or registry.detect(args.file)
    draw = registry.draw_params(fmt, args.sample or args.limit, args.rate_per_s, args.seed)
    if args.rate_per_s is not None and not draw:
        raise CliError(f"--rate-per-s applies to sharegpt-stats only, not {fmt}")
    if draw:  # the reader draws exactly N, so the options do not sample again
        options = dataclasses.replace(options, sample_n=None, limit=None)
    report, stream = registry.open_trace(args.file, fmt, options, **draw)
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


def _add_generate(sub: Any) -> None:
    gen = sub.add_parser("generate", help="write a synthetic workload as workload JSON",
                         description="Arrivals in seconds; lengths are N, LO:HI (uniform) or "
                                     "A,B,C (choices). Options a generator does not take are "
                                     "refused.")
    gen.add_argument("generator", choices=GENERATORS)
    gen.add_argument("--out", type=Path, required=True, help="workload JSON to write")
    gen.add_argument("--num-requests", type=int, help="how many requests")
    gen.add_argument("--rate", type=float, dest="rate_per_s", help="requests per second")
    gen.add_argument("--burstiness", type=float,
                     help="gamma: shape of the gaps (1 = Poisson, below 1 burstier)")
    gen.add_argument("--concurrency", type=int, help="closed_loop: simultaneous users")
    gen.add_argument("--long-fraction", type=float, help="mixed_long: share of long prompts")
    gen.add_argument("--prompt-len", type=_length, help="prompt lengths")
    gen.add_argument("--output-len", type=_length, help="output lengths")
    gen.add_argument("--seed", type=int, default=0)


def _length(text: str) -> synthetic.LengthSpec:
    try:
        if ":" in text:
            low, high = text.split(":")
            return int(low), int(high)
        return [int(x) for x in text.split(",")] if "," in text else int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N, LO:HI or A,B,C, got {text!r}") from None


def _generate(args: argparse.Namespace) -> int:
    keys = ("num_requests", "rate_per_s", "burstiness", "concurrency", "long_fraction",
            "prompt_len", "output_len")
    given = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    fn = synthetic.lesson if args.generator == "lesson" else synthetic.GENERATORS[args.generator]
    accepted = signature.signature(fn).parameters
    refused = sorted(k for k in given if k not in accepted)
    if refused:
        flags = ", ".join("--" + k.replace("_per_s", "").replace("_", "-") for k in refused)
        raise CliError(f"{args.generator} does not take {flags}")
    if args.generator != "lesson":
        given.setdefault("num_requests", 100)
        if "rate_per_s" in accepted:
            given.setdefault("rate_per_s", 10.0)
        if "concurrency" in accepted:
            given.setdefault("concurrency", 8)
    specs = synthetic.generate(args.generator, args.seed, **given)
    write_json(args.out, request_rows(specs))
    print(f"{args.out}: {len(specs)} requests ({args.generator}, seed {args.seed})")
    return 0
