"""`servescope serve`: the explorer on http://HOST:PORT with the built-in demo session."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "start the explorer web server"
DESCRIPTION = "Start the explorer (one worker; sessions in memory)."


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
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


# A message over max_message_bytes gets the `limit` error frame (api/web/control.py) and the socket
# lives on; only one over this many times the limit is cut off by uvicorn (close 1009).
SWITCH_INTERVAL_S = 0.0005
WS_CEILING = 16  # 64 MiB for the default 4 MiB limit


def run(args: argparse.Namespace) -> int:
    import sys

    import uvicorn

    from servescope.api.app import create_app
    from servescope.api.settings import Settings

    limit = None if args.max_upload_mb is None else int(args.max_upload_mb * 1024 * 1024)
    settings = Settings.from_env(host=args.host, port=args.port, data_dir=args.data_dir,
                                 max_upload_bytes=limit, memory_cap_mb=args.memory_cap_mb)
    print(f"ServeScope explorer on http://{settings.host}:{settings.port}/ (demo session ready)",
          flush=True)
    # The sessions' simulate-ahead threads hold the GIL between bytecode checks: a shorter
    # switch interval (5 ms by default) lets the event loop take it back sooner
    # (bench/healthz_load.py, "simulating").
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, workers=1,
                ws="websockets-sansio", log_level=args.log_level,
                ws_max_size=WS_CEILING * settings.max_message_bytes, ws_per_message_deflate=False)
    return 0
