"""The router a config names: config.ROUTERS' names -> their classes (tests keep them equal)."""

from __future__ import annotations

from typing import Any

from servescope.core.config import ConfigError
from servescope.core.routers.base import Router
from servescope.core.routers.least_kv import LeastKVRouter
from servescope.core.routers.least_requests import LeastRequestsRouter
from servescope.core.routers.random_pick import RandomRouter
from servescope.core.routers.round_robin import RoundRobinRouter
from servescope.core.routers.session import SessionRouter
from servescope.core.routers.shortest_queue import ShortestQueueRouter

ROUTERS: dict[str, type[Router]] = {
    "round-robin": RoundRobinRouter,
    "random": RandomRouter,
    "least-requests": LeastRequestsRouter,
    "least-kv": LeastKVRouter,
    "shortest-queue": ShortestQueueRouter,
    "session": SessionRouter,
}


def make_router(name: str, num_replicas: int, config: dict[str, Any] | None = None,
                seed: int = 0, block_size: int = 16) -> Router:
    """The named router over `num_replicas` replicas; ConfigError names a bad name or setting."""
    if name not in ROUTERS:
        raise ConfigError("router", f"must be one of {', '.join(ROUTERS)}; got {name!r:.80}")
    return ROUTERS[name](num_replicas, config or {}, seed, block_size)
