"""Fair shares: who a client is (`payer_of`, the one rule every quota charges by) and what it holds
now or has done lately (open sockets; uploads and sweeps in the last hour). The limits are
Settings' `client_max_*`; sessions and stored bytes are counted where they live (the registry,
the store)."""

from __future__ import annotations

import hashlib
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping

from servescope.api.uploads.owner import owner_of

HOUR_S = 3600.0
MAX_CLIENTS = 10_000  # clients remembered in a window before the idle ones are forgotten


def payer_of(headers: Mapping[str, str], peer: str | None,
             session_token: str | None = None) -> str:
    """The payer a request or socket is charged to: its upload token's owner (`X-Upload-Token`,
    as digested by api/uploads/owner.py), else a digest of its session's driver token
    (`session_token`, or the first of `X-Session-Token`), else its address. Prefixed by kind,
    so a token never stands for an address; never a raw token, which grants access, and
    bounded in length whatever was sent."""
    upload = (headers.get("x-upload-token") or "").strip()
    if upload:
        return "upload:" + owner_of(upload)
    token = (session_token or headers.get("x-session-token") or "").split(",")[0].strip()
    if token:
        return "session:" + hashlib.sha256(f"servescope-session:{token}".encode()).hexdigest()
    return "address:" + (peer or "unknown")


class Shares:
    """Per-client counts the server keeps in memory (one worker: they are the whole truth)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.sockets: Counter[str] = Counter()
        self.recent: dict[tuple[str, str], deque[float]] = {}  # (what, payer) -> times

    def open_socket(self, payer: str, limit: int) -> bool:
        """Count a socket against `payer`, unless it already holds `limit`."""
        if self.sockets[payer] >= limit:
            return False
        self.sockets[payer] += 1
        return True

    def close_socket(self, payer: str) -> None:
        self.sockets[payer] -= 1
        if self.sockets[payer] <= 0:
            del self.sockets[payer]

    def take(self, what: str, payer: str, per_hour: int) -> float:
        """Count one `what` (upload, sweep) for `payer` if it did fewer than `per_hour` in the
        last hour: 0.0; else the seconds until it may, counting nothing."""
        now = self.clock()
        times = self.recent.setdefault((what, payer), deque())
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
