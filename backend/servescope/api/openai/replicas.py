"""One uvicorn server a port on one event loop: the explorer's port and each replica's
(`--replicas N --base-port P`: replica k on P + k, its own API and /metrics). Ctrl-C or SIGTERM
ends every live stream at once and stops every server."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

from servescope.api.openai.live import LiveEngine

# seconds uvicorn waits for connections left open after the streams ended (cli/serve.py's)
GRACEFUL_SHUTDOWN_S = 3


@dataclass(frozen=True)
class Port:
    app: FastAPI
    host: str
    port: int


class QuietServer(uvicorn.Server):
    """A server that leaves the signals to serve_all (one handler stops them all)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def serve_all(ports: Sequence[Port], engines: Sequence[LiveEngine], log_level: str) -> None:
    asyncio.run(_serve(ports, engines, log_level))


async def _serve(ports: Sequence[Port], engines: Sequence[LiveEngine], log_level: str) -> None:
    servers = [QuietServer(uvicorn.Config(p.app, host=p.host, port=p.port, log_level=log_level,
                                          timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S))
               for p in ports]

    def stop() -> None:
        for live in engines:
            live.close()
        for server in servers:
            server.should_exit = True

    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
    await asyncio.gather(*(server.serve() for server in servers))
