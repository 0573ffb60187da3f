"""`servescope serve`: the explorer on http://HOST:PORT with the built-in demo session, or with
--classroom on every interface for a room to follow, printing the address students open."""

from __future__ import annotations

import argparse
from pathlib import Path

from servescope.api.settings import Settings
from servescope.cli._openai import add_openai_arguments, run_openai

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
    limits = p.add_argument_group(
        "fair shares", "what one client (its X-Upload-Token, else its session token, else its "
        "address) may hold, and the data directory's quota; each also $SERVESCOPE_<NAME>")
    defaults = Settings()
    for name, what in SHARES.items():
        value = getattr(defaults, name)
        limits.add_argument("--" + name.replace("_", "-"), type=type(value), default=None,
                            metavar="N", help=f"{what} (default {value:_})")
    p.add_argument("--log-level", default="info")
    add_openai_arguments(p)


SHARES = {  # Settings fields settable here: what each bounds
    "client_max_sessions": "sessions one client holds at once",
    "client_max_sockets": "WebSocket connections one client has open, followers included",
    "client_max_uploads_per_hour": "uploads one client may make in an hour",
    "client_max_stored_mb": "MiB of uploads one client may have stored",
    "client_max_sweeps_per_hour": "sweeps one client may start in an hour",
    "unconfigured_timeout_s": "seconds a socket that made a session has to configure it",
    "session_idle_s": "seconds a driver may stay quiet while nothing plays before its socket "
                      "is closed; a saved or followed session without a driver is freed "
                      "after it",
    "sweep_max_work": "a sweep's grid points x its workload's requests, at most",
    "sweep_deadline_s": "seconds a sweep may run before it is stopped",
    "data_quota_mb": "MiB the data directory's uploads and run stores may hold; over it, new "
                     "uploads and sessions are refused (507)",
    "upload_retention_s": "seconds an upload is kept after it was stored (none a session "
                          "runs is deleted while it runs)",
}


SWITCH_INTERVAL_S = 0.0005
# On SIGTERM uvicorn waits this long for requests in flight (a summary waiting on a run, say),
# then cancels them and runs the app's shutdown: the server is gone within a few seconds.
GRACEFUL_SHUTDOWN_S = 3


def run(args: argparse.Namespace) -> int:
    import sys

    import uvicorn

    from servescope.api.app import create_app

    settings = _settings(args)
    if args.openai:  # the API on live engines beside the explorer (cli/_openai.py)
        return run_openai(args, settings, create_app(settings))
    print(_banner(settings), flush=True)
    # The sessions' simulate-ahead threads hold the GIL between bytecode checks: a shorter
    # switch interval (5 ms by default) lets the event loop take it back sooner
    # (bench/healthz_load.py, "simulating").
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, workers=1,
                ws="websockets-sansio", log_level=args.log_level,
                # a message over the limit is not read past it: the socket closes with 1009
                # and the session lives on (a follower's own limit: api/web/control.py)
                ws_max_size=settings.max_message_bytes, ws_per_message_deflate=False,
                timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    from servescope.api.web.classroom import classroom_settings
    from servescope.cli import CliError

    limit = None if args.max_upload_mb is None else int(args.max_upload_mb * 1024 * 1024)
    settings = Settings.from_env(host=args.host, port=args.port, data_dir=args.data_dir,
                                 max_upload_bytes=limit, memory_cap_mb=args.memory_cap_mb,
                                 classroom=args.classroom, public_address=args.public_address,
                                 **{name: getattr(args, name) for name in SHARES})
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
