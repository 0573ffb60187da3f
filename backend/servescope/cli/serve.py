"""`servescope serve`: the explorer on http://HOST:PORT with the built-in demo session, or with
--classroom on every interface for a room to follow, printing the address students open."""

from __future__ import annotations

import argparse
from pathlib import Path

from servescope.api.settings import Settings

HELP = "start the explorer web server"
DESCRIPTION = "Start the explorer (one worker; sessions in memory)."
EPILOG = ("A class on one network: `servescope serve --classroom` (or `make classroom`) prints "
          "the address students open; each run's Share button gives its follow link and QR "
          "code on that address.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=None,
                   help="address to listen on (default 127.0.0.1; with --classroom 0.0.0.0)")
    p.add_argument("--classroom", action="store_true", default=None,
                   help="serve a room: listen on all interfaces, accept pages opened by any of "
                        "this machine's addresses, and print the URL students open "
                        "($SERVESCOPE_CLASSROOM=1)")
    p.add_argument("--public-address", default=None, metavar="ADDR",
                   help="the address (or name, or http[s]:// base URL) followers' links and QR "
                        "codes carry, and pages may be opened by (default with --classroom: "
                        "this machine's address on its default route, else 127.0.0.1; "
                        "$SERVESCOPE_PUBLIC_ADDRESS)")
    p.add_argument("--port", type=int, default=None, help="port (default 8000)")
    p.add_argument("--data-dir", type=Path, default=None,
                   help="where uploads and saved scenarios live (default "
                        "$SERVESCOPE_DATA_DIR or <repo>/data)")
    p.add_argument("--max-upload-mb", type=float, default=None,
                   help="largest trace upload accepted (default 100)")
    p.add_argument("--memory-cap-mb", type=int, default=None,
                   help="the server's memory cap, its job workers included: over it new "
                        "sessions and jobs are refused, and each job may map this over "
                        "max_jobs + 1 (default 8192; 0: none)")
    p.add_argument("--log-level", default="info")


SWITCH_INTERVAL_S = 0.0005


def run(args: argparse.Namespace) -> int:
    import sys

    import uvicorn

    from servescope.api.app import create_app

    settings = _settings(args)
    print(_banner(settings), flush=True)
    # The sessions' simulate-ahead threads hold the GIL between bytecode checks: a shorter
    # switch interval (5 ms by default) lets the event loop take it back sooner
    # (bench/healthz_load.py, "simulating").
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, workers=1,
                ws="websockets-sansio", log_level=args.log_level,
                # a message over the limit is not read past it: the socket closes with 1009
                # and the session lives on (a follower's own limit: api/web/control.py)
                ws_max_size=settings.max_message_bytes, ws_per_message_deflate=False)
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    from servescope.api.web.classroom import classroom_settings
    from servescope.cli import CliError

    limit = None if args.max_upload_mb is None else int(args.max_upload_mb * 1024 * 1024)
    settings = Settings.from_env(host=args.host, port=args.port, data_dir=args.data_dir,
                                 max_upload_bytes=limit, memory_cap_mb=args.memory_cap_mb,
                                 classroom=args.classroom, public_address=args.public_address)
    try:
        return classroom_settings(settings)
    except ValueError as err:
        raise CliError(str(err)) from None


def _banner(settings: Settings) -> str:
    """What the terminal says: where the explorer listens and, for a room, the URL students
    open (the one the Share dialog's follow links and QR codes carry)."""
    from servescope.api.web.classroom import ANY_HOST, public_host, public_url

    kind = "classroom" if settings.classroom else "explorer"
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    lines = [f"ServeScope {kind} on http://{host}:{settings.port}/ (demo session ready)"]
    if settings.classroom or settings.public_address:
        others = [n for n in settings.server_names if n.lower() != public_host(settings)]
        lines += [f"  students open: {public_url(settings)}/",
                  "  (the Share button gives each run's follow link and QR code on it; pages "
                  f"are also accepted at {', '.join(['localhost', *others])})"]
    elif settings.host in ANY_HOST:
        lines.append("  pages opened by this machine's network address are refused; --classroom "
                     "accepts them and prints the URL students open")
    return "\n".join(lines)
