"""Fair shares: who a client is (`client_key`, the one rule every quota uses) and what it holds
now or has done lately (open sockets; uploads and sweeps in the last hour). The limits are
Settings' `client_max_*`; sessions and stored bytes are counted where they live (the registry,
the store)."""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Mapping

MAX_KEY_CHARS = 128  # a longer token is cut: it still names one client, in bounded memory
HOUR_S = 3600.0
MAX_CLIENTS = 10_000  # clients remembered in a window before the idle ones are forgotten


def client_key(headers: Mapping[str, str], peer: str | None,
               session_token: str | None = None) -> str:
    """The client a request or socket counts against: its upload token (`X-Upload-Token`),
    else its session's driver token (`session_token`, or the first of `X-Session-Token`),
    else its address. Prefixed by kind, so a token never stands for an address."""
    upload = (headers.get("x-upload-token") or "").strip()
    if upload:
        return "upload:" + upload[:MAX_KEY_CHARS]
    token = (session_token or headers.get("x-session-token") or "").split(",")[0].strip()
    if token:
        return "session:" + token[:MAX_KEY_CHARS]
    return "address:" + (peer or "unknown")


class Shares:
    """Per-client counts the server keeps in memory (one worker: they are the whole truth)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.sockets: Counter[str] = Counter()
        self.recent: dict[tuple[str, str], deque[float]] = {}  # (what, client) -> times

    def open_socket(self, client: str, limit: int) -> bool:
        """Count a socket against `client`, unless it already holds `limit`."""
        if self.sockets[client] >= limit:
            return False
        self.sockets[client] += 1
        return True

    def close_socket(self, client: str) -> None:
        self.sockets[client] -= 1
        if self.sockets[client] <= 0:
            del self.sockets[client]

    def take(self, what: str, client: str, per_hour: int) -> float:
        """Count one `what` (upload, sweep) for `client` if it did fewer than `per_hour` in the
        last hour: 0.0; else the seconds until it may, counting nothing."""
        now = self.clock()
        times = self.recent.setdefault((what, client), deque())
        while times and times[0] <= now - HOUR_S:
            times.popleft()
        if len(times) >= per_hour:
            return max(1.0, times[0] + HOUR_S - now)
        times.append(now)
        if len(self.recent) > MAX_CLIENTS:
            self._forget_idle(now)
        return 0.0

    def _forget_idle(self, now: float) -> None:
        for key in [k for k, t in self.recent.items() if not t or t[-1] <= now - HOUR_S]:
            del self.recent[key]
